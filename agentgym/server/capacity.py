"""Capacity: how many sessions of each env one server holds, from what a session costs the host.

Most sessions are a few KB of Python objects and count only against ``max_sessions``.
Some hold processes and memory of their own; each of those envs gets a per-env limit,
by default the share of the host's memory its sessions may fill at their worst:

    limit = (MEMORY_SHARE x host memory / costly envs served) // memory_mb of one session

Host memory is the smaller of physical memory and the cgroup's limit (a container's).
CPU is not what open sessions use up: the env work they do at once is bounded by the
worker threads (``--workers``), whatever the number of sessions.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentgym.core.costs import MEMORY_SHARE, SESSION_COSTS, SessionCost, default_env_limits, host_memory_mb
from agentgym.core.registry import env_info
from agentgym.errors import ConfigError

__all__ = ["MEMORY_SHARE", "SESSION_COSTS", "SessionCost", "default_env_limits", "env_limits", "host_memory_mb"]


def env_limits(served: list[str], overrides: Mapping[str, int] | None, *, defaults: bool = True) -> dict[str, int]:
    """The defaults for ``served`` (unless ``defaults`` is false) with the operator's ``overrides`` applied
    (checked: served ids, ints >= 1)."""
    limits = default_env_limits(served) if defaults else {}
    for env_id, limit in (overrides or {}).items():
        if env_id not in served:
            env_info(env_id)  # an unregistered id: EnvNotFound with a did-you-mean
            raise ConfigError(f"A session limit is set for {env_id}, which this server does not serve "
                              f"(served: {', '.join(served)}).")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(f"The session limit of {env_id} must be an integer >= 1, got {limit!r}.")
        limits[env_id] = limit
    return limits
