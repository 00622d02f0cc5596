"""Keyword-argument checks against a signature: what ``gym.make``, ``agentgym serve`` and the Ray env hosts check an
env's kwargs with, without a schema of their own."""

from __future__ import annotations

import collections.abc
import difflib
import inspect
import json
import numbers
import os
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import PurePath
from typing import Any, Literal, Union

from agentgym.errors import ConfigError

__all__ = ["check_kwarg_names", "check_kwargs", "keyword_parameters"]


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


def keyword_parameters(fn: Callable[..., Any]) -> list[str]:
    """The names of the keyword parameters ``fn`` takes."""
    return sorted(_parameters(fn)[0])
