"""The env registry: every agentgym id, registered with Gymnasium by string entry point."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentgym.errors import EnvNotFound

__all__ = ["EnvInfo", "env_ids", "env_info", "make", "register_envs"]

_REGISTERED: dict[str, EnvInfo] = {}


@dataclass(frozen=True)
class EnvInfo:
    """What the registry knows of one env id without importing the env."""

    id: str
    entry_point: str
    description: str
    extras: tuple[str, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


def register_envs(infos: Iterable[EnvInfo]) -> None:
    """Register each env with Gymnasium (idempotent). Importing an env module is deferred to ``make``."""
    for info in infos:
        _REGISTERED[info.id] = info
        if info.id not in gym.registry:
            gym.register(id=info.id, entry_point=info.entry_point, kwargs=dict(info.kwargs),
                         disable_env_checker=True)


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
