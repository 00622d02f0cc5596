"""Search-R1 style question answering over a retrieval corpus."""

from agentgym.envs.search.env import SearchQAEnv

__all__ = ["SearchQAEnv"]
