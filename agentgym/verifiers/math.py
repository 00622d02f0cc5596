r"""Math verifier: is a model's final answer mathematically equal to the gold answer?

The comparison is Hugging Face's ``math-verify`` (LaTeX to sympy, then numeric
and symbolic equality), fenced so that one answer cannot hedge or hang it:

- Only one answer is read. If the prediction has ``\boxed{}`` (or ``\fbox{}``),
  the answer is the content of the last one, and every box must hold the same
  text: ``\boxed{3}\boxed{5}`` fails. Otherwise the whole prediction is the answer.
  math-verify's own extraction is not used on the raw text: it takes the last
  number it finds, so it would read "3 or 5" as 5.
- The answer is parsed as one expression. A list ("3, 4, 5", "3 or 5",
  "x = 3, 5", ``3 \pm 2``) parses to a set and fails against a single-value gold;
  against a set, tuple or interval gold it is compared as a whole.
- Percent: "75%" is accepted for gold 75 (a GSM8K "what percent" question) and
  for gold 0.75 or 3/4; a bare 75 is not accepted for gold 0.75, nor 0.75 for 75.
- Plain-text clean-up first: ``$`` and ``\$``, ``\(``/``\[`` delimiters, an
  "Answer:" or "The final answer is" prefix, a trailing full stop, thousands
  separators (``1,234``, ``1\,234``, ``1 234``) and unit words after a number
  ("5 cm", "12 dollars"; ``\text{ cm}`` is math-verify's) are removed.
- A number is answered with a number (``agentgym.verifiers.number``): against a
  numeric gold, the answer must be the value itself, read exactly: an integer,
  a decimal, a fraction in lowest terms, scientific notation, a percentage.
  Unevaluated expressions ("27 + 43" for 70 restates the question; GRPO on
  two-number sums learned exactly that echo in 20 steps), juxtaposed numbers
  ("38 46", ``27\;43``), free symbols that cancel ("27 + 43 + 0x"), fractions
  not in lowest terms (``\frac{140}{2}``), hedges after the value ("3 but
  possibly four", ``3 \approx 4``) and numbers in words all fail. An equation
  states its right-hand side, so "27 + 43 = 70" answers 70. A box inside a box
  is content of the outer one.
- Numbers are equal to a relative 1e-9 (two exact fractions: exactly), not at
  6 decimal places: 0.0000014 is not 0.000001 and 3.141593 is not pi.
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
from agentgym.verifiers.number import NUMBER_WORDS, NumberForm, hedge_word, read_number
from agentgym.verifiers.score import Score

__all__ = ["extract_boxed", "verify_math"]

_MAX_PREDICTION_CHARS = 100_000  # the raw prediction; bounds the regex work below
_MAX_ANSWER_CHARS = 1_000  # the extracted answer; ANTLR parsing is ~1 ms a character at worst
_MAX_NESTING = 8  # bracket depth; ANTLR's full-context prediction costs ~50 ms a level
_MAX_LOG10 = 10_000.0  # no sub-expression may reach 10**10000 (or its reciprocal)
_INSTALL = "pip install 'agentgym-suite[code]'"

_BOX = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
_UNICODE = str.maketrans({"\u2212": "-", "\u2013": "-", "\u00d7": r"\times ", "\u00f7": "/", "\u03c0": r"\pi ",
                          "\u221e": r"\infty "})
_DELIMITERS = re.compile(r"\\\$|\$|\\[()\[\]]|\\displaystyle")
_PREFIX = re.compile(r"^(?:(?:so|thus|therefore|hence|the|my)[\s,]+)*(?:final\s+)?answer\b\s*(?:is\b|:|=)?\s*",
                     re.IGNORECASE)
_TRAILING = re.compile(r"(?<!\\)[\s.,;]+$")  # not "!": 5! is a factorial
_PERCENT_WORD = re.compile(r"\s*(?:percent|per\s*cent|pct)$", re.IGNORECASE)
_SPACE_THOUSANDS = re.compile(r"(?<=\d)(?:\\,|\\ |~| |\u00a0|\u202f|\u2009)(?=\d{3}(?!\d))")
_NUMBER_WORDS = re.compile(r"([-+]?\d[\d,]*(?:\.\d+)?%?)\s+([A-Za-z][A-Za-z.\s]*)")
_NOT_UNITS = {"pi", "or", "and"}
_RELATIVE_TOLERANCE = 1e-9
_SEVERAL = re.compile(r"(?<![\\{]),(?!\d{3}(?!\d))|(?<!\\);|\\(?:pm|mp)(?![A-Za-z])|\\(?:lor|vee)(?![A-Za-z])")
_LIST_WORDS = frozenset({"or", "and", "nor", "either"})
_INEQUALITY = re.compile(r"[<>]|!=|\\(?:le|ge|leq|geq|neq|ne|lt|gt|leqslant|geqslant)(?![A-Za-z])")
_APPROXIMATE = re.compile(r"\\(?:approx|sim|simeq|thickapprox|cong|propto)(?![A-Za-z])|\u2248")
# Where free symbols are sampled: positive (no branch cuts), irrational-looking, fixed (rewards are deterministic).
_SAMPLE_POINTS = (0.5772156649, 1.6180339887, 0.7071067812, 1.2020569032, 0.9159655942, 1.3247179572, 0.3678794412)


def _scan_box(text: str, i: int) -> tuple[str | None, int]:
    """The content of the box whose command ends at ``i``, and where the box ends; None if unbalanced."""
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text) or text[i] != "{":
        return None, i
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
    """
    contents, unbalanced = _boxes(text)
    return None if unbalanced or not contents else contents[-1]


def _unbox(content: str) -> str:
    r"""A box's content with the boxes inside it opened: ``4 \boxed{3}`` -> ``4 3`` (two values, not 3)."""
    while (match := _BOX.search(content)) is not None:
        inner, end = _scan_box(content, match.end())
        content = content[:match.start()] + " " + (inner or "") + " " + content[end:]
    return content


def _strip_units(answer: str) -> str:
    """"5 cm" -> "5", "12 dollars." -> "12": words after a plain number are units."""
    match = _NUMBER_WORDS.fullmatch(answer)
    if match is None:
        return answer
    words = match.group(2).replace(".", " ").split()
    if len(words) <= 3 and all(len(w) >= 2 and w.lower() not in _NOT_UNITS and hedge_word(w) is None for w in words):
        return match.group(1)
    return answer


def _clean(answer: str) -> str:
    """Plain-text and delimiter clean-up that math-verify's LaTeX normaliser does not do."""
    answer = unicodedata.normalize("NFKC", answer).translate(_UNICODE)
    answer = _DELIMITERS.sub(" ", answer).strip()
    answer = _PREFIX.sub("", answer)
    answer = _TRAILING.sub("", answer)
    answer = _PERCENT_WORD.sub("%", answer)
    answer = _SPACE_THOUSANDS.sub("", answer)
    return _strip_units(answer).strip()


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


def _log10_bound(expr: Any, symbols: Mapping[Any, float] | None = None) -> float:
    """An upper bound on |log10| of ``expr``'s value and of every intermediate sympy may build; inf: refuse.

    ``symbols`` bounds the summation variables in scope; any other symbol counts as 10.
    """
    import sympy

    symbols = symbols or {}
    if isinstance(expr, sympy.MatrixBase) and not isinstance(expr, sympy.Basic):
        return max((_log10_bound(e, symbols) for e in expr), default=0.0)
    if isinstance(expr, (sympy.Integer, sympy.Rational)):  # both are exact, with q == 1 for an Integer
        return (abs(expr.p).bit_length() + abs(expr.q).bit_length() - 1) * math.log10(2)
    if isinstance(expr, sympy.Float):
        _, mantissa, exponent, bits = expr._mpf_
        return abs(exponent + bits) * math.log10(2) if mantissa else 0.0
    if not expr.args:
        return symbols.get(expr, 1.0)
    if isinstance(expr, sympy.Pow):  # the base is built first, then raised
        base, power = _log10_bound(expr.base, symbols), _abs_bound(expr.exp, symbols)
        return max(base, base * power) if math.isfinite(power) else math.inf  # 0^(10^10^10) builds its exponent
    if isinstance(expr, (sympy.exp, sympy.sinh, sympy.cosh)):
        return _abs_bound(expr.args[0], symbols) * math.log10(math.e) + 1.0
    if isinstance(expr, (sympy.factorial, sympy.factorial2, sympy.subfactorial, sympy.gamma)):
        n = _abs_bound(expr.args[0], symbols)
        return n * math.log10(n + 1.0) + 1.0
    if isinstance(expr, (sympy.binomial, sympy.fibonacci, sympy.lucas)):
        return _abs_bound(expr.args[0], symbols) * math.log10(2) + 1.0
    if isinstance(expr, (sympy.Sum, sympy.Product)):
        return _series_bound(expr, symbols)
    sizes = [_log10_bound(arg, symbols) for arg in expr.args]
    if isinstance(expr, sympy.Mul):
        return sum(sizes)
    return max(sizes) + math.log10(len(sizes))


def _series_bound(expr: Any, symbols: Mapping[Any, float]) -> float:
    """``_log10_bound`` of a Sum or Product: at most 1,000 terms, each bounded with its index in range."""
    import sympy

    inner, count = dict(symbols), 1.0
    for var, *limits in expr.limits:
        ends = [_abs_bound(end, symbols) for end in limits] or [math.inf]
        count *= sum(ends) + 1.0
        inner[var] = max(1.0, math.log10(max(ends) + 1.0))
    if count > 1_000:
        return math.inf
    term = _log10_bound(expr.function, inner)
    return term * count if isinstance(expr, sympy.Product) else term + math.log10(count)


def _abs_bound(expr: Any, symbols: Mapping[Any, float] | None = None) -> float:
    """An upper bound on ``|expr|``, for exponents and function arguments."""
    size = _log10_bound(expr, symbols)
    if size >= 300:
        return math.inf
    return float(abs(expr)) if expr.is_Number else 10.0 ** size


def _is_safe(expr: Any) -> bool:
    try:
        return _log10_bound(expr) <= _MAX_LOG10
    except (RecursionError, TypeError, ValueError, AttributeError):
        return False


def _clearly_different(gold: Any, pred: Any) -> bool:
    """True when two plain expressions differ numerically at a fixed sample point.

    Equal expressions agree at every point, so this does not reject what math-verify
    would accept; it spares its ``simplify(gold - pred)``, which takes seconds to
    minutes on inputs like ``(a+b+c+d)^{40}``. Percentages and text symbols
    (``\\text{Monday}``) are left to math-verify, whose rules for them are not numeric.
    """
    import sympy

    if not all(isinstance(e, sympy.Expr) and not isinstance(e, sympy.Symbol) for e in (gold, pred)):
        return False
    if gold.has(sympy.UnevaluatedExpr) or pred.has(sympy.UnevaluatedExpr):
        return False
    free = sorted(gold.free_symbols | pred.free_symbols, key=str)
    for trial in range(3 if free else 1):
        point = {s: _SAMPLE_POINTS[(i + trial) % len(_SAMPLE_POINTS)] for i, s in enumerate(free)}
        try:
            a, b = complex(gold.evalf(15, subs=point)), complex(pred.evalf(15, subs=point))
        except (TypeError, ValueError, ArithmeticError):
            continue
        if all(map(math.isfinite, (a.real, a.imag, b.real, b.imag))) and abs(a - b) > 1e-6 * max(1.0, abs(a), abs(b)):
            return True
    return False


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


@functools.lru_cache(maxsize=1024)
def _parse_gold(gold: str) -> _Gold:
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
    return _Gold("".join(answer.split()), value, number, _values(value))


def _rational(value: Any) -> NumberForm | None:
    """A gold whose value is a rational number (``2^{2} + 1``), as that number; None for anything else."""
    import sympy

    if not isinstance(value, sympy.Expr) or value.free_symbols or value.has(sympy.UnevaluatedExpr):
        return None
    try:
        value = value.doit()
    except (TypeError, ValueError, ArithmeticError, NotImplementedError):
        return None
    if isinstance(value, (sympy.Integer, sympy.Rational)) or (isinstance(value, sympy.Float) and value.is_finite):
        return NumberForm(fractions.Fraction(str(value)))
    return None


def _close(a: complex | fractions.Fraction, b: complex | fractions.Fraction) -> bool:
    """Equal to a relative 1e-9 (exact for two fractions that are equal)."""
    return abs(a - b) <= _RELATIVE_TOLERANCE * max(abs(a), abs(b))


def _stated(answer: str) -> tuple[str, str | None]:
    """The value an answer states, as text: an equation's right-hand side ("27 + 43 = 70" states 70); and why
    it does not state one value, if it does not ("x = 3 = 5", "x = 3, 5", "3 but possibly 4", "x < 5")."""
    sides = answer.split("=")
    hedge = hedge_word(answer)
    if _SEVERAL.search(answer) or (hedge is not None and hedge.lower() in _LIST_WORDS):
        return sides[-1], "several values for a single-value answer"
    if hedge is not None and hedge.lower() in NUMBER_WORDS:
        return sides[-1], f"a number in words ({hedge!r}): the gold is a number"
    if hedge is not None:
        return sides[-1], f"a hedged answer ({hedge!r}): the gold is a number"
    if _INEQUALITY.search(answer):
        return sides[-1], "an inequality: the gold is a number"
    numbers = {n.value for n in (read_number(side)[0] for side in sides) if n is not None}
    return sides[-1], "several values for a single-value answer" if len(numbers) > 1 else None


def _verify_number(answer: str, gold: _Gold, details: dict[str, Any]) -> Score:
    """Against a numeric gold: the answer must be one number (see ``agentgym.verifiers.number``) equal to it."""
    assert gold.number is not None
    stated, several = _stated(answer)
    if several is not None:
        return Score(0.0, False, {**details, "reason": several})
    form, why = read_number(stated)
    if form is None:
        if why == "an expression, not a number":
            why = "an expression, not its value" if any(c.isdigit() for c in stated) else "not a number"
        return Score(0.0, False, {**details, "reason": f"{why}: the gold is a number"})
    details["parsed"] = _fraction_text(form)
    want, got = gold.number, form.value
    if want.percent:  # gold "75\%": 75, 75% and 0.75 all answer it
        correct = _close(got, want.value) or (not form.percent and _close(got * 100, want.value))
    else:  # "75%" answers 75 and 0.75; a bare 75 does not answer 0.75
        correct = _close(got, want.value) or (form.percent and _close(got / 100, want.value))
    return Score(float(correct), correct, {**details, "reason": "equivalent" if correct else "not equivalent"})


def _fraction_text(form: NumberForm) -> str:
    value = form.value
    text = str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    return _safe_str(text) + ("%" if form.percent else "")


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
    parsed_gold = _parse_gold(gold)
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
        return _verify_number(answer, parsed_gold, details)
    hedge = hedge_word(answer)
    if hedge is not None and (parsed_gold.values == 1 or hedge.lower() not in _LIST_WORDS):
        return Score(0.0, False, {**details, "reason": f"a hedged answer ({hedge!r})"})
    value = _parse(answer)
    if value is None:
        return Score(0.0, False, {**details, "reason": "answer does not parse as math"})
    if not _is_safe(value):
        return Score(0.0, False, {**details, "reason": "answer too large to evaluate safely"})
    details["parsed"] = _safe_str(value)
    if _values(value) > 1 and parsed_gold.values == 1:
        return Score(0.0, False, {**details, "reason": "several values for a single-value answer"})
    gold_value = parsed_gold.value
    want = _constant(gold_value)
    if want is not None:  # a constant gold (\pi, \frac{\sqrt{3}}{2}) is answered by a constant equal to it
        stated = _stated_value(value)
        got = _constant(stated)
        if got is None and getattr(stated, "free_symbols", None):
            return Score(0.0, False, {**details, "reason": "an answer with variables: the gold is a constant"})
        if got is not None:
            correct = _close(got, want)
            return Score(float(correct), correct, {**details, "reason": "equivalent" if correct else "not equivalent"})
    gold_value, value = _as_set(gold_value), _as_set(value)
    correct = not _clearly_different(gold_value, value) and bool(
        _math_verify().verify(gold_value, value, timeout_seconds=None))
    return Score(float(correct), correct, {**details, "reason": "equivalent" if correct else "not equivalent"})



def verify_math(prediction: str | None, gold: str, *, budget_s: float | None = None) -> Score:
    r"""Score a final answer against a gold answer (GSM8K number or MATH LaTeX): 1.0 if equivalent.

    ``details`` has ``extracted`` (the answer that was parsed), ``gold``, ``reason``
    and, when the answer parsed, ``parsed``. The comparison runs under a time and
    memory budget (``budget_s`` seconds; see ``agentgym.verifiers.budget``).

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
    if prediction is not None and not isinstance(prediction, str):
        raise VerifierError(f"prediction must be a string or None, got {type(prediction).__name__}.")
    if prediction is not None and len(prediction) > _MAX_PREDICTION_CHARS:  # refused before it is sent anywhere
        return Score(0.0, False, {"extracted": None, "gold": gold,
                                  "reason": f"prediction longer than {_MAX_PREDICTION_CHARS} characters"})
    return run_budgeted(_verify_math, prediction, gold, budget_s=budget_s, verifier="math")


def _require_math_verify() -> None:
    """The missing-extra error, raised in the caller without importing math-verify (and sympy) there."""
    if "math_verify" in sys.modules:
        if sys.modules["math_verify"] is None:
            raise DependencyNotInstalled("math-verify", _INSTALL)
    elif importlib.util.find_spec("math_verify") is None:
        raise DependencyNotInstalled("math-verify", _INSTALL)
