"""The ``agentgym`` command: list envs, play one by hand, evaluate a policy, train one with GRPO."""

from __future__ import annotations

import contextlib
import json
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Column, Table

from agentgym.errors import AgentGymError, ConfigError
from agentgym.trainer.config import TrainConfig
from agentgym.trainer.flags import train_command

# Plain help (rich_markup_mode=None): rich markup would swallow "[default: ...]" in help texts and print a
# "<bool>" type beside every flag. Sub-apps pass it too: each Typer renders its own help.
HELP_STYLE = {"rich_markup_mode": None, "no_args_is_help": True}
app = typer.Typer(help="agentgym: verifiable text environments for LLM agents.", add_completion=False, **HELP_STYLE)
console = Console()
errors = Console(stderr=True, soft_wrap=True)
# agentgym serve --ray: the worker threads only wait on the env hosts, so many sessions' calls can be in flight
RAY_WAITERS = 256
# typer reads Optional[...] on every Python we support; `X | None` needs 3.10+ evaluation of annotations
ImportOption = Annotated[Optional[list[str]], typer.Option(
    "--import", metavar="MODULE_OR_FILE",
    help="A module, or a Python file, that registers envs of your own with agentgym.register, imported first "
         "(repeatable); installed packages' envs (the agentgym.envs entry point) need none.")]
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


def _torch_threads(threads: int | None) -> None:
    """torch's intra-op threads for a local model: ``threads``, else $OMP_NUM_THREADS, else the usable cores."""
    import os

    if threads is not None and threads < 1:
        raise ConfigError(f"--threads must be at least 1, got {threads}.")
    if threads is None:
        if os.environ.get("OMP_NUM_THREADS", "").isdigit():
            return  # torch already reads it
        threads = len(os.sched_getaffinity(0))
    try:
        import torch
    except ImportError:
        return  # the policy's own check names the missing extra
    torch.set_num_threads(threads)


def _import(imports: list[str] | None) -> None:
    if imports:
        from agentgym.core.plugins import import_envs

        import_envs(imports)


@app.command("list")
def list_envs(imports: ImportOption = None) -> None:
    """List every registered env id with a one-line description, the extras it needs and where it comes from
    (agentgym, an installed package, or an --import); a plugin that failed to load is listed with its error."""
    from agentgym.core.plugins import plugin_errors
    from agentgym.core.registry import env_ids, env_info

    _import(imports)
    table = Table("description", "extras", "from")
    table.columns.insert(0, Column("id", no_wrap=True))  # an id is copied from here: never broken over lines
    for env_id in env_ids():
        info = env_info(env_id)
        table.add_row(env_id, info.description, ", ".join(info.extras) or "-", info.source)
    console.print(table)
    for plugin, error in plugin_errors().items():
        errors.print(f"could not load the env plugin {plugin}: {error}", style="red", markup=False, highlight=False)


@app.command("init")
def init_cmd(name: Annotated[str, typer.Argument(metavar="NAME", help="The package's name, e.g. stockroom: "
                                                                      "letters and digits, words joined by - or _.")],
             directory: Annotated[Optional[Path], typer.Option("--dir", help="Where to write it [default: ./NAME]; "
                                                                             "new or empty.")] = None) -> None:
    """Write a pip-installable package with an env of your own (NAME/Name-v0): a ToolEnv over a small dataset with
    a tool, a verifier, an oracle, tests (agentgym.testing) and a README; its entry point registers it."""
    from agentgym.scaffold import scaffold

    made = scaffold(name, directory)
    shown = str(directory) if directory is not None else f"./{name}"
    console.print(f"wrote {shown}: the env {made.env_id} (module {made.module}). Next:", highlight=False)
    for command in made.next_commands(shown):
        console.print(f"  {command}", markup=False, highlight=False, soft_wrap=True)


@app.command()
def play(env_id: Annotated[str, typer.Argument(metavar="ENV_ID", help="e.g. agentgym/SearchQA-v0")],
         seed: Annotated[int, typer.Option(help="Picks the task.")] = 0,
         task_id: Annotated[Optional[str], typer.Option(help="Play this task instead of a seeded one.")] = None,
         kwarg: KwargOption = None, imports: ImportOption = None) -> None:
    """Play one episode yourself: type each action (e.g. <search>...</search>), Ctrl-D to quit."""
    from agentgym.core.registry import make

    _import(imports)
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
    episodes: Annotated[Optional[int], typer.Option(help="Episodes (tasks) per env [default: the suite's; 30 with "
                                                         "--env].")]
    = None,
    samples: Annotated[int, typer.Option(help="Rollouts per task, for pass@k and mean@k (use with --temperature).")]
    = 1,
    repeats: Annotated[int, typer.Option(
        help="Play every task R times to measure the run's own noise: per-task flip rates and the noise floor "
             "(the spread of the run's success over repeats).")] = 1,
    split: Annotated[Optional[str], typer.Option(help="Task split [default: the suite's; with --env, the env's own].")] = None,
    difficulty: Annotated[Optional[str], typer.Option(
        help="Only the tasks of this level on each env's difficulty card: easy, medium, hard, or a pass-rate range "
             "LO-HI of the card's reference model (agentgym difficulty ENV --show).")] = None,
    difficulty_card: Annotated[Optional[Path], typer.Option(
        help="The card (a file, or a directory of ENV.json cards) that --difficulty reads [default: the bundled "
             "cards].")] = None,
    seed: Annotated[int, typer.Option(help="Base seed; episode i uses seed + i.")] = 0,
    model: Annotated[Optional[str], typer.Option(help="Model name for openai: endpoints.")] = None,
    system_prompt: Annotated[Optional[str], typer.Option(
        help="A system message before every task prompt, for model policies (evaluate a recipe trained with a "
             "system_prompt with the same one).")] = None,
    temperature: Annotated[float, typer.Option(help="Sampling temperature; 0 is greedy.")] = 0.0,
    top_p: Annotated[float, typer.Option(help="Nucleus sampling mass.")] = 1.0,
    max_tokens: Annotated[Optional[int], typer.Option(
        help="Most tokens per model turn [default: 128; with --agent: each call's own max_tokens, capped by this "
             "when given].")] = None,
    concurrency: Annotated[Optional[int], typer.Option(
        help="Episodes run at once, for policies without a local model and agents [default: 1; with --agent: "
             "--batch-size].")] = None,
    batch_size: Annotated[int, typer.Option(help="Episodes a local model (smollm2, hf:) plays at once, "
                                                 "with one batched generation per turn.")] = 32,
    threads: Annotated[Optional[int], typer.Option(
        help="torch threads of a local model (smollm2, hf:) [default: $OMP_NUM_THREADS if set, else the cores "
             "this process may use]; 1 is best where other work shares the cores.")] = None,
    dtype: Annotated[str, typer.Option(
        help="What a local model (smollm2, hf:) computes in: auto (bfloat16 where the CPU or GPU has it natively, "
             "else float32), float32 or bfloat16. A bfloat16 run is its own run: new keys, and its name says "
             "bf16.")] = "auto",
    retry_errors: Annotated[bool, typer.Option(help="Replay episodes that errored in an earlier run of the same "
                                                    "command.")] = True,
    remote: Annotated[Optional[str], typer.Option(help="Play on an `agentgym serve` at this URL, or on env "
                                                       "sessions of a Ray cluster: ray://ADDRESS (HOST:PORT, auto, "
                                                       "local).")] = None,
    ray: Annotated[Optional[str], typer.Option(help="Run episodes on Ray: a cluster address, or 'local'.")] = None,
    kwarg: KwargOption = None,
    imports: ImportOption = None,
    results: Annotated[Optional[Path], typer.Option(
        help="Episode log (JSON lines); rerunning the same command resumes it [default: results/<run>.jsonl].")]
    = None,
    summary_json: Annotated[Optional[Path], typer.Option(help="Write {env_id: summary} here.")] = None,
    submit: Annotated[bool, typer.Option(help="Add this run's summary to leaderboard/runs (refused for a run with "
                                              "errored or unplayed episodes).")] = False,
    allow_incomplete: Annotated[bool, typer.Option(help="Submit a run with errored or unplayed episodes anyway, "
                                                        "marked incomplete (listed, never ranked).")] = False,
    leaderboard_dir: Annotated[Path, typer.Option(help="Where --submit writes.")] = Path("leaderboard"),
    name: Annotated[Optional[str], typer.Option(
        help="What the leaderboard row calls the model [default: read from the model: a trained model's "
             "agentgym_model.json, a GGUF's name and quantisation, a hub id; never a local path].")] = None,
    agent: Annotated[Optional[str], typer.Option(
        metavar="FILE_OR_MODULE:FUNCTION",
        help="Play each episode with your own agent: a function taking a task (prompt, base_url, model, tools, "
             "call_tool, mcp_url) and returning its answer; its model calls go through a gateway serving "
             "--policy's model (docs/agents.md). Runs --concurrency episodes at once (default: --batch-size).")]
    = None,
    agent_cmd: Annotated[Optional[str], typer.Option(
        metavar="CMD", help="Your agent as a program: the prompt on stdin, OPENAI_BASE_URL and AGENTGYM_* in its "
                            "environment, the answer on stdout.")] = None,
    agent_timeout: Annotated[float, typer.Option(help="An agent's wall-time limit per episode, in seconds.")]
    = 600.0,
    allow_no_model: Annotated[bool, typer.Option(help="With --agent: an episode whose agent never called the "
                                                      "model is not an error (a scripted agent).")] = False,
    agent_chooses_sampling: Annotated[bool, typer.Option(
        help="With --agent: sample each call at the temperature and top_p the agent asks for. Without it the "
             "gateway samples every call at --temperature and --top-p (as train --agent does), so --samples K "
             "gives K real samples.")] = False,
    rescore: Annotated[Optional[Path], typer.Option(
        metavar="RESULTS", help="Score the episodes stored in RESULTS again with the envs' current verifiers (no "
                                "model, no replay), given the run's --suite/--env and -k; writes "
                                "RESULTS.rescored.jsonl beside it and prints what changed.")] = None,
) -> None:
    """Evaluate a policy on a suite (default: the real SmolLM2 model on `core`) and print per-env results."""
    from agentgym.eval.command import EvalRequest, run_eval, summary_table
    from agentgym.eval.command import submit as submit_run
    from agentgym.policies import Sampling

    _import(imports)
    if rescore is not None:
        _rescore(rescore, EvalRequest(policy=policy, suite=suite, envs=tuple(env or ()), split=split,
                                      env_kwargs=_parse_kwargs(kwarg or [])))
        return
    if policy == "smollm2" or policy.startswith(("hf:", "vllm:")):
        _torch_threads(threads)
    request = EvalRequest(policy=policy, suite=suite, envs=tuple(env or ()), episodes=episodes, split=split,
                          seed=seed, model=model, system_prompt=system_prompt,
                          sampling=Sampling(temperature=temperature, top_p=top_p,
                                            max_tokens=max_tokens if max_tokens is not None else 128, seed=seed),
                          concurrency=concurrency, batch_size=batch_size, remote=remote, ray=ray,
                          env_kwargs=_parse_kwargs(kwarg or []), results=results, retry_errors=retry_errors,
                          samples=samples, repeats=repeats, name=name, dtype=dtype, agent=agent, agent_cmd=agent_cmd,
                          agent_timeout_s=agent_timeout, allow_no_model=allow_no_model,
                          agent_chooses_sampling=agent_chooses_sampling, agent_max_tokens=max_tokens,
                          difficulty=difficulty, difficulty_card=str(difficulty_card) if difficulty_card else None)
    outcome = run_eval(request, console)
    table, summaries = summary_table(request, outcome.suite, outcome.results)
    console.print(table)
    console.print(f"{len(outcome.results)} of {outcome.planned} episodes in {outcome.path}", highlight=False)
    if summary_json:
        summary_json.write_text(json.dumps(summaries, indent=2) + "\n", encoding="utf-8")
    if submit:
        try:
            written = submit_run(request, outcome, leaderboard_dir, allow_incomplete=allow_incomplete)
        except ConfigError as e:  # refused: the run stays unsubmitted, and the command fails
            errors.print(f"error: {e}", style="red", markup=False, highlight=False)
            raise typer.Exit(1) from None
        console.print(f"submitted: {written}")
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


@app.command("gateway")
def gateway_cmd(
    model: Annotated[str, typer.Option(help="smollm2 (the default local model), hf:<local model>, vllm:<model> "
                                            "(GPU), or a name for --upstream.")] = "smollm2",
    upstream: Annotated[Optional[str], typer.Option(
        help="Pass every call through to this OpenAI-compatible base URL (ending in /v1); its records are text "
             "only (no token ids).")] = None,
    host: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port; 0 picks a free one.")] = 8300,
    dtype: Annotated[str, typer.Option(help="What a local model computes in: auto, float32 or bfloat16.")] = "auto",
    threads: Annotated[Optional[int], typer.Option(help="torch threads of a local model.")] = None,
    gather_ms: Annotated[float, typer.Option(help="How long the engine keeps gathering requests into a batch "
                                                  "after the last one arrived, in milliseconds.")] = 50.0,
    request_timeout: Annotated[float, typer.Option(help="A chat completion's limit, queued and generating, in "
                                                        "seconds (408 past it).")] = 600.0,
    max_body_mb: Annotated[float, typer.Option(help="The largest request body, in MB (413 past it).")] = 16.0,
    max_open_rollouts: Annotated[int, typer.Option(help="Rollouts open at once (429 past it, after closing those "
                                                        "idle for --rollout-idle).")] = 1024,
    rollout_idle: Annotated[float, typer.Option(help="Seconds without a call after which an open rollout is "
                                                     "closed when room is needed.")] = 3600.0,
) -> None:
    """Serve a model behind an OpenAI-compatible API that records every token: /v1/chat/completions, and one base
    URL per rollout (POST /rollouts, then /rollouts/ID/v1) whose record holds token-exact samples."""
    from agentgym.gateway.server import GatewayServer, load_gateway
    from agentgym.gateway.service import Limits

    try:
        limits = Limits(request_s=request_timeout, body_bytes=int(max_body_mb * 2**20),
                        open_rollouts=max_open_rollouts, idle_s=rollout_idle)
    except ValueError as e:
        raise ConfigError(f"{e} (agentgym gateway --help)") from None

    if host not in ("127.0.0.1", "localhost", "::1"):
        # the gateway has no token yet: off this machine anyone could drive the model and step open rollouts' envs
        raise ConfigError(f"--host {host}: the gateway serves this machine only (127.0.0.1, localhost or ::1); it "
                          "takes no token yet. Reach it from elsewhere through an SSH tunnel.")
    if upstream is None:
        _torch_threads(threads)
    gateway = load_gateway(model, dtype=dtype, upstream=upstream, upstream_model=model if upstream else None,
                           gather_s=gather_ms / 1000, limits=limits)
    server = GatewayServer(gateway, host=host, port=port).start()
    console.print(f"gateway for {gateway.model_name} at {server.url}/v1  (rollouts: POST {server.url}/rollouts; "
                  "Ctrl-C stops)", highlight=False, soft_wrap=True)
    try:
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        gateway.close()


leaderboard_app = typer.Typer(help="Build the leaderboard from committed runs.", **HELP_STYLE)
app.add_typer(leaderboard_app, name="leaderboard")


@leaderboard_app.command("build")
def leaderboard_build(directory: Annotated[Path, typer.Option("--dir", help="The leaderboard directory.")]
                      = Path("leaderboard")) -> None:
    """Write leaderboard/README.md and leaderboard/index.html from leaderboard/runs/**.json."""
    from agentgym.eval.leaderboard import build_leaderboard

    readme, page = build_leaderboard(directory)
    console.print(f"wrote {readme} and {page}")


@leaderboard_app.command("serve")
def leaderboard_serve(directory: Annotated[Path, typer.Option("--dir", help="The built leaderboard directory.")]
                      = Path("leaderboard"),
                      host: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
                      port: Annotated[int, typer.Option(help="TCP port; 0 picks a free one.")] = 8000) -> None:
    """Serve the built leaderboard (index.html) over HTTP on this machine until Ctrl-C."""
    from agentgym.eval.viewer import board_server

    server = board_server(directory, host=host, port=port)
    bound_host, bound_port = server.server_address[:2]
    console.print(f"serving {directory} at http://{bound_host}:{bound_port}/  (Ctrl-C stops)", highlight=False,
                  soft_wrap=True)
    with server, contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


swe_app = typer.Typer(help="SWE-bench: prove instances, grade predictions.", **HELP_STYLE)
app.add_typer(swe_app, name="swe")
DataOption = Annotated[Optional[Path], typer.Option(help="Instances (JSONL/Parquet/dataset dir); default: bundled.")]
BackendOption = Annotated[str, typer.Option(help="bwrap (default) or docker.")]


@swe_app.command("validate")
def swe_validate(data: DataOption = None, backend: BackendOption = "bwrap",
                 split: Annotated[Optional[str], typer.Option(help="One split (default: all).")] = None,
                 trust: Annotated[Optional[Path], typer.Option(
                     help="Write each instance's trust table (JSON): how its gold verdict was decided.")] = None,
                 repeats: Annotated[int, typer.Option(
                     help="Grade each gold patch R times and list the instances whose gold does not pass every "
                          "replica.")] = 1,
                 ) -> None:
    """Prove each instance: FAIL_TO_PASS fail and PASS_TO_PASS pass before the gold patch, all pass after; and say
    what each gold verdict rests on (tests decided on data by the harness, tests on the repository's equality)."""
    from agentgym.envs.swe.commands import validate_instances
    from agentgym.envs.swe.env import SWEBenchEnv

    def line(c: Any) -> str:
        t = c.trust
        how = (f"isolated: {t.get('on_data')}/{t.get('tests')} tests on data, {t.get('on_repository_equality')} on "
               f"the repository's equality (FAIL_TO_PASS: {t.get('fail_to_pass_on_repository_equality')}/"
               f"{t.get('fail_to_pass')})" if t.get("isolation") == "isolated" else f"{t.get('isolation')}")
        return (f"{'ok  ' if c.ok else 'FAIL'} {c.instance_id} ({c.seconds:.1f} s; {how})"
                + "".join(f"\n     {p}" for p in c.problems))

    env = SWEBenchEnv(data_dir=data, backend=backend)  # type: ignore[arg-type]
    try:
        checks = validate_instances(env, split=split, progress=lambda c: console.print(line(c), markup=False),
                                    repeats=repeats)
    finally:
        env.close()
    bad = [c for c in checks if not c.ok]
    console.print(f"{len(checks) - len(bad)}/{len(checks)} instances valid on {backend}")
    if repeats > 1:
        flaky = [f"{c.instance_id} ({c.gold_passes}/{c.replicas})" for c in checks if c.gold_passes < c.replicas]
        console.print(f"gold graded {repeats} times each: {len(flaky)} instances did not pass every replica"
                      + (f": {', '.join(flaky)}" if flaky else ""), markup=False)
    if trust is not None:
        trust.write_text(json.dumps({c.instance_id: c.trust for c in checks}, indent=1) + "\n", encoding="utf-8")
        console.print(f"trust table: {trust}", markup=False)
    if bad:
        raise typer.Exit(1)


@swe_app.command("grade")
def swe_grade(predictions: Annotated[Path, typer.Option(help="SWE-bench predictions: instance_id, model_patch.")],
              data: DataOption = None, backend: BackendOption = "bwrap",
              report: Annotated[Optional[Path], typer.Option(help="Write the JSON report here.")] = None) -> None:
    """Grade a predictions file with the swebench harness's log parsing and report."""
    from agentgym.envs.swe.commands import grade_predictions, read_predictions
    from agentgym.envs.swe.env import SWEBenchEnv

    env = SWEBenchEnv(data_dir=data, backend=backend)  # type: ignore[arg-type]
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
              help="Worker threads that run env code [default: min(32, CPUs + 4); with --ray "
                   f"{RAY_WAITERS}: there they only wait on the hosts].")] = None,
          keep_alive_s: Annotated[float, typer.Option(
              help="Close a connection idle this long (new, or after a response).")] = 5.0,
          request_timeout_s: Annotated[float, typer.Option(
              help="A request must arrive whole (headers and body) this long after its first byte; "
                   "else 408 and the connection is closed.")] = 30.0,
          ws_idle_timeout_s: Annotated[Optional[float], typer.Option(
              help="Close a WebSocket (OpenEnv's /ws) that sent no frame this long; pings do not count "
                   "[default: --session-ttl-s, at least 300].")] = None,
          max_ws_per_client: Annotated[int, typer.Option(
              help="Open WebSockets one client (its host, or --client-token) may hold; more are refused with "
                   "429.")] = 256,
          max_sessions_per_client: Annotated[Optional[int], typer.Option(
              help="Open sessions one client (its host, or --client-token) may hold; more get 429 [default: "
                   "--max-sessions less "
                   "an eighth, kept for other clients (none kept below 16)].")] = None,
          forwarded_allow_ips: Annotated[Optional[str], typer.Option(
              help="Reverse proxies (comma-separated addresses or networks) whose X-Forwarded-For names the "
                   "client; from any other peer the header is ignored [default: none].")] = None,
          client_token: Annotated[Optional[list[str]], typer.Option(
              metavar="NAME=TOKEN", help="Issue client NAME a token of its own (repeatable): a request that carries "
                                         "it counts as NAME, from any address (a trainer beside an eval on one "
                                         "host), and is authorized as with --token. Otherwise a client is its "
                                         "host: every loopback address is one client.")] = None,
          ipv6_client_prefix: Annotated[int, typer.Option(
              help="IPv6 clients are grouped by this prefix length (one host's addresses).")] = 64,
          max_client_verifications: Annotated[int, typer.Option(
              help="POST /v1/verify calls one client (its host, or --client-token) may have in flight; more get "
                   "429.")] = 16,
          max_queued_verifications: Annotated[int, typer.Option(
              help="POST /v1/verify calls in flight in all; more get 503 with Retry-After.")] = 64,
          max_client_requests: Annotated[int, typer.Option(
              help="HTTP requests of one client (its host, or --client-token) the server works on at once, across "
                   "routes and connections (one waiting on an env thread, a verifier or its session does not "
                   "count); its others wait their turn.")] = 2,
          max_client_queued: Annotated[int, typer.Option(
              help="HTTP requests of one client that may wait their turn; more get 429.")] = 1024,
          max_requests_in_flight: Annotated[int, typer.Option(
              help="HTTP requests the server works on at once in all; then the next is the oldest waiting request "
                   "of the client with the fewest.")] = 64,
          processes: Annotated[int, typer.Option(
              help="Server processes behind the one address (Linux): the kernel spreads connections over them; "
                   "each holds the sessions it creates, on its own --workers threads, and requests for them are "
                   "passed on to it from the others. Limits, /healthz and /metrics are the whole server's. A "
                   "process that dies loses only its sessions (410 session_lost) and is replaced.")] = 1,
          ray: Annotated[Optional[str], typer.Option(
              metavar="ADDRESS", help="Host the sessions on Ray actors across a Ray cluster (extra `ray`): HOST:PORT "
                                      "(what `ray start --head` printed), auto, or local (start one here). Env "
                                      "hosts run on every node with CPUs; a host that dies loses only its sessions "
                                      "(410 session_lost) and is replaced. Same HTTP API.")] = None,
          node_env_limit: Annotated[Optional[list[str]], typer.Option(
              metavar="ENV_ID=N", help="With --ray: open sessions of one env per node at most (repeatable) "
                                       "[default: SWEBench and WebShopBrowser: half of each node's memory over what "
                                       "one session may fill; others: none].")] = None,
          ray_hosts_per_node: Annotated[Optional[int], typer.Option(
              help="With --ray: env host actors per node [default: the node's CPUs].")] = None,
          kwarg: KwargOption = None, imports: ImportOption = None) -> None:
    """Serve envs over HTTP (sessions, batch step, verify, metrics, AgentGym-compatible routes).

    Each -k goes to the served envs that take it (-k topk=5 to SearchQA-v0 only).
    """
    import os

    import uvicorn

    from agentgym.core.registry import env_ids as all_env_ids
    from agentgym.core.registry import env_info
    from agentgym.server import create_app
    from agentgym.server.clients import IPV6_PREFIX_ENV
    from agentgym.server.connections import engine, uvicorn_config
    from agentgym.server.processes import check_processes
    from agentgym.server.threads import DEFAULT_THREADS

    _import(imports)
    check_processes(processes)
    if not 0 <= ipv6_client_prefix <= 128:
        raise ConfigError(f"--ipv6-client-prefix must be a length from 0 to 128, got {ipv6_client_prefix}.")
    os.environ[IPV6_PREFIX_ENV] = str(ipv6_client_prefix)  # every server process reads it
    client_tokens = _parse_client_tokens(client_token or [])
    if ray is None and (node_env_limit or ray_hosts_per_node is not None):
        raise ConfigError("--node-env-limit and --ray-hosts-per-node set up a Ray pool: pass --ray ADDRESS too.")
    if ray is not None and processes > 1:
        raise ConfigError("--ray and --processes N > 1 do not go together: with --ray the env work runs on the "
                          "cluster's host actors; run one server process (or several servers, one per port).")
    if not token and not _is_loopback(host):
        raise ConfigError(f"Refusing to bind {host} without a token: pass --token or set AGENTGYM_TOKEN, "
                          "or bind 127.0.0.1.")
    workers = (RAY_WAITERS if ray is not None else DEFAULT_THREADS) if workers is None else workers
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}.")
    ids = sorted(env_ids or all_env_ids())
    for env_id in ids:
        env_info(env_id)  # an unknown id fails before the port is taken
    server_kwargs = _server_kwargs(ids, _parse_kwargs(kwarg or []))
    limits = _parse_env_limits(env_limit or [])
    node_limits = _parse_env_limits(node_env_limit or [], flag="--node-env-limit")
    sock = _bind(host, port)  # before announcing: a busy port is a one-line error, not a line after "serving"
    pool = None
    try:
        if ray is not None:
            from agentgym.cluster.pool import RayEnvPool
            from agentgym.server.capacity import env_limits as checked_limits

            pool = RayEnvPool(ray, hosts_per_node=ray_hosts_per_node, env_ids=ids,
                              node_env_limits=checked_limits(ids, node_limits, defaults=False))

        def make_app(process: Any = None) -> Any:
            return create_app(ids, ors_default=env_ids[0] if env_ids else None,
                              max_sessions=max_sessions, session_ttl_s=session_ttl_s, token=token,
                              env_threads=workers, server_kwargs=server_kwargs, env_limits=limits, process=process,
                              env_pool=pool, ws_idle_timeout_s=ws_idle_timeout_s, max_ws_per_client=max_ws_per_client,
                              max_sessions_per_client=max_sessions_per_client,
                              max_client_verifications=max_client_verifications,
                              max_queued_verifications=max_queued_verifications, prewarm_verifiers=True,
                              probe_envs=process is None or getattr(process, "index", 0) == 0,
                              client_tokens=client_tokens, max_client_requests=max_client_requests,
                              max_client_queued=max_client_queued, max_requests_in_flight=max_requests_in_flight)

        def make_config(app: Any) -> uvicorn.Config:
            return uvicorn_config(app, keep_alive_s=keep_alive_s, request_timeout_s=request_timeout_s,
                                  forwarded_allow_ips=forwarded_allow_ips, log_level="warning", access_log=False)

        config = make_config(make_app())  # with --processes too: bad settings fail here, before any process starts
        bound = sock.getsockname()[1]
        console.print(f"agentgym serving {', '.join(ids)} on http://{host}:{bound} "
                      f"(docs: /docs, AgentGym-compatible routes: /<env id>/...; {engine()}"
                      f"{f'; {processes} processes' if processes > 1 else ''}{_pool_summary(pool)})",
                      highlight=False, soft_wrap=True)
        if processes > 1:
            _serve_processes(sock, processes, ids, make_app, make_config, keep_alive_s)
            return
        server = uvicorn.Server(config)
        with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl-C it shut down on
            server.run(sockets=[sock])
    finally:
        sock.close()
        if pool is not None:  # the app shuts it down when it ran; not when startup failed before that
            pool.shutdown()


def _pool_summary(pool: Any) -> str:
    if pool is None:
        return ""
    nodes = pool.describe()["nodes"]
    hosts = sum(len(n["hosts"]) for n in nodes)
    return (f"; sessions on Ray at {pool.address}: {len(nodes)} node{'s' if len(nodes) != 1 else ''}, "
            f"{hosts} env host{'s' if hosts != 1 else ''}")


def _serve_processes(sock: socket.socket, processes: int, ids: list[str], make_app: Callable[[Any], Any],
                     make_config: Callable[[Any], Any], keep_alive_s: float) -> None:
    """``agentgym serve --processes N``: ``make_app(slot)`` in N processes, each behind session affinity."""
    import uvicorn

    from agentgym.server.affinity import Affinity
    from agentgym.server.processes import reuse_port_socket, serve_processes

    family, address = sock.family, sock.getsockname()
    sock.close()  # the port is free (_bind checked it without SO_REUSEPORT); now held as each process binds it
    held = reuse_port_socket(family, address)

    def serve_one(slot: Any, sockets: list[socket.socket]) -> None:
        app = Affinity(make_app(slot), slot, keep_alive_s=keep_alive_s)
        uvicorn.Server(make_config(app)).run(sockets=sockets)

    try:
        serve_processes(processes, held=held, env_ids=ids, serve_one=serve_one,
                        say=lambda message: errors.print(message, style="yellow", markup=False, highlight=False))
    finally:
        held.close()


def _parse_client_tokens(items: list[str]) -> dict[str, str]:
    """``--client-token NAME=TOKEN`` values as ``{name: token}`` (the checks: ``agentgym.server.clients``)."""
    tokens: dict[str, str] = {}
    for item in items:
        name, sep, token = item.partition("=")
        if not sep or not name or not token:
            raise ConfigError(f"--client-token {item!r}: write NAME=TOKEN (e.g. --client-token trainer=$(openssl "
                              "rand -hex 16)).")
        if name in tokens:
            raise ConfigError(f"--client-token: {name} is given twice.")
        tokens[name] = token
    return tokens


def _parse_env_limits(pairs: list[str], flag: str = "--env-limit") -> dict[str, int]:
    """``ENV_ID=N`` pairs of ``--env-limit`` (or ``flag``)."""
    limits: dict[str, int] = {}
    for pair in pairs:
        env_id, sep, value = pair.partition("=")
        if not sep or not value.strip().isdigit():
            raise ConfigError(f"{flag} takes ENV_ID=N with N a whole number, got {pair!r} "
                              f"(e.g. {flag} agentgym/SWEBench-v0=16).")
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


@app.command("mcp")
def mcp_cmd(env_ids: Annotated[list[str], typer.Argument(metavar="ENV_ID", help="Env ids to serve (one or more).")],
            host: Annotated[str, typer.Option(help="Bind address; anything but loopback needs --token.")]
            = "127.0.0.1",
            port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
            max_sessions: Annotated[int, typer.Option(help="Open MCP sessions at most, all env ids together; "
                                                           "more are refused at initialize.")] = 64,
            session_ttl_s: Annotated[float, typer.Option(help="End MCP sessions idle this long (no request in "
                                                              "flight, no open stream) and close their envs.")]
            = 600.0,
            token: Annotated[Optional[str], typer.Option(envvar="AGENTGYM_TOKEN",
                                                         help="Bearer token clients must send.")] = None,
            workers: Annotated[Optional[int], typer.Option(
                help="Worker threads that run env code [default: min(32, CPUs + 4)].")] = None,
            kwarg: KwargOption = None, imports: ImportOption = None) -> None:
    """Serve envs as MCP servers (streamable HTTP): one env per MCP session; tools reset, the env's, answer.

    Each env id's endpoint is http://HOST:PORT/mcp/<env id>. Each -k goes to the served envs that take it.
    """
    from agentgym.core.registry import env_info
    from agentgym.integrations.mcp import create_mcp_app, mcp_path

    _import(imports)
    if not token and not _is_loopback(host):
        raise ConfigError(f"Refusing to bind {host} without a token: pass --token or set AGENTGYM_TOKEN, "
                          "or bind 127.0.0.1.")
    ids = sorted(set(env_ids))
    for env_id in ids:
        env_info(env_id)  # an unknown id fails before the port is taken
    application = create_mcp_app(ids, max_sessions=max_sessions, session_ttl_s=session_ttl_s, token=token,
                                 workers=workers, host=host,
                                 server_kwargs=_server_kwargs(ids, _parse_kwargs(kwarg or [])))
    import uvicorn  # a dependency of mcp: past create_mcp_app, which says how to install it when missing

    sock = _bind(host, port)
    try:
        bound = sock.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        urls = ", ".join(f"http://{shown}:{bound}{mcp_path(env_id)}" for env_id in ids)
        console.print(f"agentgym MCP server (streamable HTTP) on {urls}", highlight=False, soft_wrap=True)
        server = uvicorn.Server(uvicorn.Config(application, log_level="warning", access_log=False))
        with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl-C it shut down on
            server.run(sockets=[sock])
    finally:
        sock.close()


@app.command()
@train_command
def train(cfg: TrainConfig) -> None:
    """Train a model on agentgym envs with multi-turn GRPO (observation tokens masked out of the loss).

    Every option is a TrainConfig field, set in a YAML file (--config) or by its flag; flags win.
    """
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from agentgym.trainer.grpo import train as run_training

    _import(cfg.imports)
    final = run_training(cfg, console=console)  # it checks the env ids and kwargs, then prints what it trains
    console.print(f"final model: {final}  (evaluate: agentgym eval --policy hf:{final}; curves: agentgym plot "
                  f"{cfg.output_dir})", highlight=False)


export_app = typer.Typer(help="Write an env's tasks in another framework's task format.", **HELP_STYLE)
app.add_typer(export_app, name="export")


@export_app.command("harbor")
def export_harbor_cmd(
    env: Annotated[str, typer.Option("--env", metavar="ENV_ID",
                                     help="agentgym/SWEBench-v0 or agentgym/PyCode-v0 (or an env of their kind).")],
    out: Annotated[Path, typer.Option(help="Directory that gets one Harbor task directory per task.")],
    split: Annotated[Optional[str], typer.Option(help="Task split [default: the env's own].")] = None,
    tasks: Annotated[Optional[int], typer.Option(help="The first N tasks of the split [default: all].")] = None,
    task_id: Annotated[Optional[list[str]], typer.Option(
        "--task-id", help="Export this task (repeatable; any split) instead of a split's first N.")] = None,
    base_image: Annotated[str, typer.Option(
        help="The Docker image the tasks build from (a SWE-bench instance without a bundled repository starts "
             "from its own instance image).")] = "agentgym-base:bookworm",
    kwarg: KwargOption = None,
    overwrite: Annotated[bool, typer.Option(help="Replace task directories that exist.")] = False,
) -> None:
    """Harbor task directories (instruction.md, task.toml, environment/, tests/, solution/): run them with Harbor's
    own tooling, e.g. ``harbor trial start -p DIR/TASK -a oracle``."""
    from agentgym.integrations.harbor import export_harbor

    written = export_harbor(env, out, split=split, limit=tasks, task_ids=task_id or (), base_image=base_image,
                            env_kwargs=_parse_kwargs(kwarg or []), overwrite=overwrite)
    console.print(f"{len(written)} Harbor task{'s' if len(written) != 1 else ''} from {env} in {out}", highlight=False)


data_app = typer.Typer(help="Turn eval results into training datasets.", **HELP_STYLE)
app.add_typer(data_app, name="data")


@data_app.command("sft")
def data_sft(
    results: Annotated[list[Path], typer.Argument(metavar="RESULTS...", help="agentgym eval results files (.jsonl).")],
    out: Annotated[Path, typer.Option("--out", help="The dataset directory (new, empty, or an earlier output of "
                                                    "this command, which is replaced).")],
    keep_all: Annotated[bool, typer.Option("--all", help="Keep unsuccessful episodes too (errored ones never).")]
    = False,
    env: Annotated[Optional[list[str]], typer.Option("--env", metavar="ENV_ID",
                                                     help="Keep this env's episodes only (repeatable).")] = None,
    min_reward: Annotated[Optional[float], typer.Option(help="Keep episodes with at least this reward.")] = None,
    dedupe: Annotated[bool, typer.Option("--dedupe", help="One episode per env and task: the best reward, the first "
                                                          "of equals.")] = False,
    tokenizer: Annotated[str, typer.Option(help="Whose tokens the 'tokens' config holds: a model name as "
                                                "`agentgym train --model` takes it, or 'none' for chat rows only.")]
    = "smollm2",
    observation_style: Annotated[str, typer.Option(help="The 'tokens' config's observation style, chat or append "
                                                        "(as `agentgym train --observation-style`).")] = "chat",
    imports: ImportOption = None,
) -> None:
    """Write the episodes of eval results files as a dataset directory that datasets.load_dataset(DIR) reads: chat
    rows (messages, tool schemas, env, task, reward), and in config 'tokens' the trainer's input_ids and loss mask.
    Successful episodes only, unless --all; feed it more with `agentgym eval --samples N --temperature T`."""
    from agentgym.errors import DataError
    from agentgym.eval.sft_data import build_sft_dataset

    _import(imports)
    if observation_style not in ("chat", "append"):
        raise ConfigError(f"--observation-style must be chat or append, got {observation_style!r}.")
    try:
        selection, written = build_sft_dataset(
            results, out, keep_all=keep_all, envs=env or (), min_reward=min_reward, dedupe=dedupe,
            tokenizer=None if tokenizer == "none" else tokenizer, observation_style=observation_style)
    except (DataError, ConfigError) as e:  # bad input: one line, exit 1
        errors.print(f"error: {e}", style="red", markup=False, highlight=False)
        raise typer.Exit(1) from None
    tokens = "" if tokenizer == "none" else ", the trainer's tokens: config 'tokens'"
    console.print(f"{selection.summary()} -> {written} (datasets.load_dataset('{written}'){tokens})",
                  highlight=False, soft_wrap=True)


def _sft(cfg: Any) -> None:
    """Fine-tune a model on an `agentgym data sft` dataset (TRL's SFTTrainer): the loss covers the model's own
    tokens only, masked exactly as `agentgym train` masks an episode (never the prompt, an observation or the glue).

    Every option is an SFTConfig field, set in a YAML file (--config) or by its flag; flags win.
    """
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from agentgym.trainer.sft import sft as run_sft

    final = run_sft(cfg, console=console)
    console.print(f"final model: {final}  (evaluate: agentgym eval --policy hf:{final}; GRPO from it: agentgym train "
                  f"--model {final}; curves: agentgym plot {cfg.output_dir})", highlight=False)


def _sft_command() -> Callable[..., None]:
    from agentgym.trainer.sft_config import SFTConfig

    command = train_command(_sft, SFTConfig)
    command.__name__ = command.__qualname__ = "sft"
    return command


app.command("sft")(_sft_command())


@app.command()
def probe(env_ids: Annotated[list[str], typer.Argument(metavar="ENV_ID...", help="Env ids to probe.")],
          episodes: Annotated[int, typer.Option(help="Tasks each probe plays (the split's first N).")] = 20,
          split: Annotated[Optional[str], typer.Option(help="The split [default: the env's own].")] = None,
          probe_specs: Annotated[Optional[list[str]], typer.Option(
              "--probe", metavar="FILE:FUNCTION", help="A probe of yours beside the battery (repeatable): "
                                                       "FUNCTION(view) gives each turn's action.")] = None,
          only: Annotated[Optional[list[str]], typer.Option(help="Run only this probe (repeatable).")] = None,
          family: Annotated[Optional[str], typer.Option(
              help="The env's probe family where it does not say: code (the answer is a program), shop, household "
                   "or swe.")] = None,
          json_out: Annotated[Optional[Path], typer.Option("--json", help="Write the report as JSON here.")] = None,
          submit: Annotated[bool, typer.Option(
              "--submit", help="Write each env's report to --leaderboard-dir/probes/, where `agentgym leaderboard "
                               "build` shows its exploit rate.")] = False,
          leaderboard_dir: Annotated[Path, typer.Option(help="Where --submit writes.")] = Path("leaderboard"),
          seed: Annotated[int, typer.Option(help="The first episode's seed.")] = 0,
          kwarg: KwargOption = None, imports: ImportOption = None) -> None:
    """How hackable is an env: a battery of policies that want the reward without the work (the prompt, tools
    and observations only, never the gold) plays its tasks; prints each probe's exploit rate, mean reward and
    verdict, and the best exploiting episode. Exit 1 when any probe reached the success threshold."""
    from agentgym.probe import entry_point_probes, load_probe, probe_env, render, write_json
    from agentgym.probe import submit as submit_report

    _import(imports)
    if episodes < 1:
        raise ConfigError(f"--episodes must be >= 1, got {episodes}.")
    extra = [load_probe(spec) for spec in probe_specs or []] + entry_point_probes()
    env_kwargs = _parse_kwargs(kwarg or [])
    reports = []
    for env_id in env_ids:
        report = probe_env(env_id, episodes=episodes, seed=seed, split=split, env_kwargs=env_kwargs, extra=extra,
                           only=only, family=family)
        console.print(render(report), highlight=False, markup=False, soft_wrap=True)
        if submit:
            console.print(f"wrote {submit_report(report, leaderboard_dir)}", highlight=False, markup=False)
        reports.append(report)
    if json_out is not None:
        write_json(reports, str(json_out))
    if any(report.exploited_tasks for report in reports):
        raise typer.Exit(1)


@app.command()
def compare(run_a: Annotated[Path, typer.Argument(metavar="A.jsonl", help="The baseline run's results.")],
            run_b: Annotated[Path, typer.Argument(metavar="B.jsonl", help="The run compared with it.")],
            metric: Annotated[str, typer.Option(help="success (correct) or reward.")] = "success",
            level: Annotated[float, typer.Option(help="Significance level (and 1 - the interval's coverage).")] = 0.05,
            resamples: Annotated[int, typer.Option(help="Bootstrap and sign-flip resamples.")] = 10_000,
            seed: Annotated[int, typer.Option(help="The resampling's seed.")] = 0,
            json_out: Annotated[Optional[Path], typer.Option(
                "--json", help="Write difference, interval, p_value, significant, ... as JSON here.")] = None) -> None:
    """Is run B better than run A? Pairs their episodes by task, prints B - A with a paired bootstrap interval
    over tasks and whether it is significant (a sign-flip test over tasks). Exit 0 either way."""
    from agentgym.eval.compare import compare_runs, render
    from agentgym.eval.results import load_results

    for path in (run_a, run_b):
        if not path.is_file():
            raise ConfigError(f"{path}: no such results file (agentgym eval --results FILE writes one).")
    result = compare_runs(load_results(run_a), load_results(run_b), metric=metric, level=level,
                          resamples=resamples, seed=seed)
    console.print(render(result, str(run_a), str(run_b)), highlight=False, markup=False, soft_wrap=True)
    if json_out is not None:
        json_out.write_text(json.dumps({"a": str(run_a), "b": str(run_b), **result}, indent=2) + "\n")


@app.command()
def difficulty(env_id: Annotated[str, typer.Argument(metavar="ENV_ID", help="The env whose tasks are measured.")],
               tasks: Annotated[int, typer.Option(help="The first N tasks of the split.")] = 20,
               split: Annotated[Optional[str], typer.Option(
                   help="The split measured [default: the env's evaluation split]; train --difficulty reads a card "
                        "of its training split.")] = None,
               kwarg: KwargOption = None,
               samples: Annotated[int, typer.Option(help="Plays of each task by each policy but the oracle.")] = 4,
               policy: Annotated[Optional[list[str]], typer.Option(
                   help="A reference policy (repeatable) [default: oracle, random, smollm2]; the last model "
                        "policy named sets each task's level.")] = None,
               temperature: Annotated[float, typer.Option(help="A model policy's sampling temperature.")] = 1.0,
               seed: Annotated[int, typer.Option(help="The first play's seed; each play has its own.")] = 0,
               out: Annotated[Path, typer.Option(help="Where the card (ENV.json) and its histogram (ENV.png) go.")]
               = Path("difficulty"),
               show: Annotated[bool, typer.Option(
                   "--show", help="Print the env's card from --out (or the bundled one) instead of measuring.")]
               = False) -> None:
    """Measure how hard each task of an env is: the pass rate of reference policies (the oracle, a random policy,
    the default model with K samples) per task, each task's level (easy, medium, hard) by the model's, written as a
    card (JSON and a histogram PNG)."""
    from agentgym.core.registry import env_info
    from agentgym.eval.difficulty import BUNDLED, DEFAULT_POLICIES, Card, card_path, measure, render

    if show:
        for where in (out, BUNDLED):
            path = card_path(where, env_id)
            if path.is_file():
                console.print(render(Card.from_json(json.loads(path.read_text()))), highlight=False, markup=False)
                console.print(f"({path})")
                return
        raise ConfigError(f"No card of {env_id} in {out} or the bundled ones: make one with agentgym difficulty "
                          f"{env_id}.")
    env_info(env_id)  # an unknown id: did-you-mean, before anything is played

    def progress(name: str, done: int, of: int) -> None:
        console.print(f"{name}: {done}/{of} plays of every task")

    card = measure(env_id, tasks=tasks, samples=samples, policies=tuple(policy or ()) or DEFAULT_POLICIES,
                   temperature=temperature, seed=seed, env_kwargs=_parse_kwargs(kwarg or []), split=split,
                   on_play=progress)
    path, png = card.write(out)
    console.print(render(card), highlight=False, markup=False)
    console.print(f"wrote {path} and {png}")


@app.command()
def plot(run_dirs: Annotated[list[Path], typer.Argument(
             help="Training run directories holding metrics.jsonl.", metavar="RUN_DIR...")],
         out: Annotated[Optional[Path], typer.Option(
             help="Where several runs' figure goes [default: FIRST_RUN_DIR/plots/compare.png].")] = None) -> None:
    """Draw a training run's curves (reward, success, entropy, KL, ...) as PNGs in RUN_DIR/plots/; several runs go
    on one figure (reward, success, tool-call rate, masked-token share; a line per run)."""
    from agentgym.trainer.plot import plot_run, plot_runs

    if len(run_dirs) > 1:
        console.print(f"wrote {plot_runs(run_dirs, out)} ({len(run_dirs)} runs)")
        return
    if out is not None:
        raise ConfigError("--out is for several runs; one run's plots go to RUN_DIR/plots/.")
    written = plot_run(run_dirs[0])
    console.print(f"wrote {len(written)} plots to {written[0].parent} (overview: {written[0].name})")


@app.command()
def view(results: Annotated[list[Path], typer.Argument(
             help="Eval results files (.jsonl), a trainer's samples.jsonl, or directories holding them.",
             metavar="RESULTS...")],
         out: Annotated[Path, typer.Option(help="Where the page goes.")] = Path("episodes.html"),
         open_page: Annotated[bool, typer.Option("--open", help="Open the page in a browser.")] = False,
         tokenizer: Annotated[str, typer.Option(
             help="Show recorded token ids (an agent's samples, a trainer's completion ids) as text with this model's "
                  "tokenizer (smollm2, hf:<path>); auto: each record's own model where it loads here; none: as "
                  "numbers.")] = "auto") -> None:
    """Write one self-contained HTML page of the episodes (turns, tool calls, observations, the verifier's
    details), filterable by env, outcome, reward and error; it needs no network."""
    from agentgym.eval.viewer import build_viewer

    path, count = build_viewer(results, out, tokenizer=tokenizer)
    console.print(f"wrote {path} ({count} episodes)", highlight=False, soft_wrap=True)
    if open_page:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())


@app.command()
def doctor(strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when anything is missing.")] = False,
           imports: ImportOption = None) -> None:
    """Which envs, policies and sandbox backends work in this install, with the command that fixes each one
    that does not; your own envs (--import, packages) are made and reset once."""
    from agentgym.doctor import diagnose, format_report

    _import(imports)
    checks = diagnose()
    for line in format_report(checks):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if strict and not all(c.ok for c in checks):
        raise typer.Exit(1)


def _rescore(path: Path, request: Any) -> None:
    """``eval --rescore``: the stored episodes scored again; a line of what changed."""
    from agentgym.eval.rescore import rescore

    selection = request.selection()
    entries = {e.label: (e.env_id, {**e.env_kwargs, **dict(request.env_kwargs or {})}) for e in selection.entries}
    report = rescore(path, entries)

    def pair(old: float | None, new: float | None) -> str:
        return "-" if old is None or new is None else f"{old:.3f} -> {new:.3f}"

    console.print(f"{report.rescored} episodes re-scored, {report.changed} changed (mean reward "
                  f"{pair(report.old_mean, report.new_mean)}, success {pair(report.old_success, report.new_success)})"
                  f"; {report.copied} copied unchanged"
                  + (f"; {report.completed} the judge had failed now scored" if report.completed else "")
                  + f" -> {report.path}", highlight=False)
    for env_id, why in sorted(report.unsupported.items()):
        errors.print(f"{env_id}: not re-scored: {why}.", style="yellow", markup=False, highlight=False)


def main() -> None:
    """Console entry point: agentgym errors print as one clear line and exit 2."""
    try:
        app()
    except AgentGymError as e:
        errors.print(f"error: {e}", style="red", markup=False, highlight=False)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
