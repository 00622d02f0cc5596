"""Run a plan: a local model policy plays its episodes batched in lockstep (``agentgym.eval.batched``); any
other policy on worker threads, each with its own policy and envs. Finished episodes go to the results file as
they end, so a rerun after a crash plays only what is missing.
"""

from __future__ import annotations

import logging
import queue
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError
# underscored: the public names of these live in their own modules (see _MOVED below)
from agentgym.eval.episode import EpisodeResult as _EpisodeResult
from agentgym.eval.plan import PlannedEpisode as _PlannedEpisode
from agentgym.eval.plan import plan_episodes as _plan_episodes
from agentgym.eval.results import ResultsFile as _ResultsFile
from agentgym.eval.suites import SuiteEntry
from agentgym.eval.worker import EpisodeWorker as _EpisodeWorker
from agentgym.policies import Policy, make_policy

__all__ = ["evaluate", "run_plan"]

logger = logging.getLogger(__name__)


def run_plan(plan: Sequence[_PlannedEpisode], policy_factory: Callable[[], Policy], *, concurrency: int = 1,
             batch_size: int = 32, remote: str | None = None, env_kwargs: Mapping[str, Any] | None = None,
             results_path: str | Path | None = None, on_episode: Callable[[_EpisodeResult], None] | None = None,
             stop: threading.Event | None = None, retry_errors: bool = True,
             on_progress: Callable[[Any], None] | None = None,
             fingerprint: str | None = None) -> list[_EpisodeResult]:
    """Run ``plan``: a local model policy plays ``batch_size`` episodes at a time in lockstep (batched
    generation, :mod:`agentgym.eval.batched`); any other policy runs on ``concurrency`` threads, each with
    its own policy (from ``policy_factory``) and envs.

    Envs run in process, or on the ``agentgym serve`` at ``remote``. With
    ``results_path``, each finished episode is appended as a fsynced JSON line,
    and episodes whose key is already there are not rerun: their stored results
    are returned instead, except errored ones when ``retry_errors`` (they are
    played again and the new line supersedes the old). ``stop`` (set by a
    Ctrl-C handler) stops starting new episodes; running ones finish.
    ``on_episode`` is called once per newly finished episode, one call at a
    time; ``on_progress`` gets a batched run's :class:`~agentgym.eval.batched.BatchProgress`.
    ``fingerprint`` (:mod:`agentgym.eval.fingerprint`) is part of every key and record.
    Returns the finished episodes in plan order.
    """
    if concurrency < 1:
        raise ConfigError(f"concurrency must be >= 1, got {concurrency}.")
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}.")
    if env_kwargs:
        plan = [replace(p, env_kwargs={**p.env_kwargs, **env_kwargs}) for p in plan]
    first = policy_factory()
    keys = [p.key(first, fingerprint) for p in plan]
    if len(set(keys)) != len(keys):
        raise ConfigError("The plan has repeated episodes (same env, split, index and seed); plan each once.")
    store = _ResultsFile(Path(results_path)) if results_path is not None else None
    finished = {k: _EpisodeResult.from_dict(store.done[k]) for k in keys if store and k in store.done
                and not (retry_errors and store.done[k].get("error") is not None)}
    todo = [(planned, key) for planned, key in zip(plan, keys) if key not in finished]
    lock = threading.Lock()
    unreachable = {"in_a_row": 0}

    def record(result: _EpisodeResult) -> None:
        result = replace(result, fingerprint=fingerprint)
        with lock:
            if store:
                store.append(result)
            finished[result.key] = result
            if on_episode:
                on_episode(result)
            if remote is not None:
                _check_server(result, remote, unreachable)

    from agentgym.eval.agent import AgentPolicy
    from agentgym.policies.hf import TransformersPolicy

    if isinstance(first, AgentPolicy):  # the user's agent, its model calls through the gateway
        try:
            if todo:
                first.run(todo, on_result=record, remote=remote, stop=stop)
        finally:
            first.close()
            if store:
                store.close()
        return [finished[k] for k in keys if k in finished]
    if isinstance(first, TransformersPolicy):
        from agentgym.eval.batched import run_batched

        try:
            if todo:
                run_batched(todo, first, batch_size=batch_size, remote=remote, on_result=record,
                            on_progress=on_progress, stop=stop)
        finally:
            first.close()
            if store:
                store.close()
        return [finished[k] for k in keys if k in finished]
    pending: queue.SimpleQueue[tuple[_PlannedEpisode, str]] = queue.SimpleQueue()
    for item in todo:
        pending.put(item)
    n_workers = min(concurrency, pending.qsize())
    workers: list[_EpisodeWorker] = []
    halt, failures = threading.Event(), []

    def work(worker: _EpisodeWorker) -> None:
        try:
            while not (halt.is_set() or (stop is not None and stop.is_set())):
                try:
                    planned, key = pending.get_nowait()
                except queue.Empty:
                    return
                record(worker.play(planned, key))
        except BaseException as e:  # noqa: BLE001 - outside any episode (disk full, the callback): stop the run
            failures.append(e)
            halt.set()
        finally:
            worker.close_envs()
            worker.policy.close()

    threads: list[threading.Thread] = []
    try:
        for i in range(n_workers):
            workers.append(_EpisodeWorker(first if i == 0 else policy_factory(), remote))
        for i, worker in enumerate(workers):
            threads.append(threading.Thread(target=work, args=(worker,), name=f"agentgym-eval-{i}"))
            threads[-1].start()
        _join(threads, halt)
    finally:
        # each started thread closes its own policy; these are the ones no thread took over
        for policy in [w.policy for w in workers[len(threads):]] + ([] if workers else [first]):
            policy.close()
        if store:
            store.close()
    if failures:
        raise failures[0]
    return [finished[k] for k in keys if k in finished]


#: episodes in a row that could not reach the env server before the run stops (each already retried its calls)
UNREACHABLE_IN_A_ROW = 3


def _check_server(result: _EpisodeResult, remote: str, unreachable: dict[str, int]) -> None:
    """Stop the run once ``UNREACHABLE_IN_A_ROW`` episodes in a row could not reach the server at ``remote`` (a dead
    server made every remaining episode an error after its retries: hundreds of errors, minutes to give up)."""
    from agentgym.errors import RemoteEnvError

    if result.error is not None and "connection_error]" in result.error:
        unreachable["in_a_row"] += 1
        if unreachable["in_a_row"] >= UNREACHABLE_IN_A_ROW:
            raise RemoteEnvError(f"The env server at {remote} stopped answering: {unreachable['in_a_row']} episodes "
                                 "in a row could not reach it (each retried). Stopped; the episodes played are saved. "
                                 "Start the server again and rerun the same command to resume.", status_code=0,
                                 code="server_unreachable")
    elif result.error is None:
        unreachable["in_a_row"] = 0


def _join(threads: list[threading.Thread], halt: threading.Event) -> None:
    try:
        for thread in threads:
            thread.join()
    except KeyboardInterrupt:  # let running episodes finish and be written, then stop
        halt.set()
        for thread in threads:
            thread.join()
        raise


def evaluate(env_id: str, policy: str | Policy, *, episodes: int, split: str | None = None, seed: int = 0,
             env_kwargs: dict[str, Any] | None = None,
             on_episode: Callable[[_EpisodeResult], None] | None = None) -> list[_EpisodeResult]:
    """Run ``episodes`` episodes: episode ``i`` plays task ``i`` of the split (cycling), seed ``seed + i``.

    The one-env shorthand of ``_plan_episodes`` + ``run_plan``.
    """
    if episodes < 1:
        raise ConfigError(f"episodes must be >= 1, got {episodes}.")
    plan = _plan_episodes([SuiteEntry(env_id, split=split, episodes=episodes, env_kwargs=env_kwargs or {})], seed=seed)
    player = make_policy(policy, seed=seed) if isinstance(policy, str) else policy
    return run_plan(plan, lambda: player, on_episode=on_episode)


# names that lived here before the eval package was split by concept; they keep working for one release
_MOVED = {"EpisodeResult": "episode", "run_episode": "episode", "PlannedEpisode": "plan", "plan_episodes": "plan",
          "ResultsFile": "results", "load_results": "results", "export_parquet": "results", "summarize": "stats", "EpisodeWorker": "worker"}


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = f"agentgym.eval.{_MOVED[name]}"
    warnings.warn(f"agentgym.eval.runner.{name} moved to {module}; import it from there.", DeprecationWarning,
                  stacklevel=2)
    import importlib

    return getattr(importlib.import_module(module), name)
