"""``agentgym swe validate`` and ``agentgym swe grade``: prove instances, grade SWE-bench predictions files."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.core.task import read_records
from agentgym.envs.swe.env import SWEBenchEnv
from agentgym.errors import ConfigError, DataError

__all__ = ["InstanceCheck", "grade_predictions", "read_predictions", "validate_instances"]


@dataclass
class InstanceCheck:
    """One instance proved: F2P fail and P2P pass before the gold patch; all pass after."""

    instance_id: str
    ok: bool
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: how the gold run's verdict was made: the path (``isolated``/``in-process``) and, isolated, how many tests
    #: rest on data the harness compared and how many on the repository's own equality (its ``trust``)
    trust: dict[str, Any] = field(default_factory=dict)
    #: of ``replicas`` gradings of the gold patch (``--repeats``), how many resolved the instance
    gold_passes: int = 1
    replicas: int = 1


def validate_instances(env: SWEBenchEnv, *, split: str | None = None,
                       progress: Callable[[InstanceCheck], None] | None = None,
                       repeats: int = 1) -> list[InstanceCheck]:
    """Check every instance of ``split`` (all splits when None) with the env's backend; the gold patch is graded
    ``repeats`` times, and an instance whose gold does not pass every replica is not valid (a flaky verdict)."""
    if repeats < 1:
        raise ConfigError(f"--repeats must be >= 1 (gradings of each gold patch), got {repeats}.")
    checks = []
    for name in [split] if split else env.tasks.splits():
        for task in env.tasks.tasks(name):
            start = time.perf_counter()
            problems = []
            before = env.grade(task, "").details
            if before["fail_to_pass"]["success"]:
                problems.append(f"FAIL_TO_PASS tests pass without the fix: {before['fail_to_pass']['success']}")
            if before["pass_to_pass"]["failure"]:
                problems.append(f"PASS_TO_PASS tests fail without the fix: {before['pass_to_pass']['failure']}")
            replicas = [env.grade(task, task.gold["patch"]).details for _ in range(repeats)]
            after = next((d for d in replicas if not d["resolved"]), replicas[0])
            passes = sum(bool(d["resolved"]) for d in replicas)
            if not passes:
                problems.append(f"the gold patch does not resolve it: F2P {after['fail_to_pass']}, "
                                f"P2P {after['pass_to_pass']}, applied={after['patch_applied']}")
            elif passes < repeats:
                problems.append(f"the gold patch resolved it in {passes} of {repeats} replicas (a flaky verdict); a "
                                f"failing one: F2P {after['fail_to_pass']}, P2P {after['pass_to_pass']}")
            trust = {"isolation": after.get("isolation"), **(after.get("trust") or {}),
                     "comparisons": after.get("comparisons") or {}}
            check = InstanceCheck(task.id, not problems, problems, time.perf_counter() - start, trust,
                                  gold_passes=passes, replicas=repeats)
            checks.append(check)
            if progress is not None:
                progress(check)
    return checks


def read_predictions(path: str | Path) -> list[dict[str, Any]]:
    """SWE-bench predictions: JSONL / JSON list of ``{instance_id, model_patch, model_name_or_path}``,
    or a JSON object keyed by instance id."""
    path = Path(path)
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        records: Iterable[Any] = data.values() if isinstance(data, dict) else data
    else:
        records = read_records(path)
    predictions = []
    for i, record in enumerate(records):
        if not isinstance(record, dict) or "instance_id" not in record or "model_patch" not in record:
            raise DataError(f"{path}: prediction {i} needs 'instance_id' and 'model_patch' (SWE-bench's format).")
        predictions.append(record)
    return predictions


def grade_predictions(env: SWEBenchEnv, predictions: list[dict[str, Any]],
                      progress: Callable[[str, bool], None] | None = None) -> dict[str, Any]:
    """A SWE-bench style report: resolved / unresolved / error ids and each instance's test statuses."""
    report: dict[str, Any] = {"total_instances": len(predictions), "resolved_ids": [], "unresolved_ids": [],
                              "error_ids": [], "empty_patch_ids": [], "instances": {}}
    for prediction in predictions:
        instance_id = str(prediction["instance_id"])
        try:
            task = env.tasks.get(instance_id)
        except Exception:  # noqa: BLE001 - an unknown id is reported, not fatal
            report["error_ids"].append(instance_id)
            report["instances"][instance_id] = {"error": "unknown instance_id"}
            continue
        patch = prediction.get("model_patch") or ""
        if not patch.strip():
            report["empty_patch_ids"].append(instance_id)
        score = env.grade(task, patch)
        report["resolved_ids" if score.correct else "unresolved_ids"].append(instance_id)
        report["instances"][instance_id] = score.details
        if progress is not None:
            progress(instance_id, score.correct)
    report["resolved_instances"] = len(report["resolved_ids"])
    return report
