"""Difficulty cards, what they hold and how tasks are selected by them (``--difficulty`` in eval and train).

A card (``agentgym difficulty ENV`` measures one: ``agentgym.eval.difficulty``) gives every task of a split its pass
rate under reference policies, and a level by the reference model's (``LEVELS``). ``select_tasks`` picks the tasks
of a level, checking that the env's tasks are the ones the card measured. Here, below eval and the trainer, so both
select by it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError

__all__ = ["BUNDLED", "LEVELS", "Card", "card_path", "find_card", "parse_difficulty", "select_tasks", "task_digests"]

#: the cards that ship with agentgym (scripts/difficulty_bundled.py makes them)
BUNDLED = Path(__file__).resolve().parents[1] / "data" / "difficulty"

#: a task's level by the reference model's pass rate p: easy p >= 0.75, medium 0.25 <= p < 0.75, hard p < 0.25
LEVELS: dict[str, tuple[float, float]] = {"easy": (0.75, 1.0), "medium": (0.25, 0.75), "hard": (0.0, 0.25)}

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
    #: task id -> a digest of the task (its prompt and gold): what selection by this card checks the env against
    task_digests: dict[str, str] = field(default_factory=dict)
    #: the env kwargs the tasks were played with
    env_kwargs: dict[str, Any] = field(default_factory=dict)

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


def task_digests(tasks: Sequence[Any]) -> dict[str, str]:
    """Task id -> 16 hex digits of its prompt and gold: what a card was measured on, checkable on another machine."""
    return {t.id: hashlib.sha256(json.dumps([t.prompt, t.gold], sort_keys=True, default=str).encode()).hexdigest()[:16]
            for t in tasks}


_RANGE = re.compile(r"^\s*(\d*\.?\d+)\s*[-:]\s*(\d*\.?\d+)\s*$")


def parse_difficulty(spec: str) -> tuple[float, float]:
    """``easy``, ``medium``, ``hard`` (``LEVELS``), or a pass-rate range ``LO-HI`` (both ends in): ``(lo, hi)``;
    a level's upper end is open but for 1.0."""
    if spec in LEVELS:
        return LEVELS[spec]
    match = _RANGE.match(spec)
    if match:
        lo, hi = float(match[1]), float(match[2])
        if 0.0 <= lo <= hi <= 1.0:
            return lo, hi
    raise ConfigError(f"--difficulty takes {', '.join(LEVELS)} or a pass-rate range LO-HI with 0 <= LO <= HI <= 1 "
                      f"(e.g. 0.25-0.75), got {spec!r}.")


def find_card(env_id: str, card: str | Path | None = None) -> Card:
    """``card`` (a card file, or a directory holding ``env_id``'s), else ``env_id``'s bundled card."""
    where = Path(card) if card is not None else BUNDLED
    path = card_path(where, env_id) if where.is_dir() else where
    if not path.is_file():
        hint = f"--difficulty-card {card}" if card is not None else "the bundled cards"
        raise ConfigError(f"No difficulty card of {env_id} in {hint}: make one with `agentgym difficulty {env_id}` "
                          "and pass it with --difficulty-card.")
    try:
        found = Card.from_json(json.loads(path.read_text()))
    except (ValueError, TypeError, KeyError) as e:
        raise ConfigError(f"{path} is not a difficulty card ({e}); `agentgym difficulty {env_id}` writes one.") from e
    if found.env_id != env_id:
        raise ConfigError(f"{path} is the card of {found.env_id}, not of {env_id}.")
    return found


def select_tasks(env_id: str, spec: str, tasks: Sequence[Any], split: str, *,
                 card: str | Path | None = None) -> list[str]:
    """The ids of ``tasks`` (the env's ``split``, as it is made) whose level on ``env_id``'s card is ``spec``, in
    the card's order. The card must be of that split, and each task it names that the env has must be the task it
    measured (same prompt and gold); tasks the env does not have (an env made with a task filter) are passed over."""
    lo, hi = parse_difficulty(spec)
    found = find_card(env_id, card)
    if found.split != split:
        raise ConfigError(f"{env_id}'s card measured split {found.split!r}, not {split!r}: pass --split "
                          f"{found.split}, or make a card of {split!r} (agentgym difficulty {env_id} --split {split}).")
    if not found.task_digests:
        raise ConfigError(f"{env_id}'s card names no task digests (made by an older agentgym): make it again.")
    have = task_digests(tasks)
    changed = [t for t in found.tasks if t in have and have[t] != found.task_digests.get(t)]
    if changed:
        raise ConfigError(f"{env_id}'s card was measured on other data: {len(changed)} of its tasks differ here "
                          f"(first: {changed[0]}). Make a card of this data with agentgym difficulty {env_id}.")
    rates = found.pass_rates[found.reference]

    def wanted(task_id: str) -> bool:
        if spec in LEVELS:
            return found.level_of(task_id) == spec
        return lo <= rates[task_id] <= hi

    chosen = [t for t in found.tasks if t in have and wanted(t)]
    if not chosen:
        counts = {name: len(ids) for name, ids in found.levels().items()}
        raise ConfigError(f"No task of {env_id} ({split}) is {spec} by its card ({found.reference}'s pass rate "
                          f"in [{lo:g}, {hi:g}]): the card's {len(found.tasks)} tasks are "
                          + ", ".join(f"{n} {name}" for name, n in counts.items()) + ".")
    return chosen
