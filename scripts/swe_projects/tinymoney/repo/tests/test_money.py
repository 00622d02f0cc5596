from decimal import ROUND_DOWN, Decimal

import pytest

from tinymoney import CurrencyMismatchError, Money


def test_amounts_are_exact():
    assert Money("0.1") + Money("0.2") == Money("0.3")


def test_float_amounts_are_rejected():
    with pytest.raises(TypeError, match="float"):
        Money(0.1)


def test_bad_amounts_are_rejected():
    for bad in ("abc", "", "NaN"):
        with pytest.raises(ValueError):
            Money(bad)


def test_currencies_do_not_mix():
    with pytest.raises(CurrencyMismatchError):
        Money("1", "USD") + Money("1", "EUR")


def test_repr():
    assert repr(Money("19.99", "EUR") + Money("0.01", "EUR")) == "Money('20.00', 'EUR')"


def test_multiplication():
    assert Money("2.50") * 3 == Money("7.50")
    assert 3 * Money("2.50") == Money("7.50")
    assert Money("10") * Decimal("0.15") == Money("1.50")


def test_multiplying_money_by_money_is_an_error():
    with pytest.raises(TypeError):
        Money("2") * Money("3")
    with pytest.raises(TypeError, match="float"):
        Money("2") * 1.5


def test_rounding_to_the_minor_unit():
    assert Money("2.344").rounded() == Money("2.34")
    assert Money("2.346").rounded().amount == Decimal("2.35")
    assert Money("1499.4", "JPY").rounded() == Money("1499", "JPY")


def test_explicit_rounding_mode():
    assert Money("0.129").rounded(ROUND_DOWN) == Money("0.12")


def test_minor_units_of_dollars():
    assert Money.from_minor(1999) == Money("19.99")
    assert Money("19.99").to_minor() == 1999
    assert Money("-0.07").to_minor() == -7


def test_from_minor_uses_the_currency():
    assert Money.from_minor(500, "JPY") == Money("500", "JPY")
    assert Money.from_minor(1234, "KWD") == Money("1.234", "KWD")


def test_ordering():
    assert Money("1") < Money("2") <= Money("2")
    assert max(Money("3"), Money("10"), Money("7")) == Money("10")


def test_comparing_across_currencies_raises():
    with pytest.raises(CurrencyMismatchError):
        sorted([Money("1", "USD"), Money("2", "GBP")])
    assert Money("1", "USD") != Money("1", "GBP")


def test_negation_and_abs():
    assert -Money("2.50") == Money("-2.50")
    assert abs(Money("-2.50")) == Money("2.50")
    assert not Money("0.00")


def test_equal_amounts_hash_alike():
    assert hash(Money("1.0")) == hash(Money("1.00"))
    assert len({Money("1.0"), Money("1.00"), Money("1", "EUR")}) == 2


def test_sum_with_a_money_start():
    assert sum([Money("1.25"), Money("2.50")], Money("0")) == Money("3.75")
