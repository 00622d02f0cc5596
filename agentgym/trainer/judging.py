"""RULER's idea in GRPO: a judge that scores a group's answers relative to each other, in one call.

An env whose rubric has a part judged in group mode (``JudgeRubric(group=True)``) defers that part while its
episodes play (``judge.deferred``); once a group of ``group_size`` rollouts of one task is played, the judge scores
the group's final answers together (``score_group``), each episode's part score is replaced, and its reward is the
rubric's combination again. A group the judge cannot score (``JudgeError``) fails whole: its episodes are left out
of the step's baseline (never trained as reward 0).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["defer_group_judges", "judge_groups"]

logger = logging.getLogger("agentgym.trainer")


def _rubric(env: Any) -> Any:
    inner = getattr(env, "unwrapped", env)
    rubric = getattr(inner, "rubric", None)
    rubric = rubric if rubric is not None else getattr(inner, "_rubric", None)  # a ToolEnv's verifier=
    return rubric if hasattr(rubric, "group_part") else None


@contextlib.contextmanager
def defer_group_judges(envs: Sequence[Any]) -> Iterator[None]:
    """Each env's group judge defers its part while the block plays episodes (and asks alone again after it:
    an eval in the same process must never read a deferred 0)."""
    judges = {id(part.fn): part.fn for env in envs if (rubric := _rubric(env)) is not None
              and (part := rubric.group_part()) is not None}
    for judge in judges.values():
        judge.deferred = True
    try:
        yield
    finally:
        for judge in judges.values():
            judge.deferred = False


def judge_groups(episodes: Sequence[Any], envs: Sequence[Any], group_size: int) -> int:
    """Score each played group's deferred judge part in one call and recompute its episodes' rewards; returns how
    many groups were judged."""
    judged = 0
    for start in range(0, len(episodes), group_size):
        group, group_envs = episodes[start:start + group_size], envs[start:start + group_size]
        rubric = _rubric(group_envs[0]) if group_envs else None
        part = rubric.group_part() if rubric is not None else None
        live = [(e, env) for e, env in zip(group, group_envs) if not e.failed]
        if part is None or not live or len({e.spec for e in group}) != 1:
            continue
        gold = live[0][1].unwrapped.task.rubric_view()  # the judge sees the task it judges
        answers = [e.info.get("answer") for e, _ in live]
        try:
            scores = part.fn.score_group(answers, gold)
        except Exception as ex:  # noqa: BLE001 - the judge's failure fails its group, not the run
            for e, _ in live:
                e.error = f"JudgeError: {ex}"
            logger.warning("The group judge failed on %s: %s", group[0].spec.key, ex)
            continue
        for (episode, _), score in zip(live, scores):
            parts = episode.info.get("verification", {}).get("parts", {})
            values = {name: float(v["score"]) for name, v in parts.items()}
            values[part.name] = score.reward
            parts[part.name] = {**parts.get(part.name, {}), "score": score.reward, "details": score.details}
            reward, gates = rubric.combine(values)
            over = getattr(episode, "over_budget", False)
            episode.reward = 0.0 if over else reward
            episode.success = gates and reward >= rubric.correct_at and not over
        judged += 1
    return judged
