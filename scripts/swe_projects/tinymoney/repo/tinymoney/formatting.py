"""Amounts as people write them: '$1,234.50', '-€0.99', '¥1,500', 'CHF 12.00', and back."""

from __future__ import annotations

import re
from decimal import Decimal

from tinymoney.currency import CURRENCIES, get_currency
from tinymoney.errors import CurrencyMismatchError
from tinymoney.money import Money

_AMOUNT_RE = re.compile(r"\d+(?:\.\d+)?")


def group_digits(digits: str, separator: str = ",") -> str:
    """``'1234567'`` -> ``'1,234,567'``."""
    groups = []
    while len(digits) > 3:
        groups.insert(0, digits[-3:])
        digits = digits[:-3]
    groups.insert(0, digits)
    return separator.join(groups)


def format_money(money: Money, *, symbol: bool = True, grouping: bool = True, decimal_point: str = ".",
                 thousands_sep: str = ",") -> str:
    """The amount rounded to its minor unit, with the currency symbol in front.

    A one-character symbol is written right before the digits (``$5.00``), a longer
    one with a space (``CHF 5.00``); a negative amount starts with a minus sign.
    """
    value = money.rounded().amount
    text = f"{abs(value):.{money.currency.exponent}f}"
    whole, _, fraction = text.partition(".")
    if grouping:
        whole = group_digits(whole, thousands_sep)
    body = whole + (decimal_point + fraction if fraction else "")
    sign = "-" if value < 0 else ""
    if not symbol:
        return sign + body
    mark = money.currency.symbol
    return f"{sign}{mark}{body}" if len(mark) == 1 else f"{sign}{mark} {body}"


def parse_money(text: str, currency: str | None = None) -> Money:
    """Read an amount written by ``format_money`` (default separators), or as ``'12.50 EUR'``.

    ``currency`` is used when the text names none, and must agree when it does.
    """
    rest = text.strip()
    negative = rest.startswith("-")
    rest = rest.lstrip("-").strip()
    code = None
    for cur in sorted(CURRENCIES.values(), key=lambda c: (-len(c.symbol), c.code)):
        if rest.startswith(cur.symbol):
            code, rest = cur.code, rest[len(cur.symbol):].strip()
            break
    else:
        head, _, tail = rest.rpartition(" ")
        if head and tail.isalpha():
            code, rest = get_currency(tail).code, head.strip()
    if currency is not None:
        wanted = get_currency(currency).code
        if code is not None and code != wanted:
            raise CurrencyMismatchError(f"{text!r} is in {code}, not {wanted}")
        code = wanted
    if code is None:
        raise ValueError(f"no currency in {text!r}; pass currency=...")
    digits = rest.replace(",", "")
    if not _AMOUNT_RE.fullmatch(digits):
        raise ValueError(f"not an amount: {text!r}")
    amount = Decimal(digits)
    return Money(-amount if negative else amount, code)
