"""Summaries of episodes (``summarize``), the 95% confidence intervals they and the leaderboard use, and pass@k
over several samples of one task (``pass_at_k``, ``per_task``)."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from agentgym.verifiers.budget import over_budget

__all__ = ["Z_95", "mean_ci", "over_tasks", "pass_at_k", "per_task", "sample_metrics", "summarize", "wilson_ci"]

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
    return _around(sum(values) / len(values) if values else 0.0, values, z=z)


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


def over_tasks(scored: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Success rate and mean reward of scored episodes with their 95% intervals, over **tasks**: the unit of
    evidence is a task (its ``task_id``), so repeats of one task (``--samples``) are not counted as independent.
    With one episode a task: the plain rates, Wilson for success, normal for reward. With repeats: the same
    rates, and a normal interval whose spread is that of the tasks' own means over n = tasks (the repeats of one
    task are correlated: counting them as n would narrow the interval), for success at least Wilson's over n =
    tasks. ``tasks``: how many.

    >>> rows = [{"task_id": t, "correct": c, "reward": float(c)} for t, c in [("a", 1), ("a", 1), ("b", 0)] * 5]
    >>> summary = over_tasks(rows)  # two tasks, one always solved, one never: 15 episodes are not 15 tasks
    >>> summary["tasks"], round(summary["success_rate"], 3), summary["success_ci"]
    (2, 0.667, (0.0, 1.0))
    >>> [round(x, 2) for x in wilson_ci(10, 15)]  # what counting the 15 episodes as independent claimed
    [0.42, 0.85]
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for i, row in enumerate(scored):
        # a record that names no task (an old or hand-made one) is a task of its own
        task = row.get("task_id") or (f"episode {row['episode']}" if row.get("episode") is not None else f"row {i}")
        groups.setdefault(str(task), []).append(row)
    if all(len(group) == 1 for group in groups.values()):
        successes = sum(bool(r.get("correct")) for r in scored)
        rewards = [float(r.get("reward") or 0) for r in scored]
        return {"tasks": len(groups), "success_rate": successes / len(scored) if scored else 0.0,
                "success_ci": wilson_ci(successes, len(scored)),
                "mean_reward": sum(rewards) / len(rewards) if rewards else 0.0, "reward_ci": mean_ci(rewards)}
    success = [sum(bool(r.get("correct")) for r in g) / len(g) for g in groups.values()]
    reward = [sum(float(r.get("reward") or 0) for r in g) / len(g) for g in groups.values()]
    pooled_success = sum(bool(r.get("correct")) for r in scored) / len(scored)
    pooled_reward = sum(float(r.get("reward") or 0) for r in scored) / len(scored)
    # a success rate's interval is at least Wilson's over n = tasks (tasks that all agree have no spread to show)
    normal = _around(pooled_success, success)
    wilson = wilson_ci(pooled_success * len(groups), len(groups))
    success_ci = (min(normal[0], wilson[0]), max(normal[1], wilson[1]))
    return {"tasks": len(groups), "success_rate": pooled_success, "success_ci": success_ci,
            "mean_reward": pooled_reward, "reward_ci": _around(pooled_reward, reward)}


def _around(center: float, values: Sequence[float], *, z: float = Z_95) -> tuple[float, float]:
    """A normal interval around ``center`` with the standard error of ``values``' mean, clipped to [0, 1];
    ``(0, 1)`` with fewer than two values (the spread is unknown)."""
    n = len(values)
    if n < 2:
        return 0.0, 1.0
    mean = sum(values) / n
    half = z * math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)
    return max(0.0, center - half), min(1.0, center + half)


def repeat_noise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Run-to-run noise of ``--repeats``: each task's flip rate (the share of its scored repeats whose outcome is
    not the task's majority outcome; 0 when every repeat agreed), the share of tasks that flipped at all, and the
    noise floor: the standard deviation over repeats of the run's success rate in each repeat (repeat ``j`` being
    every task's ``j``-th episode, its ``sample`` number).

    >>> rows = [{"task_id": t, "episode": i, "sample": j, "correct": c}
    ...         for i, (t, outcomes) in enumerate([("a", [1, 1, 1]), ("b", [1, 0, 1])]) for j, c in enumerate(outcomes)]
    >>> noise = repeat_noise(rows)
    >>> noise["flipped_tasks"], round(noise["per_task_flip"]["1"], 3), round(noise["noise_floor"], 3)
    (0.5, 0.333, 0.289)
    """
    outcomes: dict[str, list[bool]] = {}
    by_repeat: dict[int, list[bool]] = {}
    for row in rows:
        if row.get("error") is not None:
            continue
        outcomes.setdefault(_task(row), []).append(bool(row.get("correct")))
        by_repeat.setdefault(int(row.get("sample") or 0), []).append(bool(row.get("correct")))
    per_task = {task: min(sum(o), len(o) - sum(o)) / len(o) for task, o in outcomes.items() if len(o) > 1}
    means = [sum(o) / len(o) for o in by_repeat.values() if o]
    floor = statistics.stdev(means) if len(means) > 1 else None
    return {"repeats": max((len(o) for o in outcomes.values()), default=0),
            "flipped_tasks": sum(rate > 0 for rate in per_task.values()) / len(per_task) if per_task else None,
            "flip_rate": sum(per_task.values()) / len(per_task) if per_task else None,
            "noise_floor": floor, "repeat_success": means, "per_task_flip": per_task}


def summarize(results: Sequence[Any]) -> dict[str, Any]:
    """Success rate and mean reward with 95% intervals over tasks (``over_tasks``: repeats of a task are one
    task's evidence, ``tasks`` counts them); means of turns and tokens over episodes; and pass@k, mean@k and
    per-task success over each task's samples (``sample_metrics``, ``per_task``).

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

    rates = over_tasks(ok)
    (success_low, success_high), (reward_low, reward_high) = rates["success_ci"], rates["reward_ci"]
    samples = sample_metrics(rows)
    return {"episodes": n, "scored": len(ok), "tasks": rates["tasks"], "mean_reward": rates["mean_reward"],
            "mean_reward_ci_low": reward_low, "mean_reward_ci_high": reward_high,
            "success_rate": rates["success_rate"],
            "success_rate_ci_low": success_low, "success_rate_ci_high": success_high,
            "mean_turns": mean("turns"), "mean_tool_calls": mean("tool_calls"),
            "mean_prompt_tokens": mean("prompt_tokens"), "mean_completion_tokens": mean("completion_tokens"),
            "errors": n - len(ok),
            "verifier_over_budget": sum(over_budget(r.get("verification")) for r in rows),
            "samples": samples["k"], "pass_at_k": samples["pass_at_k"], "mean_at_k": samples["mean_at_k"],
            "tasks_short": samples["tasks_short"], "per_task": per_task(rows)}
