r"""What counts as "a number written as a number" in a math answer, and its exact value.

Against a numeric gold (``70``, ``0.5``, ``\frac{3}{4}``) the math verifier wants
the value itself, not something that evaluates to it: ``27 + 43``, ``140/2``,
``38 46`` and ``27 + 43 + 0x`` all state 70 without being 70. This module reads
the forms that are the number itself, exactly (``fractions.Fraction``, no
sympy, linear in the text), and says what is wrong with anything else:

- an integer or decimal, signed, with thousands separators (``1,234``,
  ``1{,}234``): ``-12``, ``0.50``, ``.5``; a repeating decimal
  (``0.\overline{3}``, ``0.1\overline{6}``);
- a fraction in lowest terms with a denominator above 1: ``\frac{3}{4}``,
  ``\dfrac34``, ``-\frac{1}{2}``, ``3/4``; a mixed number (``1\frac{1}{2}``);
- scientific notation: ``1.2\times10^{4}``, ``1.2 \cdot 10^{-3}``, ``1.2e4``,
  ``10^{-7}``;
- a percentage (``75%``, ``75\%``), degrees (``90^\circ``, ``90 degrees``) and
  units after the number, plain or in ``\text{}`` (``5 cm``, ``5\,\text{cm}``,
  ``\text{5 apples}``). Words after a number are units only when every one is in
  ``UNITS``: "5 squared", "5 dozen" and "5 is wrong" are not 5.

A decimal with digits after its point (``0.333``, ``1.2e4``) is *inexact*: it
may be a rounding, and ``NumberForm.ulp`` is its last written place. Integers,
fractions, mixed numbers and repeating decimals are exact (``ulp`` is None).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["HEDGE_WORDS", "NUMBER_WORDS", "QUALIFIERS", "UNITS", "NumberForm", "answers_number", "hedge_word",
           "read_number"]

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
# Words that may follow a number without changing it: units of measure and money, and the things GSM8K-style
# problems count. Singular, lower case; a plural ("apples", "inches", "pennies") is read as its singular. Not
# here on purpose: words that change the value ("squared", "dozen", "factorial", "percent" is a percent sign).
UNITS = frozenset("""
mm cm dm m km nm um in inch ft foot feet yd yard mi mile meter metre millimeter millimetre centimeter centimetre
kilometer kilometre
ha acre hectare l liter litre ml milliliter millilitre gal gallon quart qt pint pt cup tablespoon tbsp teaspoon tsp
oz ounce fl cc
mg g gram kg kilogram lb lbs pound ton tonne
ms s sec second min minute h hr hour day week month year yr decade century
mph kph kmh rpm bpm hz khz mhz ghz w kw watt kwh volt v amp j joule cal calorie kcal n newton pa psi
b kb mb gb tb byte bit pixel px
degree deg radian rad celsius fahrenheit kelvin
dollar cent penny nickel dime quarter buck euro pound yen yuan rupee peso franc usd eur gbp apr apy point
unit item thing object piece part slice serving portion batch set pair group team row column
person people man men woman women child children kid adult boy girl baby student teacher worker employee player
member friend guest visitor customer family passenger
apple orange banana lemon lime pear peach plum cherry grape strawberry berry melon watermelon mango tomato potato
carrot onion egg cookie cupcake cake pie muffin brownie candy chocolate sweet donut doughnut sandwich pizza burger
biscuit cracker bagel loaf bread roll fruit vegetable nut seed bean grain
marble ball balloon bead block brick tile card sticker stamp coin bill note ticket toy doll game puzzle
book page chapter pencil pen crayon marker notebook paper sheet envelope letter word sentence question problem
song album movie photo picture
car truck bus bike bicycle wheel tire boat train plane trip lap mile step visit
dog cat fish bird chicken hen cow pig sheep goat horse duck rabbit mouse mice animal insect bug leg wing
tree flower plant rose tulip leaf
box bag bottle can jar cup glass plate bowl pack package carton crate basket bucket container
shirt sock shoe hat dress pant jean jacket glove
house room floor window door chair table desk bed time
""".split())
_UNIT_JOINERS = frozenset({"per", "square", "sq", "cubic", "cu", "a", "an"})  # "5 miles per hour", "5 square feet"
_DEGREE_WORDS = frozenset({"degree", "deg"})
_RELATIVE_TOLERANCE = Fraction(1, 10**9)  # only for an inexact gold
_MIN_DIGITS_SCALE = 10**9  # an inexact decimal for an exact gold it cannot write: at least 10 significant digits
_MAX_EXPONENT = 400  # 10^400 is far past any gold; bigger exponents are not read (no huge integers)
_MAX_UNIT_WORDS = 4

_SIGN = r"[+-]?"
_INT = r"(?:\d{1,3}(?:,\d{3})+|\d+)"
_DECIMAL = rf"(?:{_INT}(?:\.\d+)?|\.\d+)"
_FRAC = rf"(?P<whole>{_INT})?\\[dt]?frac(?P<num>\{{{_SIGN}{_INT}\}}|\d)(?P<den>\{{{_INT}\}}|\d)"
_SLASH = rf"(?P<snum>{_INT})/(?P<sden>{_INT})"
_REPEATING = r"(?P<rint>\d*)\.(?P<rfix>\d*)\\(?:overline|bar)(?P<rrep>\{\d+\}|\d)"
_POWER = r"10\^(?P<exp>\d|\{[+-]?\d+\})"
_SCIENTIFIC = (rf"(?:(?P<mant>{_DECIMAL})(?:\\times|\\cdot|\*|x))?{_POWER}"
               rf"|(?P<emant>{_DECIMAL})[eE](?P<eexp>{_SIGN}\d+)")
_VALUE = re.compile(rf"(?P<sign>{_SIGN})(?:{_FRAC}|{_SLASH}|{_REPEATING}|{_SCIENTIFIC}|(?P<dec>{_DECIMAL}))")
_TEXT_COMMAND = r"\\(?:text|textrm|mathrm|mbox|textnormal|operatorname)\s*"
_UNIT_POWER = r"(?:\^\{?[23]\}?)?"  # cm^2, \text{ m}^{3}
_TEX_UNIT = re.compile(rf"{_TEXT_COMMAND}\{{(?P<unit>[A-Za-z ./~]*)\}}{_UNIT_POWER}$")
_PLAIN_UNIT = re.compile(rf"(?<![\\A-Za-z])(?P<unit>[A-Za-z][A-Za-z ./]*){_UNIT_POWER}$")
_WRAPPER = re.compile(r"^\\(?:text|textrm|mathrm|mbox|textnormal|textbf|mathbf|boldsymbol)\{(?P<inner>[^{}]*)\}$")
_DEGREES = re.compile(r"(?:\^\{?\\circ\}?|\u00b0)$")
_PERCENT = re.compile(r"\\?%$")
_NOISE = re.compile(r"\\left|\\right|\\!|\{,\}")
_SPACING = re.compile(r"\\[,;: ]|\\q?quad(?![A-Za-z])|~|\s")
# Two numbers side by side: "38 46", "27\;43", "27\quad 43".
_JUXTAPOSED = re.compile(r"\d(?:\s|~|\\[,;:> ]|\\q?quad(?![A-Za-z]))+[-+]?\.?\d")
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]+")
_LETTERS = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class NumberForm:
    """A number as written: its exact ``value``; whether a ``%`` or a degree sign followed it; and for an
    inexact decimal (``0.333``) the unit of its last written place (``ulp``, 1/1000), None for an exact form."""

    value: Fraction
    percent: bool = False
    degrees: bool = False
    ulp: Fraction | None = None


def hedge_word(text: str) -> str | None:
    """The first word of ``text`` (outside LaTeX commands) that hedges or adds a value, or None.

    >>> hedge_word("3 but possibly four"), hedge_word(r"5 \text{ cm}")
    ('but', None)
    """
    return next((w for w in _WORD.findall(text) if w.lower() in HEDGE_WORDS), None)


def _singular(word: str) -> str:
    word = word.lower()
    if word in UNITS or word in _UNIT_JOINERS:
        return word
    for plural, singular in (("ies", "y"), ("ves", "f"), ("es", ""), ("s", "")):
        if word.endswith(plural) and word[:-len(plural)] + singular in UNITS:
            return word[:-len(plural)] + singular
    return word


def _units(text: str) -> tuple[bool, str | None]:
    """Whether the words of ``text`` are degrees, and the first word that is not a unit (None: all are)."""
    words = [_singular(w) for w in _LETTERS.findall(text)]
    if len(words) > _MAX_UNIT_WORDS:
        return False, words[_MAX_UNIT_WORDS]
    bad = next((w for w in words if w not in UNITS and w not in _UNIT_JOINERS), None)
    if bad is None and words and words[-1] in _UNIT_JOINERS:
        bad = words[-1]  # "5 square" is not a unit
    return bool(words) and set(words) <= _DEGREE_WORDS, bad


def _unwrap(text: str) -> str | None:
    r"""``{5}``, ``\text{5}``, ``\mathbf{5}`` -> ``5``; None when ``text`` is not wrapped."""
    if text.startswith("{") and text.endswith("}") and "{" not in text[1:-1] and "}" not in text[1:-1]:
        return text[1:-1].strip()
    wrapper = _WRAPPER.match(text)
    return None if wrapper is None else wrapper.group("inner").strip()


@dataclass
class _Reading:
    text: str
    percent: bool = False
    degrees: bool = False
    not_unit: str | None = None  # the first word after the number that is not a unit


def _strip_suffixes(reading: _Reading) -> _Reading:
    r"""Peel units, a degree sign and one percent off the end, and wrappers off the whole (``\text{5 apples}``)."""
    for _ in range(6):  # "90^\circ \text{ north}", "5\% \text{ APR}", "\text{5 apples}"
        text = reading.text
        unit = _TEX_UNIT.search(text) or _PLAIN_UNIT.search(text)
        if unit is not None and unit.start() > 0:
            degrees, bad = _units(unit.group("unit"))
            if bad is not None:  # the reason, if what is before the word reads as a number
                reading.text, reading.not_unit = text[:unit.start()].rstrip(), bad
                return reading
            reading.text, reading.degrees = text[:unit.start()].rstrip(), reading.degrees or degrees
        elif _DEGREES.search(text):
            reading.text, reading.degrees = _DEGREES.sub("", text).rstrip(), True
        elif _PERCENT.search(text) and not reading.percent:
            reading.text, reading.percent = _PERCENT.sub("", text).rstrip(), True
        elif (inner := _unwrap(text)) is not None:
            reading.text = inner
        else:
            break
    return reading


def _int(text: str) -> int:
    return int(text.strip("{}").replace(",", ""))


def _ulp(decimal: str | None) -> Fraction | None:
    """The last written place of a decimal with digits after its point (``0.50`` -> 1/100); None otherwise."""
    if decimal is None or "." not in decimal:
        return None
    return Fraction(1, 10 ** len(decimal.split(".", 1)[1]))


def _fraction(groups: dict[str, str | None]) -> tuple[Fraction | None, str | None]:
    num = _int(groups["num"] if groups["num"] is not None else groups["snum"])
    den = _int(groups["den"] if groups["den"] is not None else groups["sden"])
    if den <= 1 or math.gcd(num, den) != 1:
        return None, "a fraction not in lowest terms" if den else "division by zero"
    if groups["whole"] is None:
        return Fraction(num, den), None
    if not 0 < num < den:
        return None, "a mixed number whose fraction is not proper"
    return _int(groups["whole"]) + Fraction(num, den), None


def _repeating(groups: dict[str, str | None]) -> Fraction:
    """``a.b\\overline{c}``: a + (bc - b) / (10^len(b) (10^len(c) - 1))."""
    fixed, repeat = groups["rfix"] or "", groups["rrep"].strip("{}")
    tail = Fraction(int(fixed + repeat) - int(fixed or "0"), 10 ** len(fixed) * (10 ** len(repeat) - 1))
    return int(groups["rint"] or "0") + tail


def read_number(text: str) -> tuple[NumberForm | None, str | None]:
    r"""``text`` read as one number: ``(form, None)``, or ``(None, why it is not one)``.

    >>> read_number(r"\frac{3}{4}")[0].value, read_number("1.2e4")[0].value
    (Fraction(3, 4), Fraction(12000, 1))
    >>> read_number(r"1\frac{1}{2}")[0].value, read_number(r"0.\overline{3}")[0].value
    (Fraction(3, 2), Fraction(1, 3))
    >>> read_number(r"\text{5 apples}")[0].value, read_number("0.50")[0].ulp
    (Fraction(5, 1), Fraction(1, 100))
    >>> read_number("38 46")[1]
    'two numbers side by side'
    >>> read_number("140/2")[1]
    'a fraction not in lowest terms'
    >>> read_number("27 + 43")[1]
    'an expression, not a number'
    >>> read_number("5 dozen")[1]
    "a word after the number that is not a unit ('dozen')"
    """
    if _JUXTAPOSED.search(text):
        return None, "two numbers side by side"
    reading = _strip_suffixes(_Reading(_NOISE.sub("", text).strip()))
    match = _VALUE.fullmatch(_SPACING.sub("", reading.text))
    if match is None:
        return None, "an expression, not a number"
    if reading.not_unit is not None:
        return None, f"a word after the number that is not a unit ({reading.not_unit!r})"
    sign = -1 if match.group("sign") == "-" else 1
    groups = match.groupdict()
    ulp = None
    if groups["num"] is not None or groups["snum"] is not None:
        value, why = _fraction(groups)
        if value is None:
            return None, why
    elif groups["rrep"] is not None:
        value = _repeating(groups)
    elif groups["exp"] is not None or groups["eexp"] is not None:
        exponent = int((groups["exp"] if groups["exp"] is not None else groups["eexp"]).strip("{}"))
        mantissa = groups["mant"] if groups["exp"] is not None else groups["emant"]
        if abs(exponent) > _MAX_EXPONENT:
            return None, f"an exponent beyond {_MAX_EXPONENT}"
        scale = Fraction(10) ** exponent
        value = Fraction(mantissa.replace(",", "") if mantissa else 1) * scale
        mantissa_ulp = _ulp(mantissa)
        ulp = None if mantissa_ulp is None else mantissa_ulp * scale
    else:
        value, ulp = Fraction(groups["dec"].replace(",", "")), _ulp(groups["dec"])
    return NumberForm(sign * value, reading.percent, reading.degrees, ulp), None


def _equal(value: Fraction, ulp: Fraction | None, gold: NumberForm) -> bool:
    """``value`` (inexact when ``ulp`` is set) against ``gold``: see ``answers_number``."""
    if value == gold.value:
        return True
    if gold.ulp is not None:  # a decimal gold may itself be rounded
        return abs(value - gold.value) <= _RELATIVE_TOLERANCE * max(abs(value), abs(gold.value))
    if ulp is None:  # two exact numbers
        return False
    # A decimal for an exact gold it cannot write at its length (1/3): the gold rounded or truncated there.
    return ((gold.value / ulp).denominator != 1 and abs(value - gold.value) < ulp
            and abs(value) >= _MIN_DIGITS_SCALE * ulp)


def answers_number(answer: NumberForm, gold: NumberForm) -> bool:
    r"""Whether the number ``answer`` states the number ``gold``.

    Exact numbers compare exactly. An inexact decimal answers an exact gold when
    it equals it, or when the gold has no decimal that long (1/3) and the answer
    is the gold rounded or truncated at its last digit, with at least 10
    significant digits. Against an inexact (decimal) gold: a relative 1e-9.
    Percent: a gold written as ``p\%`` is answered by p%, p and p/100. Otherwise
    a percent answer has one reading, by the gold: p/100 for a gold from -1 to 1
    (a fraction), p for any other (a "what percent" question).

    >>> read = lambda text: read_number(text)[0]
    >>> answers_number(read("1000000000999"), read("1000000000000"))
    False
    >>> answers_number(read("0.3333333333"), read("1/3")), answers_number(read("0.333333"), read("1/3"))
    (True, False)
    >>> answers_number(read("75%"), read("0.75")), answers_number(read("75%"), read("75"))
    (True, True)
    >>> answers_number(read("0.5%"), read("0.5")), answers_number(read("0.5%"), read("0.005"))
    (False, True)
    """
    readings = [(answer.value, answer.ulp)]
    if gold.percent:
        if not answer.percent:  # a bare 0.75 for "75\%"
            readings.append((answer.value * 100, None if answer.ulp is None else answer.ulp * 100))
    elif answer.percent and abs(gold.value) <= 1:
        readings = [(answer.value / 100, None if answer.ulp is None else answer.ulp / 100)]
    return any(_equal(value, ulp, gold) for value, ulp in readings)
