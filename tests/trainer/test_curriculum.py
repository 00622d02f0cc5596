"""The trainer's curriculum (``curriculum: true``): easy / normal / hard pools by each task's last group reward,
each step's groups drawn from them, replacements from the normal pool, and the state checkpointed and resumed."""

from __future__ import annotations

import dataclasses
import json

import gymnasium as gym
import pytest
from helpers.gates import import_or_skip, requires_smollm2, requires_train
from helpers.toy_env import ToyEnv
from helpers.trainer_fixtures import tiny_model

from agentgym.errors import ConfigError
from agentgym.lm.rollout import Episode, TaskSpec, Turn
from agentgym.trainer.curriculum import STATE_FILE, Curriculum
from agentgym.trainer.grpo import TrainConfig, build_trainer

ID = "agentgym-test/Pools-v0"
EASY = [TaskSpec(ID, task_id=f"easy-{i}") for i in range(2)]
HARD = [TaskSpec(ID, task_id=f"hard-{i}") for i in range(2)]
VARY = [TaskSpec(ID, task_id=f"vary-{i}") for i in range(4)]
ALL = EASY + HARD + VARY


class _Pools(ToyEnv):
    """An ``easy-*`` task scores 1 whatever is written, a ``hard-*`` one 0; a ``vary-*`` one the toy env's reward
    (0 or 1 by what the rollout wrote: a group of two gets both)."""

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        if terminated and not self.task_id.startswith("vary"):
            reward = 1.0 if self.task_id.startswith("easy") else 0.0
            info["verification"] = {"reward": reward, "correct": reward == 1.0, "details": {}}
        return observation, reward, terminated, truncated, info


class _Alternating:
    """Stands in for the model: even rows write "x" (reward 0 on a vary task), odd rows "e" (reward 1)."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.replies = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
                        for t in ("x", "e")]

    def generate(self, contexts, *, stops, max_new_tokens, seed):
        return [Turn(list(self.replies[i % 2]), ended=True, stopped=False) for i in range(len(contexts))]


def _episode(spec: TaskSpec, reward: float, failed: bool = False) -> Episode:
    episode = Episode(spec, prompt_ids=[1])
    episode.reward = reward
    if failed:
        episode.error = "the env raised"
    return episode


# ---- the pools and the draw ----------------------------------------------------------------------------------------

def test_pools_follow_each_tasks_last_group_and_a_failed_group_changes_nothing():
    curriculum = Curriculum(ALL, seed=0)
    assert curriculum.pools()["normal"] == ALL  # nothing played yet: everything may teach
    curriculum.update([_episode(EASY[0], 1.0), _episode(EASY[0], 1.0), _episode(HARD[0], 0.0),
                       _episode(HARD[0], 0.0), _episode(VARY[0], 1.0), _episode(VARY[0], 0.0),
                       _episode(VARY[1], 1.0, failed=True), _episode(VARY[1], 0.0, failed=True)], group_size=2)
    pools = curriculum.pools()
    assert pools["easy"] == [EASY[0]] and pools["hard"] == [HARD[0]] and VARY[0] in pools["normal"]
    assert VARY[1] in pools["normal"]  # an all-failed group: no evidence either way
    curriculum.update([_episode(EASY[0], 1.0), _episode(EASY[0], 0.0)], group_size=2)  # its last group decides
    assert EASY[0] in curriculum.pools()["normal"]


def test_draws_take_the_shares_from_each_pool_and_never_a_task_twice_in_a_step():
    curriculum = Curriculum(ALL, seed=1, easy_share=0.25, hard_share=0.25)
    curriculum.update([_episode(s, 1.0) for s in EASY for _ in range(2)]
                      + [_episode(s, 0.0) for s in HARD for _ in range(2)], group_size=2)
    counts = dict.fromkeys(("easy", "normal", "hard"), 0)
    for _ in range(400):
        step = curriculum.draw(3)
        assert len(set(step)) == 3
        for spec in step:
            counts[curriculum.pool_of(spec)] += 1
    # 1,200 draws: a quarter easy, a quarter hard, a half normal (a pool's draw can fall to another when the step
    # has taken its tasks: the easy and hard pools hold two each)
    assert 0.2 < counts["easy"] / 1200 < 0.3 and 0.2 < counts["hard"] / 1200 < 0.3
    only_normal = Curriculum(ALL, seed=2, easy_share=0.0, hard_share=0.0)
    only_normal.last = dict(curriculum.last)
    assert all(only_normal.pool_of(s) == "normal" for _ in range(50) for s in only_normal.draw(4))
    # the normal pool spent within a step: the draw goes on to the other pools instead of repeating a task
    assert len(set(only_normal.draw(8))) == 8


def test_the_state_round_trips_and_the_next_draws_are_the_same(tmp_path):
    a = Curriculum(ALL, seed=3)
    a.update([_episode(s, 1.0) for s in EASY for _ in range(2)], group_size=2)
    a.draw(2)
    a.save(tmp_path)
    b = Curriculum(ALL, seed=99)
    (tmp_path / "checkpoint-5").mkdir()
    (tmp_path / STATE_FILE).rename(tmp_path / "checkpoint-5" / STATE_FILE)
    assert b.resume(tmp_path, 5) and not b.resume(tmp_path, 6)
    assert b.last == a.last and [a.draw(2) for _ in range(5)] == [b.draw(2) for _ in range(5)]


@pytest.mark.parametrize(("fields", "match"), [
    ({"curriculum_easy_share": 0.7, "curriculum_hard_share": 0.5}, "at most 1"),
    ({"curriculum_hard_at": 0.6, "curriculum_easy_at": 0.5}, "must be below"),
    ({"curriculum_easy_at": 1.5}, r"in \[0, 1\]"),
    ({"curriculum": True, "max_staleness": 1}, "synchronous built-in loop"),
    ({"curriculum": True, "stratify_by": "type"}, "drop stratify_by"),
])
def test_settings_that_cannot_hold_are_refused(fields, match):
    with pytest.raises(ConfigError, match=match):
        TrainConfig(env=["agentgym/MathTool-v0"], **fields)


# ---- in the trainer ------------------------------------------------------------------------------------------------

def _register():
    if ID not in gym.registry:
        gym.register(ID, entry_point=_Pools)


@requires_smollm2
@requires_train
def test_the_trainers_steps_draw_from_the_pools_and_replace_flat_groups_from_the_normal_pool(
        tmp_path, smollm2_tokenizer, monkeypatch):
    import_or_skip("torch", "train")
    from agentgym.trainer import grpo

    _register()
    monkeypatch.setattr(grpo._Rollouts, "_generator", lambda self, trainer: _Alternating(smollm2_tokenizer))
    config = TrainConfig(env=[ID], output_dir=str(tmp_path / "run"), group_size=2, groups_per_step=2, steps=1,
                         max_turn_tokens=10, max_completion_tokens=200, save_steps=100, curriculum=True,
                         curriculum_easy_share=0.0, curriculum_hard_share=0.0, dynamic_sampling=2)
    trainer, rollouts = build_trainer(config, model=tiny_model(smollm2_tokenizer, seed=3),
                                      tokenizer=smollm2_tokenizer, specs=ALL)
    prompts = [json.dumps(dataclasses.asdict(ALL[0])) for _ in range(4)]  # TRL's slots: the curriculum fills them
    try:
        for _ in range(30):  # until every task has been played once (unplayed tasks are normal: drawn in turn)
            out = rollouts(prompts, trainer)
            assert len(out["env_reward"]) == 4
            if len(rollouts.curriculum.last) == len(ALL):
                break
        metrics = rollouts.curriculum.metrics()
        pools = rollouts.curriculum.pools()
        # every task played, each where it belongs
        assert {name: set(specs) for name, specs in pools.items()} == {"easy": set(EASY), "normal": set(VARY),
                                                                       "hard": set(HARD)}
        assert (metrics["curriculum_easy"], metrics["curriculum_normal"], metrics["curriculum_hard"]) == (2, 4, 2)
        rollouts.stats.clear()
        out = rollouts(prompts, trainer)  # now the normal pool alone: the vary tasks, each group with a signal
        assert {e.spec for e in rollouts.stats.episodes} <= set(VARY)
        assert out["env_reward"] == [0.0, 1.0, 0.0, 1.0] and rollouts.stats.resampled_groups == 0
    finally:
        rollouts.close()


def _steps(run) -> list[list[str]]:
    rows = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    by_step: dict[int, list[str]] = {}
    for row in rows:
        by_step.setdefault(row["step"], []).append(row["task"])
    return [by_step[k] for k in sorted(by_step)]


@requires_smollm2
@requires_train
def test_a_resumed_run_draws_as_the_whole_run_and_checkpoints_hold_the_pools(tmp_path, smollm2_tokenizer,
                                                                              monkeypatch):
    import_or_skip("torch", "train")
    from agentgym.trainer import grpo

    _register()
    monkeypatch.setattr(grpo._Rollouts, "_generator", lambda self, trainer: _Alternating(smollm2_tokenizer))

    def run(name: str, steps: int, resume: bool = False) -> None:
        config = TrainConfig(env=[ID], output_dir=str(tmp_path / name), group_size=2, groups_per_step=2,
                             steps=steps, max_turn_tokens=10, max_completion_tokens=200, save_steps=1,
                             curriculum=True, log_samples=100, resume=resume, learning_rate=1e-3)
        trainer, rollouts = build_trainer(config, model=tiny_model(smollm2_tokenizer, seed=4),
                                          tokenizer=smollm2_tokenizer, specs=ALL)
        try:
            trainer.train(resume_from_checkpoint=grpo._last_checkpoint(tmp_path / name) if resume else None)
        finally:
            rollouts.close()

    run("whole", 4)
    run("parts", 2)
    state = json.loads((tmp_path / "parts" / "checkpoint-2" / STATE_FILE).read_text())
    assert len(state["last"]) >= 2 and sum(state["drawn"].values()) == 4
    run("parts", 4, resume=True)
    whole, parts = _steps(tmp_path / "whole"), _steps(tmp_path / "parts")
    assert len(whole) == 4 and parts == whole  # steps 3 and 4 drew the tasks the uninterrupted run drew
    rows = [json.loads(line) for line in (tmp_path / "whole" / "metrics.jsonl").read_text().splitlines()]
    assert all(sum(r[f"curriculum_drawn_{p}"] for p in ("easy", "normal", "hard")) == 2 for r in rows)
