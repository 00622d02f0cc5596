"""Difficulty cards, measured: ``agentgym difficulty ENV`` plays the first ``tasks`` tasks of a split of the env
(its evaluation split by default) with each reference policy (the oracle once, the random policy and the default
model ``samples`` times each, the model at ``temperature``) and writes the card: every task's pass rate under every
policy, and its level by the reference model's pass rate (``LEVELS``), as JSON beside a histogram PNG. A card names
the env version, its data digest and a digest of each task it measured, so it is known for which data it holds.
What a card is and how tasks are selected by it: ``agentgym.core.difficulty``.
"""

from __future__ import annotations

import datetime
import platform
from collections.abc import Callable, Sequence
from typing import Any

from agentgym.core.difficulty import (
    BUNDLED,
    LEVELS,
    Card,
    card_path,
    find_card,
    parse_difficulty,
    select_tasks,
    task_digests,
)
from agentgym.errors import ConfigError

__all__ = ["BUNDLED", "DEFAULT_POLICIES", "LEVELS", "Card", "card_path", "find_card", "measure", "parse_difficulty",
           "render", "select_tasks", "task_digests"]

DEFAULT_POLICIES = ("oracle", "random", "smollm2")


def measure(env_id: str, *, tasks: int = 20, samples: int = 4, policies: Sequence[str] = DEFAULT_POLICIES,
            temperature: float = 1.0, seed: int = 0, env_kwargs: dict[str, Any] | None = None,
            split: str | None = None, on_play: Callable[[str, int, int], None] | None = None) -> Card:
    """Play ``policies`` on the first ``tasks`` tasks of ``env_id``'s ``split`` (its evaluation split when None):
    the oracle once a task, every other policy ``samples`` times (a seed of its own each play); a model policy
    samples at ``temperature``. The reference (what sets a task's level) is the last model policy named, else the
    last policy."""
    from agentgym.core.registry import make
    from agentgym.eval.envdigest import env_digest
    from agentgym.eval.runner import evaluate
    from agentgym.policies import make_policy
    from agentgym.policies.base import Sampling

    if tasks < 1 or samples < 1:
        raise ConfigError(f"--tasks and --samples must be >= 1, got {tasks} and {samples}.")
    if not policies:
        raise ConfigError("Name at least one policy (--policy).")
    kwargs = dict(env_kwargs or {})
    env = make(env_id, **kwargs)
    try:
        inner = env.unwrapped
        split = split or inner.split
        if split not in inner.tasks.splits():
            raise ConfigError(f"{env_id} has no split {split!r}; its splits are {inner.tasks.splits()}.")
        played = list(inner.tasks.tasks(split))[:tasks]
        ids = [task.id for task in played]
        digests = task_digests(played)
        digest = env_digest(env_id, env, kwargs, split)
        version = env_id.rsplit("-", 1)[-1]
    finally:
        env.close()
    rates: dict[str, dict[str, float]] = {}
    plays: dict[str, int] = {}
    baselines = ("oracle", "random", "empty")
    for policy_name in policies:
        k = 1 if policy_name == "oracle" else samples
        sampling = None if policy_name in baselines else Sampling(temperature=temperature, seed=seed)
        player = make_policy(policy_name, seed=seed, sampling=sampling)
        solved = dict.fromkeys(ids, 0)
        for j in range(k):
            for result in evaluate(env_id, player, episodes=len(ids), seed=seed + 10_000 * j, env_kwargs=kwargs,
                                   split=split):
                solved[result.task_id] += bool(result.correct) and not result.error
            if on_play is not None:
                on_play(policy_name, j + 1, k)
        rates[policy_name], plays[policy_name] = {t: solved[t] / k for t in ids}, k
    models = [p for p in policies if p not in baselines]
    return Card(env_id=env_id, env_version=str(version), env_digest=digest, split=split, tasks=ids,
                pass_rates=rates, samples=plays, reference=(models or list(policies))[-1], temperature=temperature,
                seed=seed, made={"date": datetime.date.today().isoformat(), "machine": platform.machine(),
                                 "agentgym": _version()}, task_digests=digests, env_kwargs=kwargs)


def _version() -> str:
    from agentgym import __version__

    return __version__


def render(card: Card) -> str:
    """The card as text: each policy's mean pass rate and spread over tasks, and the tasks at each level."""
    lines = [f"{card.env_id} ({card.split}, {len(card.tasks)} tasks; data {card.env_digest[:12]}; "
             f"made {card.made.get('date', '?')})",
             f"{'policy':<14} {'plays/task':>10} {'mean':>6}   pass-rate histogram (0 .. 1)"]
    for policy, rates in card.pass_rates.items():
        values = list(rates.values())
        buckets = [0] * 5  # the nearest of 0, 0.25, 0.5, 0.75, 1
        for v in values:
            buckets[min(4, int(v * 4 + 0.5))] += 1
        mean = sum(values) / len(values) if values else 0.0
        lines.append(f"{policy:<14} {card.samples[policy]:>10} {mean:>6.2f}   " + " ".join(f"{b:>3}" for b in buckets))
    levels = card.levels()
    lines.append(f"levels by {card.reference}'s pass rate: " + ", ".join(
        f"{name} {len(levels[name])} (p in [{lo:g}, {hi:g}{']' if hi == 1.0 else ')'})"
        for name, (lo, hi) in LEVELS.items()))
    return "\n".join(lines)
