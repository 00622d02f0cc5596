r"""Math verifier: is a model's final answer mathematically equal to the gold answer?

The comparison is Hugging Face's ``math-verify`` (LaTeX to sympy, then numeric
and symbolic equality), fenced so that one answer cannot hedge or hang it:

- Only one answer is read. If the prediction has ``\boxed{}`` (or ``\fbox{}``),
  the answer is the content of the last one, and every box must hold the same
  text: ``\boxed{3}\boxed{5}`` fails. A box without braces holds what follows it
  up to a space or ``$`` (``\boxed 2``). Otherwise the whole prediction is the answer.
  math-verify's own extraction is not used on the raw text: it takes the last
  number it finds, so it would read "3 or 5" as 5.
- The answer is parsed as one expression. A list ("3, 4, 5", "3 or 5",
  "x = 3, 5", ``3 \pm 2``) parses to a set and fails against a single-value gold;
  against a set, tuple or interval gold it is compared as a whole.
- Percent: a percent answer has one reading per gold. Against a gold from -1
  to 1 (a fraction, a probability) "p%" is p/100: "75%" answers 0.75 and 3/4,
  "0.5%" answers 0.005 and not 0.5. Against any other gold it is p, a GSM8K
  "what percent" answer: "75%" answers 75, "7.5%" does not. A gold written
  with a percent sign ("75\%") is answered by 75%, 75 and 0.75. A bare number is
  taken at face value: 75 does not answer 0.75, nor 0.75 75.
- Plain-text clean-up first: ``$`` and ``\$``, ``\(``/``\[`` delimiters, a code
  span (`` `5` ``), an "Answer:" or "The final answer is" prefix, a trailing full
  stop and thousands separators (``1,234``, ``1\,234``, ``1 234``) are removed.
  Words after a number ("5 cm", ``5\,\text{cm}``, ``\text{5 apples}``) are units
  only when each is in ``agentgym.verifiers.number.UNITS``; any other word
  ("5 squared", "5 dozen", "5 is wrong") fails the answer.
- A number is answered with a number (``agentgym.verifiers.number``): against a
  numeric gold, the answer must be the value itself, read exactly: an integer,
  a decimal, a fraction in lowest terms, a mixed number (``1\frac{1}{2}``), a
  repeating decimal (``0.\overline{3}``), scientific notation, a percentage.
  Unevaluated expressions ("27 + 43" for 70 restates the question; GRPO on
  two-number sums learned exactly that echo in 20 steps), juxtaposed numbers
  ("38 46", ``27\;43``), free symbols that cancel ("27 + 43 + 0x"), fractions
  not in lowest terms (``\frac{140}{2}``), hedges after the value ("3 but
  possibly four", ``3 \approx 4``) and numbers in words all fail. An equation
  states its number side, so "27 + 43 = 70" and "70 = 27 + 43" answer 70; its
  other sides, where they have no variables, must equal it ("70 = 27 + 44"
  fails). A box inside a box is content of the outer one.
- Exact numbers compare exactly: integers, fractions, mixed numbers and
  repeating decimals (1000000000999 is not 1000000000000). A decimal with
  digits after its point is inexact (it may be rounded): against an exact gold
  it must equal it or, where the gold has no decimal expansion that short
  (1/3), be the gold rounded or truncated at its last digit with at least 10
  significant digits (0.3333333333; not 0.333333). Only an inexact gold (a
  decimal such as 0.000001, or a value with no exact form: pi, ``\sqrt{2}``) is
  matched to a relative 1e-9: 0.0000014 is not 0.000001, 3.141593 is not pi.
- Degrees: ``90^\circ`` answers 90, and against a gold with no rational value
  it is read in radians: ``90^\circ`` answers ``\frac{\pi}{2}``.
- Brackets matter: a set (``\{1, 2\}``) does not answer a tuple or an interval
  (``(1, 2)``, ``[1, 2]``) nor the other way round; a bare list ("1, 2") answers a set.
- Never raises for a prediction: an internal error scores 0 with the reason
  ("verifier error: ...") in ``details``. A gold that cannot be used raises
  ``VerifierError`` (the task data's fault, not the agent's).
- Bounded and budgeted: math-verify's own timeouts are ``signal.alarm`` based,
  so they fail off the main thread (the env server scores in worker threads),
  clobber a host's own SIGALRM and cannot interrupt C-level big-integer
  arithmetic. Instead every input is bounded before sympy evaluates anything
  (at most 1,000 characters and 8 levels of brackets, no sub-expression that
  could exceed 10**10000: ``10^{10^{10}}``, ``1000000!``), plain expressions
  that differ at a fixed sample point are rejected before math-verify's
  ``simplify``, and the verification runs in a verifier worker under a time
  budget (``agentgym.verifiers.budget``): past it, the answer scores 0 with
  reason "verifier time budget exceeded".
- In process where sympy is not needed: against a gold that is a plain number
  (``70``, ``-3``, ``0.75``), a prediction of at most 200 ASCII characters is
  scored in the calling process when its verdict comes from the number reader
  alone (``_verify_here``), with the same functions and so the same verdict as
  the worker's; anything else, or anything that would reach sympy, goes to the
  worker.
"""

from __future__ import annotations

import dataclasses
import fractions
import functools
import importlib.util
import logging
import math
import re
import sys
import unicodedata
from collections.abc import Mapping
from typing import Any

from agentgym.errors import DependencyNotInstalled, VerifierError
from agentgym.verifiers.budget import run_budgeted
from agentgym.verifiers.number import NUMBER_WORDS, NumberForm, answers_number, hedge_word, read_number
from agentgym.verifiers.score import Score
from agentgym.verifiers.sympy_bounds import clearly_different as _clearly_different
from agentgym.verifiers.sympy_bounds import is_safe as _is_safe

__all__ = ["extract_boxed", "verify_math"]

_LOG = logging.getLogger(__name__)
_MAX_PREDICTION_CHARS = 100_000  # the raw prediction; bounds the regex work below
_MAX_ANSWER_CHARS = 1_000  # the extracted answer; ANTLR parsing is ~1 ms a character at worst
_MAX_NESTING = 8  # bracket depth; ANTLR's full-context prediction costs ~50 ms a level
_INSTALL = "pip install 'agentgym-suite[code]'"

_BOX = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
_UNICODE = str.maketrans({"\u2212": "-", "\u2013": "-", "\u00d7": r"\times ", "\u00f7": "/", "\u03c0": r"\pi ",
                          "\u221e": r"\infty ", "\u00b0": r"^\circ "})
_DELIMITERS = re.compile(r"\\\$|\$|\\[()\[\]]|\\displaystyle")
_PREFIX = re.compile(r"^(?:(?:so|thus|therefore|hence|the|my)[\s,]+)*(?:final\s+)?answer\b\s*(?:is\b|:|=)?\s*",
                     re.IGNORECASE)
_TRAILING = re.compile(r"(?<!\\)[\s.,;]+$")  # not "!": 5! is a factorial
_PERCENT_WORD = re.compile(r"\s*(?:percent|per\s*cent|pct)$", re.IGNORECASE)
_SPACE_THOUSANDS = re.compile(r"(?<=\d)(?:\\,|\\ |~| |\u00a0|\u202f|\u2009)(?=\d{3}(?!\d))")
_CODE_SPAN = re.compile(r"^(`{1,3})([^`]*)\1$")
_RELATIVE_TOLERANCE = fractions.Fraction(1, 10**9)
_SIDE_VARIABLE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]")  # a letter outside a LaTeX command: x, y, \text{cm}
_INTEGER_SUM = re.compile(r"\s*[-+]?\s*\d{1,50}(?:\s*[-+]\s*\d{1,50})*\s*")
_INTEGER_TERM = re.compile(r"[-+]?\s*\d+")
_LEFT_RIGHT = re.compile(r"\\(?:left|right|big|Big|bigg|Bigg)(?![A-Za-z])")
_SEVERAL = re.compile(r"(?<![\\{]),(?!\d{3}(?!\d))|(?<!\\);|\\(?:pm|mp)(?![A-Za-z])|\\(?:lor|vee)(?![A-Za-z])")
_LIST_WORDS = frozenset({"or", "and", "nor", "either"})
_INEQUALITY = re.compile(r"[<>]|!=|\\(?:le|ge|leq|geq|neq|ne|lt|gt|leqslant|geqslant)(?![A-Za-z])")
_APPROXIMATE = re.compile(r"\\(?:approx|sim|simeq|thickapprox|cong|propto)(?![A-Za-z])|\u2248")
# In process (see _verify_here): a gold that is a plain number, a prediction (and gold) of at most this many ASCII
# characters. ASCII: no NFKC or LaTeX-symbol expansion, so every step below is at most quadratic in 200 characters.
_IN_PROCESS_CHARS = 200
_PLAIN_NUMBER = re.compile(r"-?(?:0|[1-9]\d{0,14})(?:\.\d{1,15})?")


class _NeedsSympy(Exception):
    """A verdict computed in process (``symbolic=False``) reached a step that needs sympy: a worker computes it."""


def _scan_box(text: str, i: int) -> tuple[str | None, int]:
    """The content of the box whose command ends at ``i``, and where the box ends; None if unbalanced."""
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text) or text[i] != "{":
        return _scan_bare_box(text, i)
    depth, j = 0, i
    while j < len(text):
        char = text[j]
        if char == "\\":  # \{ and \} are literal braces, not groups
            j += 2
            continue
        depth += (char == "{") - (char == "}")
        if depth == 0:
            return text[i + 1:j], j + 1
        j += 1
    return None, len(text)


def _scan_bare_box(text: str, i: int) -> tuple[str | None, int]:
    r"""A box without braces (``\boxed 2``): the text from ``i`` up to a space, ``$`` or an unmatched ``}``."""
    depth, j = 0, i
    while j < len(text) and not text[j].isspace() and text[j] != "$":
        depth += (text[j] == "{") - (text[j] == "}")
        if depth < 0:
            break
        j += 1
    return (text[i:j], j) if j > i and depth == 0 else (None, j)


def _boxes(text: str) -> tuple[list[str], bool]:
    """Contents of the outermost boxes, in order, and whether any box is unbalanced."""
    contents, unbalanced, pos = [], False, 0
    while (match := _BOX.search(text, pos)) is not None:
        content, pos = _scan_box(text, match.end())
        if content is None:
            unbalanced = True
        else:
            contents.append(content)
    return contents, unbalanced


def extract_boxed(text: str) -> str | None:
    r"""The content of the last ``\boxed{...}`` or ``\fbox{...}``; None if there is none or one is unbalanced.

    Braces nest; ``\{`` and ``\}`` are literal braces. A box inside a box is part
    of the outer one's content.

    >>> extract_boxed(r"so $x = \boxed{\frac{3}{4}}$.")
    '\\frac{3}{4}'
    >>> extract_boxed(r"\boxed{1} then \fbox{\{1, 2\}}")
    '\\{1, 2\\}'
    >>> extract_boxed(r"\boxed{\frac{3}{4}") is None
    True
    >>> extract_boxed(r"so $\boxed 2$")
    '2'
    """
    contents, unbalanced = _boxes(text)
    return None if unbalanced or not contents else contents[-1]


def _unbox(content: str) -> str:
    r"""A box's content with the boxes inside it opened: ``4 \boxed{3}`` -> ``4 3`` (two values, not 3)."""
    while (match := _BOX.search(content)) is not None:
        inner, end = _scan_box(content, match.end())
        content = content[:match.start()] + " " + (inner or "") + " " + content[end:]
    return content


def _clean(answer: str) -> str:
    """Plain-text and delimiter clean-up that math-verify's LaTeX normaliser does not do."""
    answer = unicodedata.normalize("NFKC", answer).translate(_UNICODE)
    answer = _DELIMITERS.sub(" ", answer).strip()
    answer = _PREFIX.sub("", answer)
    answer = _TRAILING.sub("", answer)
    if (span := _CODE_SPAN.match(answer)) is not None:  # `5`, ```5```
        answer = _TRAILING.sub("", span.group(2).strip())
    answer = _PERCENT_WORD.sub("%", answer)
    return _SPACE_THOUSANDS.sub("", answer).strip()


def _final_answer(prediction: str) -> tuple[str | None, str | None]:
    """The one answer to parse, or None and why there is none."""
    if len(prediction) > _MAX_PREDICTION_CHARS:
        return None, f"prediction longer than {_MAX_PREDICTION_CHARS} characters"
    answer = prediction
    if _BOX.search(answer):
        contents, unbalanced = _boxes(answer)
        if unbalanced:
            return None, r"unbalanced \boxed{...}"
        if len({"".join(_unbox(c).split()) for c in contents}) > 1:
            return None, rf"{len(contents)} \boxed{{}} answers with different contents"
        answer = _unbox(contents[-1])
    if len(answer) > _MAX_ANSWER_CHARS:
        return None, f"answer longer than {_MAX_ANSWER_CHARS} characters"
    answer = _clean(answer)
    if not answer:
        return None, "empty answer"
    return answer, _bracket_problem(answer)


def _bracket_problem(answer: str) -> str | None:
    """Why the brackets make ``answer`` unparseable or too slow to parse, or None.

    Braces must balance; parentheses and square brackets need not (``[1, 2)``).
    """
    braces = nesting = 0
    i = 0
    while i < len(answer):
        char = answer[i]
        if char == "\\" and i + 1 < len(answer) and answer[i + 1] in "{}":
            char, i = answer[i + 1], i + 1
            nesting += (char == "{") - (char == "}")
        else:
            braces += (char == "{") - (char == "}")
            nesting += (char in "([{") - (char in ")]}")
        if braces < 0:
            return "unbalanced braces"
        if nesting > _MAX_NESTING:
            return f"brackets nested deeper than {_MAX_NESTING}"
        i += 1
    return "unbalanced braces" if braces else None


class _TimeoutDisabledFilter(logging.Filter):
    """Drops math-verify's one-off "Timeout is disabled" warning: the bounds above replace the timeout."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().lstrip().startswith("Timeout is disabled")


@functools.lru_cache(maxsize=1)
def _math_verify() -> Any:
    try:
        import math_verify
    except ImportError as e:
        raise DependencyNotInstalled("math-verify", _INSTALL) from e
    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).addFilter(_TimeoutDisabledFilter())
    return math_verify


def _parse(answer: str) -> Any:
    """One sympy value for the whole answer, or None: LaTeX first, then a plain expression like ``2**10``."""
    mv = _math_verify()
    latex = [mv.LatexExtractionConfig(boxed_match_priority=0, try_extract_without_anchor=False)]
    # Boxing the answer makes math-verify parse all of it, not the last number in it.
    values = mv.parse("\\boxed{" + answer + "}", latex, fallback_mode="no_fallback",
                      extraction_mode="first_match", parsing_timeout=None)
    if values:
        return values[0]
    values = mv.parse(answer, [mv.ExprExtractionConfig()], fallback_mode="first_match",
                      extraction_mode="first_match", parsing_timeout=None)
    if len(values) == 2 and "".join(str(values[1]).split()) == "".join(answer.split()):
        return values[0]
    return None


def _values(expr: Any) -> int:
    r"""How many values an answer states: 1 for a number or expression (also ``x = 5`` and
    ``x = 2 + 3 = 5``), the count for a list (``5, 5`` is 1; ``x = 3, 5``, ``3 \pm 2`` and
    ``x = 3 = 5`` are 2), and 2 for a tuple, interval, inequality or matrix."""
    import sympy

    while isinstance(expr, sympy.Eq) or (
            isinstance(expr, sympy.And) and all(isinstance(a, sympy.Eq) for a in expr.args)):
        equations = [expr] if isinstance(expr, sympy.Eq) else expr.args
        constants = {_rounded(side) for eq in equations for side in eq.args if not side.free_symbols}
        if len(constants) > 1:
            return len(constants)
        if isinstance(expr, sympy.And):
            return 1  # a consistent chain; math-verify compares its last side
        expr = expr.rhs
    if isinstance(expr, sympy.FiniteSet):
        return len({e.rhs if isinstance(e, sympy.Eq) else e for e in expr.args})
    return 1 if isinstance(expr, sympy.Expr) else 2


def _rounded(expr: Any) -> Any:
    """A constant side's value to 9 decimals (2 + 3 and 5 agree); the side itself if it has no value."""
    try:
        value = complex(expr.evalf(15))
    except (TypeError, ValueError, ArithmeticError):
        return expr
    return round(value.real, 9), round(value.imag, 9)


def _safe_str(expr: Any) -> str:
    try:
        text = str(expr)
    except (ValueError, RecursionError):  # ints past Python's str-digits limit
        return "<unprintable>"
    return text if len(text) <= 200 else text[:197] + "..."


@dataclasses.dataclass(frozen=True)
class _Gold:
    text: str  # cleaned, no whitespace: an answer written exactly so is right
    value: Any  # sympy
    number: NumberForm | None  # when the gold is one number: what a numeric answer must equal
    values: int  # how many values it states (see _values)
    constant: complex | None  # a gold with no variables and no rational value (\pi): its value
    enclosure: str | None  # "set", "tuple" or None (see _enclosure)


@functools.lru_cache(maxsize=1024)
def _parse_gold(gold: str) -> _Gold:
    try:
        return _read_gold(gold)
    except (VerifierError, MemoryError):
        raise
    except Exception as e:  # a gold that trips sympy or math-verify is a data problem, reported as one
        raise VerifierError(f"gold answer {gold!r} could not be read ({type(e).__name__}: {_safe_str(e)}); "
                            "fix the task data.") from e


def _read_gold(gold: str) -> _Gold:
    answer, reason = _final_answer(gold)
    if reason is not None or answer is None:
        raise VerifierError(f"gold answer {gold!r} is unusable ({reason}); fix the task data.")
    value = _parse(answer)
    if value is None:
        raise VerifierError(f"gold answer {gold!r} does not parse as math; fix the task data.")
    if not _is_safe(value):
        raise VerifierError(f"gold answer {gold!r} is too large to compare safely; fix the task data.")
    number, _ = read_number(answer)
    if number is None:  # "2^{10}", "2^{2} + 1", "\frac{6}{8}": their value is the number
        number = _rational(value)
    constant = _constant(value) if number is None else None
    return _Gold("".join(answer.split()), value, number, _values(value), constant, _enclosure(answer))


def _rational(value: Any) -> NumberForm | None:
    """A value that is a rational number (``2^{2} + 1``), as that number; None for anything else."""
    import sympy

    if not isinstance(value, sympy.Expr) or value.free_symbols or value.has(sympy.UnevaluatedExpr):
        return None
    try:
        value = value.doit()
    except (TypeError, ValueError, ArithmeticError, NotImplementedError):
        return None
    if isinstance(value, (sympy.Integer, sympy.Rational)):
        return NumberForm(fractions.Fraction(value.p, value.q))
    if isinstance(value, sympy.Float) and value.is_finite:  # a decimal went in: inexact
        return NumberForm(fractions.Fraction(str(value)), ulp=fractions.Fraction(1, 10**15))
    return None


def _close(a: complex | fractions.Fraction, b: complex | fractions.Fraction) -> bool:
    """Equal to a relative 1e-9 (for a gold with no exact form: \\pi, \\sqrt{2})."""
    return abs(a - b) <= _RELATIVE_TOLERANCE * max(abs(a), abs(b))


def _enclosure(text: str) -> str | None:
    r"""What brackets enclose the whole of ``text``: "set" (``\{1, 2\}``), "tuple" (a tuple or interval with a
    comma: ``(1, 2)``, ``[1, 2)``), or None (no brackets, ``(5)``, ``(1)(2)``)."""
    text = _LEFT_RIGHT.sub("", "".join(text.split()))
    if text.startswith("\\{") and text.endswith("\\}"):
        kind = "set"
    elif text[:1] in ("(", "[") and text[-1:] in (")", "]"):
        kind = "tuple"
    else:
        return None
    depth, comma, i = 0, False, 0
    while i < len(text):
        pair = text[i:i + 2]
        if pair in ("\\{", "\\}"):
            depth, i = depth + (1 if pair == "\\{" else -1), i + 2
        else:
            depth += (text[i] in "([{") - (text[i] in ")]}")
            comma = comma or (text[i] == "," and depth == 1)
            i += 1 + (pair[:1] == "\\" and len(pair) == 2)  # \, \; \\ are not brackets
        if depth <= 0 and i < len(text):
            return None  # the first bracket closes before the end
    return kind if kind == "set" or comma else None


def _single_value_problem(answer: str) -> str | None:
    """Why an answer does not state one value, if it does not ("x = 3, 5", "3 but possibly 4", "x < 5")."""
    hedge = hedge_word(answer)
    if _SEVERAL.search(answer) or (hedge is not None and hedge.lower() in _LIST_WORDS):
        return "several values for a single-value answer"
    if hedge is not None and hedge.lower() in NUMBER_WORDS:
        return f"a number in words ({hedge!r}): the gold is a number"
    if hedge is not None:
        return f"a hedged answer ({hedge!r}): the gold is a number"
    if _INEQUALITY.search(answer):
        return "an inequality: the gold is a number"
    return None


def _verify_number(answer: str, gold: _Gold, details: dict[str, Any], *, symbolic: bool = True) -> Score:
    """Against a numeric gold: the answer must be one number (see ``agentgym.verifiers.number``) equal to it.

    An equation states its number side ("27 + 43 = 70", "70 = 27 + 43", "x = 70").
    """
    assert gold.number is not None
    problem = _single_value_problem(answer)
    if problem is not None:
        return Score(0.0, False, {**details, "reason": problem})
    sides = answer.split("=")
    readings = [read_number(side) for side in sides]
    forms = [form for form, _ in readings if form is not None]
    if len({form.value for form in forms}) > 1:
        return Score(0.0, False, {**details, "reason": "several values for a single-value answer"})
    if not forms:
        why = readings[-1][1]
        if why == "an expression, not a number":
            why = "an expression, not its value" if any(c.isdigit() for c in sides[-1]) else "not a number"
        return Score(0.0, False, {**details, "reason": f"{why}: the gold is a number"})
    form = forms[0]
    details["parsed"] = _fraction_text(form)
    if len(sides) > 1 and not _sides_agree(sides, readings, form, symbolic=symbolic):
        return Score(0.0, False, {**details, "reason": "an equation whose sides are not equal"})
    correct = answers_number(form, gold.number)
    return Score(float(correct), correct, {**details, "reason": "equivalent" if correct else "not equivalent"})


def _sides_agree(sides: list[str], readings: list[tuple[NumberForm | None, str | None]], form: NumberForm, *,
                 symbolic: bool = True) -> bool:
    """Whether every side without variables equals the number an equation states ("70 = 27 + 44" does not).

    ``symbolic=False``: raise ``_NeedsSympy`` rather than evaluate a side with sympy."""
    for side, (side_form, _) in zip(sides, readings):
        if side_form is not None or not side.strip() or _SIDE_VARIABLE.search(side):
            continue
        if _INTEGER_SUM.fullmatch(side):  # "27 + 43", the usual echo: exactly, without sympy
            if sum(int(term.replace(" ", "")) for term in _INTEGER_TERM.findall(side)) != form.value:
                return False
            continue
        if not symbolic:
            raise _NeedsSympy
        value = _parse(side)
        if value is None or not _is_safe(value):
            return False
        exact = _rational(value)
        if exact is not None:
            if exact.value != form.value:
                return False
        elif (got := _constant(value)) is None or not _close(got, _as_float(form.value)):
            return False
    return True


def _as_float(value: fractions.Fraction) -> float:
    """``value`` as a float; nan (equal to nothing) past the float range."""
    try:
        return float(value)
    except OverflowError:
        return math.nan


def _fraction_text(form: NumberForm) -> str:
    value = form.value
    text = str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    return _safe_str(text) + ("%" if form.percent else "") + ("°" if form.degrees else "")


def _constants_equal(gold: Any, pred: Any, want: complex, got: complex) -> bool:
    r"""Two constants (``want`` and ``got`` are their values): with a decimal in either, equal to a relative 1e-9;
    without, exactly (to 40 digits: ``3`` is ``\log_2 8``, ``1000000000999\sqrt{2}`` is not ``10^{12}\sqrt{2}``)."""
    import sympy

    if not _close(got, want):
        return False
    if gold.has(sympy.Float) or pred.has(sympy.Float):
        return True
    try:
        difference = complex((gold - pred).evalf(40))
    except (TypeError, ValueError, ArithmeticError):
        return False
    return abs(difference) <= 1e-30 * abs(want)


def _verify_constant(answer: str, gold: _Gold, details: dict[str, Any]) -> Score | None:
    r"""A number against a constant gold (``\pi``, ``\frac{\sqrt{3}}{2}``): to a relative 1e-9, degrees read as
    radians (``90^\circ`` answers ``\frac{\pi}{2}``); None when the answer is not a plain number."""
    import sympy

    assert gold.constant is not None
    form, _ = read_number(answer)
    if form is None or form.percent:
        return None
    value = sympy.Rational(form.value.numerator, form.value.denominator)
    if form.degrees:
        value = value * sympy.pi / 180
    got = _as_float(form.value) * (math.pi / 180 if form.degrees else 1.0)
    if form.ulp is not None:  # an inexact decimal
        correct = _close(got, gold.constant)
    else:
        correct = _constants_equal(gold.value, value, gold.constant, got)
    details["parsed"] = _fraction_text(form)
    return Score(float(correct), correct, {**details, "reason": "equivalent" if correct else "not equivalent"})


def _stated_value(value: Any) -> Any:
    """What an answer states: an equation's right-hand side, the end of a chain ("x = 2+3 = 5")."""
    import sympy

    if isinstance(value, sympy.And) and value.args and all(isinstance(a, sympy.Equality) for a in value.args):
        value = value.args[-1]
    return value.rhs if isinstance(value, sympy.Equality) else value


def _constant(expr: Any) -> complex | None:
    """The value of an expression without variables, to 30 digits; None if it has variables or no value."""
    import sympy

    if not isinstance(expr, sympy.Expr) or expr.free_symbols or expr.has(sympy.UnevaluatedExpr):
        return None
    try:
        value = complex(expr.evalf(30))
    except (TypeError, ValueError, ArithmeticError):
        return None
    return value if all(map(math.isfinite, (value.real, value.imag))) else None


def _as_set(expr: Any) -> Any:
    """An inequality in one variable as the set it describes (``x \\le 2`` -> ``(-oo, 2]``); else itself."""
    import sympy

    if isinstance(expr, (sympy.Rel, sympy.And, sympy.Or)) and len(expr.free_symbols) == 1:
        try:
            return expr.as_set()
        except (NotImplementedError, TypeError, ValueError):
            return expr
    return expr


def _verify_math(prediction: str | None, gold: str) -> Score:
    """``verify_math`` without the budget: run in a verifier worker (or in process when the budget is off)."""
    parsed_gold = _parse_gold(gold)  # a VerifierError here is the task data's
    try:
        return _score(prediction, gold, parsed_gold)
    except MemoryError:
        raise  # the worker reports it as "verifier memory budget exceeded"
    except Exception as e:  # noqa: BLE001 - a verifier bug costs this answer its reward, never the session
        _LOG.warning("verify_math failed on %r against %r", prediction, gold, exc_info=True)
        return Score(0.0, False, {"extracted": None, "gold": gold,
                                  "reason": f"verifier error: {type(e).__name__}: {_safe_str(e)}"})


def _score(prediction: str | None, gold: str, parsed_gold: _Gold, *, symbolic: bool = True) -> Score:
    """The verdict; ``symbolic=False``: raise ``_NeedsSympy`` at the first step that needs sympy."""
    if prediction is None or not prediction.strip():
        return Score(0.0, False, {"extracted": None, "gold": gold, "reason": "empty answer"})
    answer, reason = _final_answer(prediction)
    details: dict[str, Any] = {"extracted": answer, "gold": gold}
    if reason is not None or answer is None:
        return Score(0.0, False, {**details, "reason": reason})
    if "".join(answer.split()) == parsed_gold.text:
        return Score(1.0, True, {**details, "parsed": parsed_gold.text, "reason": "equivalent"})
    if _APPROXIMATE.search(answer):
        return Score(0.0, False, {**details, "reason": "an approximate answer (\\approx, \\sim)"})
    if parsed_gold.number is not None:
        return _verify_number(answer, parsed_gold, details, symbolic=symbolic)
    if not symbolic:
        raise _NeedsSympy
    hedge = hedge_word(answer)
    if hedge is not None and (parsed_gold.values == 1 or hedge.lower() not in _LIST_WORDS):
        return Score(0.0, False, {**details, "reason": f"a hedged answer ({hedge!r})"})
    if parsed_gold.constant is not None and (score := _verify_constant(answer, parsed_gold, details)) is not None:
        return score
    enclosure = _enclosure(answer)
    if enclosure is not None and parsed_gold.enclosure is not None and enclosure != parsed_gold.enclosure:
        return Score(0.0, False, {**details, "reason": "not equivalent: a set is not a tuple or an interval"})
    value = _parse(answer)
    if value is None:
        return Score(0.0, False, {**details, "reason": "answer does not parse as math"})
    if not _is_safe(value):
        return Score(0.0, False, {**details, "reason": "answer too large to evaluate safely"})
    details["parsed"] = _safe_str(value)
    if _values(value) > 1 and parsed_gold.values == 1:
        return Score(0.0, False, {**details, "reason": "several values for a single-value answer"})
    gold_value = parsed_gold.value
    if parsed_gold.constant is not None:  # a constant gold (\pi, \frac{\sqrt{3}}{2}) is answered by a constant
        stated = _stated_value(value)
        got = _constant(stated)
        if got is None and getattr(stated, "free_symbols", None):
            return Score(0.0, False, {**details, "reason": "an answer with variables: the gold is a constant"})
        if got is not None:
            correct = _constants_equal(gold_value, stated, parsed_gold.constant, got)
            return Score(float(correct), correct, {**details, "reason": "equivalent" if correct else "not equivalent"})
    gold_value, value = _as_set(gold_value), _as_set(value)
    correct = not _clearly_different(gold_value, value) and bool(
        _math_verify().verify(gold_value, value, timeout_seconds=None))
    return Score(float(correct), correct, {**details, "reason": "equivalent" if correct else "not equivalent"})



def _verify_here(prediction: str | None, gold: str) -> Score | None:
    """``_verify_math``'s verdict computed in this process, or None when it needs a worker.

    Only against a gold that is a plain number (``_plain_gold``) and for a prediction of at most 200 ASCII
    characters, and only when the verdict needs no sympy: ``_score`` runs with ``symbolic=False`` (the
    extraction, the clean-up and the number reader are plain Python, linear or quadratic in the length) and
    gives up where sympy would start. Any error gives up too: the worker reports it as it always did.
    """
    if len(gold) > _IN_PROCESS_CHARS or not gold.isascii():  # before the cache: it keeps only short golds
        return None
    if prediction is not None and (len(prediction) > _IN_PROCESS_CHARS or not prediction.isascii()):
        return None
    parsed_gold = _plain_gold(gold)
    if parsed_gold is None:
        return None
    try:
        return _score(prediction, gold, parsed_gold, symbolic=False)
    except Exception:  # noqa: BLE001 - _NeedsSympy, or an error the worker's boundary reports (and logs)
        return None


@functools.lru_cache(maxsize=1024)
def _plain_gold(gold: str) -> _Gold | None:
    """``_parse_gold(gold)`` read without sympy, for a gold whose answer is a plain number; else None.

    Field for field what ``_read_gold`` makes of it, but ``value`` (sympy's reading), which a numeric gold's
    verdict never reads. For an ASCII gold of at most 200 characters.
    """
    answer, reason = _final_answer(gold)
    if reason is not None or answer is None or not _PLAIN_NUMBER.fullmatch(answer):
        return None
    number, _ = read_number(answer)
    return None if number is None else _Gold(answer, None, number, 1, None, None)


def verify_math(prediction: str | None, gold: str, *, budget_s: float | None = None) -> Score:
    r"""Score a final answer against a gold answer (GSM8K number or MATH LaTeX): 1.0 if equivalent.

    ``details`` has ``extracted`` (the answer that was parsed), ``gold``, ``reason``
    and, when the answer parsed, ``parsed``. The comparison runs under a time and
    memory budget (``budget_s`` seconds; see ``agentgym.verifiers.budget``) in a
    verifier worker, except a short answer to a plain-number gold whose verdict
    needs no sympy, which is scored in process (the same verdict).

    >>> verify_math(r"The answer is $\boxed{\frac{3}{4}}$.", "0.75").correct
    True
    >>> verify_math("1,234 dollars", "1234").reward
    1.0
    >>> verify_math("3 or 5", "5").details["reason"]
    'several values for a single-value answer'
    >>> verify_math(r"\boxed{3} \boxed{5}", "5").details["reason"]
    '2 \\boxed{} answers with different contents'
    """
    if isinstance(gold, (int, float)) and not isinstance(gold, bool):
        gold = str(gold)
    if not isinstance(gold, str) or not gold.strip():
        raise VerifierError(f"gold must be a non-empty string, got {gold!r}; fix the task data.")
    if len(gold) > _MAX_PREDICTION_CHARS:
        raise VerifierError(f"gold answer longer than {_MAX_PREDICTION_CHARS} characters; fix the task data.")
    _require_math_verify()
    if prediction is not None and not isinstance(prediction, str):  # an agent's mistake, not an exception
        return Score(0.0, False, {"extracted": None, "gold": gold,
                                  "reason": f"prediction must be a string or None, got {type(prediction).__name__}"})
    if prediction is not None and len(prediction) > _MAX_PREDICTION_CHARS:  # refused before it is sent anywhere
        return Score(0.0, False, {"extracted": None, "gold": gold,
                                  "reason": f"prediction longer than {_MAX_PREDICTION_CHARS} characters"})
    score = _verify_here(prediction, gold)
    if score is not None:
        return score
    return run_budgeted(_verify_math, prediction, gold, budget_s=budget_s, verifier="math")


def _warm_up() -> None:
    """One comparison of each kind: math-verify's parser and sympy build tables on first use (~0.4 s), which a
    verifier worker does as it starts (``agentgym.verifiers.budget``), not inside a verification's budget."""
    for prediction, gold in ((r"\sqrt{8}", r"2\sqrt{2}"), (r"\frac{x}{2}", "x/2"), ("(1,2]", r"\{1, 2\}"),
                             (r"x \le 2", r"(-\infty, 2]")):
        _verify_math(prediction, gold)


def _require_math_verify() -> None:
    """The missing-extra error, raised in the caller without importing math-verify (and sympy) there."""
    if "math_verify" in sys.modules:
        if sys.modules["math_verify"] is None:
            raise DependencyNotInstalled("math-verify", _INSTALL)
    elif importlib.util.find_spec("math_verify") is None:
        raise DependencyNotInstalled("math-verify", _INSTALL)
