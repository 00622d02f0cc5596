"""Bounds that keep sympy from building huge numbers or stalling, for the math verifier.

``is_safe(expr)``: no value sympy may build while evaluating ``expr`` reaches 10**10000 (or its
reciprocal); ``clearly_different(gold, pred)``: a cheap numeric disproof at fixed sample points that spares
math-verify's ``simplify(gold - pred)``, which takes minutes on inputs like ``(a+b+c+d)^{40}``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_LOG10", "clearly_different", "is_safe", "log10_bound"]

MAX_LOG10 = 10_000.0  # no sub-expression may reach 10**10000 (or its reciprocal)
# Where free symbols are sampled: positive (no branch cuts), irrational-looking, fixed (rewards are deterministic).
_SAMPLE_POINTS = (0.5772156649, 1.6180339887, 0.7071067812, 1.2020569032, 0.9159655942, 1.3247179572, 0.3678794412)


def log10_bound(expr: Any, symbols: Mapping[Any, float] | None = None) -> float:
    """An upper bound on |log10| of ``expr``'s value and of every intermediate sympy may build; inf: refuse.

    ``symbols`` bounds the summation variables in scope; any other symbol counts as 10.
    """
    import sympy

    symbols = symbols or {}
    if isinstance(expr, sympy.MatrixBase) and not isinstance(expr, sympy.Basic):
        return max((log10_bound(e, symbols) for e in expr), default=0.0)
    if isinstance(expr, (sympy.Integer, sympy.Rational)):  # both are exact, with q == 1 for an Integer
        return (abs(expr.p).bit_length() + abs(expr.q).bit_length() - 1) * math.log10(2)
    if isinstance(expr, sympy.Float):
        _, mantissa, exponent, bits = expr._mpf_
        return abs(exponent + bits) * math.log10(2) if mantissa else 0.0
    if not expr.args:
        return symbols.get(expr, 1.0)
    if isinstance(expr, sympy.Pow):  # the base is built first, then raised
        base, power = log10_bound(expr.base, symbols), _abs_bound(expr.exp, symbols)
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
    sizes = [log10_bound(arg, symbols) for arg in expr.args]
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
    term = log10_bound(expr.function, inner)
    return term * count if isinstance(expr, sympy.Product) else term + math.log10(count)


def _abs_bound(expr: Any, symbols: Mapping[Any, float] | None = None) -> float:
    """An upper bound on ``|expr|``, for exponents and function arguments."""
    size = log10_bound(expr, symbols)
    if size >= 300:
        return math.inf
    return float(abs(expr)) if expr.is_Number else 10.0 ** size


def is_safe(expr: Any) -> bool:
    try:
        return log10_bound(expr) <= MAX_LOG10
    except (RecursionError, TypeError, ValueError, AttributeError):
        return False


def clearly_different(gold: Any, pred: Any) -> bool:
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
        # sympy Floats, not Python floats: evalf of floor/ceiling at a Python float raises AttributeError
        point = {s: sympy.Float(_SAMPLE_POINTS[(i + trial) % len(_SAMPLE_POINTS)]) for i, s in enumerate(free)}
        try:
            a, b = complex(gold.evalf(15, subs=point)), complex(pred.evalf(15, subs=point))
        except (TypeError, ValueError, ArithmeticError, AttributeError):
            continue
        if all(map(math.isfinite, (a.real, a.imag, b.real, b.imag))) and abs(a - b) > 1e-6 * max(1.0, abs(a), abs(b)):
            return True
    return False
