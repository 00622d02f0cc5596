"""tinymoney: exact money amounts in ISO 4217 currencies, allocation and formatting."""

from tinymoney.allocate import allocate, split_evenly
from tinymoney.currency import CURRENCIES, Currency, get_currency
from tinymoney.errors import CurrencyMismatchError, MoneyError, UnknownCurrencyError
from tinymoney.exchange import ExchangeRates
from tinymoney.formatting import format_money, parse_money
from tinymoney.money import Money

__all__ = ["CURRENCIES", "Currency", "CurrencyMismatchError", "ExchangeRates", "Money", "MoneyError",
           "UnknownCurrencyError", "allocate", "format_money", "get_currency", "parse_money", "split_evenly"]
__version__ = "0.9"
