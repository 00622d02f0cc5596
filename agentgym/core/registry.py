"""The env registry: every agentgym id, registered with Gymnasium by string entry point.

``gym.make`` checks the keyword arguments against the env's ``__init__`` signature
before the env is built: an unknown name or a value of the wrong type is a
one-line ``ConfigError`` at make time, the same message the server answers with.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentgym.core.kwargs import check_kwarg_names, check_kwargs, keyword_parameters
from agentgym.errors import EnvNotFound

__all__ = ["DEFAULT_CLIENT_KWARGS", "VERIFIERS_PREFIX", "EnvInfo", "check_env_kwargs", "check_kwarg_names",
           "check_kwargs", "client_kwargs", "create_env", "env_ids", "env_info", "env_kwarg_names", "load_env_class",
           "make", "register_envs"]

_REGISTERED: dict[str, EnvInfo] = {}
# The base keyword arguments of every AgentEnv (``EnvDefaults``) that a remote client may set; ``render_mode``
# is not one: "human" prints on the server.
DEFAULT_CLIENT_KWARGS = ("action_format", "max_observation_chars", "max_turns", "split")


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
    # Where the id comes from: "agentgym", "package <dist> (<entry point>)", "module <name>", "file <path>"
    source: str = "agentgym"


def client_kwargs(*own: str) -> tuple[str, ...]:
    """``EnvInfo.client_kwargs`` for an env: the ``DEFAULT_CLIENT_KWARGS`` and its ``own``, sorted.

    >>> client_kwargs("topk")
    ('action_format', 'max_observation_chars', 'max_turns', 'split', 'topk')
    """
    return tuple(sorted({*DEFAULT_CLIENT_KWARGS, *own}))


def register_envs(infos: Iterable[EnvInfo]) -> None:
    """Register each env with Gymnasium (idempotent). Importing an env module is deferred to ``make``.

    Gymnasium's entry point is ``create_env``, which builds the env in process, a
    ``RemoteEnv`` when ``remote=URL`` is passed to ``gym.make``, or a ``RayEnv`` for
    ``remote="ray://ADDRESS"``.
    """
    for info in infos:
        _REGISTERED[info.id] = info
        if info.id not in gym.registry:
            gym.register(id=info.id, entry_point="agentgym.core.registry:create_env",
                         kwargs={"env_id": info.id, **info.kwargs}, disable_env_checker=True)


def create_env(*, env_id: str, remote: str | None = None, token: str | None = None, **kwargs: Any) -> gym.Env:
    """Gymnasium's entry point for every agentgym id: the env (its kwargs checked), a ``RemoteEnv`` on the
    ``agentgym serve`` at ``remote``, or a ``RayEnv`` for ``remote="ray://ADDRESS"`` (a session on a Ray actor)."""
    if remote is not None and not remote.startswith("ray://"):  # what register gave the id: the server has its own
        registered = env_info(env_id).kwargs
        kwargs = {k: v for k, v in kwargs.items() if k not in registered or not _same(v, registered[k])}
    if remote is not None and remote.startswith("ray://"):
        from agentgym.cluster.env import RayEnv
        from agentgym.cluster.pool import env_pool, pool_address

        # the host checks the kwargs, as make does
        return RayEnv(env_pool(pool_address(remote)), env_id, {**env_info(env_id).kwargs, **kwargs},
                      entry_point=load_env_class(env_id))
    if remote is not None:
        from agentgym.client.remote import RemoteEnv

        return RemoteEnv(env_id, remote, token=token, env_kwargs=kwargs)  # the server checks them
    cls = load_env_class(env_id)
    kwargs = {**env_info(env_id).kwargs, **kwargs}  # gym.make passes them; the server and Ray hosts do not
    check_kwargs(cls, kwargs, owner=env_id)
    return cls(**kwargs)


_OBJECTS: dict[str, Any] = {}  # entry points registered as objects that no "module:attr" string names


def _same(value: Any, registered: Any) -> bool:
    """Whether ``value`` is what register gave (gym.make passes a deep copy of it)."""
    try:
        return value is registered or bool(value == registered)
    except Exception:  # a comparison that raises (arrays): not the same
        return False


def load_env_class(env_id: str) -> Any:
    """Import an env's class (or factory) from its entry point: a "module:attr" string, or the object
    ``agentgym.register`` was given."""
    info = env_info(env_id)
    if env_id in _OBJECTS:
        return _OBJECTS[env_id]
    module, _, name = info.entry_point.partition(":")
    target: Any = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part)
    return target


def env_ids() -> list[str]:
    return sorted(_REGISTERED)


def env_info(env_id: str) -> EnvInfo:
    try:
        return _REGISTERED[env_id]
    except KeyError:
        if isinstance(env_id, str) and env_id.startswith(VERIFIERS_PREFIX) and env_id != VERIFIERS_PREFIX:
            return _register_verifiers(env_id)
        raise EnvNotFound(env_id, _REGISTERED) from None


# ``vf:TASKSET``: a verifiers environment (the taskset id vf-eval takes), registered when first named; verifiers
# itself is imported when the env is made (agentgym.integrations.verifiers_env)
VERIFIERS_PREFIX = "vf:"


def _register_verifiers(env_id: str) -> EnvInfo:
    taskset = env_id.removeprefix(VERIFIERS_PREFIX)
    info = EnvInfo(id=env_id, entry_point="agentgym.integrations.verifiers_env:VerifiersEnv",
                   description=f"the verifiers environment (taskset) {taskset!r}", extras=("verifiers",),
                   kwargs={"taskset": taskset}, client_kwargs=client_kwargs("num_tasks", "taskset_config"),
                   source="verifiers")
    register_envs([info])
    return info


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make`` for agentgym ids, with a did-you-mean error for unknown ids. With ``remote=URL`` (an
    ``agentgym serve``), an id registered only on the server is a ``RemoteEnv`` of it: its file or package need
    not be here (``gym.make`` itself knows only ids registered in this process)."""
    remote = kwargs.get("remote")
    if isinstance(remote, str) and remote.startswith(("http://", "https://")) and env_id not in _REGISTERED:
        from agentgym.client.remote import RemoteEnv

        rest = {k: v for k, v in kwargs.items() if k not in ("remote", "token")}
        return RemoteEnv(env_id, remote, token=kwargs.get("token"), env_kwargs=rest)
    env_info(env_id)
    # gym.make reads "module:name" as a module to import first: a vf: id goes by its spec
    return gym.make(gym.registry[env_id] if ":" in env_id else env_id, **kwargs)


# ---- keyword argument checks ------------------------------------------------------------------------


def env_kwarg_names(env_id: str) -> list[str]:
    """The keyword arguments the env of ``env_id`` takes (imports its class)."""
    return keyword_parameters(load_env_class(env_id))


def check_env_kwargs(env_id: str, kwargs: Mapping[str, Any]) -> None:
    """Raise ``ConfigError`` if the env of ``env_id`` does not take ``kwargs`` (imports its class)."""
    check_kwargs(load_env_class(env_id), kwargs, owner=env_id)
