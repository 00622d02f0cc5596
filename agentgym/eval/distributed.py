"""Run an eval plan on a Ray cluster: one actor per slot holds its envs and policy, the driver keeps the log.

The episodes, keys and results are those of ``run_plan`` (the same ``EpisodeWorker``
plays each episode), so a Ray run gives the same per-episode content as a local
run with the same seeds, and resumes from the same results file.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError, DependencyNotInstalled
from agentgym.policies import Sampling, make_policy
from agentgym.eval.episode import EpisodeResult
from agentgym.eval.plan import PlannedEpisode
from agentgym.eval.results import ResultsFile
from agentgym.eval.worker import EpisodeWorker

__all__ = ["run_plan_on_ray"]


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise DependencyNotInstalled("Ray", "pip install 'agentgym-suite[ray]'") from e
    return ray


class _Player:
    """The body of a Ray actor: one policy and its envs, reused across the episodes it is sent."""

    def __init__(self, policy: str, seed: int, sampling: Sampling, model: str | None, remote: str | None,
                 system_prompt: str | None = None, dtype: str = "auto") -> None:
        self.worker = EpisodeWorker(make_policy(policy, seed=seed, sampling=sampling, model=model,
                                                system_prompt=system_prompt, dtype=dtype), remote)

    def play(self, planned: PlannedEpisode, key: str) -> dict[str, Any]:
        return self.worker.play(planned, key).as_dict()

    def close(self) -> None:
        self.worker.close_envs()
        self.worker.policy.close()


def run_plan_on_ray(plan: Sequence[PlannedEpisode], policy: str, *, seed: int = 0, sampling: Sampling | None = None,
                    model: str | None = None, system_prompt: str | None = None, dtype: str = "auto",
                    address: str = "local",
                    slots: int | None = None,
                    remote: str | None = None, results_path: str | Path | None = None,
                    on_episode: Callable[[EpisodeResult], None] | None = None,
                    stop: threading.Event | None = None, fingerprint: str | None = None) -> list[EpisodeResult]:
    """Run ``plan`` on Ray (``address="local"`` starts a local cluster) with ``slots`` actors.

    ``slots`` defaults to the cluster's CPUs. Finished episodes are appended to
    ``results_path`` by the driver as they come in; episodes already there are
    skipped. ``fingerprint`` (:mod:`agentgym.eval.fingerprint`) is part of every key and record.
    Returns the finished episodes in plan order.
    """
    ray = _ray()
    sampling = sampling or Sampling(seed=seed)
    probe = make_policy(policy, seed=seed, sampling=sampling, model=model, system_prompt=system_prompt, dtype=dtype)
    try:
        keys = [p.key(probe, fingerprint) for p in plan]
    finally:
        probe.close()
    if len(set(keys)) != len(keys):
        raise ConfigError("The plan has repeated episodes (same env, split, index and seed); plan each once.")
    store = ResultsFile(Path(results_path)) if results_path is not None else None
    finished = {k: EpisodeResult.from_dict(store.done[k]) for k in keys if store and k in store.done}
    todo = [(p, k) for p, k in zip(plan, keys) if k not in finished]
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=None if address == "local" else address, include_dashboard=False, log_to_driver=False)
    actors = []
    try:
        n = max(1, min(slots or int(ray.cluster_resources().get("CPU", 1)), len(todo) or 1))
        player = ray.remote(num_cpus=1)(_Player)
        actors = [player.remote(policy, seed, sampling, model, remote, system_prompt, dtype) for _ in range(n)]
        idle = list(actors)
        running: dict[Any, tuple[Any, str]] = {}
        queue = list(reversed(todo))
        while queue or running:
            while idle and queue and not (stop is not None and stop.is_set()):
                actor = idle.pop()
                planned, key = queue.pop()
                running[actor.play.remote(planned, key)] = (actor, key)
            if not running:
                break
            ready, _ = ray.wait(list(running), num_returns=1)
            actor, key = running.pop(ready[0])
            result = EpisodeResult.from_dict({**ray.get(ready[0]), "fingerprint": fingerprint})
            finished[key] = result
            idle.append(actor)
            if store:
                store.append(result)
            if on_episode:
                on_episode(result)
    finally:
        for actor in actors:
            try:
                ray.get(actor.close.remote())
            except Exception:  # noqa: BLE001 - an actor that died has nothing left to close
                pass
        if store:
            store.close()
        if started_here:
            ray.shutdown()
    return [finished[k] for k in keys if k in finished]
