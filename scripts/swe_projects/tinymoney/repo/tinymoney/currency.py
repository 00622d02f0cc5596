"""ISO 4217 currencies and their minor units."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from tinymoney.errors import UnknownCurrencyError


@dataclass(frozen=True)
class Currency:
    """A currency: its code, how many digits its minor unit has, and its symbol."""

    code: str
    exponent: int  # digits after the decimal point: 2 for USD (cents), 0 for JPY, 3 for KWD (fils)
    symbol: str
    name: str

    @property
    def quantum(self) -> Decimal:
        """The smallest amount, e.g. ``Decimal('0.01')`` for a currency with cents."""
        return Decimal(1).scaleb(-self.exponent)


CURRENCIES = {currency.code: currency for currency in (
    Currency("CHF", 2, "CHF", "Swiss franc"),
    Currency("EUR", 2, "€", "Euro"),
    Currency("GBP", 2, "£", "Pound sterling"),
    Currency("JPY", 0, "¥", "Japanese yen"),
    Currency("KWD", 3, "KD", "Kuwaiti dinar"),
    Currency("USD", 2, "$", "US dollar"),
)}


def get_currency(code: str | Currency) -> Currency:
    """The Currency for an ISO code (any letter case); a Currency is returned as is."""
    if isinstance(code, Currency):
        return code
    try:
        return CURRENCIES[code.upper()]
    except (KeyError, AttributeError):
        raise UnknownCurrencyError(f"unknown currency {code!r}; known: {', '.join(CURRENCIES)}") from None
