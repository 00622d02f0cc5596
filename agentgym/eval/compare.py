"""``agentgym compare A.jsonl B.jsonl``: is B better than A, or is the difference noise?

Two runs' episodes are paired by task (an env id and a task id; a task played several times, by ``--samples`` or
``--repeats``, counts once, at its mean), and only tasks both runs scored are compared. The difference is B's mean
minus A's over those tasks; its interval is a paired bootstrap over tasks (the tasks resampled with replacement,
the mean difference taken each time, the percentile interval at the stated level), and the difference is
*significant* when a paired sign-flip test over tasks (the null: each task's difference is as likely negative as
positive) gives p below the level. Errored episodes are not scored, as everywhere in eval.

>>> a = [{"env_id": "e", "task_id": t, "correct": c, "reward": float(c)} for t, c in zip("abcdefgh", [1, 0] * 4)]
>>> b = [dict(row) for row in a]
>>> result = compare_runs(a, b)
>>> result["difference"], result["significant"]
(0.0, False)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from agentgym.errors import ConfigError

__all__ = ["METRICS", "compare_runs", "paired_test", "render", "task_means"]

METRICS = ("success", "reward")


def _value(row: Mapping[str, Any], metric: str) -> float:
    return float(bool(row.get("correct"))) if metric == "success" else float(row.get("reward") or 0.0)


def task_means(rows: Iterable[Mapping[str, Any]], metric: str = "success") -> dict[tuple[str, str], float]:
    """Each task's mean ``metric`` over its scored episodes: ``{(env_id, task_id): mean}`` (a record without a
    task id is known by its episode number)."""
    if metric not in METRICS:
        raise ConfigError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}.")
    sums: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        if row.get("error") is not None:
            continue
        task = row.get("task_id")
        key = (str(row.get("env_id", "")), str(task if task is not None else f"episode {row.get('episode')}"))
        sums.setdefault(key, []).append(_value(row, metric))
    return {key: sum(values) / len(values) for key, values in sums.items()}


def paired_test(differences: Sequence[float], *, level: float = 0.05, resamples: int = 10_000,
                seed: int = 0) -> dict[str, Any]:
    """The mean of paired ``differences`` (one a task), its bootstrap percentile interval at ``1 - level`` and
    the two-sided p of a sign-flip test; ``significant``: p < level."""
    if not 0 < level < 1:
        raise ConfigError(f"--level must be between 0 and 1 (e.g. 0.05), got {level}.")
    if resamples < 100:
        raise ConfigError(f"--resamples must be at least 100, got {resamples}.")
    d = np.asarray(differences, dtype=float)
    if d.size == 0:
        raise ConfigError("no task was scored in both runs: nothing to compare (are they runs of the same envs?).")
    rng = np.random.default_rng(seed)
    observed = float(d.mean())
    means = d[rng.integers(0, d.size, size=(resamples, d.size))].mean(axis=1)
    low, high = (float(x) for x in np.quantile(means, [level / 2, 1 - level / 2]))
    signs = rng.choice(np.array([-1.0, 1.0]), size=(resamples, d.size))
    flipped = np.abs((signs * d).mean(axis=1))
    p = float((1 + np.count_nonzero(flipped >= abs(observed) - 1e-12)) / (1 + resamples))
    return {"difference": observed, "interval": [low, high], "p_value": min(1.0, p), "significant": p < level,
            "level": level, "tasks": int(d.size)}


def compare_runs(a: Iterable[Mapping[str, Any]], b: Iterable[Mapping[str, Any]], *, metric: str = "success",
                 level: float = 0.05, resamples: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """B minus A over the tasks both runs scored (``paired_test``), with each run's mean over those tasks, the
    tasks only one of them scored, and the same per env."""
    mean_a, mean_b = task_means(a, metric), task_means(b, metric)
    shared = sorted(set(mean_a) & set(mean_b))
    result = paired_test([mean_b[k] - mean_a[k] for k in shared], level=level, resamples=resamples, seed=seed)
    result.update(metric=metric, a_mean=sum(mean_a[k] for k in shared) / len(shared),
                  b_mean=sum(mean_b[k] for k in shared) / len(shared), only_a=len(set(mean_a) - set(mean_b)),
                  only_b=len(set(mean_b) - set(mean_a)), resamples=resamples, seed=seed)
    envs = sorted({env for env, _ in shared})
    if len(envs) > 1:
        result["envs"] = {}
        for env in envs:
            keys = [k for k in shared if k[0] == env]
            part = paired_test([mean_b[k] - mean_a[k] for k in keys], level=level, resamples=resamples, seed=seed)
            part.update(a_mean=sum(mean_a[k] for k in keys) / len(keys),
                        b_mean=sum(mean_b[k] for k in keys) / len(keys))
            result["envs"][env] = part
    return result


def _line(label: str, r: Mapping[str, Any], metric: str) -> str:
    low, high = r["interval"]
    verdict = "significant" if r["significant"] else "not significant"
    return (f"{label}: {metric} A {r['a_mean']:.3f}, B {r['b_mean']:.3f} over {r['tasks']} tasks; B - A "
            f"{r['difference']:+.3f} [{low:+.3f}, {high:+.3f}], p = {r['p_value']:.4f}: {verdict} at "
            f"{r['level']:g}")


def render(result: Mapping[str, Any], a_name: str = "A", b_name: str = "B") -> str:
    lines = [f"A = {a_name}", f"B = {b_name}", _line("all", result, result["metric"])]
    lines += [_line(f"  {env}", part, result["metric"]) for env, part in (result.get("envs") or {}).items()]
    if result["only_a"] or result["only_b"]:
        lines.append(f"not paired (left out): {result['only_a']} tasks only A scored, {result['only_b']} only B")
    lines.append(f"(interval: paired bootstrap over tasks, {1 - result['level']:.0%}; p: sign-flip test over "
                 f"tasks; {result['resamples']} resamples, seed {result['seed']})")
    return "\n".join(lines)
