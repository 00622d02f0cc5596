"""``agentgym eval`` end to end on cheap policies: k samples per task, results keyed by the model's fingerprint,
the policy's pre-flight, and ``--submit`` refusing failed runs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest
from helpers.gates import requires_smollm2
from rich.console import Console

from agentgym.errors import ConfigError, PolicyError
from agentgym.eval import command
from agentgym.eval.command import EvalOutcome, EvalRequest, run_eval, submit, summary_table
from agentgym.eval.episode import EpisodeResult
from agentgym.eval.fingerprint import model_files_fingerprint
from agentgym.eval.leaderboard import build_leaderboard
from agentgym.eval.results import load_results

SEARCH = "agentgym/SearchQA-v0"


def quiet() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=100), out


def test_k_samples_per_task_with_the_oracle_all_succeed(tmp_path):
    request = EvalRequest(policy="oracle", envs=(SEARCH,), episodes=2, samples=3, results=tmp_path / "r.jsonl")
    outcome = run_eval(request, quiet()[0])
    assert (outcome.planned, len(outcome.results), outcome.errors) == (6, 6, 0)
    assert [(r.episode, r.sample) for r in outcome.results] == [(i, j) for i in range(2) for j in range(3)]
    assert len({r.seed for r in outcome.results}) == 6 and outcome.results[0].seed == 0  # sample 0 keeps seed + i
    assert all(r.correct for r in outcome.results)
    table, summaries = summary_table(request, outcome.suite, outcome.results)
    s = summaries[SEARCH]
    assert (s["samples"], s["pass_at_k"], s["mean_at_k"], s["per_task"]) == (3, 1.0, 1.0, {"0": [3, 3], "1": [3, 3]})
    assert "pass@3" in [c.header for c in table.columns]
    again = run_eval(request, quiet()[0])  # resumes: nothing new played
    assert len(load_results(request.results)) == 6 and len(again.results) == 6
    path = submit(request, again, tmp_path / "board")
    record = json.loads(path.read_text())
    assert record["complete"] and record["samples"] == 3 and record["envs"][SEARCH]["pass_at_k"] == 1.0
    readme, _ = build_leaderboard(tmp_path / "board")
    assert "pass@3=100.0%" in readme.read_text()


def test_a_resumed_run_says_how_many_stored_episodes_it_reuses_and_how_many_errored_ones_it_plays_again(tmp_path):
    request = EvalRequest(policy="oracle", envs=(SEARCH,), episodes=3, results=tmp_path / "r.jsonl")
    run_eval(request, quiet()[0])
    rows = [json.loads(line) for line in request.results.read_text().splitlines()]
    rows[1]["error"] = "RuntimeError: a tool server was down"  # as an episode that errored would be stored
    request.results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    console, out = quiet()
    again = run_eval(EvalRequest(policy="oracle", envs=(SEARCH,), episodes=4, results=request.results), console)
    said = " ".join(out.getvalue().split())
    assert "2 of 4 episodes are stored and reused, 2 to play (1 of them errored before and are played again)" in said
    assert again.errors == 0 and len(again.results) == 4
    console, out = quiet()
    run_eval(EvalRequest(policy="oracle", envs=(SEARCH,), episodes=5, results=request.results), console)
    assert "4 of 5 episodes are stored and reused, 1 to play." in " ".join(out.getvalue().split())


def test_a_model_changed_in_place_starts_fresh_and_an_unchanged_one_resumes(tmp_path, monkeypatch):
    folder = tmp_path / "final"
    folder.mkdir()
    (folder / "config.json").write_text('{"hidden_size": 8}')
    (folder / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      " + b"\x01" * 64)
    # the oracle stands in for hf:<folder> (no model is loaded); the fingerprint is the folder's own
    monkeypatch.setattr(command, "fingerprint", lambda policy, model=None: model_files_fingerprint(folder))
    request = EvalRequest(policy="oracle", envs=(SEARCH,), episodes=2, results=tmp_path / "r.jsonl")
    first = run_eval(request, quiet()[0])
    console, out = quiet()
    run_eval(request, console)
    assert len(load_results(request.results)) == 2 and "starting fresh" not in out.getvalue()  # resumed
    (folder / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      " + b"\x02" * 64)
    console, out = quiet()
    retrained = run_eval(request, console)
    lines = [line for line in out.getvalue().splitlines() if "starting fresh" in line]
    assert len(lines) == 1 and "2 stored episodes are of another model" in lines[0]
    records = load_results(request.results)
    assert len(records) == 4 and len({r["fingerprint"] for r in records}) == 2
    assert {r.fingerprint for r in retrained.results} == {model_files_fingerprint(folder)}
    assert first.results[0].fingerprint != retrained.results[0].fingerprint
    assert first.results[0].key != retrained.results[0].key


def test_an_endpoint_that_is_down_stops_the_run_before_any_episode(tmp_path):
    request = EvalRequest(policy="openai:http://127.0.0.1:9/v1", model="gpt-x", envs=(SEARCH,), episodes=2,
                          results=tmp_path / "r.jsonl")
    with pytest.raises(PolicyError, match="Pre-flight"):
        run_eval(request, quiet()[0])
    assert not request.results.exists()


def errored(episode: int) -> EpisodeResult:
    return EpisodeResult(SEARCH, "t", "test", episode, "openai", 0.0, False, 0, 0, 0, False, {}, 0.1,
                         episode=episode, model="gpt-x", error="PolicyError: Could not reach the endpoint")


def test_submit_refuses_a_run_with_errored_or_unplayed_episodes(tmp_path):
    request = EvalRequest(policy="openai:http://127.0.0.1:9/v1", model="gpt-x", envs=(SEARCH,), episodes=2)
    suite = request.selection()
    failed = EvalOutcome(suite, [errored(0), errored(1)], tmp_path / "r.jsonl", planned=2, interrupted=False)
    board = tmp_path / "board"
    with pytest.raises(ConfigError, match="Not submitted: 2 episodes errored and 0 were not played"):
        submit(request, failed, board)
    assert not board.exists()
    ok = EpisodeResult(SEARCH, "t", "test", 0, "oracle", 1.0, True, 1, 0, 0, False, {"correct": True}, 0.1)
    short = EvalOutcome(suite, [ok], tmp_path / "r.jsonl", planned=2, interrupted=True)
    with pytest.raises(ConfigError, match="0 episodes errored and 1 were not played"):
        submit(request, short, board)
    path = submit(request, failed, board, allow_incomplete=True)
    record = json.loads(path.read_text())
    assert record["complete"] is False and record["envs"][SEARCH]["errors"] == 2
    assert record["envs"][SEARCH]["scored"] == 0
    readme, index = build_leaderboard(board)
    row = next(line for line in readme.read_text().splitlines() if "gpt-x" in line)
    assert row.startswith("| – | gpt-x") and "incomplete" in row and "| 2 | " in row  # unranked, errors shown
    assert 'data-complete="false"' in index.read_text()


def test_samples_must_be_positive():
    with pytest.raises(ConfigError, match="--samples must be >= 1"):
        EvalRequest(policy="oracle", samples=0)


def test_the_command_refuses_before_any_episode_when_the_endpoint_is_down(tmp_path):
    """The issue's reproduction: nothing is run, nothing is written, one line, a failing exit."""
    done = subprocess.run([sys.executable, "-m", "agentgym.cli", "eval", "--policy", "openai:http://127.0.0.1:9/v1",
                           "--model", "gpt-x", "--env", SEARCH, "--episodes", "2", "--submit"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "COLUMNS": "200"})
    assert done.returncode != 0
    assert [line for line in done.stderr.splitlines() if line.strip()] == [
        next(line for line in done.stderr.splitlines() if "Pre-flight" in line)]
    assert not (tmp_path / "leaderboard").exists() and not (tmp_path / "results").exists()


def test_the_progress_line_keeps_its_counts_elapsed_time_and_eta_at_80_columns():
    """At 80 columns the status text pushed the elapsed time and the ETA off the line; now the status is cut."""
    import io

    from rich.console import Console
    from rich.progress import Progress

    from agentgym.eval.command import _progress_columns

    for width in (80, 120):
        out = io.StringIO()
        console = Console(file=out, width=width)
        with Progress(*_progress_columns(width), console=console, expand=True, auto_refresh=False) as progress:
            progress.add_task("core · smollm2", total=210, completed=5,
                              status="SearchQA-v0 · episodes 1-30 (30 playing) · turn 2 · 100/256 tokens")
            progress.refresh()
        line = out.getvalue().strip().splitlines()[-1]
        assert len(line) <= width and "5/210" in line and "0:00:00 eta -:--:--" in line and "core · smollm2" in line
        assert "SearchQA-v0" in line


@requires_smollm2
def test_a_rerun_with_everything_stored_says_so_and_loads_no_model(tmp_path, monkeypatch):
    """A rerun of a finished local-model run said nothing and loaded the model for 7-21 s; now it says every
    episode is stored and returns them, and the model is never loaded."""
    from helpers.byo import write_capitals
    from typer.testing import CliRunner

    import agentgym.policies.hf as hf
    from agentgym.cli import app

    path = write_capitals(tmp_path, "capitals", "byo/StoredCapitals-v0")
    command = ["eval", "--import", str(path), "--env", "byo/StoredCapitals-v0", "--episodes", "2", "--max-tokens",
               "4", "--results", str(tmp_path / "r.jsonl"), "--threads", "1"]
    first = CliRunner().invoke(app, command)
    assert first.exit_code == 0, first.output

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(hf, "_MODELS", {})
    monkeypatch.setattr(hf, "_load_uncached", no_model)
    again = CliRunner().invoke(app, command)
    assert again.exit_code == 0, again.output
    assert "All 2 episodes of this run are stored" in " ".join(again.output.split())
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 2
