"""The result type every verifier returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Score:
    """A verifier's verdict on one prediction.

    ``reward`` is in ``[0, 1]`` unless a verifier documents otherwise;
    ``correct`` is the binary outcome; ``details`` holds the sub-scores
    (JSON-serialisable) that explain the reward.

    >>> Score(1.0, True, {"em": 1.0}).as_dict()
    {'reward': 1.0, 'correct': True, 'details': {'em': 1.0}}
    """

    reward: float
    correct: bool
    details: dict[str, Any] = field(default_factory=dict)
    #: a rubric's verdict: each part's score, weight and gate (``agentgym.Rubric``); None for other verifiers
    parts: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {"reward": self.reward, "correct": self.correct, "details": dict(self.details)}
        return out if self.parts is None else {**out, "parts": dict(self.parts)}
