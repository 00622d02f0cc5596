from decimal import Decimal

import pytest

from tinymoney import CURRENCIES, UnknownCurrencyError, get_currency


def test_lookup_ignores_letter_case():
    assert get_currency("eur") is CURRENCIES["EUR"]


def test_unknown_code_raises():
    with pytest.raises(UnknownCurrencyError, match="XYZ"):
        get_currency("XYZ")


def test_quantum_follows_the_exponent():
    assert get_currency("USD").quantum == Decimal("0.01")
    assert get_currency("JPY").quantum == Decimal("1")
    assert get_currency("KWD").quantum == Decimal("0.001")


def test_a_currency_passes_through():
    usd = CURRENCIES["USD"]
    assert get_currency(usd) is usd
