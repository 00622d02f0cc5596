"""Split an amount into parts that add up to it exactly."""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

from tinymoney.money import Money


def allocate(money: Money, ratios: Sequence[int | Decimal]) -> list[Money]:
    """Parts of ``money`` proportional to ``ratios`` that add up to it exactly (after rounding).

    The amount is split in minor units. Each part first gets the whole units of its
    share; the units left over go, one each, to the parts with the largest
    remainders (the earlier part on a tie).

    >>> [str(part.amount) for part in allocate(Money("0.05"), [1, 1, 1])]
    ['0.02', '0.02', '0.01']
    """
    if not ratios:
        raise ValueError("allocate() needs at least one ratio")
    weights = [Fraction(ratio) for ratio in ratios]
    if any(weight < 0 for weight in weights):
        raise ValueError("ratios must not be negative")
    total = sum(weights)
    if total == 0:
        raise ValueError("at least one ratio must be positive")
    units = money.to_minor()
    sign = -1 if units < 0 else 1
    exact = [abs(units) * weight / total for weight in weights]
    parts = [math.floor(share) for share in exact]
    leftover = abs(units) - sum(parts)
    order = sorted(range(len(parts)), key=lambda i: (-(exact[i] - parts[i]), i))
    for rank in range(leftover):
        parts[order[rank]] += 1
    return [Money.from_minor(sign * part, money.currency) for part in parts]


def split_evenly(money: Money, n: int) -> list[Money]:
    """``money`` split into ``n`` parts that differ by at most one minor unit."""
    if n < 1:
        raise ValueError(f"cannot split into {n} parts")
    return allocate(money, [1] * n)
