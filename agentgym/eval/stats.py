"""Summaries of episodes (``summarize``) and the 95% confidence intervals they and the leaderboard use."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from agentgym.verifiers.budget import over_budget

__all__ = ["Z_95", "mean_ci", "summarize", "wilson_ci"]

Z_95 = 1.959963984540054  # two-sided 95% normal quantile


def wilson_ci(successes: int, n: int, *, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; ``(0, 1)`` when there are no trials.

    >>> [round(x, 4) for x in wilson_ci(0, 10)]
    [0.0, 0.2775]
    """
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # at k = 0 and k = n a bound is exactly 0 or 1; float rounding would leave 1e-17 off
    return (0.0 if successes == 0 else max(0.0, center - half)), (1.0 if successes == n else min(1.0, center + half))


def mean_ci(values: Sequence[float], *, z: float = Z_95) -> tuple[float, float]:
    """Normal-approximation interval for a mean of rewards in [0, 1], clipped to [0, 1].

    With fewer than two values the spread is unknown, so the interval is all of ``(0, 1)``.

    >>> [round(x, 4) for x in mean_ci([1.0, 0.0, 1.0, 1.0])]
    [0.26, 1.0]
    """
    n = len(values)
    if n < 2:
        return 0.0, 1.0
    mean = sum(values) / n
    half = z * math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)
    return max(0.0, mean - half), min(1.0, mean + half)


def summarize(results: Sequence[Any]) -> dict[str, float | int]:
    """Means over episodes, with 95% intervals: Wilson for the success rate, normal for the mean reward.

    Accepts episode results or their dicts (as ``load_results`` returns them).
    """
    rows = [r.as_dict() if hasattr(r, "as_dict") else r for r in results]
    n = len(rows)

    def mean(name: str) -> float:
        return sum(float(r.get(name) or 0) for r in rows) / n if n else 0.0

    successes = sum(bool(r.get("correct")) for r in rows)
    success_low, success_high = wilson_ci(successes, n)
    reward_low, reward_high = mean_ci([float(r.get("reward") or 0) for r in rows])
    return {"episodes": n, "mean_reward": mean("reward"), "mean_reward_ci_low": reward_low,
            "mean_reward_ci_high": reward_high, "success_rate": successes / n if n else 0.0,
            "success_rate_ci_low": success_low, "success_rate_ci_high": success_high,
            "mean_turns": mean("turns"), "mean_tool_calls": mean("tool_calls"),
            "mean_prompt_tokens": mean("prompt_tokens"), "mean_completion_tokens": mean("completion_tokens"),
            "errors": sum(r.get("error") is not None for r in rows),
            "verifier_over_budget": sum(over_budget(r.get("verification")) for r in rows)}
