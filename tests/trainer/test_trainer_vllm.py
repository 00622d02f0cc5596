"""The vLLM generation backend.

vLLM needs a CUDA GPU, so CI checks what is ours around it: how turns are requested (rows grouped by
stop strings, one seed per row), cut and masked, and how the sampler's log-probabilities line up with the
completion for TRL's importance-sampling correction. The engine here is a scripted stand-in for TRL's
``VLLMClient`` that answers with fixed token ids; the real engine runs in the ``gpu`` test.
"""

from __future__ import annotations

import importlib.util
import json
import math

import gymnasium as gym
import pytest
from helpers.gates import requires_smollm2, requires_train
from helpers.toy_env import ID, register

from agentgym.errors import ConfigError, DependencyNotInstalled
from agentgym.lm.rollout import ChatGlue, TaskSpec, play_episodes
from agentgym.lm.vllm import VLLMGenerator
from agentgym.trainer.grpo import TrainConfig, _logprobs, build_trainer

pytestmark = [requires_smollm2, requires_train]


class ScriptedClient:
    """Answers every prompt with ``reply`` (tokenized), log-probability -(i+1)/10 for token i, as VLLMClient does."""

    def __init__(self, tokenizer, reply: str) -> None:
        self.ids = tokenizer(reply, add_special_tokens=False)["input_ids"]
        self.calls: list[dict] = []

    def generate(self, *, prompts, n, temperature, top_p, top_k, max_tokens, logprobs, generation_kwargs):
        self.calls.append({"prompts": prompts, "n": n, "temperature": temperature, "max_tokens": max_tokens,
                           "logprobs": logprobs, **generation_kwargs})
        ids = self.ids[:max_tokens]
        return {"prompt_ids": prompts, "completion_ids": [list(ids) for _ in prompts],
                "logprobs": [[[-(i + 1) / 10] for i in range(len(ids))] for _ in prompts]}


def test_rows_are_grouped_by_stop_strings_and_cut_there(smollm2_tokenizer):
    client = ScriptedClient(smollm2_tokenizer, "Let me look. <search> tea </search> and more words")
    generator = VLLMGenerator(smollm2_tokenizer, client=client, temperature=0.7, top_p=0.9)
    turns = generator.generate([[1, 2], [3], [4, 5, 6]], stops=[["</search>"], [], ["</search>"]],
                               max_new_tokens=40, seed=0)
    assert [c["prompts"] for c in client.calls] == [[[1, 2], [4, 5, 6]], [[3]]]
    assert client.calls[0]["stop"] == ["</search>"] and client.calls[1]["stop"] is None
    assert all(c["include_stop_str_in_output"] and c["logprobs"] == 0 and c["n"] == 1 for c in client.calls)
    assert client.calls[0]["temperature"] == 0.7 and client.calls[0]["max_tokens"] == 40
    for row in (0, 2):
        text = smollm2_tokenizer.decode(turns[row].ids)
        assert text.endswith("</search>") and turns[row].stopped and not turns[row].ended
        assert turns[row].logprobs == [-(i + 1) / 10 for i in range(len(turns[row].ids))]
    assert smollm2_tokenizer.decode(turns[1].ids).endswith("more words") and not turns[1].stopped
    assert len(turns[1].logprobs) == len(turns[1].ids) == len(client.ids)


def test_episode_logprobs_line_up_with_the_completion(smollm2_tokenizer):
    """Model tokens carry the sampler's log-probabilities, observation and glue tokens 0.0: TRL gets one per token."""
    register()
    client = ScriptedClient(smollm2_tokenizer, "some words here<|im_end|>")
    generator = VLLMGenerator(smollm2_tokenizer, client=client)
    glue = ChatGlue(smollm2_tokenizer, style="chat")
    episodes = play_episodes([gym.make(ID, turns=3) for _ in range(2)], [TaskSpec(ID)] * 2, generator, glue,
                             max_turn_tokens=20, max_completion_tokens=400)
    turn = client.ids  # ends with the end-of-turn token, so the glue adds none
    for episode in episodes:
        assert episode.turns == 3 and len(episode.logprobs) == len(episode.completion_ids)
        model = [lp for lp, m in zip(episode.logprobs, episode.mask) if m == 1]
        assert model == [-(i + 1) / 10 for i in range(len(turn))] * 3
        assert all(lp == 0.0 for lp, m in zip(episode.logprobs, episode.mask) if m == 0)
        assert episode.tokens_masked > 0
    assert _logprobs(episodes) == [e.logprobs for e in episodes]
    # observation masking off (the ablation): observation tokens are in the loss but were never sampled, so they
    # carry NaN, which TRL's importance-sampling correction leaves uncorrected (ratio 1), not a made-up 0.0
    unmasked = _logprobs(episodes, mask_observations=False)
    for episode, logprobs in zip(episodes, unmasked):
        assert [lp for lp, m in zip(logprobs, episode.mask) if m] == [lp for lp, m in zip(episode.logprobs,
                                                                                         episode.mask) if m]
        assert all(math.isnan(lp) for lp, m in zip(logprobs, episode.mask) if not m)
    episodes[1].logprobs = None  # a backend without log-probabilities: TRL gets None, not a partial list
    assert _logprobs(episodes) is None


def test_generator_needs_exactly_one_engine(smollm2_tokenizer):
    with pytest.raises(ConfigError, match="exactly one engine"):
        VLLMGenerator(smollm2_tokenizer)


def test_vllm_backend_errors_say_what_to_do(tmp_path, smollm2_tokenizer):
    with pytest.raises(ConfigError, match="backend must be one of 'transformers', 'vllm', got 'sglang'"):
        TrainConfig(backend="sglang")
    with pytest.raises(ConfigError, match="vllm_mode must be one of 'colocate', 'server', got 'remote'"):
        TrainConfig(vllm_mode="remote")
    with pytest.raises(ConfigError, match="vllm_server_url is for backend='vllm' with vllm_mode='server'"):
        TrainConfig(backend="vllm", vllm_server_url="http://localhost:8000")
    TrainConfig(backend="vllm", vllm_mode="server", vllm_server_url="http://localhost:8000")
    if importlib.util.find_spec("vllm") is None:
        with pytest.raises(DependencyNotInstalled, match=r"agentgym-suite\[vllm\]"):
            build_trainer(TrainConfig(env=[ID], backend="vllm", output_dir=str(tmp_path)), specs=[TaskSpec(ID)])


@pytest.mark.gpu
def test_a_grpo_step_on_vllm_colocate(tmp_path):
    """The real engine: TRL builds vLLM beside the trainer, our rollouts sample from it (logprobs included)."""
    import torch

    from agentgym.lm.local import load_for_training, resolve_model

    model, tokenizer = load_for_training(resolve_model("smollm2"))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    config = TrainConfig(env=["agentgym/SearchQA-v0"], env_kwargs={"reward_metric": "f1"}, backend="vllm",
                         output_dir=str(tmp_path / "run"), group_size=4, groups_per_step=2, steps=2,
                         max_turns=2, max_turn_tokens=48, max_completion_tokens=512, learning_rate=1e-5,
                         save_steps=100)
    trainer, rollouts = build_trainer(config, model=model.cuda(), tokenizer=tokenizer)
    try:
        trainer.train()
    finally:
        rollouts.close()
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and all(r["tokens_model"] > 0 for r in rows)
    assert any(not torch.equal(before[n], p.detach().cpu()) for n, p in model.named_parameters())


def test_the_vllm_generator_moved_to_lm_with_a_warning():
    """``agentgym.trainer.vllm_backend`` (its first home) keeps working for one release, with a warning."""
    import importlib
    import sys

    from agentgym.lm import vllm

    sys.modules.pop("agentgym.trainer.vllm_backend", None)
    with pytest.warns(DeprecationWarning, match="agentgym.trainer.vllm_backend moved to agentgym.lm.vllm"):
        old = importlib.import_module("agentgym.trainer.vllm_backend")
    assert old.VLLMGenerator is vllm.VLLMGenerator and old.VLLM_INSTALL == vllm.VLLM_INSTALL
