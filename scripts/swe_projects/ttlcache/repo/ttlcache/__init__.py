"""ttlcache: an LRU cache, a TTL cache on top of it, and a memoize decorator."""

from ttlcache.clock import FakeClock, monotonic
from ttlcache.lru import CacheInfo, LRUCache
from ttlcache.memo import make_key, memoize
from ttlcache.ttl import TTLCache

__all__ = ["CacheInfo", "FakeClock", "LRUCache", "TTLCache", "make_key", "memoize", "monotonic"]
__version__ = "1.1"
