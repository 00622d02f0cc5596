"""Currency conversion with rates quoted against one base currency."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from tinymoney.currency import Currency, get_currency
from tinymoney.errors import UnknownCurrencyError
from tinymoney.money import Money


class ExchangeRates:
    """A rate table: one unit of ``base`` buys ``rates[code]`` units of ``code``.

    Conversions between two other currencies go through the base (cross rates).

    >>> rates = ExchangeRates("USD", {"EUR": "0.92", "JPY": "150"})
    >>> rates.convert(Money("10.00", "EUR"), "JPY")
    Money('1630', 'JPY')
    """

    def __init__(self, base: str | Currency, rates: Mapping[str, str | int | Decimal]) -> None:
        self.base = get_currency(base)
        self._rates = {self.base.code: Decimal(1)}
        for code, rate in rates.items():
            if isinstance(rate, float):
                raise TypeError(f"give the rate for {code} as a str or Decimal, not a float")
            value = Decimal(rate)
            if not value > 0:
                raise ValueError(f"the rate for {code} must be positive, not {rate}")
            self._rates[get_currency(code).code] = value

    def rate(self, source: str | Currency, target: str | Currency) -> Decimal:
        """How many units of ``target`` one unit of ``source`` buys."""
        return self._rate_of(target) / self._rate_of(source)

    def convert(self, money: Money, target: str | Currency, *, rounded: bool = True) -> Money:
        """``money`` in ``target``, rounded to its minor unit unless ``rounded=False``."""
        converted = Money(money.amount * self.rate(money.currency, target), target)
        return converted.rounded() if rounded else converted

    def _rate_of(self, currency: str | Currency) -> Decimal:
        code = get_currency(currency).code
        try:
            return self._rates[code]
        except KeyError:
            raise UnknownCurrencyError(f"no exchange rate for {code} (base {self.base.code})") from None
