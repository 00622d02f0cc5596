def test_caret_with_zero_major_and_minor():
    assert satisfies("0.0.3", "^0.0.3")
    assert not satisfies("0.0.4", "^0.0.3")
    assert not satisfies("0.1.0", "^0.0.3")
    assert satisfies("0.0.9", "^0.0")
