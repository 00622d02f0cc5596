"""Env sessions across a Ray cluster: ``RayEnvPool`` (host actors on every node, placement under per-node
limits, failures confined to their sessions) and ``RayEnv`` (one session as a ``gymnasium.Env``).

``gym.make(id, remote="ray://ADDRESS")`` makes a ``RayEnv`` on this process's pool for
that cluster; ``agentgym serve --ray ADDRESS`` serves sessions of such a pool over the
usual HTTP API; ``agentgym eval`` and ``agentgym train`` take ``--remote ray://ADDRESS``.
Ray is imported only when a pool is made (extra ``ray``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentgym.cluster.env import RayEnv
    from agentgym.cluster.pool import RayEnvPool

__all__ = ["RayEnv", "RayEnvPool", "env_pool", "pool_address"]


def __getattr__(name: str) -> Any:
    if name == "RayEnv":
        from agentgym.cluster.env import RayEnv

        return RayEnv
    if name in ("RayEnvPool", "env_pool", "pool_address"):
        from agentgym.cluster import pool

        return getattr(pool, name)
    raise AttributeError(f"module 'agentgym.cluster' has no attribute {name!r}")
