"""``agentgym eval --rescore RESULTS``: score stored episodes again with the envs' current verifiers, without a
model and without replaying them.

Each stored episode's final answer (its record's ``answer``; where the record has none, the last model turn of its
transcript as the env's action format reads it) is scored as the run scored it: the env made with the run's kwargs
(the suite entry's and ``-k``'s, as the eval made it, so a registration's rubric too), its ``verify`` on the same
task, then the env's rubric over that verdict with the stored transcript (a transcript part reads the episode the
run had). An env whose verdict needs the episode's final state (a purchase, a game, a repository: the env
overrides ``episode_outcome``) cannot be re-scored from a record, and the command says so for each such env; its
episodes are copied unchanged. Errored episodes are copied unchanged, except those whose error was the judge's
(``JudgeError``): they are scored again, and a judge that answers now completes them. The new file goes beside the old one (``NAME.rescored.jsonl``, then ``-2``...), never over it;
each re-scored record keeps its old verdict in ``rescored``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.core.env import AgentEnv
from agentgym.core.registry import make
from agentgym.errors import ConfigError
from agentgym.eval.results import load_results
from agentgym.judge import JudgeError

logger = logging.getLogger(__name__)

__all__ = ["RescoreReport", "rescore"]


@dataclass
class RescoreReport:
    path: Path
    rescored: int = 0
    changed: int = 0
    #: episodes the judge had failed that this re-score completed
    completed: int = 0
    copied: int = 0
    old_mean: float | None = None
    new_mean: float | None = None
    old_success: float | None = None
    new_success: float | None = None
    #: env id -> why its episodes were copied unchanged
    unsupported: dict[str, str] = field(default_factory=dict)


def _needs_state(env: Any) -> bool:
    inner = type(env.unwrapped)
    return inner.episode_outcome is not AgentEnv.episode_outcome or inner.default_outcome is not AgentEnv.default_outcome


def _stored_answer(record: Mapping[str, Any], inner: Any) -> str | None:
    if record.get("answer") is not None or (record.get("error") is None and "answer" in record):
        return record["answer"]
    turns = [m["content"] for m in record.get("transcript", []) if m.get("role") == "assistant"]
    if not turns:
        return None
    parsed = inner.action_format.parse(turns[-1], inner.tools)
    return parsed.answer if parsed.is_final else None


def _stored_transcript(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The record's transcript as the env keeps it (``[(kind, text), ...]``: the prompt, then each action and the
    observation that answered it), what a rubric's transcript part reads."""
    out: list[tuple[str, str]] = []
    for message in record.get("transcript") or []:
        role, text = message.get("role"), str(message.get("content") or "")
        if role == "assistant":
            out.append(("action", text))
        elif role in ("user", "tool"):
            out.append(("prompt" if not out else "observation", text))
    return out


def _judge_failed(record: Mapping[str, Any]) -> bool:
    return str(record.get("error") or "").startswith("JudgeError")


def _score(env: Any, record: Mapping[str, Any]) -> Any:
    """The record's episode scored as the run scored it: ``verify``, then the env's rubric over that verdict."""
    inner = env.unwrapped
    env.reset(seed=record.get("seed"), options={"task_id": record["task_id"]})
    transcript = _stored_transcript(record)
    if transcript:
        inner._transcript = transcript  # a ToolEnv's transcript parts read the env's own
    answer = _stored_answer(record, inner)
    score = inner.verify(answer, inner.task)
    rubric = getattr(inner, "rubric", None)
    if rubric is not None:  # a built-in env's rubric, over its own verdict (as AgentEnv.step scores)
        score = rubric(answer, inner.task.rubric_view(), inner._transcript, env_score=score)
    return score


def _beside(path: Path) -> Path:
    for n in range(1, 1000):
        out = path.with_name(f"{path.stem}.rescored{'' if n == 1 else f'-{n}'}{path.suffix}")
        if not out.exists():
            return out
    raise ConfigError(f"{path.parent} holds 999 rescored files of {path.name}; remove some.")


def rescore(path: str | Path, kwargs_by_entry: Mapping[str, tuple[str, Mapping[str, Any]]]) -> RescoreReport:
    """Re-score ``path``'s episodes; ``kwargs_by_entry``: entry label -> (env id, the kwargs the run made it
    with). An episode of an entry not listed stops the command (say the run's --suite/--env and -k)."""
    source = Path(path)
    if not source.is_file():
        raise ConfigError(f"--rescore {source}: no such results file.")
    records = load_results(source)
    latest: dict[str, dict[str, Any]] = {}
    for record in records:  # a resumed run's file: the last record of each key is the episode's
        latest[str(record.get("key") or len(latest))] = record
    envs: dict[str, Any] = {}
    report = RescoreReport(path=_beside(source))
    out, old, new = [], [], []
    try:
        for record in latest.values():
            label = str(record.get("entry") or record["env_id"])
            if label not in kwargs_by_entry:
                raise ConfigError(f"{source} holds episodes of {label}, which this command's --suite/--env does not "
                                  "name: give the flags the run had.")
            env_id, kwargs = kwargs_by_entry[label]
            if label not in envs:
                envs[label] = make(env_id, **dict(kwargs))
            env = envs[label]
            if (record.get("error") is not None and not _judge_failed(record)) or _needs_state(env):
                if record.get("error") is None:
                    report.unsupported[env_id] = ("its verdict needs the episode's final state (the env's "
                                                  "episode_outcome), which a record does not hold: replay it with "
                                                  "agentgym eval")
                out.append(record)
                report.copied += 1
                continue
            try:
                score = _score(env, record)
            except JudgeError as e:  # the judge still cannot answer: the episode stays as it was, errored
                logger.warning("%s: the judge failed again: %s", record.get("key"), e)
                out.append(record)
                report.copied += 1
                continue
            verdict = score.as_dict()
            old.append((float(record["reward"]), bool(record["correct"])))
            new.append((float(score.reward), bool(score.correct)))
            report.rescored += 1
            report.completed += _judge_failed(record)
            report.changed += (score.reward, score.correct) != (record["reward"], record["correct"])
            out.append({**record, "reward": score.reward, "correct": score.correct, "verification": verdict,
                        "error": None, "rescored": {"reward": record["reward"], "correct": record["correct"],
                                                    "verification": record.get("verification"),
                                                    "error": record.get("error")}})
    finally:
        for env in envs.values():
            env.close()
    if old:
        report.old_mean, report.new_mean = (sum(r for r, _ in xs) / len(xs) for xs in (old, new))
        report.old_success, report.new_success = (sum(c for _, c in xs) / len(xs) for xs in (old, new))
    report.path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out), encoding="utf-8")
    return report
