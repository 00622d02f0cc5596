"""The ``agentgym`` command: list envs, play one by hand, evaluate a policy, train one with GRPO."""

from __future__ import annotations

import contextlib
import json
import re
import socket
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from agentgym.errors import AgentGymError, ConfigError

# Plain help (rich_markup_mode=None): rich markup would swallow "[default: ...]" in help texts and print a
# "<bool>" type beside every flag. Sub-apps pass it too: each Typer renders its own help.
HELP_STYLE = {"rich_markup_mode": None, "no_args_is_help": True}
app = typer.Typer(help="agentgym: verifiable text environments for LLM agents.", add_completion=False, **HELP_STYLE)
console = Console()
errors = Console(stderr=True, soft_wrap=True)
# typer reads Optional[...] on every Python we support; `X | None` needs 3.10+ evaluation of annotations
KwargOption = Annotated[Optional[list[str]], typer.Option(
    "--kwarg", "-k", metavar="KEY=VALUE",
    help="Env keyword argument (repeatable); VALUE is read as JSON when it can be: 3, true, [\"a\"].")]


def _parse_kwargs(pairs: list[str]) -> dict[str, object]:
    """``key=value`` pairs; values are parsed as JSON when they can be (numbers, booleans, lists).

    Whether the env takes them, and of that type, is checked where the env is made
    (``ConfigError``, which ``main`` prints as one line).
    """
    kwargs: dict[str, object] = {}
    given: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ConfigError(f"-k/--kwarg expects KEY=VALUE with KEY an argument name, got {pair!r} "
                              "(for example -k max_turns=3).")
        if key in given:
            raise ConfigError(f"-k {key} is given twice ({given[key]!r} and {value!r}); give it once.")
        given[key] = value
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs


@app.command("list")
def list_envs() -> None:
    """List every registered env id with a one-line description and the extras it needs."""
    from agentgym.core.registry import env_ids, env_info

    table = Table("id", "description", "extras")
    for env_id in env_ids():
        info = env_info(env_id)
        table.add_row(env_id, info.description, ", ".join(info.extras) or "-")
    console.print(table)


@app.command()
def play(env_id: Annotated[str, typer.Argument(metavar="ENV_ID", help="e.g. agentgym/SearchQA-v0")],
         seed: Annotated[int, typer.Option(help="Picks the task.")] = 0,
         task_id: Annotated[Optional[str], typer.Option(help="Play this task instead of a seeded one.")] = None,
         kwarg: KwargOption = None) -> None:
    """Play one episode yourself: type each action (e.g. <search>...</search>), Ctrl-D to quit."""
    from agentgym.core.registry import make

    env = make(env_id, **_parse_kwargs(kwarg or []))
    observation, info = env.reset(seed=seed, options={"task_id": task_id} if task_id else None)
    console.print(f"[bold]task {info['task_id']}[/bold]\n{observation}")
    while True:
        try:
            action = _read_action(f"turn {info['turn'] + 1}/{info['max_turns']} action")
        except (EOFError, typer.Abort):
            console.print("\nbye")
            return
        observation, reward, terminated, truncated, info = env.step(action)
        if info["action_error"]:
            console.print(f"[yellow]{observation}[/yellow]")
        elif observation:
            console.print(observation)
        if terminated or truncated:
            verdict = info["verification"]
            console.print(f"[bold]{'solved' if verdict['correct'] else 'not solved'}[/bold] reward={reward} "
                          f"details={json.dumps(verdict['details'], ensure_ascii=False)}")
            return


_OPEN_TAG = re.compile(r"<([A-Za-z_][\w-]*)>")


def _is_open(text: str) -> bool:
    """Whether ``text`` has a tag or a ``` fence it has not closed yet (multi-line code is typed on)."""
    if text.count("```") % 2:
        return True
    return any(f"</{tag}>" not in text[m.end():] for m in _OPEN_TAG.finditer(text) for tag in [m.group(1)])


def _read_action(prompt: str) -> str:
    """One action from the terminal; lines are joined while a tag or code fence is still open."""
    lines = [typer.prompt(prompt)]
    while _is_open("\n".join(lines)):
        lines.append(typer.prompt("...", default="", show_default=False))
    return "\n".join(lines)


@app.command("eval")
def eval_cmd(
    policy: Annotated[str, typer.Option(help="smollm2 (a real model, offline), hf:<path>, openai:<base_url> "
                                             "(with --model), vllm:<model>, oracle, random or empty.")] = "smollm2",
    suite: Annotated[str, typer.Option(help="Named suite: core (small, every env family) or full.")] = "core",
    env: Annotated[Optional[list[str]], typer.Option("--env", metavar="ENV_ID",
                                                     help="Env id (repeatable) instead of a suite.")] = None,
    episodes: Annotated[Optional[int], typer.Option(help="Episodes per env [default: the suite's; 30 with --env].")]
    = None,
    split: Annotated[Optional[str], typer.Option(help="Task split [default: the suite's; with --env, the env's own].")] = None,
    seed: Annotated[int, typer.Option(help="Base seed; episode i uses seed + i.")] = 0,
    model: Annotated[Optional[str], typer.Option(help="Model name for openai: endpoints.")] = None,
    temperature: Annotated[float, typer.Option(help="Sampling temperature; 0 is greedy.")] = 0.0,
    top_p: Annotated[float, typer.Option(help="Nucleus sampling mass.")] = 1.0,
    max_tokens: Annotated[int, typer.Option(help="Most tokens per model turn.")] = 128,
    concurrency: Annotated[int, typer.Option(help="Episodes run at once, for policies without a local model.")]
    = 1,
    batch_size: Annotated[int, typer.Option(help="Episodes a local model (smollm2, hf:) plays at once, "
                                                 "with one batched generation per turn.")] = 32,
    retry_errors: Annotated[bool, typer.Option(help="Replay episodes that errored in an earlier run of the same "
                                                    "command.")] = True,
    remote: Annotated[Optional[str], typer.Option(help="Play on an `agentgym serve` at this URL.")] = None,
    ray: Annotated[Optional[str], typer.Option(help="Run episodes on Ray: a cluster address, or 'local'.")] = None,
    kwarg: KwargOption = None,
    results: Annotated[Optional[Path], typer.Option(
        help="Episode log (JSON lines); rerunning the same command resumes it [default: results/<run>.jsonl].")]
    = None,
    summary_json: Annotated[Optional[Path], typer.Option(help="Write {env_id: summary} here.")] = None,
    submit: Annotated[bool, typer.Option(help="Add this run's summary to leaderboard/runs.")] = False,
    leaderboard_dir: Annotated[Path, typer.Option(help="Where --submit writes.")] = Path("leaderboard"),
) -> None:
    """Evaluate a policy on a suite (default: the real SmolLM2 model on `core`) and print per-env results."""
    from agentgym.eval.command import EvalRequest, run_eval, summary_table
    from agentgym.eval.command import submit as submit_run
    from agentgym.eval.policies import Sampling

    request = EvalRequest(policy=policy, suite=suite, envs=tuple(env or ()), episodes=episodes, split=split,
                          seed=seed, model=model,
                          sampling=Sampling(temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed),
                          concurrency=concurrency, batch_size=batch_size, remote=remote, ray=ray,
                          env_kwargs=_parse_kwargs(kwarg or []), results=results, retry_errors=retry_errors)
    outcome = run_eval(request, console)
    table, summaries = summary_table(request, outcome.suite, outcome.results)
    console.print(table)
    console.print(f"{len(outcome.results)} of {outcome.planned} episodes in {outcome.path}", highlight=False)
    if summary_json:
        summary_json.write_text(json.dumps(summaries, indent=2) + "\n", encoding="utf-8")
    if submit:
        console.print(f"submitted: {submit_run(request, outcome.suite, outcome.results, leaderboard_dir)}")
    overruns = sum(int(s.get("verifier_over_budget") or 0) for s in summaries.values())
    if overruns:
        errors.print(f"{overruns} verifications ran past their time budget and scored 0 (see 'verifier_over_budget' "
                     "in the summary; AGENTGYM_VERIFIER_BUDGET_S sets the budget).", style="yellow", markup=False,
                     highlight=False)
    if outcome.interrupted or outcome.errors:
        why = [f"{outcome.planned - len(outcome.results)} episodes not played (interrupted)"] * outcome.interrupted
        why += [f"{outcome.errors} episodes errored (see their 'error' in the results file)"] * bool(outcome.errors)
        errors.print(f"incomplete: {'; '.join(why)}. Rerun the same command to "
                     f"{'retry and ' if outcome.errors and retry_errors else ''}finish.", style="yellow",
                     markup=False, highlight=False)
        raise typer.Exit(1)


leaderboard_app = typer.Typer(help="Build the leaderboard from committed runs.", **HELP_STYLE)
app.add_typer(leaderboard_app, name="leaderboard")


@leaderboard_app.command("build")
def leaderboard_build(directory: Annotated[Path, typer.Option("--dir", help="The leaderboard directory.")]
                      = Path("leaderboard")) -> None:
    """Write leaderboard/README.md and leaderboard/index.html from leaderboard/runs/**.json."""
    from agentgym.eval.leaderboard import build_leaderboard

    readme, page = build_leaderboard(directory)
    console.print(f"wrote {readme} and {page}")


swe_app = typer.Typer(help="SWE-bench: prove instances, grade predictions.", **HELP_STYLE)
app.add_typer(swe_app, name="swe")
DataOption = Annotated[Optional[Path], typer.Option(help="Instances (JSONL/Parquet/dataset dir); default: bundled.")]
BackendOption = Annotated[str, typer.Option(help="bwrap (default) or docker.")]


@swe_app.command("validate")
def swe_validate(data: DataOption = None, backend: BackendOption = "bwrap",
                 split: Annotated[Optional[str], typer.Option(help="One split (default: all).")] = None) -> None:
    """Prove each instance: FAIL_TO_PASS fail and PASS_TO_PASS pass before the gold patch, all pass after."""
    from agentgym.envs.swe.commands import validate_instances
    from agentgym.envs.swe.env import SWEBenchEnv

    env = SWEBenchEnv(data=data, backend=backend)  # type: ignore[arg-type]
    try:
        checks = validate_instances(env, split=split, progress=lambda c: console.print(
            f"{'ok  ' if c.ok else 'FAIL'} {c.instance_id} ({c.seconds:.1f} s)" + "".join(
                f"\n     {p}" for p in c.problems), markup=False))
    finally:
        env.close()
    bad = [c for c in checks if not c.ok]
    console.print(f"{len(checks) - len(bad)}/{len(checks)} instances valid on {backend}")
    if bad:
        raise typer.Exit(1)


@swe_app.command("grade")
def swe_grade(predictions: Annotated[Path, typer.Option(help="SWE-bench predictions: instance_id, model_patch.")],
              data: DataOption = None, backend: BackendOption = "bwrap",
              report: Annotated[Optional[Path], typer.Option(help="Write the JSON report here.")] = None) -> None:
    """Grade a predictions file with the swebench harness's log parsing and report."""
    from agentgym.envs.swe.commands import grade_predictions, read_predictions
    from agentgym.envs.swe.env import SWEBenchEnv

    env = SWEBenchEnv(data=data, backend=backend)  # type: ignore[arg-type]
    try:
        result = grade_predictions(env, read_predictions(predictions), progress=lambda i, ok: console.print(
            f"{'resolved  ' if ok else 'unresolved'} {i}", markup=False))
    finally:
        env.close()
    if report is not None:
        report.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"resolved {result['resolved_instances']}/{result['total_instances']}"
                  + (f", {len(result['error_ids'])} unknown ids" if result["error_ids"] else ""))


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@app.command()
def serve(env_ids: Annotated[Optional[list[str]], typer.Argument(metavar="ENV_ID",
                                                                  help="Env ids to serve (default: all).")] = None,
          host: Annotated[str, typer.Option(help="Bind address; anything but loopback needs --token.")] = "127.0.0.1",
          port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
          max_sessions: Annotated[int, typer.Option(help="Open sessions at most; more get 429.")] = 1024,
          env_limit: Annotated[Optional[list[str]], typer.Option(
              metavar="ENV_ID=N", help="Open sessions of one env at most (repeatable); more get 429 [default: "
                                       "SWEBench and WebShopBrowser, whose sessions hold processes and memory: "
                                       "half the host's memory over what one session may fill; others: none].")]
          = None,
          session_ttl_s: Annotated[float, typer.Option(help="Close sessions idle this long.")] = 600.0,
          token: Annotated[Optional[str], typer.Option(envvar="AGENTGYM_TOKEN",
                                                       help="Bearer token clients must send.")] = None,
          workers: Annotated[Optional[int], typer.Option(
              help="Worker threads that run env code [default: min(32, CPUs + 4)].")] = None,
          keep_alive_s: Annotated[float, typer.Option(
              help="Close a connection idle this long (new, or after a response).")] = 5.0,
          request_timeout_s: Annotated[float, typer.Option(
              help="A request must arrive whole (headers and body) this long after its first byte; "
                   "else 408 and the connection is closed.")] = 30.0,
          kwarg: KwargOption = None) -> None:
    """Serve envs over HTTP (sessions, batch step, verify, metrics, AgentGym-compatible routes).

    Each -k goes to the served envs that take it (-k topk=5 to SearchQA-v0 only).
    """
    import uvicorn

    from agentgym.core.registry import env_ids as all_env_ids
    from agentgym.core.registry import env_info
    from agentgym.server import create_app
    from agentgym.server.connections import engine, uvicorn_config
    from agentgym.server.threads import DEFAULT_THREADS

    if not token and not _is_loopback(host):
        raise ConfigError(f"Refusing to bind {host} without a token: pass --token or set AGENTGYM_TOKEN, "
                          "or bind 127.0.0.1.")
    workers = DEFAULT_THREADS if workers is None else workers
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}.")
    ids = sorted(env_ids or all_env_ids())
    for env_id in ids:
        env_info(env_id)  # an unknown id fails before the port is taken
    server_kwargs = _server_kwargs(ids, _parse_kwargs(kwarg or []))
    limits = _parse_env_limits(env_limit or [])
    sock = _bind(host, port)  # before announcing: a busy port is a one-line error, not a line after "serving"
    try:
        application = create_app(ids, max_sessions=max_sessions, session_ttl_s=session_ttl_s, token=token,
                                 env_threads=workers, server_kwargs=server_kwargs, env_limits=limits)
        config = uvicorn_config(application, keep_alive_s=keep_alive_s, request_timeout_s=request_timeout_s,
                                log_level="warning", access_log=False)
        bound = sock.getsockname()[1]
        console.print(f"agentgym serving {', '.join(ids)} on http://{host}:{bound} "
                      f"(docs: /docs, AgentGym-compatible routes: /<env id>/...; {engine()})", highlight=False,
                      soft_wrap=True)
        server = uvicorn.Server(config)
        with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl-C it shut down on
            server.run(sockets=[sock])
    finally:
        sock.close()


def _parse_env_limits(pairs: list[str]) -> dict[str, int]:
    """``ENV_ID=N`` pairs of ``--env-limit``."""
    limits: dict[str, int] = {}
    for pair in pairs:
        env_id, sep, value = pair.partition("=")
        if not sep or not value.strip().isdigit():
            raise ConfigError(f"--env-limit takes ENV_ID=N with N a whole number, got {pair!r} "
                              "(e.g. --env-limit agentgym/SWEBench-v0=16).")
        limits[env_id.strip()] = int(value)
    return limits


def _server_kwargs(env_ids: list[str], kwargs: dict[str, object]) -> dict[str, dict[str, object]]:
    """Each served env's share of the ``-k`` kwargs: those it takes. One that no served env takes is an error."""
    from agentgym.core.registry import check_env_kwargs, check_kwarg_names, env_kwarg_names

    if not kwargs:
        return {}
    if len(env_ids) == 1:
        check_env_kwargs(env_ids[0], kwargs)
        return {env_ids[0]: kwargs}
    names = {env_id: set(env_kwarg_names(env_id)) for env_id in env_ids}
    check_kwarg_names(kwargs, set().union(*names.values()), owner="agentgym serve (no served env takes it)")
    shares = {env_id: {k: v for k, v in kwargs.items() if k in names[env_id]} for env_id in env_ids}
    for env_id, share in shares.items():
        check_env_kwargs(env_id, share)
    return shares


def _bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` for uvicorn to listen on."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as e:
        raise ConfigError(f"Cannot serve on {host}:{port}: {e.strerror or e}. Pass a --host this machine has.") from e
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: restart right after a stop
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ConfigError(f"Cannot serve on {host}:{port}: {e.strerror or e}. Pass another --port, or stop what "
                          "is using this one.") from e
    return sock


@app.command()
def train(
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="YAML file of TrainConfig fields.")] = None,
    env: Annotated[Optional[list[str]], typer.Option(metavar="ENV_ID", help="Env id (repeat for several).")] = None,
    remote: Annotated[Optional[str], typer.Option(help="Play the envs on this `agentgym serve` URL.")] = None,
    model: Annotated[Optional[str], typer.Option(help="smollm2 (default) or a local HF model dir / hf:<id>.")] = None,
    output_dir: Annotated[Optional[str], typer.Option(help="Run directory (metrics, checkpoints, final model).")]
    = None,
    split: Annotated[Optional[str], typer.Option(help="Task split to train on (default train).")] = None,
    tasks: Annotated[Optional[int], typer.Option(help="Use the first N tasks of the split.")] = None,
    group_size: Annotated[Optional[int], typer.Option(help="Rollouts per task (GRPO group).")] = None,
    groups_per_step: Annotated[Optional[int], typer.Option(help="Tasks per optimizer step.")] = None,
    learning_rate: Annotated[Optional[float], typer.Option(help="Adam learning rate.")] = None,
    steps: Annotated[Optional[int], typer.Option(help="Optimizer steps.")] = None,
    max_turns: Annotated[Optional[int], typer.Option(help="Env turns per episode.")] = None,
    max_turn_tokens: Annotated[Optional[int], typer.Option(help="Tokens per model turn.")] = None,
    max_completion_tokens: Annotated[Optional[int], typer.Option(help="Tokens per episode (model + observations).")] = None,
    loss_type: Annotated[Optional[str], typer.Option(help="grpo, dr_grpo, dapo, bnpo or gspo.")] = None,
    beta: Annotated[Optional[float], typer.Option(help="KL coefficient to the reference model (0: none).")] = None,
    temperature: Annotated[Optional[float], typer.Option(help="Sampling temperature.")] = None,
    observation_style: Annotated[Optional[str], typer.Option(help="append (Search-R1) or chat (tool message).")] = None,
    lora: Annotated[Optional[bool], typer.Option("--lora/--no-lora", help="Train LoRA adapters (PEFT).")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Seed of sampling and task order.")] = None,
    save_steps: Annotated[Optional[int], typer.Option(help="Checkpoint every N steps.")] = None,
    resume: Annotated[Optional[bool], typer.Option("--resume/--no-resume", help="Continue from the last checkpoint.")] = None,
    threads: Annotated[Optional[int], typer.Option(help="torch threads (1 when other processes share the cores).")]
    = None,
    backend: Annotated[Optional[str], typer.Option(help="Generation: transformers (default) or vllm (CUDA GPU).")]
    = None,
    vllm_mode: Annotated[Optional[str], typer.Option(help="vLLM beside the trainer (colocate) or trl vllm-serve "
                                                          "(server).")] = None,
    vllm_server_url: Annotated[Optional[str], typer.Option(help="The trl vllm-serve URL (server mode).")] = None,
    kwarg: KwargOption = None,
) -> None:
    """Train a model on agentgym envs with multi-turn GRPO (observation tokens masked out of the loss)."""
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from agentgym.trainer.grpo import load_config
    from agentgym.trainer.grpo import train as run_training

    overrides = {"env": env or None, "remote": remote, "model": model, "output_dir": output_dir, "split": split,
                 "tasks": tasks, "group_size": group_size, "groups_per_step": groups_per_step,
                 "learning_rate": learning_rate, "steps": steps, "max_turns": max_turns,
                 "max_turn_tokens": max_turn_tokens, "max_completion_tokens": max_completion_tokens,
                 "loss_type": loss_type, "beta": beta, "temperature": temperature,
                 "observation_style": observation_style, "lora": lora, "seed": seed, "save_steps": save_steps,
                 "resume": resume, "threads": threads, "backend": backend, "vllm_mode": vllm_mode,
                 "vllm_server_url": vllm_server_url, "env_kwargs": _parse_kwargs(kwarg) if kwarg else None}
    cfg = load_config(config, **overrides)
    console.print(f"training {cfg.model} on {', '.join(cfg.env)}{' at ' + cfg.remote if cfg.remote else ''}: "
                  f"{cfg.steps} steps x {cfg.groups_per_step} tasks x {cfg.group_size} rollouts, loss {cfg.loss_type}"
                  f" -> {cfg.output_dir}", highlight=False)
    final = run_training(cfg, console=console)
    console.print(f"final model: {final}  (evaluate: agentgym eval --policy hf:{final}; curves: agentgym plot "
                  f"{cfg.output_dir})", highlight=False)


@app.command()
def plot(run_dir: Annotated[Path, typer.Argument(help="A training run directory holding metrics.jsonl.")]) -> None:
    """Draw a training run's curves (reward, success, entropy, KL, ...) as PNGs in RUN_DIR/plots/."""
    from agentgym.trainer.plot import plot_run

    written = plot_run(run_dir)
    console.print(f"wrote {len(written)} plots to {written[0].parent} (overview: {written[0].name})")


def main() -> None:
    """Console entry point: agentgym errors print as one clear line and exit 2."""
    try:
        app()
    except AgentGymError as e:
        errors.print(f"error: {e}", style="red", markup=False, highlight=False)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
