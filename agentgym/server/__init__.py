"""Serve agentgym envs over HTTP: ``create_app`` and ``agentgym serve``."""

from agentgym.server.app import create_app

__all__ = ["create_app"]
