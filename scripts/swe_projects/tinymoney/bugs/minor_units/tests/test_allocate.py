def test_allocate_yen():
    assert allocate(Money("1000", "JPY"), [1, 1, 1]) == [Money("334", "JPY"), Money("333", "JPY"),
                                                        Money("333", "JPY")]
