"""`agentgym data sft`: eval results files to a dataset directory that `datasets.load_dataset` reads; the tool
calls and observations survive the round trip; filters; bad input is one line and exit 1."""

from __future__ import annotations

import json

import pytest
from helpers.gates import requires_envs
from helpers.oracle_results import oracle_results
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.eval.sft_data import select_episodes

datasets = pytest.importorskip("datasets")
SEARCH, MATH = "agentgym/SearchQA-v0", "agentgym/MathTool-v0"
pytestmark = requires_envs([SEARCH, MATH])
runner = CliRunner()


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Real oracle episodes: SearchQA (tags format, 3) and MathTool in the hermes function-calling format (2)."""
    root = tmp_path_factory.mktemp("results")
    search = root / "search.jsonl"
    math = root / "math-hermes.jsonl"
    return {"search": (search, oracle_results(search, SEARCH)),
            "math": (math, oracle_results(math, MATH, episodes=2, env_kwargs={"action_format": "hermes"}))}


def _load(directory, config=None):
    return datasets.load_dataset(str(directory), *([config] if config else []), split="train")


def test_a_dataset_round_trip_keeps_tool_calls_and_observations(results, tmp_path):
    (search, search_records), (math, math_records) = results["search"], results["math"]
    out = tmp_path / "ds"
    result = runner.invoke(app, ["data", "sft", str(search), str(math), "--out", str(out), "--tokenizer", "none"])
    assert result.exit_code == 0, result.output
    assert "kept 5 of 5 episodes (MathTool-v0 2/2, SearchQA-v0 3/3)" in " ".join(result.output.split())
    rows = list(_load(out))
    assert len(rows) == 5
    tools = {SEARCH: ["search"], MATH: ["python"]}
    for row, record in zip(rows, search_records + math_records):
        assert (row["env_id"], row["task_id"], row["reward"], row["correct"]) == (
            record["env_id"], record["task_id"], 1.0, True)
        # every turn as it was played: the assistant's text (tool calls included) and the env's observations
        assert [m["content"] for m in row["messages"]] == [m["content"] for m in record["transcript"]]
        roles = [m["role"] for m in row["messages"]]
        observation = "tool" if record["env_id"] == MATH else "user"  # function calls (hermes) vs tags
        assert roles == [{"tool": observation}.get(m["role"], m["role"]) for m in record["transcript"]]
        assert roles[0] == "user" and roles[-1] == "assistant" and observation in roles
        assert [t["function"]["name"] for t in json.loads(row["tools"])] == tools[record["env_id"]]
    math_row = rows[3]
    assert json.loads(math_row["env_kwargs"]) == {"action_format": "hermes"} and math_row["format"] == "hermes"
    call = json.loads(math_row["messages"][1]["content"].removeprefix("<tool_call>").removesuffix("</tool_call>"))
    assert call["name"] == "python" and "print(" in call["arguments"]["code"]
    assert math_row["messages"][2]["content"].startswith("<tool_response>")
    assert rows[0]["messages"][2]["content"].lstrip().startswith("<information>")
    with pytest.raises(ValueError):  # --tokenizer none: the chat config alone
        _load(out, "tokens")
    card = (out / "README.md").read_text()
    assert "config_name: chat" in card and "config_name: tokens" not in card
    manifest = json.loads((out / "agentgym_sft.json").read_text())
    assert manifest["kept"] == 5 and manifest["command"].startswith("agentgym data sft ")
    # a rerun replaces its own earlier output
    assert runner.invoke(app, ["data", "sft", str(search), "--out", str(out), "--tokenizer", "none"]).exit_code == 0
    assert len(_load(out)) == 3


def _filter_file(results, path):
    """SearchQA records varied for the filters (keys k0..k4), and one MathTool record."""
    base = results["search"][1]
    rows = [dict(base[0], key="k0", sample=0), dict(base[0], key="k1", sample=1),
            dict(base[1], key="k2", correct=False, reward=0.4),
            dict(base[1], key="k3", error="RolloutError: boom", correct=False, reward=0.0),  # superseded by k3 below
            dict(base[1], key="k3", sample=1),
            dict(base[2], key="k4", error="ToolError: down", correct=False, reward=0.0),
            dict(results["math"][1][0], key="m0")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(("options", "kept"), [
    ({}, ["k0", "k1", "k3", "m0"]),
    ({"keep_all": True}, ["k0", "k1", "k2", "k3", "m0"]),
    ({"envs": [SEARCH]}, ["k0", "k1", "k3"]),
    ({"keep_all": True, "min_reward": 0.5}, ["k0", "k1", "k3", "m0"]),
    ({"dedupe": True}, ["k0", "k3", "m0"]),  # train_0: the first of equal rewards
    ({"keep_all": True, "dedupe": True}, ["k0", "k3", "m0"]),  # train_1: reward 1.0 beats the first, 0.4
])
def test_filters(results, tmp_path, options, kept):
    selection = select_episodes([_filter_file(results, tmp_path / "r.jsonl")], **options)
    assert [r["key"] for r in selection.kept] == kept
    assert selection.errored == 1  # k4; k3's errored line was superseded by its retry


def test_the_summary_says_what_was_kept_by_env(results, tmp_path):
    path = _filter_file(results, tmp_path / "r.jsonl")
    result = runner.invoke(app, ["data", "sft", str(path), "--out", str(tmp_path / "ds"), "--tokenizer", "none"])
    assert result.exit_code == 0, result.output
    assert ("kept 4 of 6 episodes (MathTool-v0 1/1, SearchQA-v0 3/5); 1 errored dropped"
            in " ".join(result.output.split()))


def _bad_inputs(results, tmp_path):
    search = str(results["search"][0])
    (tmp_path / "text.jsonl").write_text("hello\n")
    (tmp_path / "other.jsonl").write_text('{"step": 1, "loss": 0.5}\n')
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    return [
        ([str(tmp_path / "missing.jsonl")], "no such results file"),
        ([str(tmp_path / "text.jsonl")], "is not a JSON line"),
        ([str(tmp_path / "other.jsonl")], "is not an agentgym eval results file"),
        ([str(tmp_path / "empty.jsonl")], "has no episodes: it is empty"),
        ([search, "--min-reward", "2"], "No episode passed the filters: kept 0 of 3 episodes"),
        ([search, "--env", "agentgym/PyCode-v0"], "No episode of agentgym/PyCode-v0"),
        ([search, "--out", str(tmp_path / "taken")], "holds other files"),
    ]


def test_bad_input_is_one_clear_line_and_exit_1(results, tmp_path):
    for args, message in _bad_inputs(results, tmp_path):
        out = [] if "--out" in args else ["--out", str(tmp_path / "ds")]
        result = runner.invoke(app, ["data", "sft", *args, *out, "--tokenizer", "none"], terminal_width=400)
        assert result.exit_code == 1, (args, result.output)
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
        assert message in result.stderr and "Traceback" not in result.output
        assert not (tmp_path / "ds").exists()
    assert (tmp_path / "taken" / "notes.txt").read_text() == "mine"


def test_the_light_install_gets_the_install_line_not_a_traceback(results, tmp_path):
    """Without the train extra (no `datasets`), `agentgym data sft` printed a traceback; now it is one line that
    names the missing package and the command that installs it, and nothing is written."""
    import subprocess
    import sys

    search, _ = results["search"]
    out = tmp_path / "ds"
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['datasets'] = None; "
                           "from agentgym.cli import main; main()", "data", "sft", str(search), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "datasets is not installed" in done.stderr and "pip install 'agentgym-suite[train]'" in done.stderr
    assert not out.exists()
