"""`agentgym train` on a fresh install: the default model (SmolLM2-135M), a real env, logs, checkpoints,
resume, the final model, and `agentgym plot`."""

from __future__ import annotations

import json

import pytest
from helpers.gates import requires_smollm2, requires_train
from typer.testing import CliRunner

from agentgym.cli import app

pytestmark = [requires_smollm2, requires_train, pytest.mark.slow]


def test_train_resume_and_plot_with_the_default_model(tmp_path):
    config = tmp_path / "train.yaml"
    config.write_text("env: [agentgym/SearchQA-v0]\ngroup_size: 2\ngroups_per_step: 1\ntasks: 4\nmax_turns: 2\n"
                      "max_turn_tokens: 12\nmax_completion_tokens: 400\nlearning_rate: 1.0e-5\nsave_steps: 1\n")
    run = tmp_path / "run"
    runner = CliRunner()
    result = runner.invoke(app, ["train", "--config", str(config), "--steps", "1", "--output-dir", str(run)])
    assert result.exit_code == 0, result.output
    assert "step    1/1" in result.output
    assert (run / "checkpoint-1").is_dir() and (run / "final" / "model.safetensors").is_file()
    assert json.loads((run / "train_config.json").read_text())["model"] == "smollm2"
    # the default leaderboard name of the trained model: its base, quantisation included, and how it was trained
    card = json.loads((run / "final" / "agentgym_model.json").read_text())
    assert card["name"] == "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to fp32) + GRPO (run)"
    # a run stopped after logging step 2 but before its checkpoint (and mid-line): resuming trains step 2 again,
    # and its stale rows must not stay beside the new ones
    with (run / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"step": 2, "reward_mean": 0.5, "stale": True}) + "\n" + '{"step": 3, "rew')
    with (run / "samples.jsonl").open("a") as f:
        f.write(json.dumps({"step": 2, "stale": True}) + "\n")
    # resume: a second step continues from checkpoint-1
    result = runner.invoke(app, ["train", "--config", str(config), "--steps", "2", "--output-dir", str(run),
                                 "--resume"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert "stale" not in rows[1] and "Resuming from" in result.output
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert {s["step"] for s in samples} == {1, 2} and not any("stale" in s for s in samples)
    assert all(r["turns"] >= 1 and r["tokens_model"] > 0 and r["entropy"] > 0 for r in rows)
    result = runner.invoke(app, ["plot", str(run)])
    assert result.exit_code == 0, result.output
    assert (run / "plots" / "curves.png").stat().st_size > 10_000


def test_bad_options_are_clear_errors(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["train", "--loss-type", "ppo", "--output-dir", str(tmp_path / "r")])
    assert result.exit_code != 0 and "loss_type must be one of" in str(result.exception)
    (tmp_path / "bad.yaml").write_text("envs: [agentgym/SearchQA-v0]\n")
    result = runner.invoke(app, ["train", "--config", str(tmp_path / "bad.yaml")])
    assert "Unknown training option(s) envs" in str(result.exception)
