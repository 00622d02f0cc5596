"""``agentgym train --agent``: GRPO through TRL on the tokens a user's agent sampled through the gateway."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.gates import import_or_skip, requires_smollm2, requires_train
from helpers.trainer_fixtures import tiny_model

from agentgym.errors import ConfigError, RolloutError
from agentgym.lm.rollout import TaskSpec
from agentgym.trainer.grpo import TrainConfig, build_trainer

torch = import_or_skip("torch", "train")
pytestmark = [requires_smollm2, requires_train]

AGENTS = Path(__file__).resolve().parents[1] / "helpers" / "train_agents.py"
ENV = "agentgym/MathTool-v0"


def _trainer(tmp_path, tokenizer, agent: str, *, model=None, **overrides):
    config = TrainConfig(**{"env": [ENV], "output_dir": str(tmp_path / "run"), "group_size": 2, "groups_per_step": 2,
                            "steps": 1, "max_turn_tokens": 6, "max_completion_tokens": 400, "learning_rate": 1e-2,
                            "save_steps": 100, "agent": f"{AGENTS}:{agent}" if agent else None, "temperature": 1.0,
                            **overrides})
    specs = [TaskSpec(ENV, task_id=f"gsm8k-train-{i:05d}") for i in range(4)]
    model = model if model is not None else tiny_model(tokenizer, seed=5)
    trainer, rollouts = build_trainer(config, model=model, tokenizer=tokenizer, specs=specs)
    return trainer, rollouts, model


def _capture(trainer, rollouts):
    """Record, for the step: the gateway's samples of every rollout (before it forgets them), TRL's own output
    before our advantages replaced its (``trl``), and what the loss then got (``out``)."""
    from trl import GRPOTrainer

    seen: dict = {"by_id": {}, "trl": [], "out": []}
    original_close = None

    def keep_samples(rollout_id, **kwargs):
        if kwargs.get("forget"):  # the trainer's last word on a rollout: s<step>-r<i>-a<attempt>-<hex>
            step, i = (int(part[1:]) for part in rollout_id.split("-")[:2])
            seen["by_id"][step, i] = rollouts.gateway.rollout(rollout_id).samples()
        return original_close(rollout_id, **kwargs)

    real_generator = rollouts._generator

    def generator(trainer_):
        nonlocal original_close
        generator_ = real_generator(trainer_)
        if original_close is None:
            original_close = rollouts.gateway.close_rollout
            rollouts.gateway.close_rollout = keep_samples
        seen.setdefault("generators", []).append(generator_)
        return generator_

    rollouts._generator = generator
    parent = GRPOTrainer._generate_and_score_completions

    def trl_step(self, inputs):
        out = parent(self, inputs)
        seen["trl"].append({k: v.clone() if hasattr(v, "clone") else v for k, v in out.items()})
        return out

    ours = type(trainer)._generate_and_score_completions

    def step(inputs):
        out = ours(trainer, inputs)
        seen["out"].append(out)
        return out

    trainer._generate_and_score_completions = step
    return seen, trl_step


def _run(trainer, rollouts, seen, trl_step, monkeypatch):
    from trl import GRPOTrainer

    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", trl_step)
    try:
        trainer.train()
    finally:
        rollouts.close()
    seen["samples"] = [seen["by_id"][key] for key in sorted(seen["by_id"])]  # by step, then rollout


def _metrics(tmp_path):
    return [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]


def test_a_step_trains_on_exactly_the_recorded_tokens(tmp_path, smollm2_tokenizer, monkeypatch):
    """The ids the loss sees are the gateway's recorded ids, the loss mask its loss_mask, the old policy's
    log-probabilities the sampler's, each rollout's advantage TRL's; the weights move and the gateway then serves
    them (a fresh generator on the trained model)."""
    trainer, rollouts, model = _trainer(tmp_path, smollm2_tokenizer, "two_turns", steps=2)
    before = [p.detach().clone() for p in model.parameters()]
    seen, trl_step = _capture(trainer, rollouts)
    _run(trainer, rollouts, seen, trl_step, monkeypatch)

    assert len(seen["out"]) == 2 and len(seen["samples"]) == 8
    out, trl, samples = seen["out"][0], seen["trl"][0], seen["samples"][:4]
    assert all(len(s) == 1 for s in samples)  # the second call extended the first: one leaf per rollout
    for i, [sample] in enumerate(samples):
        start = sample["loss_mask"].index(1)
        prompt = out["prompt_ids"][i][out["prompt_mask"][i].bool()].tolist()
        n = len(sample["token_ids"]) - start
        assert prompt == sample["token_ids"][:start]
        assert out["completion_ids"][i][:n].tolist() == sample["token_ids"][start:]
        assert out["tool_mask"][i][:n].tolist() == sample["loss_mask"][start:]
        assert 0 in sample["loss_mask"][start:]  # the second call's template glue and user message: masked
        recorded = torch.tensor([p if p is not None else 0.0 for p in sample["logprobs"][start:]])
        assert torch.equal(out["old_per_token_logps"][i][:n], recorded)
    assert torch.allclose(out["advantages"], trl["advantages"], atol=1e-6)  # one row per rollout: TRL's own
    assert len(set(out["advantages"].tolist())) > 1
    rows = _metrics(tmp_path)
    assert [r["token_mismatches"] for r in rows] == [0.0, 0.0]
    assert rows[0]["agent_errors"] == 0 and rows[0]["agent_calls"] == 2 and rows[0]["samples"] == 4
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    first, second = seen["generators"]
    assert first is not second and second.model is model  # step 2 sampled from the trained weights, no old cache


def test_each_branch_of_a_rollout_is_a_row_with_the_rollouts_advantage(tmp_path, smollm2_tokenizer, monkeypatch):
    trainer, rollouts, _ = _trainer(tmp_path, smollm2_tokenizer, "branching")
    seen, trl_step = _capture(trainer, rollouts)
    _run(trainer, rollouts, seen, trl_step, monkeypatch)

    [out] = seen["out"]
    assert [len(s) for s in seen["samples"]] == [2, 2, 2, 2]  # two roots each
    assert out["completion_ids"].shape[0] == 8
    advantages = out["advantages"].tolist()
    for k in range(4):  # rows 2k and 2k+1 are rollout k's two branches
        assert advantages[2 * k] == advantages[2 * k + 1]
        for j in range(2):
            sample = seen["samples"][k][j]
            start = sample["loss_mask"].index(1)
            assert out["completion_ids"][2 * k + j][:len(sample["token_ids"]) - start].tolist() == \
                sample["token_ids"][start:]
    assert advantages[0] > 0 > advantages[2]  # even rollouts answer right
    [row] = _metrics(tmp_path)
    assert row["branches"] == 4 and row["reencoded_tokens"] > 0 and row["samples"] == 8


def test_a_crashing_agent_is_played_again_then_left_out_never_trained_as_reward_0(tmp_path, smollm2_tokenizer,
                                                                                    monkeypatch):
    trainer, rollouts, _ = _trainer(tmp_path, smollm2_tokenizer, "flaky")
    seen, trl_step = _capture(trainer, rollouts)
    _run(trainer, rollouts, seen, trl_step, monkeypatch)
    [row] = _metrics(tmp_path)
    assert row["agent_retries"] == 1 and row["agent_errors"] == 0  # rollout 1 failed once, then played

    trainer, rollouts, _ = _trainer(tmp_path / "b", smollm2_tokenizer, "broken_for_one", agent_retries=2)
    seen, trl_step = _capture(trainer, rollouts)
    _run(trainer, rollouts, seen, trl_step, monkeypatch)
    [row] = _metrics(tmp_path / "b")
    assert row["agent_errors"] == 1 and row["agent_retries"] == 2 and row["rollout_errors"] == 1
    [out] = seen["out"]
    assert out["advantages"][0] == 0  # no gradient from the failed rollout: advantage 0, nothing in the loss
    assert (out["completion_mask"][0] * out["tool_mask"][0]).sum() == 0
    # its group's baseline is rollout 1 alone: not pulled down by a 0 for the failure
    assert out["advantages"][1] == 0


def test_a_rollout_past_the_token_limit_is_cut_and_scores_0(tmp_path, smollm2_tokenizer, monkeypatch):
    trainer, rollouts, _ = _trainer(tmp_path, smollm2_tokenizer, "long_talker", max_turn_tokens=12,
                                    max_completion_tokens=5)
    seen, trl_step = _capture(trainer, rollouts)
    _run(trainer, rollouts, seen, trl_step, monkeypatch)
    [out] = seen["out"]
    assert out["completion_ids"].shape[1] == 5
    [row] = _metrics(tmp_path)
    assert row["over_budget"] == 1.0 and row["env_reward"] == 0.0


def test_training_stops_when_the_fed_ids_differ_from_the_recorded_ones(tmp_path, smollm2_tokenizer, monkeypatch):
    trainer, rollouts, _ = _trainer(tmp_path, smollm2_tokenizer, "half_right")
    play = rollouts.step

    def tampered(prompts, trainer_):
        episodes = play(prompts, trainer_)
        episodes[1].rows[0].recorded[-1] += 1  # as if the trainer re-encoded a token differently
        return episodes

    rollouts.step = tampered
    with pytest.raises(RolloutError, match="differ from the ids the gateway recorded"):
        try:
            trainer.train()
        finally:
            rollouts.close()


def test_a_text_only_record_is_refused_with_its_reason():
    from agentgym.gateway.records import Rollout
    from agentgym.trainer.agent import leaf_rows

    with pytest.raises(RolloutError, match="text-only rollout .* no sampled token ids"):
        leaf_rows(Rollout("r", text_only=True), limit=100)


def test_agent_settings_that_cannot_apply_are_refused():
    with pytest.raises(ConfigError, match="writes its own messages"):
        TrainConfig(agent="a.py:f", system_prompt="You are...")
    with pytest.raises(ConfigError, match="not both"):
        TrainConfig(agent="a.py:f", agent_cmd="python a.py")
    with pytest.raises(ConfigError, match="in process"):
        TrainConfig(agent="a.py:f", remote="http://127.0.0.1:1")


def test_train_cli_with_a_missing_agent_fails_before_the_model_loads(tmp_path):
    from typer.testing import CliRunner

    from agentgym.cli import app

    done = CliRunner().invoke(app, ["train", "--env", ENV, "--agent", str(tmp_path / "nope.py") + ":agent",
                                    "--output-dir", str(tmp_path / "run"), "--steps", "1"])
    assert done.exit_code != 0 and isinstance(done.exception, ConfigError)  # main() prints it as one line
    assert "nope.py" in str(done.exception)
    assert not (tmp_path / "run" / "train_config.json").exists()


def test_dynamic_sampling_replaces_a_group_without_signal(tmp_path, smollm2_tokenizer, monkeypatch):
    trainer, rollouts, _ = _trainer(tmp_path, smollm2_tokenizer, "flat_first_group", dynamic_sampling=1)
    seen, trl_step = _capture(trainer, rollouts)
    _run(trainer, rollouts, seen, trl_step, monkeypatch)
    [row] = _metrics(tmp_path)
    assert row["resampled_groups"] == 1
    [out] = seen["out"]
    assert out["advantages"][0] != 0 and out["advantages"][2] != 0  # both groups now have a signal


def test_lora_checkpoints_and_resume_with_an_agent(tmp_path, smollm2_tokenizer):
    from agentgym.trainer.grpo import train

    common = {"env": [ENV], "output_dir": str(tmp_path / "run"), "group_size": 2, "groups_per_step": 1,
              "max_turn_tokens": 4, "learning_rate": 1e-2, "save_steps": 1, "agent": f"{AGENTS}:half_right",
              "lora": True, "lora_r": 4, "lora_alpha": 8}
    final = train(TrainConfig(**common, steps=1), model=tiny_model(smollm2_tokenizer, seed=6),
                  tokenizer=smollm2_tokenizer)
    assert (final / "config.json").is_file() and (tmp_path / "run" / "checkpoint-1").is_dir()
    train(TrainConfig(**common, steps=2, resume=True), model=tiny_model(smollm2_tokenizer, seed=6),
          tokenizer=smollm2_tokenizer)
    assert [r["step"] for r in _metrics(tmp_path)] == [1, 2]  # step 1 from the checkpoint, step 2 trained


def test_an_agent_command_trains_too(tmp_path, smollm2_tokenizer, monkeypatch):
    """--agent-cmd: a program reading the prompt on stdin, calling OPENAI_BASE_URL, printing its answer: each
    rollout trained on the one sample its call left."""
    import sys
    import textwrap

    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent("""
        import json, os, sys, urllib.request
        prompt = sys.stdin.read()
        base = os.environ["OPENAI_BASE_URL"]
        body = json.dumps({"model": os.environ["AGENTGYM_MODEL"], "max_tokens": 4,
                           "messages": [{"role": "user", "content": prompt}]}).encode()
        urllib.request.urlopen(urllib.request.Request(base + "/chat/completions", body,
                                                      {"Content-Type": "application/json"})).read()
        print("-1")
    """))
    trainer, rollouts, _ = _trainer(tmp_path, smollm2_tokenizer, "", agent_cmd=f"{sys.executable} {program}")
    seen, trl_step = _capture(trainer, rollouts)
    _run(trainer, rollouts, seen, trl_step, monkeypatch)
    [row] = _metrics(tmp_path)
    assert row["agent_errors"] == 0 and row["token_mismatches"] == 0 and row["samples"] == 4
    assert [len(s) for s in seen["samples"]] == [1, 1, 1, 1]
