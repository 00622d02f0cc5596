"""SFT on trajectories: the `tokens` of `agentgym data sft` and what `agentgym sft` trains on are the GRPO
trainer's own token ids and loss mask for the same episodes (real oracle episodes, the default model's tokenizer),
TRL gets labels masked exactly there, and `agentgym sft` on the default model writes a final/ that the eval's hf
policy and `agentgym train` load."""

from __future__ import annotations

import dataclasses
import json

import pytest
from helpers.gates import import_or_skip, requires_envs, requires_smollm2, requires_train
from helpers.oracle_results import oracle_results
from helpers.trainer_fixtures import tiny_model
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.errors import ConfigError
from agentgym.eval.sft_data import build_sft_dataset, load_tokenizer
from agentgym.lm.rollout import TaskSpec, Turn
from agentgym.trainer.sft import SFTConfig, build_sft_trainer, load_sft_data

torch = import_or_skip("torch", "train")
datasets = import_or_skip("datasets", "train")
SEARCH, MATH = "agentgym/SearchQA-v0", "agentgym/MathTool-v0"
pytestmark = [requires_smollm2, requires_train, requires_envs([SEARCH, MATH])]


@pytest.fixture(scope="module")
def tokenizer():
    """The default model's tokenizer, as `agentgym data sft --tokenizer smollm2` and `agentgym sft` load it."""
    return load_tokenizer("smollm2")


class _Writes:
    """Stands in for the model in a GRPO rollout: it writes the recorded assistant texts, turn by turn, and stops
    where a model would (after a stop string, else with its end-of-turn token)."""

    def __init__(self, tokenizer, texts):
        self.tokenizer, self.texts = tokenizer, list(texts)

    def generate(self, contexts, *, stops, max_new_tokens, seed):
        [stop] = stops
        text = self.texts.pop(0)
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if any(text.endswith(s) for s in stop):
            return [Turn(ids, ended=False, stopped=True)]
        return [Turn([*ids, self.tokenizer.eos_token_id], ended=True, stopped=False)]


def _grpo_sequence(record, tokenizer, style, env_kwargs, tmp_path):
    """What the GRPO trainer's rollout function hands TRL for the record's episode, played on the real env:
    the prompt ids + completion ids, and the prompt's zeros + its ``env_mask``."""
    from agentgym.trainer import grpo

    config = grpo.TrainConfig(env=[record["env_id"]], env_kwargs=env_kwargs, observation_style=style,
                              output_dir=str(tmp_path / "grpo"))
    rollouts = grpo._Rollouts(config, tokenizer, grpo.RolloutStats())
    model = _Writes(tokenizer, [m["content"] for m in record["transcript"] if m["role"] == "assistant"])
    rollouts._generator = lambda trainer: model
    spec = TaskSpec(record["env_id"], seed=record["seed"], task_id=record["task_id"])
    try:
        out = rollouts([json.dumps(dataclasses.asdict(spec))], trainer=None)
    finally:
        rollouts.close()
    assert out["env_reward"] == [1.0] and not model.texts  # the oracle's episode, every turn played
    [prompt], [completion], [mask] = out["prompt_ids"], out["completion_ids"], out["env_mask"]
    return prompt + completion, [0] * len(prompt) + mask


@pytest.mark.parametrize(("env_id", "env_kwargs", "style"), [
    (SEARCH, {}, "chat"), (SEARCH, {}, "append"), (MATH, {}, "chat"), (MATH, {"action_format": "hermes"}, "chat"),
])
def test_sft_tokens_are_the_grpo_trainers_on_the_same_episodes(tmp_path, tokenizer, env_id, env_kwargs, style):
    """Token for token: `agentgym data sft`'s tokens config (read back with load_dataset) and the sequences
    `agentgym sft` trains on equal what the GRPO rollout function hands TRL for the same oracle episodes."""
    records = oracle_results(tmp_path / "r.jsonl", env_id, episodes=3 if env_id == SEARCH else 2,
                             env_kwargs=env_kwargs)
    build_sft_dataset([tmp_path / "r.jsonl"], tmp_path / "ds", observation_style=style)
    tokens = list(datasets.load_dataset(str(tmp_path / "ds"), "tokens", split="train"))
    trained = load_sft_data(SFTConfig(data=str(tmp_path / "ds"), observation_style=style), tokenizer).rows
    assert len(tokens) == len(trained) == len(records)
    for record, row, sft_row in zip(records, tokens, trained):
        input_ids, mask = _grpo_sequence(record, tokenizer, style, env_kwargs, tmp_path)
        assert row["input_ids"] == input_ids and row["loss_mask"] == mask
        assert row["labels"] == [t if m else -100 for t, m in zip(input_ids, mask)]
        assert sft_row == {"input_ids": input_ids, "labels": row["labels"]}
        # the trained tokens are the assistant's turns and nothing else; every observation is masked
        texts = [m["content"] for m in record["transcript"] if m["role"] == "assistant"]
        model_text = tokenizer.decode([t for t, m in zip(input_ids, mask) if m], skip_special_tokens=True)
        assert model_text == "".join(texts)
        observations = [m["content"] for m in record["transcript"] if m["role"] == "tool"]
        masked_text = tokenizer.decode([t for t, m in zip(input_ids, mask) if not m])
        assert all(o.strip() in masked_text for o in observations) and observations


def test_trl_gets_labels_masked_exactly_where_the_grpo_mask_is_0(tmp_path, tokenizer):
    records = oracle_results(tmp_path / "r.jsonl", SEARCH, episodes=2)
    build_sft_dataset([tmp_path / "r.jsonl"], tmp_path / "ds")
    tokens = list(datasets.load_dataset(str(tmp_path / "ds"), "tokens", split="train"))
    config = SFTConfig(data=str(tmp_path / "ds"), output_dir=str(tmp_path / "run"), steps=1, batch=2)
    trainer, data = build_sft_trainer(config, model=tiny_model(tokenizer), tokenizer=tokenizer)
    assert data.episodes == len(records) == 2 and data.too_long == 0
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(2)])
    for row in tokens:
        [i] = [i for i in range(2) if batch["input_ids"][i, :len(row["input_ids"])].tolist() == row["input_ids"]]
        labels = batch["labels"][i].tolist()
        assert labels[:len(row["input_ids"])] == row["labels"]
        assert set(labels[len(row["input_ids"]):]) <= {-100}  # padding
    assert 0 < data.trained_tokens < data.tokens / 4


def test_episodes_longer_than_max_length_are_left_out(tmp_path, tokenizer):
    oracle_results(tmp_path / "r.jsonl", SEARCH, episodes=2)
    build_sft_dataset([tmp_path / "r.jsonl"], tmp_path / "ds", tokenizer=None)
    lengths = sorted(len(r["input_ids"]) for r in load_sft_data(SFTConfig(data=str(tmp_path / "ds")), tokenizer).rows)
    data = load_sft_data(SFTConfig(data=str(tmp_path / "ds"), max_length=lengths[0]), tokenizer)
    assert (len(data.rows), data.too_long) == (1 + (lengths[1] == lengths[0]), lengths[1] > lengths[0])
    with pytest.raises(Exception, match="longer than max_length"):
        load_sft_data(SFTConfig(data=str(tmp_path / "ds"), max_length=lengths[0] - 1), tokenizer)


@pytest.mark.parametrize(("args", "message"), [
    ([], "data: name the dataset directory"),
    (["--data", "nowhere"], "data: nowhere is not a directory"),
    (["--data", ".", "--batch", "4", "--micro-batch", "3"], "micro_batch (3) must divide batch (4)"),
    (["--data", ".", "--observation-style", "inline"], "observation_style must be one of"),
])
def test_bad_options_are_clear_errors(tmp_path, args, message):
    result = CliRunner().invoke(app, ["sft", *args, "--output-dir", str(tmp_path / "run")])
    assert result.exit_code != 0 and message in str(result.exception), result.output
    assert isinstance(result.exception, ConfigError) and not (tmp_path / "run" / "final").exists()
    (tmp_path / "bad.yaml").write_text("data: ds\ngroup_size: 2\n")
    result = CliRunner().invoke(app, ["sft", "--config", str(tmp_path / "bad.yaml")])
    assert "Unknown training option(s) group_size" in str(result.exception)


@pytest.mark.slow
def test_sft_cli_trains_resumes_plots_and_final_loads_in_eval_and_train(tmp_path):
    from agentgym.lm.local import load_for_training, resolve_model
    from agentgym.policies import make_policy

    oracle_results(tmp_path / "r.jsonl", SEARCH, episodes=2)
    runner = CliRunner()
    result = runner.invoke(app, ["data", "sft", str(tmp_path / "r.jsonl"), "--out", str(tmp_path / "ds")])
    assert result.exit_code == 0, result.output
    run = tmp_path / "run"
    flags = ["--data", str(tmp_path / "ds"), "--output-dir", str(run), "--batch", "1", "--save-steps", "1",
             "--lr-scheduler", "constant"]
    result = runner.invoke(app, ["sft", *flags, "--steps", "1"])
    assert result.exit_code == 0, result.output
    assert "step    1/1  loss" in result.output and ": 2 of 2 episodes, " in " ".join(result.output.split())
    assert (run / "checkpoint-1").is_dir() and (run / "final" / "model.safetensors").is_file()
    assert json.loads((run / "train_config.json").read_text())["data"] == str(tmp_path / "ds")
    assert json.loads((run / "final" / "agentgym_model.json").read_text())["method"] == "SFT"
    result = runner.invoke(app, ["sft", *flags, "--steps", "2", "--resume"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and all(r["loss"] > 0 and r["entropy"] > 0 for r in rows)
    assert [r["learning_rate"] for r in rows] == [1e-5, 1e-5]  # constant: linear would have 5e-6 at step 2 of 2
    assert runner.invoke(app, ["plot", str(run)]).exit_code == 0 and (run / "plots" / "loss.png").is_file()
    policy = make_policy(f"hf:{run / 'final'}")
    model, tokenizer = policy.load()
    assert model.config.architectures == ["LlamaForCausalLM"] and tokenizer.chat_template
    policy.close()
    model, _ = load_for_training(resolve_model(str(run / "final")))  # what `agentgym train --model` loads
    assert sum(p.numel() for p in model.parameters()) > 100_000_000


@pytest.mark.parametrize("command", [["sft"], ["data", "sft"]])
def test_help_names_every_option_without_placeholders(command):
    result = CliRunner().invoke(app, [*command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output and " ." not in result.output
    if command == ["sft"]:  # one flag per SFTConfig field
        assert all(f"--{f.name.replace('_', '-')}" in result.output for f in dataclasses.fields(SFTConfig))
