"""Clients of the agentgym server protocol."""

from agentgym.client.remote import AsyncRemoteEnv, RemoteEnv

__all__ = ["AsyncRemoteEnv", "RemoteEnv"]
