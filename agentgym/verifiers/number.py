r"""What counts as "a number written as a number" in a math answer, and its exact value.

Against a numeric gold (``70``, ``0.5``, ``\frac{3}{4}``) the math verifier wants
the value itself, not something that evaluates to it: ``27 + 43``, ``140/2``,
``38 46`` and ``27 + 43 + 0x`` all state 70 without being 70. This module reads
the forms that are the number itself, exactly (``fractions.Fraction``, no
sympy, linear in the text), and says what is wrong with anything else:

- an integer or decimal, signed, with thousands separators (``1,234``,
  ``1{,}234``): ``-12``, ``0.50``, ``.5``;
- a fraction in lowest terms with a denominator above 1: ``\frac{3}{4}``,
  ``\dfrac34``, ``-\frac{1}{2}``, ``3/4``;
- scientific notation: ``1.2\times10^{4}``, ``1.2 \cdot 10^{-3}``, ``1.2e4``,
  ``10^{-7}``;
- a percentage (``75%``, ``75\%``), degrees (``90^\circ``) and a unit in words
  (``5\text{ cm}``) after the number.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["HEDGE_WORDS", "NUMBER_WORDS", "QUALIFIERS", "NumberForm", "hedge_word", "read_number"]

# Words that qualify or add to a value: "3 but possibly four", "3 \\text{ (or maybe 4)}".
QUALIFIERS = frozenset("""
or nor either maybe possibly perhaps probably likely but unless except otherwise else if than approx approximately
about around roughly nearly almost circa ca not and plus minus between to through also alternatively instead
""".split())
NUMBER_WORDS = frozenset("""
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen
eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million billion half
third quarter
""".split())
HEDGE_WORDS = QUALIFIERS | NUMBER_WORDS
_MAX_EXPONENT = 400  # 10^400 is far past any gold; bigger exponents are not read (no huge integers)

_SIGN = r"[+-]?"
_INT = r"(?:\d{1,3}(?:,\d{3})+|\d+)"
_DECIMAL = rf"(?:{_INT}(?:\.\d+)?|\.\d+)"
_FRAC = rf"\\[dt]?frac(?P<num>\{{{_SIGN}{_INT}\}}|\d)(?P<den>\{{{_INT}\}}|\d)"
_SLASH = rf"(?P<snum>{_INT})/(?P<sden>{_INT})"
_POWER = r"10\^(?P<exp>\d|\{[+-]?\d+\})"
_SCIENTIFIC = (rf"(?:(?P<mant>{_DECIMAL})(?:\\times|\\cdot|\*|x))?{_POWER}"
               rf"|(?P<emant>{_DECIMAL})[eE](?P<eexp>{_SIGN}\d+)")
_VALUE = re.compile(rf"(?P<sign>{_SIGN})(?:{_FRAC}|{_SLASH}|{_SCIENTIFIC}|(?P<dec>{_DECIMAL}))")
_UNIT_TEXT = re.compile(r"\\(?:text|textrm|mathrm|mbox|textnormal)\{(?P<unit>[A-Za-z .]*)\}$")
_WRAPPER = re.compile(r"^\\(?:text|textrm|mathrm|mbox|textnormal|textbf|mathbf|boldsymbol)\{(?P<inner>[^{}]*)\}$")
_DEGREES = re.compile(r"\^\{?\\circ\}?$")
_PERCENT = re.compile(r"\\?%$")
_NOISE = re.compile(r"\\left|\\right|\\!|\{,\}")
# Two numbers side by side: "38 46", "27\;43", "27\quad 43".
_JUXTAPOSED = re.compile(r"\d(?:\s|~|\\[,;:> ]|\\q?quad(?![A-Za-z]))+[-+]?\.?\d")
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]+")


@dataclass(frozen=True)
class NumberForm:
    """A number as written: its exact ``value``, and whether a ``%`` followed it."""

    value: Fraction
    percent: bool = False


def hedge_word(text: str) -> str | None:
    """The first word of ``text`` (outside LaTeX commands) that hedges or adds a value, or None.

    >>> hedge_word("3 but possibly four"), hedge_word(r"5 \text{ cm}")
    ('but', None)
    """
    return next((w for w in _WORD.findall(text) if w.lower() in HEDGE_WORDS), None)


def _strip_suffixes(text: str) -> tuple[str, bool]:
    """The text without a trailing unit, degree sign or percent; and whether a percent was there."""
    percent = False
    for _ in range(3):  # "90^\circ \text{ north}", "5\% \text{ APR}"
        unit = _UNIT_TEXT.search(text)
        if unit is not None and unit.start() > 0 and hedge_word(unit.group("unit")) is None:
            text = text[:unit.start()].rstrip()
            continue
        if _DEGREES.search(text):
            text = _DEGREES.sub("", text).rstrip()
            continue
        if _PERCENT.search(text) and not percent:
            text, percent = _PERCENT.sub("", text).rstrip(), True
            continue
        break
    return text, percent


def _unwrap(text: str) -> str:
    r"""``{5}``, ``\text{5}``, ``\mathbf{5}`` -> ``5``."""
    while True:
        if text.startswith("{") and text.endswith("}") and "{" not in text[1:-1] and "}" not in text[1:-1]:
            text = text[1:-1].strip()
            continue
        wrapper = _WRAPPER.match(text)
        if wrapper is None:
            return text
        text = wrapper.group("inner").strip()


def _int(text: str) -> int:
    return int(text.strip("{}").replace(",", ""))


def read_number(text: str) -> tuple[NumberForm | None, str | None]:
    r"""``text`` read as one number: ``(form, None)``, or ``(None, why it is not one)``.

    >>> read_number(r"\frac{3}{4}")[0].value, read_number("1.2e4")[0].value
    (Fraction(3, 4), Fraction(12000, 1))
    >>> read_number("38 46")[1]
    'two numbers side by side'
    >>> read_number("140/2")[1]
    'a fraction not in lowest terms'
    >>> read_number("27 + 43")[1]
    'an expression, not a number'
    """
    if _JUXTAPOSED.search(text):
        return None, "two numbers side by side"
    text, percent = _strip_suffixes(_NOISE.sub("", text).strip())
    text = "".join(_unwrap(text).split())
    match = _VALUE.fullmatch(text)
    if match is None:
        return None, "an expression, not a number"
    sign = -1 if match.group("sign") == "-" else 1
    groups = match.groupdict()
    if groups["num"] is not None or groups["snum"] is not None:
        num = _int(groups["num"] if groups["num"] is not None else groups["snum"])
        den = _int(groups["den"] if groups["den"] is not None else groups["sden"])
        if den <= 1 or math.gcd(num, den) != 1:
            return None, "a fraction not in lowest terms" if den else "division by zero"
        value = Fraction(num, den)
    elif groups["exp"] is not None or groups["eexp"] is not None:
        exponent = int((groups["exp"] if groups["exp"] is not None else groups["eexp"]).strip("{}"))
        mantissa = groups["mant"] if groups["exp"] is not None else groups["emant"]
        if abs(exponent) > _MAX_EXPONENT:
            return None, f"an exponent beyond {_MAX_EXPONENT}"
        value = Fraction(mantissa.replace(",", "") if mantissa else 1) * Fraction(10) ** exponent
    else:
        value = Fraction(groups["dec"].replace(",", ""))
    return NumberForm(sign * value, percent), None
