"""A process-wide pool of warm sandboxes that many envs share.

A server may host a thousand sessions of a code env; each would otherwise keep
its own supervisor (with numpy and sympy preloaded, ~100 MB). Envs borrow a
sandbox for one call instead. Pooled sandboxes use ``isolation="call"``: every
call starts from an empty ``/work``, ``/tmp`` and ``/dev/shm``, with no IPC object
(SysV, POSIX message queue) or key of an earlier call, so nothing passes between
episodes or sessions.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agentgym.sandbox.base import Limits, Result, Sandbox

__all__ = ["SandboxPool", "shared_pool"]


class SandboxPool:
    """``size`` sandboxes of one backend, lent one call at a time (blocking when all are busy)."""

    def __init__(self, backend: str = "bwrap", *, size: int | None = None, limits: Limits | None = None,
                 preload: tuple[str, ...] = (), **kwargs: Any) -> None:
        from agentgym.sandbox import make_sandbox

        self.backend = backend
        self.size = size or _pool_size()
        self.limits = limits or Limits()
        self._idle: queue.LifoQueue[Sandbox] = queue.LifoQueue()
        for _ in range(self.size):
            extra = dict(kwargs)
            if backend != "docker":
                extra["preload"] = preload
            self._idle.put(make_sandbox(backend, limits=self.limits, isolation="call", **extra))

    @contextmanager
    def borrow(self) -> Iterator[Sandbox]:
        sandbox = self._idle.get()
        try:
            yield sandbox
        finally:
            self._idle.put(sandbox)

    def run(self, code: str | None = None, **kwargs: Any) -> Result:
        """``Sandbox.run`` on whichever pooled sandbox is free."""
        with self.borrow() as sandbox:
            return sandbox.run(code, **kwargs)

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


_POOLS: dict[tuple[Any, ...], SandboxPool] = {}
_POOLS_LOCK = threading.Lock()


def _pool_size() -> int:
    """``$AGENTGYM_SANDBOX_POOL_SIZE`` (a Ray env host sets its share of the node's CPUs), else the CPU count (2
    at least)."""
    from agentgym.settings import count_from_env

    return count_from_env("AGENTGYM_SANDBOX_POOL_SIZE", max(2, os.cpu_count() or 2))


def shared_pool(backend: str, limits: Limits, preload: tuple[str, ...] = (), **kwargs: Any) -> SandboxPool:
    """The process's pool for these settings, created on first use."""
    key = (backend, limits, tuple(preload), tuple(sorted(kwargs.items())))
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = SandboxPool(backend, limits=limits, preload=preload, **kwargs)
        return pool
