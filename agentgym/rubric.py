"""Rewards from parts: ``agentgym.Rubric`` of weighted ``Part``s and gates, and ``agentgym.JudgeRubric``, a part a
model scores through any OpenAI-compatible endpoint.

A rubric is a verifier: ``agentgym.register(..., verifier=rubric)`` (or ``ToolEnv(verifier=rubric)``). Each part
scores the answer (or the episode's transcript) against the task's gold in [0, 1]; the reward is the weighted mean
of the scored parts, or 0 when a gate fails (a gate is a part that must pass for any reward: the answer is a
number, the code compiles). Every part's score is kept in ``info["verification"]["parts"]``::

    rubric = agentgym.Rubric(
        agentgym.Part("cites_a_source", lambda answer, task: "[" in answer, gate=True),
        agentgym.Part("correct", "qa", weight=3),                    # a built-in verifier by name
        agentgym.Part("short", lambda answer, task: len(answer) < 300),
    )
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym.errors import ConfigError
from agentgym.verifiers.score import Score

__all__ = ["ENV", "Part", "Rubric", "tags_format"]

#: a part's function naming the env's own verdict
ENV = "env"


@dataclass(frozen=True)
class Part:
    """One part of a rubric: ``fn(answer, task)`` (or ``fn(transcript, task)`` with ``on="transcript"``: the
    episode's ``[(kind, text), ...]``) returning a float in [0, 1], a bool or a ``Score``; or a built-in
    verifier's name (``"qa"``, ``"math"``, ...), or ``"env"``: the env's own verdict, in a rubric given to a
    built-in env (``gym.make(..., rubric=...)``). ``gate``: the part must score at least ``pass_at`` or the
    reward is 0 (its weight then plays no part in the mean)."""

    name: str
    fn: Callable[..., Any] | str
    weight: float = 1.0
    gate: bool = False
    pass_at: float = 1.0
    on: str = "answer"
    _call: Callable[[Any, Mapping[str, Any]], Score] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ConfigError(f"A rubric part needs a name, got {self.name!r}.")
        if self.on not in ("answer", "transcript"):
            raise ConfigError(f"Part {self.name!r}: on must be 'answer' or 'transcript', got {self.on!r}.")
        if self.weight < 0 or (not self.gate and self.weight == 0):
            raise ConfigError(f"Part {self.name!r}: weight must be > 0 (a gate may have 0), got {self.weight!r}.")
        from agentgym.envs.toolenv import resolve_verifier

        object.__setattr__(self, "_call", None if self.fn == ENV else resolve_verifier(self.fn))

    def score(self, answer: Any, task: Mapping[str, Any], transcript: Sequence[Any] = (),
              env_score: Score | None = None) -> Score:
        if self._call is None:
            if env_score is None:
                raise ConfigError(f"Part {self.name!r} is the env's own verdict ('env'): give the rubric to a "
                                  "built-in env (gym.make(..., rubric=...)), not as a ToolEnv's verifier.")
            value = env_score
        else:
            value = self._call(list(transcript) if self.on == "transcript" else answer, task)
        if not 0.0 <= value.reward <= 1.0:
            raise ConfigError(f"Part {self.name!r} scored {value.reward!r}; a part scores in [0, 1].")
        return value

    def describe(self) -> str:
        """What the part is, for the env digest (no addresses): its function's qualified name, or its judge."""
        fn = self.fn if isinstance(self.fn, str) else getattr(self.fn, "describe", None)
        what = fn() if callable(fn) else fn if isinstance(fn, str) else (
            f"{getattr(self.fn, '__module__', '')}.{getattr(self.fn, '__qualname__', type(self.fn).__name__)}")
        return f"{self.name}:{what}:w={self.weight}:gate={self.gate}@{self.pass_at}:{self.on}"


class Rubric:
    """A verifier from parts: the weighted mean of the non-gate parts' scores, 0 when a gate fails; ``correct``
    when every gate passes and the reward is at least ``correct_at``."""

    def __init__(self, *parts: Part, correct_at: float = 1.0) -> None:
        if not parts or not all(isinstance(p, Part) for p in parts):
            raise ConfigError("Rubric(*parts): give one or more agentgym.Part(name, fn, weight=..., gate=...).")
        names = [p.name for p in parts]
        if len(set(names)) != len(names):
            raise ConfigError(f"Rubric part names must differ, got {names}.")
        if not any(not p.gate for p in parts):
            raise ConfigError("A rubric needs at least one part that is not a gate: the reward is their mean.")
        self.parts = tuple(parts)
        self.correct_at = correct_at
        #: whether the env must hand over the episode's transcript (a part reads it)
        self.wants_transcript = any(p.on == "transcript" for p in parts)

    def __call__(self, answer: Any, task: Mapping[str, Any], transcript: Sequence[Any] = (),
                 env_score: Score | None = None) -> Score:
        scores = {p.name: p.score(answer, task, transcript, env_score) for p in self.parts}
        reward, gates_pass = self.combine({name: score.reward for name, score in scores.items()})
        parts = {p.name: {"score": scores[p.name].reward, "weight": p.weight, "gate": p.gate,
                          **({"passed": scores[p.name].reward >= p.pass_at} if p.gate else {}),
                          **({"details": scores[p.name].details} if scores[p.name].details else {})}
                 for p in self.parts}
        return Score(reward, gates_pass and reward >= self.correct_at, {"gates_passed": gates_pass}, parts=parts)

    def combine(self, scores: Mapping[str, float]) -> tuple[float, bool]:
        """(reward, every gate passed) from each part's score by name."""
        gates_pass = all(scores[p.name] >= p.pass_at for p in self.parts if p.gate)
        weighted = [(p.weight, scores[p.name]) for p in self.parts if not p.gate]
        mean = sum(w * s for w, s in weighted) / sum(w for w, _ in weighted)
        return (mean if gates_pass else 0.0), gates_pass

    def group_part(self) -> Part | None:
        """The part a judge scores a whole GRPO group at once for (``JudgeRubric(group=True)``), if any."""
        return next((p for p in self.parts if getattr(p.fn, "group", False)), None)

    def digest_text(self) -> str:
        """What the env digest reads of a rubric (never an address): each part's name, function, weight, gate."""
        return f"Rubric({', '.join(p.describe() for p in self.parts)}; correct_at={self.correct_at})"

    __repr__ = digest_text

    def builders(self) -> list[Any]:
        """The parts' functions: the env digest hashes their source files, as a ToolEnv verifier's."""
        return [p.fn for p in self.parts if callable(p.fn)]

    @property
    def __signature__(self) -> inspect.Signature:  # resolve_verifier binds (answer, task)
        return inspect.signature(lambda answer, task, transcript=(), env_score=None: None)


def tags_format(transcript: Sequence[Any], task: Mapping[str, Any]) -> float:
    """A transcript part: the share of the episode's actions that follow the tags protocol (one known action a
    turn, balanced tags, no ``<information>`` written by the model: ``agentgym.verifiers.check_tags_format``)."""
    from agentgym.verifiers.format import check_tags_format

    actions = [text for kind, text in transcript if kind == "action" and isinstance(text, str)]
    if not actions:
        return 0.0
    return sum(check_tags_format(text, turn=True).reward for text in actions) / len(actions)
