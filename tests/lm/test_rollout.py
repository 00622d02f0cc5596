"""Episodes at token level: what the model wrote is masked in exactly, everything else is masked out."""

from __future__ import annotations

import os
import threading

import gymnasium as gym
import pytest
from helpers.gates import requires_smollm2
from helpers.toy_env import ID, OBSERVATION, register
from helpers.trainer_fixtures import tiny_model

import agentgym  # noqa: F401 - registers the ids
from agentgym.errors import ConfigError, RemoteEnvError, ToolError
from agentgym.lm.rollout import ChatGlue, TaskSpec, TransformersGenerator, default_env_threads, play_episodes

pytestmark = requires_smollm2


def _spans(mask):
    """(start, end, value) runs of the mask."""
    out, start = [], 0
    for i in range(1, len(mask) + 1):
        if i == len(mask) or mask[i] != mask[start]:
            out.append((start, i, mask[start]))
            start = i
    return out


def _check(episode, tok, glue):
    ids, mask = episode.completion_ids, episode.mask
    assert len(ids) == len(mask)
    model_spans = [ids[a:b] for a, b, v in _spans(mask) if v == 1]
    # the masked-in tokens are exactly the model's turns, which decode to the texts the env received
    assert [t for span in model_spans for t in span] == [t for turn in episode.model_turns for t in turn]
    assert [tok.decode(t, skip_special_tokens=True) for t in episode.model_turns] == episode.model_texts
    assert sum(mask) == sum(len(t) for t in episode.model_turns)
    # nothing but model turns is masked in: every other token is observation or template glue
    assert episode.tokens_masked == len(ids) - sum(len(t) for t in episode.model_turns)
    # the prompt is the template's rendering of the env's first observation, tokenized once
    assert episode.prompt_ids == glue.prompt_ids("Write a few words.")


@pytest.mark.parametrize("style", ["append", "chat"])
def test_masks_in_exactly_the_models_tokens(smollm2_tokenizer, style):
    register()
    glue = ChatGlue(smollm2_tokenizer, style=style)
    envs = [gym.make(ID, turns=3) for _ in range(4)]
    specs = [TaskSpec(ID, task_id=f"toy-{i // 2}") for i in range(4)]
    episodes = play_episodes(envs, specs, TransformersGenerator(tiny_model(smollm2_tokenizer), smollm2_tokenizer), glue,
                             max_turn_tokens=12, max_completion_tokens=400, seed=1)
    for episode in episodes:
        assert episode.terminated and episode.turns == 3
        _check(episode, smollm2_tokenizer, glue)
        masked = [t for t, m in zip(episode.completion_ids, episode.mask) if m == 0]
        text = smollm2_tokenizer.decode(masked)
        assert text.count(OBSERVATION) == 2  # both observations, whole, in the masked-out tokens
        # the observation's "<|im_end|>" is text, not the end-of-turn token
        literal = smollm2_tokenizer(OBSERVATION, add_special_tokens=False, split_special_tokens=True)["input_ids"]
        assert smollm2_tokenizer.eos_token_id not in literal
        assert _contains(masked, literal)
    assert episodes[0].task_id == episodes[1].task_id == "toy-0"


def _contains(haystack, needle):
    return any(haystack[i:i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1))


def test_chat_style_closes_a_cut_turn_and_opens_a_tool_message(smollm2_tokenizer):
    """A turn cut by the token limit gets the end-of-turn token (masked out) before the next message."""
    register()
    glue = ChatGlue(smollm2_tokenizer, style="chat")
    assert glue.messages["tool"][0] == "<|im_start|>tool\n" and glue.messages["user"][0] == "<|im_start|>user\n"
    env = gym.make(ID, turns=2)
    [episode] = play_episodes([env], [TaskSpec(ID)], TransformersGenerator(tiny_model(smollm2_tokenizer), smollm2_tokenizer), glue,
                              max_turn_tokens=6, max_completion_tokens=400, seed=3)
    first = episode.model_turns[0]
    after = episode.completion_ids[len(first):]
    eos = smollm2_tokenizer.eos_token_id
    if first[-1] == eos:  # the model ended the turn itself: only the newline and the tool message follow
        assert smollm2_tokenizer.decode(after[:4]).startswith("\n<|im_start|>user")
    else:
        assert after[0] == eos and episode.mask[len(first)] == 0
        assert smollm2_tokenizer.decode(after[:5]).startswith("<|im_end|>\n<|im_start|>user")
    rendered = smollm2_tokenizer.decode(episode.completion_ids)
    # the toy env's format is plain text: its observation is a user turn, as the eval policies send it
    assert "<|im_start|>user\n" + OBSERVATION + "<|im_end|>\n<|im_start|>assistant\n" in rendered


def test_chat_style_answers_function_calls_with_a_tool_message(smollm2_tokenizer):
    register()
    glue = ChatGlue(smollm2_tokenizer, style="chat")
    [episode] = play_episodes([gym.make(ID, turns=2, fmt="hermes")], [TaskSpec(ID)],
                              TransformersGenerator(tiny_model(smollm2_tokenizer), smollm2_tokenizer), glue,
                              max_turn_tokens=6, max_completion_tokens=400, seed=3)
    rendered = smollm2_tokenizer.decode(episode.completion_ids)
    assert "<|im_start|>tool\n" + OBSERVATION + "<|im_end|>\n<|im_start|>assistant\n" in rendered


def test_a_real_env_in_append_style_keeps_its_observation_text(smollm2_tokenizer):
    """SearchQA, Search-R1 style: the env's <information> block continues the assistant turn, masked out."""
    glue = ChatGlue(smollm2_tokenizer, style="append")
    env = gym.make("agentgym/SearchQA-v0", split="train", max_turns=2)
    generator = TransformersGenerator(tiny_model(smollm2_tokenizer), smollm2_tokenizer)
    [episode] = play_episodes([env], [TaskSpec("agentgym/SearchQA-v0", split="train", index=0)], generator, glue,
                              max_turn_tokens=8, max_completion_tokens=300)
    _check_text = smollm2_tokenizer.decode([t for t, m in zip(episode.completion_ids, episode.mask) if m == 0])
    assert "No valid action found" in _check_text  # the random model's turn was a format error, fed back
    assert episode.turns == 2 and episode.truncated and episode.reward == 0.0
    assert episode.task_id == env.unwrapped.tasks.tasks("train")[0].id


def test_budget_ends_an_episode_without_reward(smollm2_tokenizer):
    register()
    glue = ChatGlue(smollm2_tokenizer, style="chat")
    [episode] = play_episodes([gym.make(ID, turns=50)], [TaskSpec(ID)],
                              TransformersGenerator(tiny_model(smollm2_tokenizer), smollm2_tokenizer), glue,
                              max_turn_tokens=8, max_completion_tokens=60)
    assert episode.over_budget and episode.truncated and episode.reward == 0.0
    assert len(episode.completion_ids) <= 60


class _Broken(gym.Wrapper):
    """Raises from its second step, as a tool or a remote server can."""

    def step(self, action):
        if self.unwrapped.turn >= 1:
            raise RuntimeError("the sandbox died")
        return super().step(action)


def test_an_env_error_ends_only_its_own_episode(smollm2_tokenizer):
    register()
    glue = ChatGlue(smollm2_tokenizer, style="chat")
    envs = [gym.make(ID, turns=3), _Broken(gym.make(ID, turns=3)), gym.make(ID, turns=3)]
    ended = []
    episodes = play_episodes(envs, [TaskSpec(ID, seed=i) for i in range(3)],
                             TransformersGenerator(tiny_model(smollm2_tokenizer), smollm2_tokenizer), glue,
                             max_turn_tokens=8, max_completion_tokens=400, on_done=lambda i, e: ended.append(i))
    good, broken, other = episodes
    assert broken.error.startswith("RuntimeError: the sandbox died (test_rollout.py:")  # a bug: where it was raised
    assert broken.reward == 0.0 and broken.done
    assert broken.observations == [OBSERVATION] and len(broken.model_texts) == 2
    assert good.terminated and other.terminated and good.error is None and good.turns == 3
    assert sorted(ended) == [0, 1, 2] and ended[0] == 1  # each reported once, the broken one as it broke
    assert good.prompt == "Write a few words." and good.observations == [OBSERVATION, OBSERVATION, ""]
    assert good.context_tokens > 3 * len(good.prompt_ids)  # every turn's context counted


class _Waits(gym.Wrapper):
    """Its reset and steps return only once every env of the batch is in the same call, as a batch's sandboxed
    gradings, browser pages or remote round trips can wait together; called one after another, the first call
    waits out the barrier's timeout and its episode fails."""

    def __init__(self, env, barrier):
        super().__init__(env)
        self.barrier = barrier
        self.threads = set()

    def reset(self, **kwargs):
        self.barrier.wait()
        return super().reset(**kwargs)

    def step(self, action):
        self.threads.add(threading.current_thread().name)
        self.barrier.wait()
        return super().step(action)


def test_the_env_calls_of_a_turn_wait_together_and_change_nothing(smollm2_tokenizer):
    register()
    glue = ChatGlue(smollm2_tokenizer, style="chat")
    generator = TransformersGenerator(tiny_model(smollm2_tokenizer), smollm2_tokenizer)
    specs = [TaskSpec(ID, seed=i, task_id=f"toy-{i}") for i in range(4)]
    barrier = threading.Barrier(4, timeout=30)
    envs = [_Waits(gym.make(ID, turns=3), barrier) for _ in specs]
    ended = []
    together = play_episodes(envs, specs, generator, glue, max_turn_tokens=8, max_completion_tokens=400,
                             on_done=lambda i, e: ended.append((i, threading.current_thread().name)), env_threads=4)
    assert [e.error for e in together] == [None] * 4 and all(e.terminated and e.turns == 3 for e in together)
    assert all(name.startswith("agentgym-env") for env in envs for name in env.threads)
    # reported on the caller's thread, in index order within the turn that ended them
    assert ended == [(i, threading.current_thread().name) for i in range(4)]
    # the same episodes with the env calls one after another: token for token the same
    alone = play_episodes([gym.make(ID, turns=3) for _ in specs], specs, generator, glue, max_turn_tokens=8,
                          max_completion_tokens=400, env_threads=1)
    assert [e.completion_ids for e in together] == [e.completion_ids for e in alone]
    assert [e.reward for e in together] == [e.reward for e in alone]


@pytest.mark.parametrize(("value", "threads"), [(None, min(16, len(os.sched_getaffinity(0)))), ("3", 3), (" 1 ", 1),
                                                ("0", None), ("two", None), ("-2", None)])
def test_env_threads_are_one_a_core_or_what_agentgym_env_threads_says(monkeypatch, value, threads):
    if value is None:
        monkeypatch.delenv("AGENTGYM_ENV_THREADS", raising=False)
    else:
        monkeypatch.setenv("AGENTGYM_ENV_THREADS", value)
    if threads is not None:
        assert default_env_threads() == threads
        return
    with pytest.raises(ConfigError, match=r"AGENTGYM_ENV_THREADS must be a whole number >= 1, got"):
        default_env_threads()


class _Failing(gym.Wrapper):
    """Raises where a real env can: its final grading (PyCode's ``ToolError``), a server's error on reset, or an
    observation that is not text (an env bug)."""

    def __init__(self, env, where):
        super().__init__(env)
        self.where = where

    def reset(self, **kwargs):
        if self.where == "reset":
            raise RemoteEnvError("session lost", status_code=410, code="session_lost")
        return super().reset(**kwargs)

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        if self.where == "grading" and terminated:
            raise ToolError("the grader's sandbox could not start")
        if self.where == "observation" and not terminated:
            return {"not": "text"}, reward, terminated, truncated, info
        return observation, reward, terminated, truncated, info


def test_env_and_grader_failures_fail_their_episode_and_the_batch_plays_on(smollm2_tokenizer):
    register()
    glue = ChatGlue(smollm2_tokenizer, style="chat")
    where = [None, "grading", None, "reset", "observation", None]
    envs = [_Failing(gym.make(ID, turns=2), w) for w in where]
    ended = []
    episodes = play_episodes(envs, [TaskSpec(ID, task_id=f"toy-{i}") for i in range(len(envs))],
                             TransformersGenerator(tiny_model(smollm2_tokenizer), smollm2_tokenizer), glue,
                             max_turn_tokens=8, max_completion_tokens=400, on_done=lambda i, e: ended.append(i))
    assert sorted(ended) == list(range(len(envs)))
    for w, episode in zip(where, episodes):
        if w is None:  # played as if nothing had happened beside it
            assert not episode.failed and episode.terminated and episode.turns == 2
            assert episode.reward == pytest.approx(episode.info["verification"]["reward"])
        else:
            assert episode.failed and episode.done and episode.reward == 0.0 and not episode.success
    grading, reset, observation = episodes[1], episodes[3], episodes[4]
    assert grading.error == "ToolError: the grader's sandbox could not start" and grading.turns == 1
    assert reset.error == "RemoteEnvError: [410 session_lost] session lost" and reset.prompt_ids == []
    assert observation.error and observation.turns == 1 and observation.observations == [{"not": "text"}]


def test_bad_style_and_templateless_tokenizer_are_clear_errors(smollm2_tokenizer):
    with pytest.raises(ConfigError, match="'append' or 'chat'"):
        ChatGlue(smollm2_tokenizer, style="inline")

    class NoTemplate:
        chat_template = None

    with pytest.raises(ConfigError, match="no chat template"):
        ChatGlue(NoTemplate())
