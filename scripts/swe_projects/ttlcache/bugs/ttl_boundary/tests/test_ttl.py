def test_entry_is_gone_at_exactly_its_expiry_time():
    cache, clock = make(ttl_s=10.0)
    cache["a"] = 1
    clock.advance(10)
    assert "a" not in cache
    assert cache.get("a") is None
    assert cache.ttl_remaining("a") is None
