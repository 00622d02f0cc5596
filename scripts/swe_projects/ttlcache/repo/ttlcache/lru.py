"""A size-bounded mapping that evicts the least recently used entry."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any, NamedTuple

_MISSING: Any = object()


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    maxsize: int
    currsize: int

    @property
    def hit_rate(self) -> float:
        """Hits per lookup, 0.0 before the first lookup."""
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else 0.0


class LRUCache:
    """At most ``maxsize`` entries; storing one more evicts the least recently used one.

    Reading an entry (``get``, ``cache[key]``) or storing it makes it the most
    recently used; ``peek`` and ``in`` do not. ``on_evict(key, value)`` is called
    for each entry pushed out by the size limit (not for ``del``, ``pop`` or ``clear``).
    """

    def __init__(self, maxsize: int = 128, *, on_evict: Callable[[Hashable, Any], None] | None = None) -> None:
        if maxsize < 0:
            raise ValueError(f"maxsize must be >= 0, not {maxsize}")
        self.maxsize = maxsize
        self.on_evict = on_evict
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value for ``key`` (which becomes the most recently used), or ``default``."""
        if key not in self._data:
            self.misses += 1
            return default
        self.hits += 1
        self._data.move_to_end(key)
        return self._data[key]

    def peek(self, key: Hashable, default: Any = None) -> Any:
        """The value for ``key``, without counting a hit or changing the order."""
        return self._data.get(key, default)

    def __getitem__(self, key: Hashable) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: Hashable, value: Any) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        self._evict_overflow()

    def resize(self, maxsize: int) -> None:
        """Change the size limit, evicting the least recently used entries that no longer fit."""
        if maxsize < 0:
            raise ValueError(f"maxsize must be >= 0, not {maxsize}")
        self.maxsize = maxsize
        self._evict_overflow()

    def _evict_overflow(self) -> None:
        while len(self._data) > self.maxsize:
            old_key, old_value = self._data.popitem(last=False)
            if self.on_evict is not None:
                self.on_evict(old_key, old_value)

    def __delitem__(self, key: Hashable) -> None:
        del self._data[key]

    def pop(self, key: Hashable, default: Any = _MISSING) -> Any:
        if default is _MISSING:
            return self._data.pop(key)
        return self._data.pop(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[Hashable]:
        """Keys from the least to the most recently used."""
        return iter(list(self._data))

    def clear(self) -> None:
        """Drop every entry and reset the statistics."""
        self._data.clear()
        self.hits = self.misses = 0

    def info(self) -> CacheInfo:
        return CacheInfo(self.hits, self.misses, self.maxsize, len(self._data))
