"""Money: an exact Decimal amount in one currency."""

from __future__ import annotations

import functools
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from tinymoney.currency import Currency, get_currency
from tinymoney.errors import CurrencyMismatchError


@functools.total_ordering
class Money:
    """An amount of one currency, kept exact (``Decimal``) until it is rounded.

    >>> Money("19.99", "EUR") + Money("0.01", "EUR")
    Money('20.00', 'EUR')
    """

    __slots__ = ("amount", "currency")

    def __init__(self, amount: str | int | Decimal, currency: str | Currency = "USD") -> None:
        if isinstance(amount, float):
            raise TypeError("Money amounts must be str, int or Decimal: floats are inexact")
        try:
            self.amount = Decimal(amount)
        except (InvalidOperation, TypeError, ValueError):
            raise ValueError(f"not an amount: {amount!r}") from None
        if not self.amount.is_finite():
            raise ValueError(f"not a finite amount: {amount!r}")
        self.currency = get_currency(currency)

    @classmethod
    def from_minor(cls, units: int, currency: str | Currency = "USD") -> Money:
        """An amount given in minor units: ``Money.from_minor(1999)`` is $19.99."""
        cur = get_currency(currency)
        return cls(Decimal(units).scaleb(-cur.exponent), cur)

    def to_minor(self) -> int:
        """The rounded amount in minor units: cents for USD, yen for JPY, fils for KWD."""
        return int(self.rounded().amount.scaleb(self.currency.exponent))

    def rounded(self, rounding: str = ROUND_HALF_UP) -> Money:
        """Rounded to the currency's minor unit; ties go away from zero unless ``rounding`` says otherwise."""
        return Money(self.amount.quantize(self.currency.quantum, rounding=rounding), self.currency)

    def _check_currency(self, other: Money) -> None:
        if other.currency != self.currency:
            raise CurrencyMismatchError(f"cannot combine {self.currency.code} with {other.currency.code}")

    def __add__(self, other: object) -> Money:
        if not isinstance(other, Money):
            return NotImplemented
        self._check_currency(other)
        return Money(self.amount + other.amount, self.currency)

    def __radd__(self, other: object) -> Money:
        """Lets ``sum()``, which starts from the integer 0, add up Money values."""
        if isinstance(other, int) and other == 0:
            return Money(self.amount, self.currency)
        return self.__add__(other)

    def __sub__(self, other: object) -> Money:
        if not isinstance(other, Money):
            return NotImplemented
        self._check_currency(other)
        return Money(self.amount - other.amount, self.currency)

    def __mul__(self, factor: object) -> Money:
        if isinstance(factor, float):
            raise TypeError("multiply Money by an int or a Decimal, not a float")
        if not isinstance(factor, (int, Decimal)):
            return NotImplemented
        return Money(self.amount * factor, self.currency)

    __rmul__ = __mul__

    def __neg__(self) -> Money:
        return Money(-self.amount, self.currency)

    def __abs__(self) -> Money:
        return Money(abs(self.amount), self.currency)

    def __bool__(self) -> bool:
        return bool(self.amount)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Money):
            return NotImplemented
        return self.currency == other.currency and self.amount == other.amount

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Money):
            return NotImplemented
        self._check_currency(other)
        return self.amount < other.amount

    def __hash__(self) -> int:
        return hash((self.amount, self.currency.code))

    def __repr__(self) -> str:
        return f"Money({str(self.amount)!r}, {self.currency.code!r})"

    def __str__(self) -> str:
        return f"{self.amount} {self.currency.code}"
