"""``RayEnv``: one env session of a ``RayEnvPool``, as a local ``gymnasium.Env``.

What ``gym.make(id, remote="ray://ADDRESS")`` returns. Its reset, step and close run on
the host actor holding the session, anywhere in the cluster; results and the env's
own exceptions come back as in process. A session lost with its host raises
``SessionLost``; the next ``reset`` makes a new session on a live host.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from agentgym.cluster.pool import PoolSession, RayEnvPool
from agentgym.core.env import TextSpace
from agentgym.errors import ResetNeeded, SessionLost

__all__ = ["RayEnv"]


class RayEnv(gym.Env[str, str]):
    """An agentgym env hosted by a Ray actor of ``pool``.

    >>> env = gym.make("agentgym/SearchQA-v0", remote="ray://local")  # doctest: +SKIP
    """

    metadata = {"render_modes": []}

    def __init__(self, pool: RayEnvPool, env_id: str, env_kwargs: Mapping[str, Any] | None = None, *,
                 entry_point: str) -> None:
        self.pool, self.env_id, self.entry_point = pool, env_id, entry_point
        self.env_kwargs = dict(env_kwargs or {})
        self.observation_space = TextSpace()
        self.action_space = TextSpace()
        self.render_mode = None
        # placed now: a full pool is an error of make, not of the first reset
        self._session: PoolSession | None = pool.open(env_id, entry_point, self.env_kwargs)

    @property
    def host(self) -> dict[str, Any] | None:
        """Where the session lives: ``{"node_id", "address", "host", "pid"}`` (None once closed or lost)."""
        if self._session is None:
            return None
        host = self._session.host
        return {"node_id": host.node.node_id, "address": host.node.address, "host": host.index, "pid": host.pid}

    @property
    def pool_session(self) -> PoolSession:
        """The pool's handle of this session (for ``RayEnvPool.call_many``); ResetNeeded once lost or closed."""
        if self._session is None:
            raise ResetNeeded("This session was lost with its Ray host (or closed): call reset() to start a new one.")
        return self._session

    def forget_if_lost(self, error: BaseException) -> None:
        """After ``error`` from a call made through the pool: a lost session is forgotten (reset makes a new one)."""
        if isinstance(error, SessionLost):
            self._session = None

    def _call(self, method: str, *args: Any) -> Any:
        assert self._session is not None
        try:
            return self.pool.call(self._session, method, *args)
        except SessionLost:
            self._session = None  # the next reset makes a new session
            raise

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if self._session is None:
            self._session = self.pool.open(self.env_id, self.entry_point, self.env_kwargs)
        return self._call("reset", seed, options)

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._session is None:
            raise ResetNeeded("This session was lost with its Ray host (or closed): call reset() to start a new one.")
        return self._call("step", action)

    def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            self.pool.close(session)
