import pytest

from ttlcache import FakeClock, TTLCache


def make(maxsize=8, ttl_s=10.0):
    clock = FakeClock()
    return TTLCache(maxsize, ttl_s, clock=clock), clock


def test_entries_live_until_they_expire():
    cache, clock = make()
    cache["a"] = 1
    clock.advance(5)
    assert cache["a"] == 1
    clock.advance(6)
    assert cache.get("a") is None
    with pytest.raises(KeyError):
        cache["a"]


def test_per_entry_lifetime():
    cache, clock = make()
    cache.set("short", 1, ttl_s=1)
    cache.set("long", 2)
    clock.advance(2)
    assert "short" not in cache and "long" in cache


def test_len_and_expire_drop_expired_entries():
    cache, clock = make()
    cache.set("a", 1, ttl_s=1)
    cache.set("b", 2, ttl_s=5)
    cache["c"] = 3
    clock.advance(3)
    assert len(cache) == 2
    clock.advance(3)
    assert cache.expire() == 1
    assert list(cache) == ["c"]


def test_ttl_remaining():
    cache, clock = make()
    cache["a"] = 1
    clock.advance(4)
    assert cache.ttl_remaining("a") == 6
    assert cache.ttl_remaining("missing") is None


def test_size_limit_still_applies():
    cache, _ = make(maxsize=2)
    cache["a"], cache["b"], cache["c"] = 1, 2, 3
    assert "a" not in cache and len(cache) == 2


def test_lifetime_must_be_positive():
    with pytest.raises(ValueError):
        TTLCache(ttl_s=0)
    cache, _ = make()
    with pytest.raises(ValueError):
        cache.set("a", 1, ttl_s=-1)


def test_clear():
    cache, _ = make()
    cache["a"] = 1
    cache.clear()
    assert len(cache) == 0


def test_get_or_set():
    cache, clock = make()
    made = []

    def factory():
        made.append(clock())
        return len(made)

    assert cache.get_or_set("a", factory) == 1
    assert cache.get_or_set("a", factory) == 1
    clock.advance(11)
    assert cache.get_or_set("a", factory, ttl_s=2) == 2
    assert made == [0.0, 11.0]
