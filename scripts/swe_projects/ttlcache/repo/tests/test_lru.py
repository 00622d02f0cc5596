import pytest

from ttlcache import CacheInfo, LRUCache


def test_set_and_get():
    cache = LRUCache(2)
    cache["a"] = 1
    assert cache["a"] == 1
    assert cache.get("missing", "default") == "default"
    with pytest.raises(KeyError):
        cache["missing"]


def test_oldest_entry_is_evicted():
    cache = LRUCache(2)
    cache["a"], cache["b"], cache["c"] = 1, 2, 3
    assert list(cache) == ["b", "c"]


def test_storing_again_refreshes_an_entry():
    cache = LRUCache(2)
    cache["a"], cache["b"] = 1, 2
    cache["a"] = 10
    cache["c"] = 3
    assert "b" not in cache
    assert cache.peek("a") == 10


def test_peek_and_contains_do_not_count():
    cache = LRUCache(2)
    cache["a"] = 1
    assert cache.peek("a") == 1 and "a" in cache
    assert cache.info() == CacheInfo(hits=0, misses=0, maxsize=2, currsize=1)


def test_hits_and_misses():
    cache = LRUCache(4)
    assert cache.info().hit_rate == 0.0
    cache["a"] = 1
    cache.get("a")
    cache.get("b")
    cache.get("c")
    cache.get("d")
    assert (cache.hits, cache.misses) == (1, 3)
    assert cache.info().hit_rate == 0.25


def test_resize_evicts_the_oldest_entries():
    calls = []
    cache = LRUCache(4, on_evict=lambda *args: calls.append(args))
    cache["a"], cache["b"], cache["c"] = 1, 2, 3
    cache.resize(1)
    assert list(cache) == ["c"] and len(calls) == 2
    with pytest.raises(ValueError):
        cache.resize(-1)


def test_delete_and_pop():
    cache = LRUCache(4)
    cache["a"], cache["b"] = 1, 2
    del cache["a"]
    assert cache.pop("b") == 2
    assert cache.pop("b", None) is None
    with pytest.raises(KeyError):
        cache.pop("b")
    assert len(cache) == 0


def test_clear_resets_statistics():
    cache = LRUCache(4)
    cache["a"] = 1
    cache.get("a")
    cache.clear()
    assert cache.info() == CacheInfo(0, 0, 4, 0)


def test_zero_maxsize_stores_nothing():
    cache = LRUCache(0)
    cache["a"] = 1
    assert "a" not in cache and len(cache) == 0


def test_negative_maxsize_is_rejected():
    with pytest.raises(ValueError, match="maxsize"):
        LRUCache(-1)


def test_on_evict_is_called_once_per_eviction():
    calls = []
    cache = LRUCache(1, on_evict=lambda *args: calls.append(args))
    cache["a"], cache["b"], cache["c"] = 1, 2, 3
    assert len(calls) == 2


def test_on_evict_is_not_called_for_deletes():
    calls = []
    cache = LRUCache(3, on_evict=lambda *args: calls.append(args))
    cache["a"], cache["b"] = 1, 2
    del cache["a"]
    cache.pop("b")
    cache["c"] = 3
    cache.clear()
    assert calls == []
