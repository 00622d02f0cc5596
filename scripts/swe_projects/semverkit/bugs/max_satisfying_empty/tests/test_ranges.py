def test_max_satisfying_without_a_match():
    assert max_satisfying(["1.0.0", "1.1.0"], "^2.0.0") is None
    assert max_satisfying([], "*") is None
