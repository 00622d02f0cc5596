"""The server's ``/healthz`` and ``/metrics`` from those of its processes (``agentgym serve --processes N``).

What a client of one address sees is one server: counts are summed over the
processes, limits (the same in each) are not, and ``/healthz`` lists the processes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["merge_health", "merge_metrics"]

# Gauges of a setting every process has the same value of: the server's value is any one's, not the sum.
_SETTINGS = frozenset({"agentgym_max_sessions", "agentgym_session_limit"})


def merge_health(own: Mapping[str, Any], answers: Mapping[int, Mapping[str, Any] | None]) -> dict[str, Any]:
    """The server's health from each process's own (``answers[index]``, None for one that did not answer).

    ``own`` is this process's answer: what is free comes from it (every process counts it
    over all of them); sessions are summed.
    """
    processes, sessions, per_env = [], 0, dict.fromkeys(own["capacity"]["envs"], 0)
    for index, answer in sorted(answers.items()):
        if answer is None:
            processes.append({"index": index, "generation": None, "pid": None, "status": "down", "sessions": 0})
            continue
        processes.extend(answer["processes"])
        sessions += answer["sessions"]
        for env_id, env in answer["capacity"]["envs"].items():
            per_env[env_id] = per_env.get(env_id, 0) + env["sessions"]
    envs = {env_id: {**env, "sessions": per_env[env_id]} for env_id, env in own["capacity"]["envs"].items()}
    return {"status": "ok" if all(a is not None for a in answers.values()) else "degraded", "sessions": sessions,
            "version": own["version"], "capacity": {**own["capacity"], "envs": envs}, "processes": processes}


def merge_metrics(texts: Iterable[str]) -> bytes:
    """One Prometheus text exposition from several processes' (``generate_latest`` output): counters,
    histograms and gauges of counts summed per label set, ``*_created`` the earliest, settings as they are."""
    families: dict[str, Metric] = {}
    values: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for text in texts:
        for family in text_string_to_metric_families(text):
            if family.name not in families:
                families[family.name] = Metric(family.name, family.documentation, family.type)
                values[family.name] = {}
            merged = values[family.name]
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                if key not in merged:
                    merged[key] = sample.value
                elif family.name.endswith("_created"):
                    merged[key] = min(merged[key], sample.value)
                elif family.name in _SETTINGS:
                    merged[key] = max(merged[key], sample.value)
                else:
                    merged[key] += sample.value
    for name, family in families.items():
        for (sample_name, labels), value in values[name].items():
            family.add_sample(sample_name, dict(labels), value)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(list(families.values())))
    return generate_latest(registry)


class _Fixed:
    """A collector of metric families already made."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)
