"""Asynchronous GRPO (max_staleness > 0): the bound on staleness (queued and in flight), the importance cap in TRL's
loss, group integrity, the step metrics, and resuming with a queue."""

from __future__ import annotations

import json
import threading
import time

import pytest
from helpers.gates import import_or_skip, requires_smollm2, requires_train
from helpers.toy_env import ID, register
from helpers.trainer_fixtures import tiny_model

from agentgym.errors import ConfigError
from agentgym.lm.rollout import Episode, TaskSpec, TransformersGenerator
from agentgym.trainer.groups import check_group, check_group_estimator, group_advantages
from agentgym.trainer.grpo import TrainConfig, build_trainer

torch = import_or_skip("torch", "train")
pytestmark = [requires_smollm2, requires_train]
ASYNC_KEYS = {"staleness_mean", "staleness_max", "groups_in_flight", "groups_queued", "dropped_stale",
              "dropped_failed", "learner_idle_s", "rollout_idle_s", "rollout_tokens_per_s", "learner_tokens_per_s"}


def _trainer(tmp_path, tokenizer, model, **overrides):
    register()
    config = TrainConfig(**{"env": [ID], "output_dir": str(tmp_path / "run"), "group_size": 2, "groups_per_step": 2,
                            "steps": 3, "max_turn_tokens": 10, "max_completion_tokens": 200, "learning_rate": 1e-2,
                            "save_steps": 100, "max_staleness": 1, **overrides})
    specs = [TaskSpec(ID, task_id=f"toy-{i}") for i in range(4)]
    return build_trainer(config, model=model, tokenizer=tokenizer, specs=specs)


def _rows(tmp_path):
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


# group integrity --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_our_group_estimator_passes_the_conformance_test(scale):
    check_group_estimator(lambda rewards, ids: group_advantages(rewards, ids, scale))


def test_the_conformance_test_catches_the_estimators_that_bit_other_trainers():
    # a failed member counted as reward 0 votes in the baseline (NeMo RL's [0.5, -0.5, -0.5])
    with pytest.raises(AssertionError, match="case 1"):
        check_group_estimator(lambda r, ids: group_advantages([0.0 if x is None else x for x in r], ids, "none"))
    # a failed member left out of the baseline but its place kept in the mean's count
    with pytest.raises(AssertionError, match="case 1"):
        check_group_estimator(lambda r, ids: [0.0 if x is None else x - sum(y or 0 for y in r) / len(r) for x in r])
    # groups by content (the same prompt at two seeds merged into one group)
    with pytest.raises(AssertionError, match="case 3"):
        check_group_estimator(lambda r, ids: group_advantages(r, ["same prompt"] * len(r), "none"))
    # groups by position (consecutive pairs) instead of by id
    with pytest.raises(AssertionError, match="case 2"):
        check_group_estimator(lambda r, ids: group_advantages(r, [ids[0] if len(set(ids)) == 1 else k // 2
                                                                  for k in range(len(r))], "none"))


def test_a_group_must_share_task_and_seed():
    a, b = TaskSpec(ID, task_id="toy-0"), TaskSpec(ID, task_id="toy-0", seed=1)
    check_group([Episode(spec=a, prompt_ids=[]), Episode(spec=a, prompt_ids=[])])
    with pytest.raises(ValueError, match="share task and seed"):
        check_group([Episode(spec=a, prompt_ids=[]), Episode(spec=b, prompt_ids=[])])


# configuration ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("overrides", "message"), [
    ({"max_staleness": -1}, "max_staleness must be >= 0"),
    ({"importance_cap": 1.1}, "importance_cap"),
    ({"max_staleness": 1, "backend": "vllm"}, "transformers backend"),
    ({"max_staleness": 1, "rollout_workers": 2, "agent": "examples/agents/openai_agent.py:agent"},
     "drop --rollout-workers"),
    ({"rollout_workers": 2}, "pass --max-staleness K"),
    ({"max_staleness": 1, "rollout_workers": -1}, "rollout_workers must be >= 0"),
    ({"max_staleness": 1, "ray": "auto"}, "pass --rollout-workers N"),
])
def test_async_settings_are_checked(overrides, message):
    with pytest.raises(ConfigError, match=message):
        TrainConfig(**overrides)


# the pipeline in a run --------------------------------------------------------------------------------------------

def test_an_async_run_trains_within_the_bound_and_reports_the_pipeline(tmp_path, smollm2_tokenizer):
    model = tiny_model(smollm2_tokenizer, seed=11)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainer, rollouts = _trainer(tmp_path, smollm2_tokenizer, model, steps=4)
    scored = []
    score = trainer._generate_and_score_completions
    trainer._generate_and_score_completions = lambda inputs: scored.append(score(inputs)) or scored[-1]
    trainer.train()
    rollouts.close()
    assert any(not torch.equal(before[n], p) for n, p in model.named_parameters())
    rows = _rows(tmp_path)
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    for row in rows:
        assert ASYNC_KEYS <= set(row), ASYNC_KEYS - set(row)
        assert 0 <= row["staleness_mean"] <= row["staleness_max"] <= 1
        assert row["rollout_tokens_per_s"] > 0 and row["learner_tokens_per_s"] > 0 and row["learner_idle_s"] >= 0
    from agentgym.trainer.callbacks import MetricsLog

    line = MetricsLog(rollouts.config, rollouts.stats, None)._line(rows[-1])  # the console's line of the step
    assert "staleness" in line and "dropped stale" in line and "learner idle" in line
    # the worker plays ahead: once it has, a step trains groups sampled one version back
    assert max(r["staleness_max"] for r in rows) == 1
    # the old log-probabilities of the loss are the sampler's (recorded), not a fresh pass of the learner
    for out in scored:
        mask = out["completion_mask"].bool() & out["tool_mask"].bool()  # the model's own tokens
        assert mask.any() and torch.count_nonzero(out["old_per_token_logps"][mask]) == mask.sum()
    summary = json.loads((tmp_path / "run" / "pipeline.json").read_text())
    played = summary["groups_left_queued"] + summary["groups_left_in_flight"]
    assert summary["next_group"] == 8 and played <= 2 * 2  # at most K + 1 batches ahead, each counted


def _played_groups(rollouts, model, n, version=0):
    """``n`` groups played for real by the toy env with the tiny model (as the worker plays them)."""
    from agentgym.trainer.pipeline import Group

    pipeline = rollouts.pipeline
    generator = TransformersGenerator(model, rollouts.tokenizer, logprobs=True)
    size = rollouts.config.group_size
    specs = [pipeline.spec(k) for k in range(n) for _ in range(size)]
    with torch.no_grad():
        episodes = rollouts._play(specs, generator)
    return [Group(k, episodes[k * size:(k + 1) * size], version) for k in range(n)]


def test_a_queued_group_past_the_bound_is_dropped_and_counted(tmp_path, smollm2_tokenizer):
    import copy

    model = tiny_model(smollm2_tokenizer, seed=12)
    _, rollouts = _trainer(tmp_path, smollm2_tokenizer, model, max_staleness=1)
    pipeline = rollouts.pipeline
    stale, fresh = _played_groups(rollouts, copy.deepcopy(model), 2, version=0)
    fresh.version = 2
    pipeline.step = 3  # the learner is at step 3: version 0 is 3 steps old (> 1), version 2 one step
    pipeline.queue.extend([stale, fresh])
    [taken] = pipeline.take(1)
    assert taken is fresh
    extra = rollouts.stats.extra
    assert extra["dropped_stale_queued"] == 1.0 and extra["dropped_stale"] == 1.0 and extra["staleness_max"] == 1.0
    assert pipeline.dropped == 1  # the worker may start one more group in its place
    rollouts.close()


def test_a_group_in_flight_past_the_bound_is_cancelled_not_trained(tmp_path, smollm2_tokenizer):
    """A batch whose weights fall more than K versions behind while it plays stops at its next turn: counted as
    dropped in flight, never queued."""
    register()
    model = tiny_model(smollm2_tokenizer, seed=13)
    _, rollouts = _trainer(tmp_path, smollm2_tokenizer, model, max_staleness=1,
                           env_kwargs={"turns": 40}, max_completion_tokens=4000, max_turn_tokens=4)
    pipeline = rollouts.pipeline
    gate = threading.Event()
    original = pipeline._play

    def announced(worker, first, version, weights):
        gate.set()  # the batch is in flight
        return original(worker, first, version, weights)

    pipeline._play = announced
    pipeline.start(model, 0, 0)
    assert gate.wait(120)
    pipeline.publish(model, 2)  # two optimizer steps later: version 0 is past the bound of 1
    deadline = time.monotonic() + 120
    while pipeline.counts.total["dropped_stale_in_flight"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    summary = pipeline.close()
    assert summary["dropped_stale_in_flight"] >= 2  # the whole batch of 2 groups
    assert all(g.version >= 1 for g in pipeline.queue)  # nothing of version 0 was queued
    rollouts.close()


def test_a_worker_failure_stops_the_learner_with_its_reason(tmp_path, smollm2_tokenizer):
    from agentgym.errors import RolloutError

    model = tiny_model(smollm2_tokenizer, seed=14)
    trainer, rollouts = _trainer(tmp_path, smollm2_tokenizer, model)

    def broken(*args, **kwargs):
        raise RuntimeError("the generator broke")

    rollouts._play = broken
    with pytest.raises(RolloutError, match="rollout worker stopped: the generator broke"):
        trainer.train()
    rollouts.close()


# the importance cap -----------------------------------------------------------------------------------------------

def test_the_importance_ratio_of_a_stale_group_is_truncated_at_the_cap(tmp_path, smollm2_tokenizer):
    """TRL's loss on a group whose sampler gave every token e^-5 of the learner's probability, all advantages -1:
    unclipped the ratio would be e^5 (loss ~148); truncated it is the cap, so the loss is the cap. A fresh group
    (old log-probs = the learner's) has ratio 1: loss 1."""
    model = tiny_model(smollm2_tokenizer, seed=15)
    losses = {}
    for cap in (2.0, 4.0):
        trainer, rollouts = _trainer(tmp_path / str(cap), smollm2_tokenizer, model, importance_cap=cap, steps=1)
        trainer.train()  # one real step: the worker plays, the learner takes; then score a batch by hand
        pipeline = rollouts.pipeline
        inputs = [{"prompt": "{}"}] * 4
        pipeline.step = trainer.state.global_step
        batch = trainer._generate_and_score_completions(inputs)
        rollouts.close()
        batch["advantages"] = -torch.ones_like(batch["advantages"])
        with torch.no_grad():
            fresh = trainer._get_per_token_logps_and_entropies(
                trainer.model, torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1),
                torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1), batch["completion_ids"].size(1))[0]
        batch["old_per_token_logps"] = fresh.detach() - 5.0
        with torch.no_grad():
            losses[cap] = float(trainer.compute_loss(trainer.model, dict(batch)))
        batch["old_per_token_logps"] = fresh.detach()
        with torch.no_grad():
            losses[f"fresh-{cap}"] = float(trainer.compute_loss(trainer.model, dict(batch)))
    assert losses[2.0] == pytest.approx(2.0, rel=1e-3) and losses[4.0] == pytest.approx(4.0, rel=1e-3)
    assert losses["fresh-2.0"] == pytest.approx(1.0, rel=1e-3)


# resuming ---------------------------------------------------------------------------------------------------------

def test_a_resumed_async_run_trains_no_group_twice_and_counts_what_it_left(tmp_path, smollm2_tokenizer):
    from agentgym.trainer.grpo import _last_checkpoint

    model = tiny_model(smollm2_tokenizer, seed=16)
    trainer, rollouts = _trainer(tmp_path, smollm2_tokenizer, model, steps=2, save_steps=2)
    trainer.train()
    rollouts.close()
    first = json.loads((tmp_path / "run" / "pipeline.json").read_text())
    state = json.loads((tmp_path / "run" / "checkpoint-2" / "agentgym_async.json").read_text())
    assert state["next_group"] == first["next_group"] == 4 == len(first["trained_groups"])
    trainer, rollouts = _trainer(tmp_path, smollm2_tokenizer, tiny_model(smollm2_tokenizer, seed=16), steps=3,
                                 save_steps=2, resume=True)
    trainer.train(resume_from_checkpoint=_last_checkpoint(tmp_path / "run"))
    rollouts.close()
    second = json.loads((tmp_path / "run" / "pipeline.json").read_text())
    assert first["trained_groups"] == [0, 1, 2, 3] and second["trained_groups"] == [4, 5]


def test_the_worker_plays_at_its_own_thread_count_and_the_learner_keeps_its_own(tmp_path, smollm2_tokenizer):
    from agentgym.trainer.rollout_worker import ThreadWorker

    seen = []
    original = ThreadWorker.play

    def recording(self, *args):
        seen.append(torch.get_num_threads())
        return original(self, *args)

    before = torch.get_num_threads()
    model = tiny_model(smollm2_tokenizer, seed=17)
    trainer, rollouts = _trainer(tmp_path, smollm2_tokenizer, model, threads=2, rollout_threads=1, steps=1)
    ThreadWorker.play = recording
    try:
        trainer.train()
        learner = torch.get_num_threads()
    finally:
        ThreadWorker.play = original
        rollouts.close()
        torch.set_num_threads(before)
    assert seen and set(seen) == {1} and learner == 2


def test_an_async_agent_run_trains_the_gateways_recorded_tokens_within_the_bound(tmp_path, smollm2_tokenizer):
    """train --agent with --max-staleness 1: the agents play on the worker's gateway (its policy copy) while the
    learner trains; every row TRL trains is the gateway's recorded ids (the fidelity check: 0 mismatches), groups
    keyed by id, none trained twice, nothing staler than the bound."""
    from pathlib import Path

    agents = Path(__file__).resolve().parents[1] / "helpers" / "train_agents.py"
    env = "agentgym/MathTool-v0"
    config = TrainConfig(env=[env], output_dir=str(tmp_path / "run"), group_size=2, groups_per_step=2, steps=3,
                         max_turn_tokens=6, max_completion_tokens=400, learning_rate=1e-2, save_steps=100,
                         agent=f"{agents}:two_turns", temperature=1.0, max_staleness=1)
    specs = [TaskSpec(env, task_id=f"gsm8k-train-{i:05d}") for i in range(4)]
    model = tiny_model(smollm2_tokenizer, seed=18)
    before = [p.detach().clone() for p in model.parameters()]
    trainer, rollouts = build_trainer(config, model=model, tokenizer=smollm2_tokenizer, specs=specs)
    try:
        trainer.train()
        served = rollouts.gateway.engine.generator.model
    finally:
        rollouts.close()
    assert served is rollouts.pipeline.workers[0].model and served is not model  # the worker's copy, not the learner
    rows = _rows(tmp_path)
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert all(r["token_mismatches"] == 0.0 and r["samples"] == 4 and r["agent_errors"] == 0 for r in rows)
    assert all(r["staleness_max"] <= 1 for r in rows) and ASYNC_KEYS <= set(rows[-1])
    summary = json.loads((tmp_path / "run" / "pipeline.json").read_text())
    assert len(summary["trained_groups"]) == len(set(summary["trained_groups"])) == 6
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


# the same work as the synchronous loop ----------------------------------------------------------------------------

def _trl_tasks(trainer, passes):
    """The tasks TRL's own sampler hands the synchronous loop, step after step, over ``passes`` passes (TRL draws a
    pass, its ``RepeatSampler`` iterated once, per epoch)."""
    sampler = trainer._get_train_sampler()
    size, per_step = trainer.num_generations, sampler.batch_size
    block = per_step * size * sampler.repeat_count  # a step's indexes: its tasks, each group_size times, repeated
    tasks = []
    for _ in range(passes):
        indexes = list(sampler)
        for start in range(0, len(indexes), block):
            tasks += [TaskSpec(**json.loads(trainer.train_dataset[i]["prompt"]))
                      for i in indexes[start:start + per_step * size:size]]
    return tasks


def test_the_async_worker_plays_the_tasks_trl_hands_the_synchronous_loop(tmp_path, smollm2_tokenizer):
    """The two sides do the same work: the pipeline's groups are the tasks of TRL's own sampler, step for step, over
    three passes (a new permutation each, the incomplete last step left out), which TRL's training loop plays over 5
    steps, and the first step's episodes are the synchronous loop's, token for token (the same weights, tasks and
    sampling seed)."""
    register()
    specs = [TaskSpec(ID, task_id=f"toy-{i}") for i in range(5)]  # 2 groups a step: each pass leaves one task out
    base = {"env": [ID], "group_size": 2, "groups_per_step": 2, "max_turn_tokens": 10,
            "max_completion_tokens": 200, "learning_rate": 1e-2, "save_steps": 100, "temperature": 1.0,
            "precision": "float32", "threads": 1, "log_samples": 4}
    runs = {}
    for side, overrides in (("sync", {"steps": 5}), ("async", {"max_staleness": 1, "steps": 1})):
        config = TrainConfig(**base, **overrides, output_dir=str(tmp_path / side))
        runs[side] = build_trainer(config, model=tiny_model(smollm2_tokenizer, seed=3), tokenizer=smollm2_tokenizer,
                                   specs=list(specs))
    sync_trainer, async_rollouts = runs["sync"][0], runs["async"][1]
    trl = _trl_tasks(sync_trainer, passes=3)
    assert len(trl) == 3 * 4 and len(set(map(tuple, [trl[:4], trl[4:8], trl[8:]]))) == 3  # a new order each pass
    assert [async_rollouts.pipeline.spec(k) for k in range(len(trl))] == trl

    samples = {}
    for side, (trainer, rollouts) in runs.items():
        trainer.train()
        rollouts.close()
        samples[side] = [json.loads(line) for line in (tmp_path / side / "samples.jsonl").read_text().splitlines()]
    # TRL's training loop over 2.5 passes played those tasks, step for step
    assert [s["task"] for s in samples["sync"]] == [s.task_id for s in trl[:10] for _ in range(2)]
    first = [s for s in samples["sync"] if s["step"] == 1]
    assert samples["async"] == first and any(s["turns"] for s in first)
