"""``stratify_by``: each step's tasks take a meta value in turn, and dynamic sampling keeps a flat group's value."""

from __future__ import annotations

import collections
import json

import pytest
from helpers.gates import import_or_skip, requires_smollm2, requires_train
from helpers.trainer_fixtures import tiny_model
from test_dynamic_sampling import FLAT, ID, VARY, _Alternating, _prompts, _rollouts

import agentgym
from agentgym.errors import ConfigError
from agentgym.lm.rollout import TaskSpec
from agentgym.trainer import grpo
from agentgym.trainer.grpo import TrainConfig, build_trainer

import_or_skip("torch", "train")
pytestmark = [requires_smollm2, requires_train]

SEARCHQA = "agentgym/SearchQA-v0"


def test_the_order_takes_each_value_in_turn_and_every_task_of_the_largest_stratum_once():
    big = [TaskSpec(ID, task_id=f"a-{i}") for i in range(5)]
    small = [TaskSpec(ID, task_id=f"b-{i}") for i in range(2)]
    strata = {**{s: "a" for s in big}, **{s: "b" for s in small}}
    order = grpo.stratified_order(big + small, strata, seed=3)
    assert [strata[s] for s in order] == ["a", "b"] * 5
    assert sorted(order[::2], key=str) == sorted(big, key=str)  # the largest stratum: each task once
    assert collections.Counter(order[1::2]).most_common(1)[0][1] <= 3  # the small one starts over, reshuffled
    assert order == grpo.stratified_order(big + small, strata, seed=3)  # seeded
    assert order != grpo.stratified_order(big + small, strata, seed=4)


def test_a_flat_group_gives_way_to_a_group_of_its_own_stratum(tmp_path, smollm2_tokenizer, monkeypatch):
    trainer, rollouts = _rollouts(tmp_path, smollm2_tokenizer, monkeypatch, budget=2)
    # flat-0 and vary-1 are "a", flat-1 and vary-0 "b": without strata the draws could cross over
    rollouts.strata = {FLAT[0]: "a", VARY[1]: "a", FLAT[1]: "b", VARY[0]: "b"}
    for step in range(4):  # four steps' draws: a draw across strata would show in one of them
        out = rollouts(_prompts(FLAT), trainer)
        assert out["env_reward"] == [0.0, 1.0, 0.0, 1.0]
        played = [e.spec.task_id for e in rollouts.stats.episodes[8 * step:]]
        assert played == ["flat-0", "flat-0", "flat-1", "flat-1", "vary-1", "vary-1", "vary-0", "vary-0"]
    rollouts.close()


def test_a_replacement_without_signal_leaves_the_slot_of_its_own_stratum_as_it_was(
        tmp_path, smollm2_tokenizer, monkeypatch):
    trainer, rollouts = _rollouts(tmp_path, smollm2_tokenizer, monkeypatch, budget=2, pool=FLAT + VARY[:1])
    rollouts.strata = {FLAT[0]: "a", FLAT[1]: "b", VARY[0]: "b"}  # stratum a has no other task than flat-0
    out = rollouts(_prompts(FLAT), trainer)
    assert out["env_reward"] == [0.5, 0.5, 0.0, 1.0]  # a: flat-0 drawn again, flat; b: vary-0 takes flat-1's place
    assert [e.spec.task_id for e in rollouts.stats.episodes[4:]] == ["flat-0", "flat-0", "vary-0", "vary-0"]
    rollouts.close()


@pytest.mark.slow
def test_trls_steps_hold_one_task_of_each_type(tmp_path, smollm2_tokenizer, monkeypatch):
    """Drives GRPOTrainer.train for real: its sampler reads our order, and each step plays a bridge question and
    a single-hop one; the replacements of flat groups keep the type."""
    monkeypatch.setattr(grpo._Rollouts, "_generator", lambda self, trainer: _Alternating(smollm2_tokenizer))
    config = TrainConfig(env=[SEARCHQA], env_kwargs={"action_format": "tags"}, output_dir=str(tmp_path / "run"),
                         task_filter={"type": ["bridge", "single-hop"]}, stratify_by="type", group_size=2,
                         groups_per_step=2, steps=3, max_turns=2, max_turn_tokens=8, max_completion_tokens=600,
                         save_steps=100, dynamic_sampling=2, micro_batch=2)
    trainer, rollouts = build_trainer(config, model=tiny_model(smollm2_tokenizer, seed=3), tokenizer=smollm2_tokenizer)
    env = agentgym.make(SEARCHQA).unwrapped
    types = {t.id: t.meta["type"] for t in env.tasks.tasks("train")}
    env.close()
    seen: list[list[str]] = []
    played: list[str] = []

    def recording(prompts, trainer):
        seen.append([types[json.loads(p)["task_id"]] for p in prompts])
        out = rollouts(prompts, trainer)
        played.extend(types[e.spec.task_id] for e in rollouts.stats.episodes)  # the step's (the log drains them)
        resampled.append(rollouts.stats.resampled_groups)
        return out

    resampled: list[int] = []

    trainer.rollout_func = recording  # what TRL calls each step: the prompts its sampler picked
    trainer.train()
    rollouts.close()
    assert len(seen) == 3
    for step in seen:  # two tasks of two rollouts each: one bridge, one single-hop
        assert sorted(set(step[:2]) | set(step[2:])) == ["bridge", "single-hop"] and len(set(step[:2])) == 1
    # "x" and "e" never answer: every group is flat, and each step spends its 2 extra groups, one of each type
    assert len(played) == 3 * 4 * 2 and resampled == [2, 2, 2]
    assert played.count("bridge") == played.count("single-hop")


def test_stratify_by_names_a_meta_key_and_needs_the_env_in_process():
    with pytest.raises(ConfigError, match="stratify_by reads each task's meta"):
        TrainConfig(remote="http://localhost:8000", stratify_by="type")
    config = TrainConfig(env=[SEARCHQA], stratify_by="kind")
    with pytest.raises(ConfigError, match=r"stratify_by='kind': no training task's meta has that key; the meta keys "
                                          r"are .*type"):
        grpo.task_strata(config, grpo.task_specs(config)[:5])
    assert grpo.task_strata(TrainConfig(env=[SEARCHQA]), [TaskSpec(SEARCHQA, task_id="train_0")]) == {}
