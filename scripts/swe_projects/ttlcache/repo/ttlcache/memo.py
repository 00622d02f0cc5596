"""The ``memoize`` decorator: cache a function's results by its arguments."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any

from ttlcache.lru import LRUCache

_MISSING: Any = object()


class _KeywordMark:
    """Separates positional from keyword arguments in a key (one shared instance)."""

    def __repr__(self) -> str:
        return "<kwargs>"


_KWARGS = _KeywordMark()


def make_key(args: tuple, kwargs: dict[str, Any], *, typed: bool = False) -> Hashable:
    """A hashable key for a call; the order of keyword arguments does not matter.

    >>> make_key((1,), {"b": 2, "a": 1}) == make_key((1,), {"a": 1, "b": 2})
    True
    """
    key: tuple = args
    if kwargs:
        key += (_KWARGS, *sorted(kwargs.items()))
    if typed:
        key += tuple(type(arg) for arg in args)
        key += tuple(type(value) for _, value in sorted(kwargs.items()))
    return key


def memoize(cache: LRUCache | None = None, *, typed: bool = False) -> Callable[[Callable], Callable]:
    """Decorator caching results in ``cache``; when it is omitted, each function gets its own ``LRUCache(128)``.

    Any object with ``get(key, default)``, ``cache[key] = value`` and ``clear()``
    works as a cache (a TTLCache, for instance). ``typed=True`` caches ``f(1)`` and
    ``f(1.0)`` separately. The wrapper has ``cache`` and ``cache_clear()`` attributes.
    """

    def decorate(func: Callable) -> Callable:
        store = LRUCache(128) if cache is None else cache

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = make_key(args, kwargs, typed=typed)
            result = store.get(key, _MISSING)
            if result is _MISSING:
                result = func(*args, **kwargs)
                store[key] = result
            return result

        wrapper.cache = store
        wrapper.cache_clear = store.clear
        return wrapper

    return decorate
