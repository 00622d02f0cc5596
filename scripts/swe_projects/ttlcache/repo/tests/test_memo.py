import pytest

from ttlcache import FakeClock, LRUCache, TTLCache, make_key, memoize


def test_results_are_cached():
    calls = []

    @memoize(LRUCache(8))
    def square(x):
        calls.append(x)
        return x * x

    assert [square(3), square(3), square(4)] == [9, 9, 16]
    assert calls == [3, 4]


def test_cache_clear():
    calls = []

    @memoize(LRUCache(8))
    def cube(x):
        calls.append(x)
        return x ** 3

    cube(2)
    cube.cache_clear()
    cube(2)
    assert calls == [2, 2]


def test_default_cache_is_an_lru_cache():
    @memoize()
    def identity(x):
        return x

    assert identity("default-cache-probe") == "default-cache-probe"
    assert isinstance(identity.cache, LRUCache) and identity.cache.maxsize == 128


def test_typed_keys():
    calls = []

    @memoize(LRUCache(8), typed=True)
    def half(x):
        calls.append(x)
        return x / 2

    half(1)
    half(1.0)
    assert len(calls) == 2


def test_make_key():
    assert make_key((1, 2), {}) == (1, 2)
    assert make_key((1,), {"a": 1}) != make_key((1, 1), {})
    assert make_key((1,), {}, typed=True) != make_key((1.0,), {}, typed=True)


def test_works_with_a_ttl_cache():
    clock = FakeClock()
    calls = []

    @memoize(TTLCache(8, 5.0, clock=clock))
    def load(name):
        calls.append(name)
        return name.upper()

    load("a")
    load("a")
    clock.advance(6)
    load("a")
    assert calls == ["a", "a"]


def test_unhashable_arguments_raise():
    @memoize(LRUCache(8))
    def total(items):
        return sum(items)

    with pytest.raises(TypeError):
        total([1, 2])
