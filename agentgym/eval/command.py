"""What ``agentgym eval`` does: plan a suite, run it resumably with a live progress bar, summarise, submit."""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agentgym.errors import ConfigError
from agentgym.eval.policies import Policy, Sampling, make_policy
from agentgym.eval.runner import EpisodeResult, PlannedEpisode, load_results, plan_episodes, run_plan, summarize
from agentgym.eval.suites import Suite, SuiteEntry, get_suite

__all__ = ["EvalRequest", "default_results_path", "run_eval"]


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
    sampling: Sampling = Sampling()
    concurrency: int = 1
    remote: str | None = None
    ray: str | None = None
    env_kwargs: Mapping[str, Any] | None = None
    results: Path | None = None

    def __post_init__(self) -> None:
        if self.episodes is not None and self.episodes < 1:
            raise ConfigError(f"--episodes must be >= 1, got {self.episodes}.")
        if self.concurrency < 1:
            raise ConfigError(f"--concurrency must be >= 1, got {self.concurrency}.")

    def selection(self) -> Suite:
        """The suite to run: the named one (episode count and split overridable), or the ``--env`` picks."""
        if self.envs:
            entries = tuple(SuiteEntry(env_id, self.split or "test", self.episodes or 20) for env_id in self.envs)
            return Suite(name="custom", version="1", entries=entries, description="envs picked with --env")
        suite = get_suite(self.suite)
        if self.episodes is None and self.split is None:
            return suite
        entries = tuple(SuiteEntry(e.env_id, self.split or e.split, self.episodes or e.episodes, e.env_kwargs)
                        for e in suite.entries)
        return Suite(name=suite.name, version=suite.version, entries=entries, description=suite.description)

    def policy_factory(self) -> Callable[[], Policy]:
        return lambda: make_policy(self.policy, seed=self.seed, sampling=self.sampling, model=self.model)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-.")[:80] or "run"


def default_results_path(request: EvalRequest, suite: Suite) -> Path:
    """Where a run's episodes go unless ``--results`` says: stable, so rerunning the command resumes."""
    picked = suite.name if suite.name != "custom" else "-".join(e.env_id.split("/")[-1] for e in suite.entries)
    who = request.policy + (f"-{request.model}" if request.model else "")
    return Path("results") / f"{_slug(picked)}-{_slug(who)}-seed{request.seed}.jsonl"


def run_eval(request: EvalRequest, console: Console) -> tuple[Suite, list[EpisodeResult], Path]:
    """Run the request's plan, resuming from its results file; returns the suite, the episodes and the file."""
    suite = request.selection()
    plan = plan_episodes(suite, seed=request.seed, env_kwargs=dict(request.env_kwargs or {}))
    path = request.results or default_results_path(request, suite)
    path.parent.mkdir(parents=True, exist_ok=True)
    resumed = _count_resumed(plan, path, request)
    stop = threading.Event()
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None

    def interrupt(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        console.print("[yellow]Stopping: running episodes finish and are saved; Ctrl-C again to abort.[/yellow]")

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("success {task.fields[success]}"))
    done = {"n": 0, "correct": 0}
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task(f"{suite.name} · {request.policy}", total=len(plan), completed=resumed,
                                success="-")

        def on_episode(result: EpisodeResult) -> None:
            done["n"] += 1
            done["correct"] += bool(result.correct)
            progress.update(bar, advance=1, success=f"{done['correct'] / done['n']:.0%} of {done['n']} new")

        if previous is not None:
            signal.signal(signal.SIGINT, interrupt)
        try:
            results = _run(request, plan, path, on_episode, stop)
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
    return suite, results, path


def _count_resumed(plan: Sequence[PlannedEpisode], path: Path, request: EvalRequest) -> int:
    if not path.exists():
        return 0
    stored = {r.get("key") for r in load_results(path)}
    policy = request.policy_factory()()
    try:
        return sum(p.key(policy) in stored for p in plan)
    finally:
        policy.close()


def _run(request: EvalRequest, plan: Sequence[PlannedEpisode], path: Path,
         on_episode: Callable[[EpisodeResult], None], stop: threading.Event) -> list[EpisodeResult]:
    if request.ray is not None:
        from agentgym.eval.distributed import run_plan_on_ray

        return run_plan_on_ray(plan, request.policy, seed=request.seed, sampling=request.sampling,
                               model=request.model, address=request.ray, remote=request.remote,
                               results_path=path, on_episode=on_episode, stop=stop)
    return run_plan(plan, request.policy_factory(), concurrency=request.concurrency, remote=request.remote,
                    results_path=path, on_episode=on_episode, stop=stop)


def summary_table(request: EvalRequest, suite: Suite, results: Sequence[EpisodeResult]) -> tuple[Table, dict]:
    """A table per env (mean reward and success with 95% intervals) and the same as a dict."""
    by_env: dict[str, list[EpisodeResult]] = {}
    for result in results:
        by_env.setdefault(result.env_id, []).append(result)
    who = request.policy + (f" ({request.model})" if request.model else "")
    table = Table(title=f"{suite.name} suite v{suite.version} · {who}")
    for column in ("env", "episodes", "success [95% CI]", "reward [95% CI]", "turns", "errors"):
        table.add_column(column, no_wrap=True)
    summaries = {}
    for env_id, runs in by_env.items():
        s = summaries[env_id] = summarize(runs)
        table.add_row(env_id.removeprefix("agentgym/"), str(s["episodes"]),
                      f"{s['success_rate']:.2f} [{s['success_rate_ci_low']:.2f}, {s['success_rate_ci_high']:.2f}]",
                      f"{s['mean_reward']:.2f} [{s['mean_reward_ci_low']:.2f}, {s['mean_reward_ci_high']:.2f}]",
                      f"{s['mean_turns']:.1f}", str(s["errors"]))
    return table, summaries


def submit(request: EvalRequest, suite: Suite, results: Sequence[EpisodeResult], leaderboard_dir: Path) -> Path:
    """Add this run's summary to ``leaderboard_dir/runs`` (then ``agentgym leaderboard build``)."""
    from agentgym.eval.leaderboard import make_submission, write_submission

    if not results:
        raise ConfigError("Nothing to submit: no episode finished.")
    first = results[0]
    submission = make_submission(
        [r.as_dict() for r in results], suite=suite.name, suite_version=suite.version, policy=request.policy,
        model=first.model, sampling=first.sampling, date=date.today().isoformat(),
        agentgym_version=first.agentgym_version, git_commit=first.git_commit,
        protocol_flags={"env_kwargs": dict(request.env_kwargs or {}),
                        "action_format": str((request.env_kwargs or {}).get("action_format", "tags"))})
    return write_submission(submission, leaderboard_dir)
