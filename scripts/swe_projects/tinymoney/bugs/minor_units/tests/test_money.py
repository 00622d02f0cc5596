def test_to_minor_uses_the_currency_exponent():
    assert Money("500", "JPY").to_minor() == 500
    assert Money("1.234", "KWD").to_minor() == 1234
