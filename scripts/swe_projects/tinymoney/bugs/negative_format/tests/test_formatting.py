def test_negative_amounts_start_with_the_sign():
    assert format_money(Money("-1234.5")) == "-$1,234.50"
    assert format_money(Money("-12", "CHF")) == "-CHF 12.00"
    assert parse_money(format_money(Money("-0.99", "EUR"))) == Money("-0.99", "EUR")
