"""A cache whose entries expire a fixed time after they were stored."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import Any

from ttlcache.clock import monotonic
from ttlcache.lru import LRUCache

_MISSING: Any = object()


class TTLCache:
    """An LRU-bounded cache whose entries also expire ``ttl_s`` seconds after being set.

    An entry set at time ``t`` is visible while ``clock() < t + ttl_s``; from
    ``t + ttl_s`` on it is gone. ``clock`` returns seconds (``time.monotonic`` by default).
    """

    def __init__(self, maxsize: int = 128, ttl_s: float = 60.0, *, clock: Callable[[], float] = monotonic) -> None:
        if ttl_s <= 0:
            raise ValueError(f"ttl_s must be positive, not {ttl_s}")
        self.ttl_s = ttl_s
        self._clock = clock
        self._lru = LRUCache(maxsize)

    def set(self, key: Hashable, value: Any, ttl_s: float | None = None) -> None:
        """Store ``value``; ``ttl_s`` overrides the cache's lifetime for this entry."""
        lifetime = self.ttl_s if ttl_s is None else ttl_s
        if lifetime <= 0:
            raise ValueError(f"ttl_s must be positive, not {lifetime}")
        self._lru[key] = (self._clock() + lifetime, value)

    def __setitem__(self, key: Hashable, value: Any) -> None:
        self.set(key, value)

    def get_or_set(self, key: Hashable, factory: Callable[[], Any], ttl_s: float | None = None) -> Any:
        """The live value for ``key``; when there is none, ``factory()`` is stored and returned."""
        value = self.get(key, _MISSING)
        if value is _MISSING:
            value = factory()
            self.set(key, value, ttl_s)
        return value

    def _is_expired(self, expires_at: float) -> bool:
        return self._clock() >= expires_at

    def get(self, key: Hashable, default: Any = None) -> Any:
        entry = self._lru.get(key, _MISSING)
        if entry is _MISSING:
            return default
        expires_at, value = entry
        if self._is_expired(expires_at):
            del self._lru[key]
            return default
        return value

    def __getitem__(self, key: Hashable) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        entry = self._lru.peek(key, _MISSING)
        return entry is not _MISSING and not self._is_expired(entry[0])

    def ttl_remaining(self, key: Hashable) -> float | None:
        """Seconds until ``key`` expires, or None if it is missing or expired."""
        entry = self._lru.peek(key, _MISSING)
        if entry is _MISSING or self._is_expired(entry[0]):
            return None
        return entry[0] - self._clock()

    def expire(self) -> int:
        """Drop every expired entry now; returns how many were dropped."""
        expired = [key for key in self._lru if self._is_expired(self._lru.peek(key)[0])]
        for key in expired:
            del self._lru[key]
        return len(expired)

    def __len__(self) -> int:
        """The number of live entries (expired ones are dropped first)."""
        self.expire()
        return len(self._lru)

    def __iter__(self) -> Iterator[Hashable]:
        self.expire()
        return iter(self._lru)

    def clear(self) -> None:
        self._lru.clear()
