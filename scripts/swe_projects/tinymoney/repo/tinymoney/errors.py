"""Exceptions raised by tinymoney."""


class MoneyError(Exception):
    """Base class of every tinymoney error."""


class UnknownCurrencyError(MoneyError, ValueError):
    """The currency code is not one tinymoney knows."""


class CurrencyMismatchError(MoneyError, ValueError):
    """Two amounts in different currencies were combined or compared."""
