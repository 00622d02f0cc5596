"""Difficulty cards: per task of an env, how often reference policies solve it.

``agentgym difficulty ENV`` plays the first ``tasks`` tasks of the env's evaluation split with each reference
policy (the oracle once, the random policy and the default model ``samples`` times each, the model at
``temperature``) and writes the card: every task's pass rate under every policy, and its level by the reference
model's pass rate (``LEVELS``), as JSON beside a histogram PNG. A card names the env version and its data digest,
so it is known for which data it holds.
"""

from __future__ import annotations

import datetime
import json
import platform
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError

__all__ = ["BUNDLED", "DEFAULT_POLICIES", "LEVELS", "Card", "card_path", "measure", "render"]

#: the cards that ship with agentgym (scripts/difficulty_bundled.py makes them)
BUNDLED = Path(__file__).resolve().parents[1] / "data" / "difficulty"

#: a task's level by the reference model's pass rate p: easy p >= 0.75, medium 0.25 <= p < 0.75, hard p < 0.25
LEVELS: dict[str, tuple[float, float]] = {"easy": (0.75, 1.0), "medium": (0.25, 0.75), "hard": (0.0, 0.25)}
DEFAULT_POLICIES = ("oracle", "random", "smollm2")


@dataclass
class Card:
    env_id: str
    env_version: str
    env_digest: str
    split: str
    tasks: list[str]
    #: policy -> task id -> share of its plays the verifier called correct
    pass_rates: dict[str, dict[str, float]]
    #: policy -> plays of each task
    samples: dict[str, int]
    #: the policy whose pass rate sets each task's level
    reference: str
    temperature: float
    seed: int
    made: dict[str, str] = field(default_factory=dict)

    def level_of(self, task_id: str) -> str:
        rate = self.pass_rates[self.reference][task_id]
        return next(name for name, (lo, hi) in LEVELS.items() if lo <= rate < hi or (hi == 1.0 and rate == 1.0))

    def levels(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {name: [] for name in LEVELS}
        for task_id in self.tasks:
            out[self.level_of(task_id)].append(task_id)
        return out

    def to_json(self) -> dict[str, Any]:
        means = {p: sum(rates.values()) / len(rates) for p, rates in self.pass_rates.items() if rates}
        return {**asdict(self), "levels": self.levels(), "mean_pass_rate": means}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Card:
        fields = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**fields)

    def write(self, out_dir: Path) -> tuple[Path, Path]:
        """The card as ``<slug>.json`` and its histogram as ``<slug>.png`` in ``out_dir``."""
        out_dir.mkdir(parents=True, exist_ok=True)
        path = card_path(out_dir, self.env_id)
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        png = path.with_suffix(".png")
        self._histogram(png)
        return path, png

    def _histogram(self, png: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        bins = [0.0, 0.125, 0.375, 0.625, 0.875, 1.0001]
        fig, ax = plt.subplots(figsize=(6, 3.2))
        width = 0.8 / max(1, len(self.pass_rates))
        for k, (policy, rates) in enumerate(self.pass_rates.items()):
            counts = [sum(lo <= r < hi for r in rates.values()) for lo, hi in zip(bins, bins[1:])]
            ax.bar([i + k * width for i in range(len(counts))], counts, width=width,
                   label=f"{policy} ({self.samples[policy]} a task)")
        ax.set_xticks([i + 0.4 - width / 2 for i in range(5)], ["0", "0.25", "0.5", "0.75", "1"])
        ax.set_xlabel("pass rate (nearest)")
        ax.set_ylabel("tasks")
        ax.set_title(f"{self.env_id} ({self.split}, {len(self.tasks)} tasks)", fontsize=10)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(png, dpi=100)
        plt.close(fig)


def card_path(out_dir: Path, env_id: str) -> Path:
    return out_dir / (env_id.replace("/", "__") + ".json")


def measure(env_id: str, *, tasks: int = 20, samples: int = 4, policies: Sequence[str] = DEFAULT_POLICIES,
            temperature: float = 1.0, seed: int = 0, env_kwargs: dict[str, Any] | None = None,
            on_play: Callable[[str, int, int], None] | None = None) -> Card:
    """Play ``policies`` on the first ``tasks`` tasks of ``env_id``'s evaluation split: the oracle once a task,
    every other policy ``samples`` times (a seed of its own each play); a model policy samples at ``temperature``.
    The reference (what sets a task's level) is the last model policy named, else the last policy."""
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
        split = inner.split
        ids = [task.id for task in inner.tasks.tasks(split)][:tasks]
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
            for result in evaluate(env_id, player, episodes=len(ids), seed=seed + 10_000 * j, env_kwargs=kwargs):
                solved[result.task_id] += bool(result.correct) and not result.error
            if on_play is not None:
                on_play(policy_name, j + 1, k)
        rates[policy_name], plays[policy_name] = {t: solved[t] / k for t in ids}, k
    models = [p for p in policies if p not in baselines]
    return Card(env_id=env_id, env_version=str(version), env_digest=digest, split=split, tasks=ids,
                pass_rates=rates, samples=plays, reference=(models or list(policies))[-1], temperature=temperature,
                seed=seed, made={"date": datetime.date.today().isoformat(), "machine": platform.machine(),
                                 "agentgym": _version()})


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
