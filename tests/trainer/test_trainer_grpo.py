"""GRPO through TRL with our rollouts: exactly zero gradient from observation tokens, learning, remote envs."""

from __future__ import annotations

import json
from typing import ClassVar

import pytest
from helpers.gates import import_or_skip, requires_smollm2, requires_train
from helpers.server_process import serving
from helpers.toy_env import ID, ToyEnv, register
from helpers.trainer_fixtures import tiny_model

from agentgym.errors import RolloutError, ToolError
from agentgym.lm.rollout import TaskSpec
from agentgym.trainer.grpo import TrainConfig, build_trainer, save_final

torch = import_or_skip("torch", "train")
pytestmark = [requires_smollm2, requires_train]


def _toy_trainer(tmp_path, smollm2_tokenizer, model, **overrides):
    register()
    config = TrainConfig(**{"env": [ID], "output_dir": str(tmp_path / "run"), "group_size": 2, "groups_per_step": 2,
                            "steps": 1, "max_turn_tokens": 10, "max_completion_tokens": 200, "learning_rate": 1e-2,
                            "save_steps": 100, **overrides})
    specs = [TaskSpec(ID, task_id=f"toy-{i}") for i in range(4)]
    return build_trainer(config, model=model, tokenizer=smollm2_tokenizer, specs=specs)


def _gradients_by_token(tmp_path, smollm2_tokenizer, **overrides):
    """One real TRL step of the toy env (batch 4, two micro-batches), recording the gradient reaching the final
    hidden state at each position (which feeds only that position's prediction).

    Returns what the rollout function handed TRL, the episodes' own observation masks (1 = model token), and one
    ``(episode, token, gets_gradient)`` triple per completion token, padding included."""
    model = tiny_model(smollm2_tokenizer, seed=1)
    trainer, rollouts = _toy_trainer(tmp_path, smollm2_tokenizer, model, micro_batch=2, **overrides)
    outputs, episode_masks, inputs, grads = [], [], [], []
    original = trainer.rollout_func

    def recording(prompts, trainer_):
        out = original(prompts, trainer_)
        outputs.append(out)
        episode_masks.extend(list(e.mask) for e in rollouts.stats.episodes[-len(prompts):])
        return out

    trainer.rollout_func = recording

    def keep_inputs(module, args, kwargs):
        if torch.is_grad_enabled():
            inputs.append(kwargs["input_ids"].clone())

    def keep_grads(module, args, out):
        if out.requires_grad:
            out.register_hook(lambda g: grads.append(g.detach().clone()))

    model.register_forward_pre_hook(keep_inputs, with_kwargs=True)
    model.model.norm.register_forward_hook(keep_grads)
    trainer.train()
    rollouts.close()

    [out] = outputs
    assert any(0 in m for m in episode_masks) and len(set(out["env_reward"])) > 1
    assert len(inputs) == len(grads) == 2  # two micro-batches of 2
    width = max(len(ids) for ids in out["completion_ids"])  # TRL pads completions to the batch's longest
    tokens = []
    for input_ids, grad in zip(inputs, reversed(grads)):  # backward runs after each forward: same order
        length = input_ids.shape[1]
        for row in range(input_ids.shape[0]):
            completion = input_ids[row, length - width:].tolist()
            # TRL may reorder the batch: find this row's episode by its completion
            [k] = [k for k, ids in enumerate(out["completion_ids"]) if completion[:len(ids)] == ids]
            tokens += [(k, j, bool(torch.count_nonzero(grad[row, length - width - 1 + j]))) for j in range(width)]
    assert {k for k, _, _ in tokens} == {0, 1, 2, 3}
    return out, episode_masks, tokens


def test_observation_tokens_get_exactly_zero_gradient(tmp_path, smollm2_tokenizer):
    """The gradient reaching the final hidden state at each position is exactly zero where the next token is an
    observation or padding token."""
    out, episode_masks, tokens = _gradients_by_token(tmp_path, smollm2_tokenizer)
    assert out["env_mask"] == episode_masks  # the loss mask TRL gets is the observation mask
    model_positions = 0
    for k, j, gets_gradient in tokens:
        mask = out["env_mask"][k]
        if j >= len(mask) or mask[j] == 0:
            assert not gets_gradient, f"observation/padding token {j} of episode {k} got a gradient"
        else:
            model_positions += gets_gradient
    assert model_positions > 0  # and the model's own tokens do get one


def test_without_observation_masking_observation_tokens_get_a_gradient(tmp_path, smollm2_tokenizer):
    """The ablation (mask_observations=False): every token of an episode is in the loss, so the observation tokens
    get a gradient wherever the model's own tokens of that episode do; padding still gets none. The trainer warns,
    and metrics.jsonl records it once."""
    with pytest.warns(UserWarning, match="mask_observations is off"):
        out, episode_masks, tokens = _gradients_by_token(tmp_path, smollm2_tokenizer, mask_observations=False)
    assert out["env_mask"] == [[1] * len(m) for m in episode_masks] != episode_masks
    trained = {k for k, j, gets_gradient in tokens if gets_gradient}
    observations = 0
    for k, j, gets_gradient in tokens:
        if j >= len(episode_masks[k]):
            assert not gets_gradient, f"padding token {j} of episode {k} got a gradient"
        elif episode_masks[k][j] == 0 and k in trained:
            assert gets_gradient, f"observation token {j} of episode {k} got no gradient"
            observations += 1
    assert observations > 0
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["warning"] for r in rows if "warning" in r] == ["observation_masking_off"]
    [step] = [r for r in rows if "warning" not in r]
    assert step["masked_share"] == 0.0  # nothing left out of the loss (no episode failed)


def test_parameters_change_and_metrics_are_logged(tmp_path, smollm2_tokenizer):
    model = tiny_model(smollm2_tokenizer, seed=2)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainer, rollouts = _toy_trainer(tmp_path, smollm2_tokenizer, model, steps=2)
    trainer.train()
    rollouts.close()
    changed = [name for name, p in model.named_parameters() if not torch.equal(before[name], p)]
    assert len(changed) == len(before)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        assert row["turns"] == 2.0 and row["tool_calls"] == 2.0 and row["tool_call_rate"] == 1.0
        assert row["tokens_model"] > 0 and row["tokens_masked"] > 0
        # observation masking on: the share of completion tokens out of the loss is the observations' share
        assert row["masked_share"] == pytest.approx(row["tokens_masked"] / (row["tokens_model"] + row["tokens_masked"]))
        assert 0.0 <= row["reward_mean"] <= 1.0 and row["entropy"] > 0 and row["step_time_s"] > 0
        assert row["reward_mean"] == pytest.approx(row["env_reward"], rel=1e-6)  # TRL's reward is the env's, unchanged
        assert row["no_signal"] is False  # the toy's rewards differ within a group
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert [s["step"] for s in samples] == [1] * 4 + [2] * 4  # log_samples=4 episodes a step
    assert all(len(s["turns"]) == 2 and s["task"].startswith("toy-") and 0 <= s["reward"] <= 1 for s in samples)


@pytest.mark.parametrize(("scheduler", "expected"), [("linear", [1e-2, 2e-2 / 3, 1e-2 / 3]),
                                                     ("constant", [1e-2, 1e-2, 1e-2])])
def test_the_learning_rate_follows_the_chosen_schedule(tmp_path, smollm2_tokenizer, scheduler, expected):
    trainer, rollouts = _toy_trainer(tmp_path, smollm2_tokenizer, tiny_model(smollm2_tokenizer, seed=7), steps=3,
                                     lr_scheduler=scheduler)
    trainer.train()
    rollouts.close()
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["learning_rate"] for r in rows] == pytest.approx(expected)


def test_lora_trains_adapters_only_and_saves_a_merged_model(tmp_path, smollm2_tokenizer):
    from transformers import AutoModelForCausalLM

    model = tiny_model(smollm2_tokenizer, seed=4)
    base = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainer, rollouts = _toy_trainer(tmp_path, smollm2_tokenizer, model, lora=True, lora_r=4, lora_alpha=8, steps=2)
    trainer.train()
    rollouts.close()
    final = save_final(trainer, tmp_path / "final")
    merged = AutoModelForCausalLM.from_pretrained(final)
    assert not any("lora" in name for name, _ in merged.named_parameters())
    changed = [n for n, p in merged.named_parameters() if not torch.equal(base[n], p)]
    assert changed and all("proj" in n for n in changed)  # only the adapted linear layers moved
    assert torch.equal(base["model.embed_tokens.weight"], merged.model.embed_tokens.weight)


def test_a_training_step_against_agentgym_serve(tmp_path, smollm2_tokenizer):
    model = tiny_model(smollm2_tokenizer, seed=3)
    with serving("agentgym/SearchQA-v0") as url:
        config = TrainConfig(env=["agentgym/SearchQA-v0"], remote=url, tasks=4, output_dir=str(tmp_path / "run"),
                             group_size=2, groups_per_step=2, steps=1, max_turns=2, max_turn_tokens=8,
                             max_completion_tokens=300, save_steps=100)
        trainer, rollouts = build_trainer(config, model=model, tokenizer=smollm2_tokenizer)
        trainer.train()
        rollouts.close()
    [row] = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert row["step"] == 1 and row["turns"] == 2.0 and row["tokens_masked"] > 0


def _feed(tmp_path, rows):
    from types import SimpleNamespace

    from agentgym.trainer.callbacks import MetricsLog
    from agentgym.trainer.stats import RolloutStats

    tmp_path.mkdir()
    config = TrainConfig(env=[ID], output_dir=str(tmp_path), collapse_window=3)
    log = MetricsLog(config, RolloutStats(), None)
    for step, (reward, std, entropy) in enumerate(rows, 1):
        log.on_log(None, SimpleNamespace(global_step=step), None,
                   logs={"loss": 0.0, "reward": reward, "reward_std": std, "entropy": entropy})
    return [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]


def test_echo_trap_warning_needs_variance_and_entropy_collapsed_without_success(tmp_path):
    with pytest.warns(RuntimeWarning, match="echo trap"):
        rows = _feed(tmp_path / "trap", [(0.3, 0.4, 1.0), (0.2, 0.0, 0.3), (0.2, 0.0, 0.2), (0.2, 0.0, 0.2)])
    assert rows[-1]["warning"] == "echo_trap" and rows[-1]["step"] == 4
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # every rollout solved: no variance either, but not the trap
        solved = _feed(tmp_path / "solved", [(0.3, 0.4, 1.0), (1.0, 0.0, 0.1), (1.0, 0.0, 0.1), (1.0, 0.0, 0.1)])
        # variance gone but entropy still high: not the trap
        alive = _feed(tmp_path / "alive", [(0.3, 0.4, 1.0), (0.2, 0.0, 0.9), (0.2, 0.0, 0.9), (0.2, 0.0, 0.9)])
    assert not any("warning" in r for r in solved + alive)


class _Reply:
    """A generator that writes the same turn for every row (it stands in for the model, not for our code)."""

    def __init__(self, tokenizer, text: str) -> None:
        self.tokenizer = tokenizer
        self.ids = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        self.threads: list[int] = []  # torch's threads at each generation

    def generate(self, contexts, *, stops, max_new_tokens, seed):
        import torch

        from agentgym.lm.rollout import Turn

        self.threads.append(torch.get_num_threads())
        return [Turn(list(self.ids), ended=True, stopped=False) for _ in contexts]


def test_a_verifier_overrun_is_counted_in_the_step_metrics(tmp_path, smollm2_tokenizer):
    """An answer the verifier cannot finish within its budget scores 0, and the step's metrics say so."""
    import gymnasium as gym

    from agentgym.lm.rollout import ChatGlue, play_episodes
    from agentgym.trainer.grpo import RolloutStats

    data = tmp_path / "test.jsonl"
    data.write_text('{"problem": "Expand it.", "answer": "\\\\{(a+b+c+d+1)^{40}, 1\\\\}"}\n')
    envs = [gym.make("agentgym/MathTool-v0", files={"test": str(data)}, verifier_budget_s=1.0, split="test")
            for _ in range(2)]
    slow, quick = r"<answer>\{(a+b+c+d)^{40}, 1\}</answer>", "<answer>7</answer>"
    glue = ChatGlue(smollm2_tokenizer, style="chat")
    episodes = [play_episodes([env], [TaskSpec("agentgym/MathTool-v0", split="test")], _Reply(smollm2_tokenizer, text),
                              glue, max_turn_tokens=40, max_completion_tokens=200)[0]
                for env, text in zip(envs, (slow, quick))]
    for env in envs:
        env.close()
    assert [e.verifier_over_budget for e in episodes] == [True, False]
    assert all(e.reward == 0.0 and e.error is None for e in episodes)
    assert RolloutStats(episodes=episodes).summary()["verifier_over_budget"] == 0.5


def test_a_step_without_learning_signal_says_so_and_trl_output_goes_to_the_log(tmp_path, smollm2_tokenizer,
                                                                               monkeypatch, capsys):
    """Every rollout writes the same turns: every group's rewards are equal, and the step's console line says
    there was nothing to learn from. TRL's raw metrics dicts and the save's progress bars stay off the console,
    in train.log."""
    from rich.console import Console

    from agentgym.trainer import grpo

    register()
    specs = [TaskSpec(ID, task_id=f"toy-{i}") for i in range(4)]
    monkeypatch.setattr(grpo, "task_specs", lambda config: specs)  # the toy env has no task list
    import torch

    reply = _Reply(smollm2_tokenizer, "Same here.")
    monkeypatch.setattr(grpo._Rollouts, "_generator", lambda self, trainer: reply)
    # the synchronous loop generates at rollout_threads, and trains at threads again
    config = TrainConfig(env=[ID], output_dir=str(tmp_path / "run"), group_size=2, groups_per_step=2, steps=1,
                         max_turn_tokens=10, max_completion_tokens=200, save_steps=100, threads=1,
                         rollout_threads=2)
    console = Console(record=True, width=400)
    grpo.train(config, console=console, model=tiny_model(smollm2_tokenizer, seed=6), tokenizer=smollm2_tokenizer)
    [step] = [line for line in console.export_text().splitlines() if line.startswith("step")]
    assert "no learning signal: every group's rewards were equal" in step
    [row] = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert row["no_signal"] is True and row["trl"]["frac_reward_zero_std"] == 1.0
    out, err = capsys.readouterr()
    assert "'loss'" not in out + console.export_text() and "Writing model shards" not in out + err
    log = (tmp_path / "run" / "train.log").read_text()
    assert "step 1 TRL metrics:" in log and '"frac_reward_zero_std": 1.0' in log
    assert reply.threads and set(reply.threads) == {2} and torch.get_num_threads() == 1


FLAKY = "agentgym-test/FlakyToy-v0"


class _FlakyToy(ToyEnv):
    """The toy env whose final grading raises while ``failures`` lasts (a grader's sandbox, a server going away).
    Scored episodes get 0.5 more than the toy's reward, so a failure counted as 0 would move its group's baseline."""

    failures = 0
    instances: ClassVar[list[_FlakyToy]] = []

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.closed = False
        _FlakyToy.instances.append(self)

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        if terminated and _FlakyToy.failures > 0:
            _FlakyToy.failures -= 1
            raise ToolError("the grader's sandbox could not start")
        return observation, reward + 0.5 * terminated, terminated, truncated, info

    def close(self) -> None:
        self.closed = True
        super().close()


def _flaky_trainer(tmp_path, smollm2_tokenizer, model, *, failures: int):
    import gymnasium as gym

    if FLAKY not in gym.registry:
        gym.register(FLAKY, entry_point=_FlakyToy)
    _FlakyToy.failures, _FlakyToy.instances = failures, []
    config = TrainConfig(env=[FLAKY], output_dir=str(tmp_path / "run"), group_size=3, groups_per_step=2, steps=2,
                         max_turn_tokens=10, max_completion_tokens=200, learning_rate=1e-2, save_steps=100)
    specs = [TaskSpec(FLAKY, task_id=f"toy-{i}") for i in range(4)]
    return build_trainer(config, model=model, tokenizer=smollm2_tokenizer, specs=specs)


def test_a_step_goes_on_past_a_failed_episode(tmp_path, smollm2_tokenizer):
    """A grader failure fails its episode only: reward None to TRL (out of its group's baseline, no advantage), no
    tokens in the loss, counted in the step's metrics, its env replaced; the step and the next one train."""
    model = tiny_model(smollm2_tokenizer, seed=5)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainer, rollouts = _flaky_trainer(tmp_path, smollm2_tokenizer, model, failures=1)
    outputs, scored = [], []
    rollout_func, score = trainer.rollout_func, trainer._generate_and_score_completions
    trainer.rollout_func = lambda prompts, trainer_: outputs.append(rollout_func(prompts, trainer_)) or outputs[-1]
    trainer._generate_and_score_completions = lambda inputs: scored.append(score(inputs)) or scored[-1]
    trainer.train()
    pool = rollouts.envs[FLAKY]
    broken = [env for env in _FlakyToy.instances if env.closed]
    rollouts.close()

    first = outputs[0]
    assert [k for k, r in enumerate(first["env_reward"]) if r is None] == [0]  # the first episode to be graded
    assert set(first["env_mask"][0]) == {0} and any(1 in m for m in first["env_mask"][1:])
    advantages = scored[0]["advantages"].tolist()
    assert advantages[0] == 0.0
    assert advantages[1] + advantages[2] == pytest.approx(0.0, abs=1e-5)  # the baseline is the other two's mean
    assert len(outputs) == 2 and None not in outputs[1]["env_reward"]
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["rollout_errors"] for r in rows] == [1.0, 0.0]
    assert rows[0]["reward_mean"] == pytest.approx(rows[0]["env_reward"], rel=1e-6)  # both over scored episodes
    assert len(broken) == 1 and broken[0] not in pool and len(pool) == 6  # replaced by a fresh env
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert samples[0]["error"] == "ToolError: the grader's sandbox could not start" and samples[0]["reward"] == 0.0
    assert any(not torch.equal(before[n], p) for n, p in model.named_parameters())


def test_a_step_in_which_every_episode_failed_stops_the_run(tmp_path, smollm2_tokenizer):
    trainer, rollouts = _flaky_trainer(tmp_path, smollm2_tokenizer, tiny_model(smollm2_tokenizer), failures=10**6)
    with pytest.raises(RolloutError, match=r"Every episode of this step failed \(6\), e.g. ToolError"):
        trainer.train()
    rollouts.close()
