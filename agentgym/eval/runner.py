"""Run policies on envs: one episode, a resumable concurrent plan of many, and their summary.

The results file is the source of truth: one JSON line per finished episode,
each fsynced, keyed by what determines the episode (env, split, index, seed,
policy, model, sampling, env kwargs). Rerunning a plan after a crash skips
every key already in the file, so a run ends with exactly the planned episodes.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import logging
import os
import queue
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import gymnasium as gym

from agentgym.core.env import AgentEnv
from agentgym.core.registry import make
from agentgym.errors import ConfigError, DataError, DependencyNotInstalled, RolloutError
from agentgym.eval.chat import ChatPolicy
from agentgym.eval.policies import Policy, make_policy
from agentgym.eval.stats import mean_ci, wilson_ci
from agentgym.eval.suites import Suite, SuiteEntry
from agentgym.verifiers.budget import over_budget

__all__ = ["EpisodeResult", "EpisodeWorker", "PlannedEpisode", "ResultsFile", "evaluate", "export_parquet",
           "load_results", "plan_episodes", "run_episode", "run_plan", "summarize"]

logger = logging.getLogger(__name__)

_VERSION = re.compile(r"-(v\d+)$")


@functools.cache
def _agentgym_version() -> str | None:
    import agentgym

    version = getattr(agentgym, "__version__", None)
    if version:
        return str(version)
    try:
        return importlib.metadata.version("agentgym-suite")
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def _git_commit() -> str | None:
    """HEAD of the checkout agentgym is imported from; None when it is not one (an installed wheel)."""
    package_dir = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], check=False, cwd=package_dir, capture_output=True, text=True,
                                  timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None

    top = git("rev-parse", "--show-toplevel")
    # a site-packages inside some other repository must not report that repository's commit
    if top is None or Path(top).resolve() != package_dir.parent:
        return None
    return git("rev-parse", "HEAD")


@dataclass
class EpisodeResult:
    """One finished episode, ready to be written as a JSON line.

    ``error`` is None, or why the episode failed (an exception from the env or
    the policy); a failed episode scores reward 0 and keeps its transcript so far.
    """

    env_id: str
    task_id: str
    split: str
    seed: int
    policy: str
    reward: float
    correct: bool
    turns: int
    tool_calls: int
    action_errors: int
    truncated: bool
    verification: dict[str, Any]
    wall_s: float
    transcript: list[dict[str, str]] = field(default_factory=list)
    env_version: str | None = None
    episode: int = 0
    key: str = ""
    model: str | None = None
    sampling: dict[str, Any] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    suite: str | None = None
    suite_version: str | None = None
    remote: str | None = None
    error: str | None = None
    agentgym_version: str | None = None
    git_commit: str | None = None
    #: the suite entry's label (``SuiteEntry.label``): the env id, plus ``[name]`` for a named entry
    entry: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeResult:
        """A result read back from a results line; fields it lacks keep their defaults, unknown keys are dropped."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class _Trace:
    """What an episode has produced so far; kept when it fails midway."""

    transcript: list[dict[str, str]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    reward: float = 0.0
    truncated: bool = False
    tool_calls: int = 0
    action_errors: int = 0


def _play(env: gym.Env, policy: Policy, trace: _Trace, *, seed: int, options: dict[str, Any] | None,
          shadow: AgentEnv | None) -> None:
    observation, trace.info = env.reset(seed=seed, options=options)
    if shadow is not None:
        _check_same(shadow.reset(seed=seed, options=options)[0], observation, 0)
    policy.reset(shadow if shadow is not None else env.unwrapped, observation, trace.info)
    trace.transcript.append({"role": "user", "content": observation})
    while True:
        action = policy.act(observation, trace.info)
        observation, reward, terminated, truncated, trace.info = env.step(action)
        if shadow is not None:
            _check_same(shadow.step(action)[0], observation, trace.info.get("turn", 0))
        trace.transcript.append({"role": "assistant", "content": action if isinstance(action, str) else str(action)})
        if observation:
            trace.transcript.append({"role": "tool", "content": observation})
        trace.tool_calls += len(trace.info.get("tool_calls", []))
        trace.action_errors += trace.info.get("action_error") is not None
        if terminated or truncated:
            trace.reward, trace.truncated = float(reward), bool(truncated)
            return


def _check_same(local: str, remote: str, turn: int) -> None:
    if local != remote:
        raise RolloutError(f"The remote env and its local shadow diverged at turn {turn}: the server's data or "
                           "version differs from this machine's, so a privileged policy cannot play it.")


def run_episode(env: gym.Env, policy: Policy, *, seed: int, options: dict[str, Any] | None = None,
                env_id: str = "", shadow: AgentEnv | None = None) -> EpisodeResult:
    """Play one episode of ``env`` with ``policy`` to its end.

    An exception from the env or the policy ends the episode and is recorded in
    ``error`` (reward 0) instead of raised. ``shadow``, for a remote ``env``, is a
    local copy stepped in lockstep that the policy reads instead (for policies
    that need the env object: oracle, random).
    """
    from agentgym.client.remote import RemoteEnv

    if not isinstance(env.unwrapped, (AgentEnv, RemoteEnv)):
        raise ConfigError(f"run_episode needs an agentgym env, got {type(env.unwrapped).__name__}.")
    env_id = env_id or (env.spec.id if env.spec else type(env.unwrapped).__name__)
    start = time.perf_counter()
    trace, error = _Trace(), None
    try:
        _play(env, policy, trace, seed=seed, options=options, shadow=shadow)
    except Exception as e:  # noqa: BLE001 - the RolloutError boundary: one bad episode never kills a run
        error = f"{type(e).__name__}: {e}"
        trace.reward, trace.truncated = 0.0, False
        logger.warning("%s seed %s failed: %s", env_id, seed, error)
    info = trace.info
    verification = info.get("verification", {}) if error is None else {}
    return EpisodeResult(
        env_id=env_id, task_id=str(info.get("task_id", "")),
        split=str(info.get("split", (options or {}).get("split", ""))), seed=seed, policy=policy.name,
        reward=trace.reward, correct=bool(verification.get("correct", False)), turns=int(info.get("turn", 0)),
        tool_calls=trace.tool_calls, action_errors=trace.action_errors, truncated=trace.truncated,
        verification=verification, wall_s=round(time.perf_counter() - start, 4), transcript=trace.transcript,
        error=error, **_provenance(env_id, policy))


def _provenance(env_id: str, policy: Policy) -> dict[str, Any]:
    """The fields that say what produced an episode: env version, model, sampling, tokens, code version."""
    version = _VERSION.search(env_id)
    usage = getattr(policy, "usage", None) or {}
    return {"env_version": version.group(1) if version else None, "model": policy.model,
            "sampling": policy.sampling.as_dict() if policy.sampling is not None else None,
            "prompt_tokens": int(usage.get("prompt_tokens", 0)),
            "completion_tokens": int(usage.get("completion_tokens", 0)),
            "agentgym_version": _agentgym_version(), "git_commit": _git_commit()}


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class PlannedEpisode:
    """Episode ``episode`` of an entry: task ``task_index`` of ``split``, reset with ``seed``."""

    env_id: str
    split: str
    episode: int
    task_index: int
    seed: int
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    suite: str | None = None
    suite_version: str | None = None
    entry: str | None = None

    def key(self, policy: Policy) -> str:
        """What identifies this episode's result in a results file; stable across runs and machines."""
        sampling = policy.sampling.as_dict() if policy.sampling is not None else None
        return json.dumps({"env_id": self.env_id, "split": self.split, "episode": self.episode, "seed": self.seed,
                           "policy": policy.name, "model": policy.model, "sampling": sampling,
                           "env_kwargs": dict(self.env_kwargs)}, sort_keys=True, separators=(",", ":"))


def _count_tasks(env_id: str, split: str | None, env_kwargs: Mapping[str, Any]) -> tuple[str, int]:
    """The split (``None``: the env's default) and its number of tasks, from a local env: the pre-flight
    check that the env can be made here (a missing extra fails now, before any episode)."""
    env = make(env_id, **env_kwargs)
    try:
        source = env.unwrapped.tasks
        split = split or env.unwrapped.split
        if split not in source.splits():
            raise ConfigError(f"{env_id} has no split {split!r}; its splits are {source.splits()}.")
        n_tasks = len(source.tasks(split))
    finally:
        env.close()
    if n_tasks == 0:
        raise ConfigError(f"{env_id} split {split!r} has no tasks; choose another split.")
    return split, n_tasks


def plan_episodes(entries: Suite | Iterable[SuiteEntry], *, seed: int,
                  env_kwargs: Mapping[str, Any] | None = None) -> list[PlannedEpisode]:
    """Every episode of ``entries``: episode ``i`` of an entry plays task ``i % n_tasks`` with seed ``seed + i``.

    ``episodes=None`` entries get one episode per task of the split (counted
    from a local env); ``split=None`` is the env's default split. ``env_kwargs``
    apply to every entry, over its own.
    """
    suite = entries if isinstance(entries, Suite) else None
    items = suite.entries if suite is not None else tuple(entries)
    labels = [e.label for e in items]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"Each entry may appear once in a plan (name repeated entries of one env); got {labels}.")
    plan = []
    for entry in items:
        kwargs = {**entry.env_kwargs, **(env_kwargs or {})}
        split, n_tasks = _count_tasks(entry.env_id, entry.split, kwargs)
        episodes = n_tasks if entry.episodes is None else entry.episodes
        plan.extend(PlannedEpisode(entry.env_id, split, i, i % n_tasks, seed + i, kwargs,
                                   suite.name if suite else None, suite.version if suite else None, entry.label)
                    for i in range(episodes))
    return plan


# ---------------------------------------------------------------- the results file


def _parse_lines(data: bytes, path: Path) -> list[dict[str, Any]]:
    records = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{number} is not a JSON line ({e}); remove or fix that line.") from None
    return records


def load_results(path: str | Path) -> list[dict[str, Any]]:
    """The records of a results file, in file order; a torn last line (a killed writer) is ignored."""
    path = Path(path)
    data = path.read_bytes()
    return _parse_lines(data[:data.rfind(b"\n") + 1], path)


class ResultsFile:
    """Appends one fsynced JSON line per episode; on open, cuts a torn last line and reads what is done."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab+") as f:
            f.seek(0)
            data = f.read()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                logger.warning("%s: dropping a partial last line (%d bytes) left by an interrupted run",
                               path, len(data) - end)
                f.truncate(end)
                f.flush()
                os.fsync(f.fileno())
        # the latest line of a key wins: an errored episode that was retried is followed by its new result
        self.done: dict[str, dict[str, Any]] = {}
        for record in _parse_lines(data[:end], path):
            self.done[str(record.get("key", ""))] = record
        self._file = open(path, "ab")  # noqa: SIM115 - held for the run, closed by close()

    def append(self, result: EpisodeResult) -> None:
        self._file.write((json.dumps(result.as_dict(), ensure_ascii=False) + "\n").encode("utf-8"))
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


# ---------------------------------------------------------------- the runner


class EpisodeWorker:
    """One thread's own policy and envs (one per env id and kwargs), reused across its episodes."""

    def __init__(self, policy: Policy, remote: str | None) -> None:
        self.policy, self.remote = policy, remote
        # Model policies read only observations; the others (oracle, random) read the env object,
        # which a RemoteEnv does not carry, so they play a local shadow stepped in lockstep.
        self.needs_shadow = remote is not None and not isinstance(policy, ChatPolicy)
        self.envs: dict[str, tuple[gym.Env, AgentEnv | None]] = {}

    def _envs(self, planned: PlannedEpisode) -> tuple[gym.Env, AgentEnv | None]:
        name = json.dumps([planned.env_id, dict(planned.env_kwargs)], sort_keys=True)
        if name not in self.envs:
            remote = {"remote": self.remote} if self.remote else {}
            env = make(planned.env_id, **planned.env_kwargs, **remote)
            shadow = make(planned.env_id, **planned.env_kwargs).unwrapped if self.needs_shadow else None
            self.envs[name] = env, shadow
        return self.envs[name]

    def play(self, planned: PlannedEpisode, key: str) -> EpisodeResult:
        self.policy.seed(planned.seed)
        options = {"split": planned.split, "index": planned.task_index}
        try:
            env, shadow = self._envs(planned)
        except Exception as e:  # noqa: BLE001 - an env that cannot be made fails its episodes, not the run
            result = EpisodeResult(planned.env_id, "", planned.split, planned.seed, self.policy.name, 0.0, False,
                                   0, 0, 0, False, {}, 0.0, error=f"{type(e).__name__}: {e}",
                                   **_provenance(planned.env_id, self.policy))
        else:
            result = run_episode(env, self.policy, seed=planned.seed, options=options, env_id=planned.env_id,
                                 shadow=shadow)
        if result.error is not None:  # start the next episode on a fresh env (and a fresh remote session)
            self.close_envs()
        return replace(result, episode=planned.episode, key=key, suite=planned.suite,
                       suite_version=planned.suite_version, remote=self.remote, entry=planned.entry)

    def close_envs(self) -> None:
        for env, shadow in self.envs.values():
            for closable in (env, shadow):
                try:
                    if closable is not None:
                        closable.close()
                except Exception as e:  # noqa: BLE001 - closing a broken env must not hide the real error
                    logger.warning("closing an env failed: %s", e)
        self.envs.clear()


def run_plan(plan: Sequence[PlannedEpisode], policy_factory: Callable[[], Policy], *, concurrency: int = 1,
             batch_size: int = 32, remote: str | None = None, env_kwargs: Mapping[str, Any] | None = None,
             results_path: str | Path | None = None, on_episode: Callable[[EpisodeResult], None] | None = None,
             stop: threading.Event | None = None, retry_errors: bool = True,
             on_progress: Callable[[Any], None] | None = None) -> list[EpisodeResult]:
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
    Returns the finished episodes in plan order.
    """
    if concurrency < 1:
        raise ConfigError(f"concurrency must be >= 1, got {concurrency}.")
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}.")
    if env_kwargs:
        plan = [replace(p, env_kwargs={**p.env_kwargs, **env_kwargs}) for p in plan]
    first = policy_factory()
    keys = [p.key(first) for p in plan]
    if len(set(keys)) != len(keys):
        raise ConfigError("The plan has repeated episodes (same env, split, index and seed); plan each once.")
    store = ResultsFile(Path(results_path)) if results_path is not None else None
    finished = {k: EpisodeResult.from_dict(store.done[k]) for k in keys if store and k in store.done
                and not (retry_errors and store.done[k].get("error") is not None)}
    todo = [(planned, key) for planned, key in zip(plan, keys) if key not in finished]
    lock = threading.Lock()

    def record(result: EpisodeResult) -> None:
        with lock:
            if store:
                store.append(result)
            finished[result.key] = result
            if on_episode:
                on_episode(result)

    from agentgym.eval.models import TransformersPolicy

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
    pending: queue.SimpleQueue[tuple[PlannedEpisode, str]] = queue.SimpleQueue()
    for item in todo:
        pending.put(item)
    n_workers = min(concurrency, pending.qsize())
    workers: list[EpisodeWorker] = []
    halt, failures = threading.Event(), []

    def work(worker: EpisodeWorker) -> None:
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
            workers.append(EpisodeWorker(first if i == 0 else policy_factory(), remote))
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


def _join(threads: list[threading.Thread], halt: threading.Event) -> None:
    try:
        for thread in threads:
            thread.join()
    except KeyboardInterrupt:  # let running episodes finish and be written, then stop
        halt.set()
        for thread in threads:
            thread.join()
        raise


# ---------------------------------------------------------------- summaries and export


def summarize(results: Sequence[EpisodeResult | Mapping[str, Any]]) -> dict[str, float | int]:
    """Means over episodes, with 95% intervals: Wilson for the success rate, normal for the mean reward.

    Accepts results or their dicts (as ``load_results`` returns them).
    """
    rows = [r.as_dict() if isinstance(r, EpisodeResult) else r for r in results]
    n = len(rows)

    def mean(name: str) -> float:
        return sum(float(r.get(name) or 0) for r in rows) / n if n else 0.0

    successes = sum(bool(r.get("correct")) for r in rows)
    success_low, success_high = wilson_ci(successes, n)
    reward_low, reward_high = mean_ci([float(r.get("reward") or 0) for r in rows])
    return {"episodes": n, "mean_reward": mean("reward"), "mean_reward_ci_low": reward_low,
            "mean_reward_ci_high": reward_high, "success_rate": successes / n if n else 0.0,
            "success_rate_ci_low": success_low, "success_rate_ci_high": success_high,
            "mean_turns": mean("turns"), "mean_tool_calls": mean("tool_calls"),
            "mean_prompt_tokens": mean("prompt_tokens"), "mean_completion_tokens": mean("completion_tokens"),
            "errors": sum(r.get("error") is not None for r in rows),
            "verifier_over_budget": sum(over_budget(r.get("verification")) for r in rows)}


def export_parquet(jsonl_path: str | Path, parquet_path: str | Path) -> int:
    """Write a results file as Parquet with a flat schema (dicts and lists as JSON strings); returns the row count."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:
        raise DependencyNotInstalled("pyarrow", "pip install pyarrow") from e
    records = load_results(jsonl_path)
    columns = list(dict.fromkeys(name for record in records for name in record))
    rows = [{name: json.dumps(value, ensure_ascii=False, sort_keys=True) if isinstance(value, (dict, list))
             else value for name, value in ((c, r.get(c)) for c in columns)} for r in records]
    table = pa.Table.from_pylist(rows) if rows else pa.table({})
    Path(parquet_path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, parquet_path)
    return len(rows)


def evaluate(env_id: str, policy: str | Policy, *, episodes: int, split: str | None = None, seed: int = 0,
             env_kwargs: dict[str, Any] | None = None,
             on_episode: Callable[[EpisodeResult], None] | None = None) -> list[EpisodeResult]:
    """Run ``episodes`` episodes: episode ``i`` plays task ``i`` of the split (cycling), seed ``seed + i``."""
    if episodes < 1:
        raise ConfigError(f"episodes must be >= 1, got {episodes}.")
    env = make(env_id, **(env_kwargs or {}))
    try:
        inner = env.unwrapped
        split = split or inner.split
        n_tasks = len(inner.tasks.tasks(split))
        player = make_policy(policy, seed=seed) if isinstance(policy, str) else policy
        results = []
        for i in range(episodes):
            result = run_episode(env, player, seed=seed + i, options={"split": split, "index": i % n_tasks},
                                 env_id=env_id)
            result = replace(result, episode=i)
            results.append(result)
            if on_episode:
                on_episode(result)
        return results
    finally:
        env.close()
