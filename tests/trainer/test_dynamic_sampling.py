"""DAPO's dynamic sampling in the trainer's rollout function: groups without learning signal are replaced."""

from __future__ import annotations

import dataclasses
import json

import gymnasium as gym
import pytest
from helpers.gates import import_or_skip, requires_smollm2, requires_train
from helpers.toy_env import ToyEnv
from helpers.trainer_fixtures import tiny_model

from agentgym.errors import ConfigError
from agentgym.lm.rollout import TaskSpec, Turn
from agentgym.trainer.grpo import TrainConfig, build_trainer

import_or_skip("torch", "train")
pytestmark = [requires_smollm2, requires_train]

ID = "agentgym-test/FlatOrNot-v0"
FLAT = [TaskSpec(ID, task_id=f"flat-{i}") for i in range(2)]
VARY = [TaskSpec(ID, task_id=f"vary-{i}") for i in range(2)]


class _FlatOrNot(ToyEnv):
    """The toy env, except that a ``flat-*`` task scores 0.5 whatever is written: a group of it has no signal."""

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        if terminated and self.task_id.startswith("flat"):
            reward = 0.5
            info["verification"] = {"reward": reward, "correct": True, "details": {}}
        return observation, reward, terminated, truncated, info


class _Alternating:
    """Stands in for the model: even rows write "x", odd rows "e", so two rollouts of a varying task differ."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.replies = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
                        for t in ("x", "e")]

    def generate(self, contexts, *, stops, max_new_tokens, seed):
        return [Turn(list(self.replies[i % 2]), ended=True, stopped=False) for i in range(len(contexts))]


def _rollouts(tmp_path, tokenizer, monkeypatch, *, budget: int, pool=FLAT + VARY):
    from agentgym.trainer import grpo

    if ID not in gym.registry:
        gym.register(ID, entry_point=_FlatOrNot)
    monkeypatch.setattr(grpo._Rollouts, "_generator", lambda self, trainer: _Alternating(tokenizer))
    config = TrainConfig(env=[ID], output_dir=str(tmp_path / "run"), group_size=2, groups_per_step=2, steps=1,
                         max_turn_tokens=10, max_completion_tokens=200, save_steps=100, dynamic_sampling=budget)
    trainer, rollouts = build_trainer(config, model=tiny_model(tokenizer, seed=3), tokenizer=tokenizer, specs=FLAT)
    rollouts.specs = list(pool)  # the step's tasks are the flat ones; the draws come from the whole pool
    return trainer, rollouts


def _prompts(specs):
    return [json.dumps(dataclasses.asdict(s)) for s in specs for _ in range(2)]


def test_groups_without_signal_are_replaced_by_groups_of_other_tasks(tmp_path, smollm2_tokenizer, monkeypatch):
    trainer, rollouts = _rollouts(tmp_path, smollm2_tokenizer, monkeypatch, budget=2)
    out = rollouts(_prompts(FLAT), trainer)
    assert out["env_reward"] == [0.0, 1.0, 0.0, 1.0]  # both flat groups gave way to groups of varying tasks
    played = rollouts.stats.episodes
    assert [e.spec.task_id for e in played[:4]] == ["flat-0", "flat-0", "flat-1", "flat-1"]
    assert {e.spec.task_id for e in played[4:]} <= {"vary-0", "vary-1"} and len(played) == 8
    assert rollouts.stats.summary()["resampled_groups"] == 2.0
    assert len(out["completion_ids"]) == len(out["env_mask"]) == 4
    rollouts.close()


def test_the_budget_bounds_the_extra_groups_and_a_group_without_signal_stays_when_it_is_spent(
        tmp_path, smollm2_tokenizer, monkeypatch):
    trainer, rollouts = _rollouts(tmp_path, smollm2_tokenizer, monkeypatch, budget=1)
    assert rollouts(_prompts(FLAT), trainer)["env_reward"] == [0.0, 1.0, 0.5, 0.5]
    assert len(rollouts.stats.episodes) == 6 and rollouts.stats.resampled_groups == 1
    rollouts.close()
    trainer, rollouts = _rollouts(tmp_path, smollm2_tokenizer, monkeypatch, budget=3, pool=FLAT)  # nothing better
    assert rollouts(_prompts(FLAT), trainer)["env_reward"] == [0.5] * 4
    assert len(rollouts.stats.episodes) == 4 + 2 * 3 and rollouts.stats.resampled_groups == 3
    rollouts.close()
    trainer, rollouts = _rollouts(tmp_path, smollm2_tokenizer, monkeypatch, budget=0)  # off: as before
    assert rollouts(_prompts(FLAT), trainer)["env_reward"] == [0.5] * 4
    assert len(rollouts.stats.episodes) == 4 and rollouts.stats.resampled_groups == 0
    rollouts.close()


def test_a_step_of_flat_tasks_trains_on_the_replacements_and_logs_them(tmp_path, smollm2_tokenizer, monkeypatch):
    from rich.console import Console

    from agentgym.trainer.callbacks import MetricsLog

    trainer, rollouts = _rollouts(tmp_path, smollm2_tokenizer, monkeypatch, budget=2)
    console = Console(record=True, width=400)
    next(c for c in trainer.callback_handler.callbacks if isinstance(c, MetricsLog)).console = console
    trainer.train()
    assert "2 groups resampled" in console.export_text() and "no learning signal" not in console.export_text()
    rollouts.close()
    [row] = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
             if '"step": 1' in line]
    assert row["no_signal"] is False and row["resampled_groups"] == 2.0
    assert row["trl"]["frac_reward_zero_std"] == 0.0 and row["reward_std"] > 0


def test_dynamic_sampling_takes_a_count():
    with pytest.raises(ConfigError, match="dynamic_sampling must be >= 0"):
        TrainConfig(dynamic_sampling=-1)
