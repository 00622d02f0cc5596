def test_keyword_order_does_not_matter():
    calls = []

    @memoize(LRUCache(8))
    def area(width, height):
        calls.append((width, height))
        return width * height

    assert area(width=2, height=3) == 6
    assert area(height=3, width=2) == 6
    assert len(calls) == 1
    assert make_key((), {"b": 2, "a": 1}) == make_key((), {"a": 1, "b": 2})
