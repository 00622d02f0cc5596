"""Read-only data that every env of a process shares: task sources, catalogs, retrievers, loaded once.

A server hosts many sessions of one env, and a trainer many copies: each would
otherwise parse the same files again. ``load_shared(load, *args)`` calls
``load(*args)`` once per distinct arguments and hands every later caller the
same object, so what it returns must never be changed by its users.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

__all__ = ["MAX_SHARED", "clear_shared", "load_shared"]

T = TypeVar("T")

MAX_SHARED = 32  # entries kept (least recently used dropped first): a process rarely loads more data sets
_LOADED: OrderedDict[Hashable, Any] = OrderedDict()
# Reentrant: a loader may itself share what it loads. Held while loading, so two envs made at once parse the
# files once, not twice.
_LOCK = threading.RLock()


def load_shared(load: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``load(*args, **kwargs)``, loaded once per process for these arguments and shared by every caller.

    Mappings, sequences and paths among the arguments are compared by value, so
    ``{"test": Path("t.jsonl")}`` and ``{"test": "t.jsonl"}`` share one load.

    >>> calls = []
    >>> def load(files):
    ...     calls.append(files)
    ...     return tuple(files)
    >>> load_shared(load, ["a.jsonl"]) is load_shared(load, ("a.jsonl",))
    True
    >>> calls
    [['a.jsonl']]
    """
    key = (load, _frozen(args), _frozen(kwargs))
    with _LOCK:
        if key in _LOADED:
            _LOADED.move_to_end(key)
            return _LOADED[key]
        value = load(*args, **kwargs)
        _LOADED[key] = value
        while len(_LOADED) > MAX_SHARED:
            _LOADED.popitem(last=False)
        return value


def clear_shared() -> None:
    """Forget everything loaded (the next ``load_shared`` reads the files again)."""
    with _LOCK:
        _LOADED.clear()


def _frozen(value: Any) -> Hashable:
    """``value`` as a hashable key that compares as the value does."""
    if isinstance(value, Mapping):
        return ("mapping", tuple(sorted((str(k), _frozen(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return ("sequence", tuple(_frozen(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted(repr(_frozen(v)) for v in value)))
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    hash(value)  # a TypeError here names the unhashable argument's type
    return value
