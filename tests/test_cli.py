"""The ``agentgym`` command, run as a user runs it (a real subprocess where it matters)."""

import json
import os
import subprocess
import sys

import pytest
from helpers.gates import requires_smollm2
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.errors import ConfigError

runner = CliRunner()


def test_list_shows_every_env():
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0 and "agentgym/SearchQA-v0" in result.output


def test_eval_acceptance_oracle_and_random(tmp_path):
    """The foundation issue's bar: oracle >= 0.95 EM and random < 0.05 on 200 test episodes."""
    for policy in ("oracle", "random", "empty"):
        out = tmp_path / f"{policy}.json"
        results = tmp_path / f"{policy}.jsonl"
        result = runner.invoke(app, ["eval", "--policy", policy, "--env", "agentgym/SearchQA-v0",
                                     "--episodes", "200", "--summary-json", str(out), "--results", str(results)])
        assert result.exit_code == 0, result.output
        summary = json.loads(out.read_text())["agentgym/SearchQA-v0"]
        assert summary["episodes"] == 200
        lines = [json.loads(line) for line in results.read_text().splitlines()]
        assert len(lines) == 200 and {r["split"] for r in lines} == {"test"}
        if policy == "oracle":
            assert summary["mean_reward"] >= 0.95 and summary["success_rate"] >= 0.95
            assert all(r["tool_calls"] >= 1 for r in lines)
        else:
            assert summary["mean_reward"] < 0.05


@pytest.mark.parametrize("env_id", ["agentgym/MathTool-v0", "agentgym/PyCode-v0"])
def test_code_envs_oracle_solves_and_random_fails(tmp_path, env_id):
    """The code-envs issue's bar: oracle >= 0.98 and random < 0.05, graded in the sandbox."""
    for policy, episodes in (("oracle", 100), ("random", 60)):
        out = tmp_path / f"{policy}.json"
        result = runner.invoke(app, ["eval", "--policy", policy, "--env", env_id, "--episodes", str(episodes),
                                     "--summary-json", str(out), "--results", str(tmp_path / f"{policy}.jsonl")])
        assert result.exit_code == 0, result.output
        summary = json.loads(out.read_text())[env_id]
        if policy == "oracle":
            assert summary["mean_reward"] >= 0.98 and summary["success_rate"] >= 0.98
        else:
            assert summary["mean_reward"] < 0.05


def test_play_code_envs_with_multiline_actions():
    code = "<code>\nfor i in range(3):\n    print(i * i)\n</code>\n<answer>\\boxed{-1}</answer>\n"
    proc = subprocess.run([sys.executable, "-m", "agentgym.cli", "play", "agentgym/MathTool-v0", "--seed", "2"],
                          input=code, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "<interpreter>0\n1\n4\n</interpreter>" in proc.stdout and "not solved" in proc.stdout
    program = "<answer>\n```python\ndef f(x):\n    return x\n```\n</answer>\n"
    proc = subprocess.run([sys.executable, "-m", "agentgym.cli", "play", "agentgym/PyCode-v0", "--seed", "0"],
                          input="<run_tests>def f(): pass</run_tests>\n" + program,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "public tests passed" in proc.stdout or "Could not run the tests" in proc.stdout
    assert "not solved" in proc.stdout


def test_play_a_human_episode():
    env_id = "agentgym/SearchQA-v0"
    proc = subprocess.run([sys.executable, "-m", "agentgym.cli", "play", env_id, "--seed", "1"],
                          input="hello\n<search>capital</search>\n<answer>nothing</answer>\n",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "No valid action" in proc.stdout and "<information>" in proc.stdout
    assert "not solved" in proc.stdout


@requires_smollm2  # the default policy
def test_bad_env_id_is_one_clear_line_and_exit_2():
    proc = subprocess.run([sys.executable, "-m", "agentgym.cli", "eval", "--env", "agentgym/SerchQA-v0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "Did you mean 'agentgym/SearchQA-v0'" in proc.stderr and "Traceback" not in proc.stdout + proc.stderr


def test_ctrl_c_stops_cleanly_and_the_rerun_resumes(tmp_path):
    import signal
    import time

    results = tmp_path / "run.jsonl"
    cmd = [sys.executable, "-m", "agentgym.cli", "eval", "--policy", "random", "--env", "agentgym/PyCode-v0",
           "--split", "train", "--episodes", "168", "--results", str(results)]  # every train task: a long run
    # its own process group, signalled as a whole, as a terminal's Ctrl-C signals the foreground group
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not results.exists() or results.read_text().count("\n") < 5):
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, out  # an interrupted run is not a finished one
    assert "Stopping" in out and "Traceback" not in out and "episodes not played (interrupted)" in out
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert 5 <= len(lines) < 168 and all(line["key"] for line in lines)
    assert [line["error"] for line in lines if line["error"]] == [], "the Ctrl-C reached the sandboxes"
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    said = " ".join(rerun.stdout.split())
    assert f"{len(lines)} of 168 episodes are stored and reused, {168 - len(lines)} to play" in said, said
    keys = [json.loads(line)["key"] for line in results.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 168


def _agentgym(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentgym.cli", *args], capture_output=True, text=True, timeout=120)


BAD_KWARGS = [
    ("foo=1", "unknown keyword argument 'foo'. Accepted: action_format, "),
    ("top_k=2", "unknown keyword argument 'top_k'. Did you mean 'topk'?"),
    ("topk=abc", "topk must be int, got 'abc' (str)."),
    ("topk=3.5", "topk must be int, got 3.5 (float)."),
    ("topk", "-k/--kwarg expects KEY=VALUE"),
]


@pytest.mark.parametrize("command", [
    ["play", "agentgym/SearchQA-v0"],
    ["serve", "agentgym/SearchQA-v0", "--port", "0"],
    ["eval", "--policy", "random", "--env", "agentgym/SearchQA-v0", "--episodes", "1"],
])
@pytest.mark.parametrize("kwarg, message", BAD_KWARGS)
def test_a_bad_kwarg_is_one_clear_line_and_exit_2(tmp_path, monkeypatch, capsys, command, kwarg, message):
    """The first bad kwarg through the command's own process (exit status, stderr as a terminal gets it); the
    others through the same entry point (``agentgym.cli.main``) in this process (a process start costs ~2 s of CPU)."""
    from agentgym.cli import main

    results = ["--results", str(tmp_path / "r.jsonl")] if command[0] == "eval" else []
    if kwarg == BAD_KWARGS[0][0]:
        proc = _agentgym(*command, *results, "-k", kwarg)
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    else:
        monkeypatch.setattr(sys, "argv", ["agentgym", *command, *results, "-k", kwarg])
        with pytest.raises(SystemExit) as stopped:
            main()
        code, (stdout, stderr) = stopped.value.code, capsys.readouterr()
    assert code == 2, stdout + stderr
    assert stderr.count("\n") == 1 and message in stderr and "Traceback" not in stderr
    assert "serving" not in stdout


def test_serve_gives_each_env_the_kwargs_it_takes():
    """`-k topk=2` with every env served: SearchQA-v0 takes it, the others never see it."""
    from agentgym.cli import _server_kwargs

    shares = _server_kwargs(["agentgym/MathTool-v0", "agentgym/SearchQA-v0"], {"topk": 2, "max_turns": 3})
    assert shares == {"agentgym/MathTool-v0": {"max_turns": 3}, "agentgym/SearchQA-v0": {"topk": 2, "max_turns": 3}}
    proc = _agentgym("serve", "--port", "0", "-k", "topk=x")
    assert proc.returncode == 2 and proc.stderr == "error: agentgym/SearchQA-v0: topk must be int, got 'x' (str).\n"


def test_serve_on_a_busy_port_is_one_line_before_any_announcement():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _agentgym("serve", "agentgym/SearchQA-v0", "--port", str(port))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"error: Cannot serve on 127.0.0.1:{port}: Address already in use. Pass another --port, "
                           "or stop what is using this one.\n")


@pytest.mark.parametrize("command", ["eval", "serve", "train", "play", "swe"])
def test_help_has_no_placeholders_where_defaults_belong(command):
    result = runner.invoke(app, [command, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output and " ." not in result.output, result.output
    if command == "eval":  # a default written in the help text shows as written
        assert "[default: the suite's; 30 with --env]" in " ".join(result.output.split())


def test_eval_threads_sets_torch_threads_for_a_local_model(monkeypatch):
    torch = pytest.importorskip("torch")
    from agentgym.cli import _torch_threads

    before = torch.get_num_threads()
    try:
        _torch_threads(1)
        assert torch.get_num_threads() == 1
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        _torch_threads(None)  # the cores this process may use
        assert torch.get_num_threads() == len(os.sched_getaffinity(0))
        with pytest.raises(ConfigError, match="--threads must be at least 1"):
            _torch_threads(0)
    finally:
        torch.set_num_threads(before)
