"""``EnvHost``: the body of one Ray actor, holding many env sessions on its node.

A host is a threaded actor: each session's calls come one at a time (its ``RayEnv``,
or the server's session lock, serialises them), sessions of one host run at once on
the actor's threads. An exception from env code is returned, not raised through Ray,
so that the caller re-raises it as the type the env raised (``ResetNeeded``,
``ConfigError``, ...): what a local env would have raised.
"""

from __future__ import annotations

import importlib
import itertools
import os
import pickle
import threading
from typing import Any

from agentgym.errors import AgentGymError, ConfigError, ResetNeeded

__all__ = ["EnvHost", "Outcome"]

Outcome = tuple[bool, Any]  # (True, value) or (False, the exception to raise in the caller)


class EnvHost:
    """Env sessions by key, each made from its env's entry point (so an id the driver registered is made here
    too, as long as its module is importable on the node)."""

    def __init__(self, index: int, cpus: int = 0) -> None:
        """``cpus``: this host's share of its node's CPUs. The process-wide pools an env starts (sandboxes for
        MathTool and PyCode, verifier workers) are sized to it, not to the whole node: a node runs several hosts."""
        if cpus > 0:
            os.environ.setdefault("AGENTGYM_SANDBOX_POOL_SIZE", str(cpus))
            os.environ.setdefault("AGENTGYM_VERIFIER_WORKERS", str(min(4, cpus)))
        from agentgym.verifiers.budget import prewarm_workers

        # the verifier workers start with the host, not on its first scored step (~2 s each: sympy's import)
        prewarm_workers()
        self.index = index
        self.envs: dict[int, Any] = {}
        self._keys = itertools.count(1)
        self._lock = threading.Lock()

    def describe(self) -> dict[str, Any]:
        import ray

        from agentgym.verifiers.budget import verifier_workers

        return {"index": self.index, "pid": os.getpid(), "node_id": ray.get_runtime_context().get_node_id(),
                "sessions": len(self.envs), "sandbox_pool_size": os.environ.get("AGENTGYM_SANDBOX_POOL_SIZE"),
                "verifier_workers": verifier_workers()}

    def make(self, env_id: str, entry_point: Any, kwargs: dict[str, Any]) -> Outcome:
        def make() -> int:
            from agentgym.core.kwargs import check_kwargs

            if isinstance(entry_point, str):
                module, _, name = entry_point.partition(":")
                env_class = getattr(importlib.import_module(module), name)
            else:  # the class or factory itself (agentgym.register was given an object), sent by Ray
                env_class = entry_point
            check_kwargs(env_class, kwargs, owner=env_id)
            env = env_class(**kwargs)
            with self._lock:
                key = next(self._keys)
                self.envs[key] = env
            return key

        return _outcome(make)

    def reset(self, key: int, seed: int | None, options: dict[str, Any] | None) -> Outcome:
        return _outcome(lambda: self._env(key).reset(seed=seed, options=options))

    def step(self, key: int, action: Any) -> Outcome:
        return _outcome(lambda: self._env(key).step(action))

    def call_many(self, calls: list[tuple[str, int, tuple[Any, ...]]]) -> list[Outcome]:
        """``(method, key, args)`` calls of ``reset``/``step``, one after the other (a batch's share of this host),
        each with its own outcome."""
        methods = {"reset": self.reset, "step": self.step}
        return [methods[method](key, *args) if method in methods else (False, ConfigError(f"No call {method!r}."))
                for method, key, args in calls]

    def close(self, key: int) -> Outcome:
        with self._lock:
            env = self.envs.pop(key, None)
        return _outcome(lambda: env.close() if env is not None else None)

    def close_all(self) -> int:
        with self._lock:
            envs, self.envs = list(self.envs.values()), {}
        for env in envs:
            _outcome(env.close)
        return len(envs)

    def _env(self, key: int) -> Any:
        env = self.envs.get(key)
        if env is None:
            raise ResetNeeded(f"This host (pid {os.getpid()}) holds no session {key}: it was closed.")
        return env


def _outcome(fn: Any) -> Outcome:
    try:
        return True, fn()
    except Exception as e:  # noqa: BLE001 - raised again in the caller, as its own type where it can be
        return False, _portable(e)


def _portable(e: Exception) -> Exception:
    """``e`` if it crosses a pickle unchanged (type and message), else an exception of the nearest agentgym type
    with its message, so the caller answers it as it would answer ``e`` (409 for ResetNeeded, 422 for
    ConfigError, 500 for the rest)."""
    try:
        copy = pickle.loads(pickle.dumps(e))
        if type(copy) is type(e) and str(copy) == str(e):
            return e
    except Exception:  # noqa: BLE001 - an exception that does not pickle is rebuilt below
        pass
    message = f"{type(e).__name__}: {e}"
    for kind in (ResetNeeded, ConfigError):
        if isinstance(e, kind):
            return kind(str(e))
    return AgentGymError(message) if isinstance(e, AgentGymError) else RuntimeError(message)
