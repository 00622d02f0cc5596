"""RULER's idea in GRPO: a judge in group mode scores each played group's answers in one call, and the rewards TRL
trains on are the rubric's with those scores; a group the judge cannot score is left out, never trained as 0."""

from __future__ import annotations

import pytest
from helpers.gates import import_or_skip, requires_server, requires_smollm2, requires_train
from helpers.judge_server import judge
from helpers.trainer_fixtures import tiny_model

import agentgym
from agentgym.lm.rollout import TaskSpec
from agentgym.trainer.grpo import TrainConfig, build_trainer

torch = import_or_skip("torch", "train")
pytestmark = [requires_smollm2, requires_train, requires_server]

TASKS = [{"question": f"Say something about {w}.", "answer": w, "split": "train"} for w in ("tea", "rain", "owls")]


def _train(tmp_path, tokenizer, url, env_id, tasks=3):
    judged = agentgym.JudgeRubric(criteria="Is it interesting?", model="j", base_url=url, group=True,
                                  task_key="question")
    rubric = agentgym.Rubric(agentgym.Part("correct", "qa"), agentgym.Part("interesting", judged, weight=3))
    agentgym.register(env_id, agentgym.SingleTurnEnv, tasks=TASKS, verifier=rubric)
    config = TrainConfig(env=[env_id], output_dir=str(tmp_path / "run"), group_size=2, groups_per_step=2, steps=1,
                         max_turn_tokens=6, max_completion_tokens=200, learning_rate=1e-2, save_steps=100)
    specs = [TaskSpec(env_id, task_id=f"train-{i}") for i in range(tasks)]
    trainer, rollouts = build_trainer(config, model=tiny_model(tokenizer, seed=8), tokenizer=tokenizer, specs=specs)
    seen = []
    original = trainer.rollout_func

    def recording(prompts, trainer_):
        out = original(prompts, trainer_)
        seen.append((out, list(rollouts.stats.episodes)))
        return out

    trainer.rollout_func = recording
    try:
        trainer.train()
    finally:
        rollouts.close()
    return seen, judged


def test_each_group_is_judged_in_one_call_and_its_rewards_are_the_rubrics(tmp_path, smollm2_tokenizer):
    def reply(user, answers):  # the longer answer of the group scores 10, the other 0
        longest = max(range(len(answers)), key=lambda k: (len(answers[k]), -k))
        return "SCORES: " + ", ".join("10" if k == longest else "0" for k in range(len(answers)))

    with judge(reply) as (url, requests):
        [(out, episodes)], judge_ = _train(tmp_path, smollm2_tokenizer, url, "byo/GroupJudged-v0")
    assert len(requests) == 2 and all("SCORES:" in r["messages"][1]["content"] for r in requests)  # one per group
    for episode, reward in zip(episodes, out["env_reward"]):
        parts = episode.info["verification"]["parts"]
        assert parts["interesting"]["details"]["group"] == 2
        assert reward == pytest.approx((parts["correct"]["score"] + 3 * parts["interesting"]["score"]) / 4)
    assert sorted(out["env_reward"][:2]) != [out["env_reward"][0]] * 2  # the group has a signal
    assert judge_.stats["calls"] == 2  # no episode asked alone


def test_a_group_the_judge_cannot_score_is_left_out(tmp_path, smollm2_tokenizer):
    def reply(user, answers):  # no verdict on the tea question's group
        return "no idea" if "tea" in user else "SCORES: " + ", ".join("5" for _ in answers)

    with judge(reply) as (url, _):
        [(out, episodes)], _ = _train(tmp_path, smollm2_tokenizer, url, "byo/GroupJudgeFails-v0", tasks=2)
    for episode, reward in zip(episodes, out["env_reward"]):
        if "tea" in episode.prompt:
            assert reward is None and episode.error.startswith("JudgeError")  # out of the baseline, no advantage
        else:
            assert reward is not None and episode.error is None
    assert {e.prompt for e in episodes if e.error} and {e.prompt for e in episodes if not e.error}


def test_after_training_the_judge_asks_alone_again(tmp_path, smollm2_tokenizer):
    """An eval in the same process after training must get a real verdict, never the deferred placeholder."""
    with judge() as (url, requests):
        _, judged = _train(tmp_path, smollm2_tokenizer, url, "byo/GroupJudgeThenEval-v0")
        assert not judged.deferred
        assert judged("Lima", {"question": "Capital of Peru?"}).reward == 0.8
