def test_getlist_of_an_empty_value():
    assert parse("[a]\nnames =\n").getlist("a", "names") == []


def test_getlist_over_several_lines():
    config = parse("[a]\nnames =\n  alpha,\n  beta,\n")
    assert config.getlist("a", "names") == ["alpha", "beta"]
