def test_each_function_gets_its_own_default_cache():
    @memoize()
    def double(x):
        return 2 * x

    @memoize()
    def negate(x):
        return -x

    assert double(21) == 42
    assert negate(21) == -21
    assert double.cache is not negate.cache
