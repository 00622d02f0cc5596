from decimal import Decimal

import pytest

from tinymoney import ExchangeRates, Money, UnknownCurrencyError

RATES = ExchangeRates("USD", {"EUR": "0.92", "JPY": "150", "GBP": Decimal("0.8")})


def test_direct_and_cross_rates():
    assert RATES.rate("USD", "EUR") == Decimal("0.92")
    assert RATES.rate("GBP", "JPY") == Decimal("187.5")
    assert RATES.rate("EUR", "EUR") == 1


def test_convert_rounds_to_the_target_currency():
    assert RATES.convert(Money("10.00", "EUR"), "JPY") == Money("1630", "JPY")
    assert RATES.convert(Money("3", "USD"), "GBP") == Money("2.40", "GBP")
    assert RATES.convert(Money("1", "EUR"), "USD", rounded=False).amount > Decimal("1.0869")


def test_bad_rates():
    with pytest.raises(UnknownCurrencyError, match="CHF"):
        RATES.convert(Money("1", "CHF"), "USD")
    with pytest.raises(ValueError, match="positive"):
        ExchangeRates("USD", {"EUR": "0"})
    with pytest.raises(TypeError):
        ExchangeRates("USD", {"EUR": 0.92})
