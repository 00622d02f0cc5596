def test_on_evict_receives_the_key_and_the_value():
    evicted = []
    cache = LRUCache(1, on_evict=lambda key, value: evicted.append((key, value)))
    cache["a"] = 1
    cache["b"] = 2
    assert evicted == [("a", 1)]
