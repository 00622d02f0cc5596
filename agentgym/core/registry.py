"""The env registry: every agentgym id, registered with Gymnasium by string entry point.

``gym.make`` checks the keyword arguments against the env's ``__init__`` signature
before the env is built: an unknown name or a value of the wrong type is a
one-line ``ConfigError`` at make time, the same message the server answers with.
"""

from __future__ import annotations

import collections.abc
import difflib
import importlib
import inspect
import json
import numbers
import os
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Literal, Union

import gymnasium as gym

from agentgym.errors import ConfigError, EnvNotFound

__all__ = ["DEFAULT_CLIENT_KWARGS", "EnvInfo", "check_env_kwargs", "check_kwarg_names", "check_kwargs",
           "client_kwargs", "create_env", "env_ids", "env_info", "env_kwarg_names", "load_env_class", "make",
           "register_envs"]

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
    if remote is not None and remote.startswith("ray://"):
        from agentgym.cluster.env import RayEnv
        from agentgym.cluster.pool import env_pool, pool_address

        return RayEnv(env_pool(pool_address(remote)), env_id, kwargs)  # the host checks the kwargs, as make does
    if remote is not None:
        from agentgym.client.remote import RemoteEnv

        return RemoteEnv(env_id, remote, token=token, env_kwargs=kwargs)  # the server checks them
    cls = load_env_class(env_id)
    check_kwargs(cls, kwargs, owner=env_id)
    return cls(**kwargs)


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


# ---- keyword argument checks ------------------------------------------------------------------------


def env_kwarg_names(env_id: str) -> list[str]:
    """The keyword arguments the env of ``env_id`` takes (imports its class)."""
    return sorted(_parameters(load_env_class(env_id))[0])


def check_env_kwargs(env_id: str, kwargs: Mapping[str, Any]) -> None:
    """Raise ``ConfigError`` if the env of ``env_id`` does not take ``kwargs`` (imports its class)."""
    check_kwargs(load_env_class(env_id), kwargs, owner=env_id)


def check_kwargs(fn: Callable[..., Any], kwargs: Mapping[str, Any], *, owner: str) -> None:
    """Raise ``ConfigError`` for a keyword argument ``fn`` does not take, or a value its annotation rejects.

    The check is the signature's, so every env gets it without declaring a schema.
    Types are checked as a config file or JSON gives them: ``bool`` is not an
    ``int``, an ``int`` is a ``float``, a list passes for a tuple, ``str`` for a
    path; containers are checked as containers (not their items); an annotation
    it cannot read accepts anything (the env's own checks still apply).

    >>> def f(*, topk: int = 3): ...
    >>> check_kwargs(f, {"topk": "3"}, owner="f")
    Traceback (most recent call last):
    agentgym.errors.ConfigError: f: topk must be int, got '3' (str). Pass it unquoted: topk=3.
    """
    params, open_ended, hints = _parameters(fn)
    if not open_ended:
        check_kwarg_names(kwargs, params, owner=owner)
    for name, value in kwargs.items():
        hint = hints.get(name, Any)
        if not _matches(value, hint):
            raise ConfigError(_type_message(owner, name, value, hint))


def check_kwarg_names(names: Iterable[str], accepted: Iterable[str], *, owner: str) -> None:
    """Raise ``ConfigError`` naming each of ``names`` not ``accepted`` (with a did-you-mean) and listing those."""
    accepted = sorted(accepted)
    unknown = sorted(set(names) - set(accepted))
    if not unknown:
        return
    guesses = {name: difflib.get_close_matches(name, accepted, n=1, cutoff=0.6) for name in unknown}
    if len(unknown) == 1:
        message = f"{owner}: unknown keyword argument {unknown[0]!r}."
        message += f" Did you mean {guesses[unknown[0]][0]!r}?" if guesses[unknown[0]] else ""
    else:
        named = ", ".join(f"{n!r} (did you mean {guesses[n][0]!r}?)" if guesses[n] else repr(n) for n in unknown)
        message = f"{owner}: unknown keyword arguments {named}."
    raise ConfigError(message + f" Accepted: {', '.join(accepted) or 'none'}.")


def _parameters(fn: Callable[..., Any]) -> tuple[dict[str, inspect.Parameter], bool, dict[str, Any]]:
    """Keyword parameters by name, whether ``**kwargs`` is taken, and the resolved annotations."""
    signature = inspect.signature(fn)
    keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = {n: p for n, p in signature.parameters.items() if p.kind in keyword}
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
    target = fn.__init__ if isinstance(fn, type) else fn
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # noqa: BLE001 - one unresolvable annotation: resolve the others one by one
        hints = {}
        namespace = getattr(target, "__globals__", {})
        for name, param in params.items():
            try:
                annotation = param.annotation
                hints[name] = eval(annotation, namespace) if isinstance(annotation, str) else annotation  # noqa: S307
            except Exception:  # noqa: BLE001 - unreadable: accept any value
                hints[name] = Any
    for name, param in params.items():  # a generated signature (AgentEnv's base arguments) carries its types
        if name not in hints and not isinstance(param.annotation, str):
            hints[name] = param.annotation
    return params, open_ended, {n: h for n, h in hints.items() if n in params}


def _matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` fits ``hint``, loosely for containers (see ``check_kwargs``)."""
    if hint is Any or hint is inspect.Parameter.empty or isinstance(hint, (str, typing.TypeVar)):
        return True
    if hint is None or hint is type(None):
        return value is None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Union or origin is types.UnionType:
        return any(_matches(value, arg) for arg in args)
    if origin is Literal:
        return any(value == arg and type(value) is type(arg) for arg in args)
    if origin is typing.Annotated:
        return _matches(value, args[0])
    target = origin or hint
    if target is bool:
        return isinstance(value, bool)
    if target is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if target is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if target in (tuple, list):  # JSON and YAML give lists
        return isinstance(value, (tuple, list))
    if target in (set, frozenset):
        return isinstance(value, (set, frozenset, tuple, list))
    if target is dict:
        return isinstance(value, Mapping)
    if isinstance(target, type) and (issubclass(target, PurePath) or target is os.PathLike):
        return isinstance(value, (str, os.PathLike))
    if target is collections.abc.Callable:
        return callable(value)
    if isinstance(target, type):
        return isinstance(value, target)
    return True


def _describe(hint: Any) -> str:
    """A type as a user writes it: ``int``, ``str | None``, ``'em' | 'f1'``, ``Sequence[str]``."""
    if hint is None or hint is type(None):
        return "None"
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Union or origin is types.UnionType:
        return " | ".join(_describe(arg) for arg in args)
    if origin is Literal:
        return " | ".join(repr(arg) for arg in args)
    if origin is typing.Annotated:
        return _describe(args[0])
    if hint is Ellipsis:
        return "..."
    name = getattr(origin or hint, "__name__", None) or str(hint).replace("typing.", "")
    return f"{name}[{', '.join(_describe(arg) for arg in args)}]" if args and origin is not None else name


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _choices(hint: Any) -> list[Any] | None:
    """The allowed values when ``hint`` is a ``Literal`` (optionally with None), else None."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return list(args)
    if origin is Union or origin is types.UnionType:
        parts = [[None] if arg is type(None) else _choices(arg) for arg in args]
        return None if any(part is None for part in parts) else [v for part in parts for v in part]
    return None


def _type_message(owner: str, name: str, value: Any, hint: Any) -> str:
    choices = _choices(hint)
    expected = f"one of {', '.join(repr(c) for c in choices)}" if choices is not None else _describe(hint)
    message = f"{owner}: {name} must be {expected}, got {_short(value)} ({type(value).__name__})."
    if isinstance(value, str):  # a number or a list given as text: say how to write it
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        if parsed is not value and _matches(parsed, hint):
            message += f" Pass it unquoted: {name}={value}."
    return message
