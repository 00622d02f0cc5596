def test_reading_an_entry_protects_it_from_eviction():
    cache = LRUCache(2)
    cache["a"], cache["b"] = 1, 2
    assert cache["a"] == 1
    cache["c"] = 3
    assert "a" in cache and "b" not in cache
    assert list(cache) == ["a", "c"]
