"""A curriculum for GRPO (``curriculum: true``): each step's groups are drawn from task pools kept by each task's
last group reward, as prime-rl keeps its easy / normal / hard buffers.

A task is **easy** once its last group's mean reward is at least ``curriculum_easy_at`` (default 1: every rollout
solved it), **hard** once it is at most ``curriculum_hard_at`` (default 0: none did), else **normal**; a task not
played yet is normal. A group is drawn from the easy pool with probability ``curriculum_easy_share``, from the hard
pool with ``curriculum_hard_share``, else from the normal pool (an empty pool gives way to normal, then hard, then
easy), without repeating a task within a step. Groups whose every rollout failed (an env or grader error) leave
their task's pool as it was. Such groups, and groups with no signal, are what GRPO cannot learn from: the
``dynamic_sampling`` gate turns the flat ones away and draws replacements from the normal pool.

The pools, the draw's random state and the counts are written into every checkpoint
(``checkpoint-N/agentgym_curriculum.json``) and read back on ``resume``, so a resumed run draws as the whole run
would have.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentgym.lm.rollout import Episode, TaskSpec

__all__ = ["POOLS", "STATE_FILE", "Curriculum"]

STATE_FILE = "agentgym_curriculum.json"
POOLS = ("easy", "normal", "hard")


class Curriculum:
    """The pools of ``specs`` and the draw of each step's tasks."""

    def __init__(self, specs: Sequence[TaskSpec], *, seed: int, easy_at: float = 1.0, hard_at: float = 0.0,
                 easy_share: float = 0.1, hard_share: float = 0.1) -> None:
        self.specs = list(dict.fromkeys(specs))
        self.easy_at, self.hard_at = easy_at, hard_at
        self.easy_share, self.hard_share = easy_share, hard_share
        self.rng = random.Random(seed + 104_729)
        #: task key -> the mean reward of its last group played
        self.last: dict[str, float] = {}
        #: groups drawn from each pool over the run, and in the step being played
        self.drawn = dict.fromkeys(POOLS, 0)
        self.step_drawn = dict.fromkeys(POOLS, 0)

    def pool_of(self, spec: TaskSpec) -> str:
        reward = self.last.get(spec.key)
        if reward is None:
            return "normal"
        if reward >= self.easy_at:
            return "easy"
        return "hard" if reward <= self.hard_at else "normal"

    def pools(self) -> dict[str, list[TaskSpec]]:
        out: dict[str, list[TaskSpec]] = {name: [] for name in POOLS}
        for spec in self.specs:
            out[self.pool_of(spec)].append(spec)
        return out

    def draw(self, groups: int, *, taken: Sequence[TaskSpec] = (), only: str | None = None) -> list[TaskSpec]:
        """``groups`` tasks for a step, each from a pool picked by the shares (``only``: from that pool first),
        none of ``taken`` and none twice where the tasks allow it."""
        pools = self.pools()
        used = set(taken)
        chosen: list[TaskSpec] = []
        for _ in range(groups):
            roll = self.rng.random()
            wanted = only or ("easy" if roll < self.easy_share else
                              "hard" if roll < self.easy_share + self.hard_share else "normal")
            order = [wanted] + [p for p in ("normal", "hard", "easy") if p != wanted]
            for name in order:
                candidates = [s for s in pools[name] if s not in used]
                if candidates:
                    break
            else:  # every task is in the step already: repeat one, from the pool wanted if it has any
                name = next((p for p in order if pools[p]), "normal")
                candidates = pools[name] or self.specs
            spec = self.rng.choice(candidates)
            used.add(spec)
            chosen.append(spec)
            self.drawn[name] += 1
            self.step_drawn[name] += 1
        return chosen

    def update(self, episodes: Sequence[Episode], group_size: int) -> None:
        """Each group's task to the pool its mean reward says (failed rollouts left out; an all-failed group
        changes nothing)."""
        for i in range(0, len(episodes), group_size):
            group = episodes[i:i + group_size]
            scored = [e.reward for e in group if not e.failed]
            if scored:
                self.last[group[0].spec.key] = sum(scored) / len(scored)

    def metrics(self) -> dict[str, float]:
        """The pool sizes after the step, and the groups drawn from each this step (then reset)."""
        sizes = {name: float(len(specs)) for name, specs in self.pools().items()}
        out = {f"curriculum_{name}": sizes[name] for name in POOLS}
        out.update({f"curriculum_drawn_{name}": float(self.step_drawn[name]) for name in POOLS})
        self.step_drawn = dict.fromkeys(POOLS, 0)
        return out

    # ---- checkpoints -------------------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        version, internal, gauss = self.rng.getstate()
        return {"last": self.last, "drawn": self.drawn, "rng": [version, list(internal), gauss],
                "thresholds": {"easy_at": self.easy_at, "hard_at": self.hard_at},
                "shares": {"easy": self.easy_share, "hard": self.hard_share}}

    def load(self, state: dict[str, Any]) -> None:
        self.last = {str(k): float(v) for k, v in state["last"].items()}
        self.drawn = {name: int(state["drawn"].get(name, 0)) for name in POOLS}
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))

    def save(self, folder: Path) -> None:
        (folder / STATE_FILE).write_text(json.dumps(self.state()) + "\n")

    def resume(self, output_dir: str | Path, step: int) -> bool:
        """Read the state checkpoint ``step`` saved; False when there is none (a fresh run)."""
        path = Path(output_dir) / f"checkpoint-{step}" / STATE_FILE
        if step == 0 or not path.is_file():
            return False
        self.load(json.loads(path.read_text()))
        return True
