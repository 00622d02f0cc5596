"""Summaries of episodes (``summarize``), the 95% confidence intervals they and the leaderboard use, and pass@k
over several samples of one task (``pass_at_k``, ``per_task``)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from agentgym.verifiers.budget import over_budget

__all__ = ["Z_95", "mean_ci", "pass_at_k", "per_task", "sample_metrics", "summarize", "wilson_ci"]

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


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of ``k`` samples drawn from ``n`` (``c`` of them correct) is correct:
    ``1 - C(n-c, k) / C(n, k)``, the unbiased estimator of Chen et al. (2021), as a stable product.

    >>> pass_at_k(4, 1, 1), pass_at_k(4, 1, 2), pass_at_k(4, 0, 4), pass_at_k(5, 2, 4)
    (0.25, 0.5, 0.0, 1.0)
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}.")
    if n - c < k:
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


def _task(row: dict[str, Any]) -> str:
    # episode i of an entry plays one task whatever its sample; old records without "episode" use the task id
    return str(row.get("episode") if row.get("episode") is not None else row.get("task_id", ""))


def per_task(rows: Sequence[dict[str, Any]]) -> dict[str, list[int]]:
    """``{task: [correct, scored]}`` over the samples of each task (an entry's episode number); errored
    samples are not scored."""
    tasks: dict[str, list[int]] = {}
    for row in rows:
        counts = tasks.setdefault(_task(row), [0, 0])
        if row.get("error") is None:
            counts[0] += bool(row.get("correct"))
            counts[1] += 1
    return tasks


def sample_metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """pass@k and mean@k over tasks, with ``k`` the most samples any task has.

    mean@k is the mean over tasks of each task's success rate over its scored
    samples; pass@k is the mean of ``pass_at_k(n, c, k)`` over the tasks with
    all ``k`` samples scored (``tasks_short``: those left out, having an
    errored sample). ``None`` where no task counts.
    """
    tasks = per_task(rows)
    k = max(Counter(_task(r) for r in rows).values(), default=0)
    scored = [(c, n) for c, n in tasks.values() if n]
    full = [(c, n) for c, n in scored if n >= k]
    return {"k": k, "tasks": len(tasks), "tasks_short": len(tasks) - len(full),
            "pass_at_k": sum(pass_at_k(n, c, k) for c, n in full) / len(full) if full and k else None,
            "mean_at_k": sum(c / n for c, n in scored) / len(scored) if scored else None}


def summarize(results: Sequence[Any]) -> dict[str, Any]:
    """Means over episodes, with 95% intervals: Wilson for the success rate, normal for the mean reward;
    and pass@k, mean@k and per-task success over each task's samples (``sample_metrics``, ``per_task``).

    Errored episodes (an exception, not an agent's mistake) are excluded from the
    success rate and the mean reward and counted in ``errors``; ``scored`` is
    what those are over. Accepts episode results or their dicts (as
    ``load_results`` returns them).
    """
    rows = [r.as_dict() if hasattr(r, "as_dict") else r for r in results]
    n = len(rows)
    ok = [r for r in rows if r.get("error") is None]

    def mean(name: str) -> float:
        return sum(float(r.get(name) or 0) for r in rows) / n if n else 0.0

    successes = sum(bool(r.get("correct")) for r in ok)
    success_low, success_high = wilson_ci(successes, len(ok))
    rewards = [float(r.get("reward") or 0) for r in ok]
    reward_low, reward_high = mean_ci(rewards)
    samples = sample_metrics(rows)
    return {"episodes": n, "scored": len(ok), "mean_reward": sum(rewards) / len(ok) if ok else 0.0,
            "mean_reward_ci_low": reward_low, "mean_reward_ci_high": reward_high,
            "success_rate": successes / len(ok) if ok else 0.0,
            "success_rate_ci_low": success_low, "success_rate_ci_high": success_high,
            "mean_turns": mean("turns"), "mean_tool_calls": mean("tool_calls"),
            "mean_prompt_tokens": mean("prompt_tokens"), "mean_completion_tokens": mean("completion_tokens"),
            "errors": n - len(ok),
            "verifier_over_budget": sum(over_budget(r.get("verification")) for r in rows),
            "samples": samples["k"], "pass_at_k": samples["pass_at_k"], "mean_at_k": samples["mean_at_k"],
            "tasks_short": samples["tasks_short"], "per_task": per_task(rows)}
