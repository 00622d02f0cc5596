"""``agentgym eval --agent``: the harness plays every built-in env with a scripted agent to reward 1.0, records
rollouts token-exactly, resumes, and turns each kind of agent failure into one episode's error."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.gates import env_params, requires_code, requires_search, requires_server, requires_smollm2
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.errors import ConfigError
from agentgym.eval.agent import AgentPolicy, AgentSpec
from agentgym.eval.plan import plan_episodes
from agentgym.eval.runner import run_plan
from agentgym.eval.suites import SuiteEntry

pytestmark = [requires_smollm2, requires_server]
HELPERS = Path(__file__).resolve().parents[1] / "helpers" / "oracle_agent.py"
BUILT_IN = ["agentgym/SearchQA-v0", "agentgym/MathTool-v0", "agentgym/PyCode-v0", "agentgym/WebShop-v0",
            "agentgym/WebShopBrowser-v0", "agentgym/SWEBench-v0", "agentgym/ALFWorld-v0"]


def _play(gateway, function: str, env_id: str, *, episodes: int = 1, timeout_s: float = 120.0,
          require_model: bool = False, results=None, env_kwargs=None, concurrency: int = 2):
    built, server = gateway
    spec = AgentSpec(target=f"{HELPERS}:{function}")
    policy = AgentPolicy(spec, built, base_url=server.url, timeout_s=timeout_s, require_model=require_model,
                         concurrency=concurrency)
    policy.close = lambda: None  # the module's gateway outlives each run
    plan = plan_episodes([SuiteEntry(env_id, episodes=episodes, env_kwargs=env_kwargs or {})], seed=0)
    return run_plan(plan, lambda: policy, results_path=results)


@pytest.mark.parametrize("env_id", env_params(BUILT_IN))
def test_the_scripted_oracle_agent_scores_1_on_every_built_in_env(gateway, env_id):
    """Every tool call goes through call_tool and the answer through the return value: a harness bug (a lost
    step, a wrong prompt, an answer not scored) would cost reward here."""
    results = _play(gateway, "oracle", env_id, episodes=2)
    assert [r.error for r in results] == [None, None]
    assert [r.reward for r in results] == [1.0, 1.0]
    assert all(r.verification.get("correct") for r in results)
    assert all(r.agent["kind"] == "function" and r.agent["rollout"]["calls"] == 0 for r in results)
    assert all(r.transcript[0]["role"] == "user" for r in results)


@requires_search
@pytest.mark.parametrize(("function", "expected"), [
    ("raises", "AgentError: ValueError: the agent's own bug (oracle_agent.py:"),
    ("returns_a_dict", "AgentError: the agent returned a dict"),
    ("bad_request", "AgentError: BadRequestError:"),
    ("wrong_rollout", "AgentError: NotFoundError:"),
])
def test_an_agents_failure_is_its_episodes_error_and_the_run_goes_on(gateway, function, expected):
    results = _play(gateway, function, "agentgym/SearchQA-v0", episodes=2)
    assert len(results) == 2
    assert all(r.error is not None and r.error.startswith(expected) for r in results), [r.error for r in results]
    assert all(r.reward == 0.0 for r in results)


@requires_search
def test_a_bad_request_says_what_was_wrong(gateway):
    results = _play(gateway, "bad_request", "agentgym/SearchQA-v0")
    assert "messages[0].role must be one of" in results[0].error
    results = _play(gateway, "wrong_rollout", "agentgym/SearchQA-v0")
    assert "No rollout 'no-such-rollout'" in results[0].error


@requires_search
def test_a_hanging_agent_is_stopped_at_its_limit_and_its_late_call_changes_nothing(gateway):
    results = _play(gateway, "hangs", "agentgym/SearchQA-v0", timeout_s=1.0)
    assert results[0].error.startswith("AgentTimeout: the agent ran past its 1 s limit")
    assert results[0].tool_calls == 0


@requires_search
def test_an_agent_that_never_calls_the_model_is_an_error_unless_allowed(gateway):
    results = _play(gateway, "oracle", "agentgym/SearchQA-v0", require_model=True)
    assert results[0].error.startswith("AgentError: the agent never called the model")
    assert results[0].reward == 0.0


@requires_search
def test_samples_of_an_agent_run_are_separate_episodes_of_each_task(gateway):
    built, server = gateway
    policy = AgentPolicy(AgentSpec(target=f"{HELPERS}:oracle"), built, base_url=server.url, require_model=False)
    policy.close = lambda: None
    plan = plan_episodes([SuiteEntry("agentgym/SearchQA-v0", episodes=2)], seed=0, samples=2)
    results = run_plan(plan, lambda: policy)
    assert sorted((r.episode, r.sample) for r in results) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert len({r.key for r in results}) == 4 and all(r.reward == 1.0 for r in results)
    assert len({r.agent["rollout_id"] for r in results}) == 4  # each its own rollout


@requires_search
def test_the_first_agent_starts_alone_until_its_first_model_request(gateway, tmp_path, monkeypatch):
    """What a framework imports on first use is imported by one thread: the other episodes start once the first
    agent's first request reached the gateway (16 agents importing an HTTP client at once raised AttributeError)."""
    events = tmp_path / "events"
    monkeypatch.setenv("AGENTGYM_TEST_EVENTS", str(events))
    results = _play(gateway, "slow_start", "agentgym/SearchQA-v0", episodes=4, concurrency=4)
    assert [r.error for r in results] == [None] * 4
    starts = sorted(float(line) for line in events.read_text().split())
    assert len(starts) == 4 and starts[1] - starts[0] >= 0.5, starts


# the example with 16-token turns instead of 256: what is checked (the samples, the resume) does not depend on what
# the model writes, and on a CPU a turn costs in proportion to its tokens
BOUNDED_LOOP = """
    from agentgym.eval.agent import load_agent

    _agent = load_agent("{example}:agent")

    def agent(task):
        return _agent(task, max_tokens=16)
"""


@requires_code
def test_the_openai_loop_records_token_exact_samples_and_resumes(gateway, tmp_path):
    """The example agent (a plain openai client, its turns bounded) on MathTool: each episode's samples hold the ids
    the model sampled with loss mask 1 and their logprobs; a rerun resumes without playing anything."""
    built, server = gateway
    agent = tmp_path / "openai_loop_bounded.py"
    agent.write_text(textwrap.dedent(BOUNDED_LOOP.format(
        example=Path(__file__).resolve().parents[2] / "examples/agents/openai_loop.py")))
    spec = AgentSpec(target=f"{agent}:agent")
    policy = AgentPolicy(spec, built, base_url=server.url, timeout_s=300, concurrency=2)
    policy.close = lambda: None
    plan = plan_episodes([SuiteEntry("agentgym/MathTool-v0", episodes=2)], seed=0)
    path = tmp_path / "run.jsonl"
    results = run_plan(plan, lambda: policy, results_path=path, fingerprint="f1")
    assert [r.error for r in results] == [None, None]
    for r in results:
        assert r.samples, "no samples recorded"
        for sample in r.samples:
            n = len(sample["token_ids"])
            assert len(sample["loss_mask"]) == n == len(sample["logprobs"])
            assert all((lp is None) == (m == 0) for lp, m in zip(sample["logprobs"], sample["loss_mask"]))
            assert sum(sample["loss_mask"]) > 0
        assert r.completion_tokens == r.agent["rollout"]["sampled_tokens"] > 0
    seen = []
    again = run_plan(plan, lambda: policy, results_path=path, fingerprint="f1", on_episode=seen.append)
    assert seen == [] and [r.key for r in again] == [r.key for r in results]


@requires_search
def test_eval_agent_through_the_cli_and_the_agent_command(tmp_path, monkeypatch):
    """What a user types: --agent with a file, then --agent-cmd with a program; both write results and a
    summary; an agent file that does not import fails before anything runs, with the line."""
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    agent = tmp_path / "my_agent.py"
    agent.write_text(HELPERS.read_text())
    command = ["eval", "--env", "agentgym/SearchQA-v0", "--episodes", "2", "--agent", f"{agent}:oracle",
               "--allow-no-model", "--results", "a.jsonl"]
    done = runner.invoke(app, command)
    assert done.exit_code == 0, done.output
    rows = [json.loads(line) for line in Path("a.jsonl").read_text().splitlines()]
    assert [r["reward"] for r in rows] == [1.0, 1.0] and rows[0]["policy"] == f"agent:{agent}:oracle"
    done = runner.invoke(app, command)  # the same agent: everything is stored, nothing is played
    assert done.exit_code == 0 and len(Path("a.jsonl").read_text().splitlines()) == 2
    agent.write_text(HELPERS.read_text() + "\n# a changed agent is another agent\n")
    done = runner.invoke(app, command)
    assert done.exit_code == 0 and "played by another version of the agent" in " ".join(done.output.split())
    assert len(Path("a.jsonl").read_text().splitlines()) == 4
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent("""
        import json, os, sys, urllib.request
        prompt = sys.stdin.read()
        body = json.dumps({"model": os.environ["AGENTGYM_MODEL"], "max_tokens": 4,
                           "messages": [{"role": "user", "content": prompt}]}).encode()
        request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
                                         {"Content-Type": "application/json"})
        urllib.request.urlopen(request).read()
        tools = json.loads(os.environ["AGENTGYM_TOOLS"])
        assert [t["function"]["name"] for t in tools] == ["search"], tools
        call = json.dumps({"name": "search", "arguments": {"query": "capital"}}).encode()
        out = json.loads(urllib.request.urlopen(urllib.request.Request(
            os.environ["AGENTGYM_TOOLS_URL"] + "/call", call, {"Content-Type": "application/json"})).read())
        assert out["is_error"] is False and out["ended"] is False
        print("no idea")
    """))
    done = runner.invoke(app, ["eval", "--env", "agentgym/SearchQA-v0", "--episodes", "2", "--agent-cmd",
                               f"{sys.executable} {program}", "--results", "b.jsonl"])
    assert done.exit_code == 0, done.output
    rows = [json.loads(line) for line in Path("b.jsonl").read_text().splitlines()]
    assert [r["error"] for r in rows] == [None, None]
    assert all(r["tool_calls"] == 1 and r["agent"]["rollout"]["calls"] == 1 and r["samples"] for r in rows)
    # the agent run's records work where any run's do: the viewer, the SFT dataset (its recorded ids), the board
    done = runner.invoke(app, ["view", "b.jsonl", "--out", "v.html"])
    assert done.exit_code == 0 and "2 episodes" in done.output
    done = runner.invoke(app, ["data", "sft", "b.jsonl", "--out", "ds", "--all"])
    assert done.exit_code == 0, done.output
    import datasets

    tokens = datasets.load_dataset("ds", "tokens", split="train")
    assert sorted(map(list, tokens["input_ids"])) == sorted(s["token_ids"] for r in rows for s in r["samples"])
    assert sorted(map(list, tokens["loss_mask"])) == sorted(s["loss_mask"] for r in rows for s in r["samples"])
    done = runner.invoke(app, ["eval", "--env", "agentgym/SearchQA-v0", "--episodes", "2", "--agent-cmd",
                               f"{sys.executable} {program}", "--results", "b.jsonl", "--submit",
                               "--leaderboard-dir", "lb"])
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["leaderboard", "build", "--dir", "lb"])
    assert done.exit_code == 0 and "agent-cmd" in Path("lb/README.md").read_text()
    (tmp_path / "broken.py").write_text("def agent(task):\n    return undefined_name\nimport not_a_module\n")
    done = runner.invoke(app, ["eval", "--env", "agentgym/SearchQA-v0", "--episodes", "1", "--agent",
                               f"{tmp_path / 'broken.py'}:agent"])
    assert isinstance(done.exception, ConfigError)  # main() prints it as one line and exits 2
    assert "ModuleNotFoundError: No module named 'not_a_module' (broken.py:3)" in str(done.exception)
    assert not Path("results").exists()  # nothing ran, nothing written


@requires_search
def test_agent_samples_are_drawn_at_the_commands_settings_and_recorded(tmp_path, monkeypatch):
    """eval --agent --samples 3 --temperature 1 with an agent that asks for greedy seeded turns: the gateway samples
    every call at the command's settings, so the samples differ; each record says what was sampled and what the
    model computed in; --concurrency 1 plays one episode at a time. With --agent-chooses-sampling the agent's
    temperature 0 holds, the samples coincide, and the summary says so."""
    monkeypatch.chdir(tmp_path)
    events = tmp_path / "events"
    monkeypatch.setenv("AGENTGYM_TEST_EVENTS", str(events))
    runner = CliRunner()
    base = ["eval", "--env", "agentgym/SearchQA-v0", "--episodes", "1", "--agent", f"{HELPERS}:asks_greedy",
            "--threads", "1"]
    done = runner.invoke(app, [*base, "--samples", "3", "--temperature", "1", "--concurrency", "1",
                               "--results", "a.jsonl"])
    assert done.exit_code == 0, done.output
    assert "Agent sampling: every call at temperature 1.0, top_p 1.0, max_tokens as each call asks" in " ".join(
        done.output.split())
    rows = [json.loads(line) for line in Path("a.jsonl").read_text().splitlines()]
    assert [r["error"] for r in rows] == [None] * 3
    for r in rows:
        assert {k: r["sampling"][k] for k in ("by", "temperature", "top_p", "max_tokens", "seed")} == {
            "by": "command", "temperature": 1.0, "top_p": 1.0, "max_tokens": 24, "seed": None}
        assert r["compute"]["dtype"] in ("float32", "bfloat16") and r["compute"]["kernel"]
    sampled = [tuple(r["samples"][0]["token_ids"]) for r in rows]
    assert len(set(sampled)) > 1, "3 samples at temperature 1 were identical: the agent's temperature 0 was used"
    spans = sorted(tuple(map(float, line.split())) for line in events.read_text().splitlines())
    assert len(spans) == 3 and all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans  # one at a time
    done = runner.invoke(app, [*base, "--samples", "2", "--temperature", "1", "--agent-chooses-sampling",
                               "--results", "b.jsonl"])
    assert done.exit_code == 0, done.output
    out = " ".join(done.output.split())
    assert "Agent sampling: as each call asks" in out and "every call was greedy (temperature 0)" in out
    rows = [json.loads(line) for line in Path("b.jsonl").read_text().splitlines()]
    assert [(r["sampling"]["by"], r["sampling"]["temperature"]) for r in rows] == [("agent", 0.0)] * 2
    assert rows[0]["samples"][0]["token_ids"] == rows[1]["samples"][0]["token_ids"]


def _answers_and_swallows_the_error(task):
    try:
        task.call_tool("answer", {"answer": "Lima"})
    except Exception:  # noqa: BLE001 - what a careless agent does
        pass


def test_a_judge_failure_is_the_episodes_error_even_when_the_agent_catches_it(gateway):
    """An agent that ends the episode through call_tool('answer') and catches the JudgeError its call raised: the
    episode is an error (eval's record, a failed rollout left out of training's baseline), never a reward 0."""
    from helpers.judge_server import judge

    import agentgym
    from agentgym.gateway.agents import run_agent
    from agentgym.lm.rollout import TaskSpec
    from agentgym.rubric import Part, Rubric
    from agentgym.trainer.agent import episode_from_run

    built, server = gateway
    with judge(reply=lambda user, answers: "no verdict") as (url, _):
        rubric = Rubric(Part("judge", agentgym.JudgeRubric(criteria="c", model="j", base_url=url, retries=0)))
        env = agentgym.make("agentgym/SearchQA-v0", rubric=rubric, action_format="dict")
        run = run_agent(env, {"split": "test", "index": 0}, 0, spec=AgentSpec(target="x:y"),
                        fn=_answers_and_swallows_the_error, gateway=built, base_url=server.url, has_mcp=False,
                        rollout_id="judge-failure", env_id="agentgym/SearchQA-v0", env_kwargs={},
                        require_model=False)
        env.close()
    assert run.error is not None and run.error.startswith("JudgeError:") and run.env_failed
    episode = episode_from_run(TaskSpec("agentgym/SearchQA-v0"), run, limit=400)
    assert episode.failed and episode.error.startswith("JudgeError:")


def test_an_agent_that_cannot_take_the_task_fails_before_the_run(tmp_path):
    """A wrong signature was found once per episode, after the model loaded: load_agent (eval, train) says so."""
    from agentgym.gateway.agents import load_agent

    path = tmp_path / "agents.py"
    path.write_text("def two(task, other):\n    return ''\n\ndef none():\n    return ''\n\n"
                    "def fine(task, max_turns=8):\n    return ''\n")
    for name in ("two", "none"):
        with pytest.raises(ConfigError, match=rf"{name}\(.*\) cannot be called with one argument, the task"):
            load_agent(f"{path}:{name}")
    assert callable(load_agent(f"{path}:fine"))


def test_an_agent_command_is_checked_before_the_run_and_takes_leading_assignments():
    """`--agent-cmd "X=1 bash a.sh"` failed once per episode after the model loaded (no shell runs it): leading
    NAME=value words now set the agent's environment, as a shell would, and what cannot run fails at once."""
    from agentgym.gateway.agents import AgentTask, _run_command, command_argv

    assert command_argv("X=1 Y='a b' sh -c 'echo hi'") == ({"X": "1", "Y": "a b"}, ["sh", "-c", "echo hi"])
    for command, message in [("X=1", "names no program"), ("no-such-program-here --x", "no program"),
                             ("sh a.sh | tee log", "shell syntax"), ("sh 'unclosed", "No closing quotation")]:
        with pytest.raises(ConfigError, match=message):
            AgentSpec(command=command)
    task = AgentTask(prompt="", base_url="http://127.0.0.1:9/v1", model="m", tools=[], call_tool=print, mcp_url=None)
    assert _run_command("GREETING=hello sh -c 'printf %s \"$GREETING\"'", task, "http://127.0.0.1:9/tools", 30) == \
        "hello"
