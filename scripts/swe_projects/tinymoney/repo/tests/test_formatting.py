import pytest

from tinymoney import CurrencyMismatchError, Money, format_money, parse_money


def test_dollars():
    assert format_money(Money("1234.5")) == "$1,234.50"
    assert format_money(Money("1234567.891")) == "$1,234,567.89"
    assert format_money(Money("0.99")) == "$0.99"


def test_yen_has_no_decimals():
    assert format_money(Money("1500", "JPY")) == "¥1,500"


def test_long_symbols_get_a_space():
    assert format_money(Money("12", "CHF")) == "CHF 12.00"


def test_custom_separators():
    text = format_money(Money("1234.5", "EUR"), decimal_point=",", thousands_sep=".")
    assert text == "€1.234,50"


def test_without_symbol_or_grouping():
    assert format_money(Money("1234.5"), symbol=False, grouping=False) == "1234.50"


def test_parse_money():
    assert parse_money("$1,234.50") == Money("1234.50")
    assert parse_money("12.00 EUR") == Money("12", "EUR")
    assert parse_money("-€3.20") == Money("-3.20", "EUR")
    assert parse_money("42", currency="gbp") == Money("42", "GBP")


def test_parse_money_errors():
    with pytest.raises(ValueError, match="no currency"):
        parse_money("12.50")
    with pytest.raises(ValueError, match="not an amount"):
        parse_money("$12.5.0")
    with pytest.raises(CurrencyMismatchError):
        parse_money("$5", currency="EUR")


def test_round_trip():
    for money in (Money("1234.5"), Money("1500", "JPY"), Money("12", "CHF"), Money("0.99", "GBP")):
        assert parse_money(format_money(money)) == money
