"""The env registry: every agentgym id, registered with Gymnasium by string entry point."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentgym.errors import EnvNotFound

__all__ = ["EnvInfo", "create_env", "env_ids", "env_info", "load_env_class", "make", "register_envs"]

_REGISTERED: dict[str, EnvInfo] = {}


@dataclass(frozen=True)
class EnvInfo:
    """What the registry knows of one env id without importing the env."""

    id: str
    entry_point: str
    description: str
    extras: tuple[str, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    # What a remote client may set when it creates a session; paths and backends stay the operator's.
    client_kwargs: tuple[str, ...] = ()


def register_envs(infos: Iterable[EnvInfo]) -> None:
    """Register each env with Gymnasium (idempotent). Importing an env module is deferred to ``make``.

    Gymnasium's entry point is ``create_env``, which builds the env in process, or a
    ``RemoteEnv`` when ``remote=URL`` is passed to ``gym.make``.
    """
    for info in infos:
        _REGISTERED[info.id] = info
        if info.id not in gym.registry:
            gym.register(id=info.id, entry_point="agentgym.core.registry:create_env",
                         kwargs={"env_id": info.id, **info.kwargs}, disable_env_checker=True)


def create_env(*, env_id: str, remote: str | None = None, token: str | None = None, **kwargs: Any) -> gym.Env:
    """Gymnasium's entry point for every agentgym id: the env, or a ``RemoteEnv`` on ``remote``."""
    if remote is not None:
        from agentgym.client.remote import RemoteEnv

        return RemoteEnv(env_id, remote, token=token, env_kwargs=kwargs)
    return load_env_class(env_id)(**kwargs)


def load_env_class(env_id: str) -> type:
    """Import an env's class from its string entry point."""
    module, _, name = env_info(env_id).entry_point.partition(":")
    return getattr(importlib.import_module(module), name)


def env_ids() -> list[str]:
    return sorted(_REGISTERED)


def env_info(env_id: str) -> EnvInfo:
    try:
        return _REGISTERED[env_id]
    except KeyError:
        raise EnvNotFound(env_id, _REGISTERED) from None


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make`` for agentgym ids, with a did-you-mean error for unknown ids."""
    env_info(env_id)
    return gym.make(env_id, **kwargs)
