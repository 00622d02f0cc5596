"""Recorded conversations as trainer episodes: the token ids and loss mask ``agentgym train`` builds for them.

A recorded episode (an eval result's transcript, a row of an ``agentgym data sft`` dataset) is played back
through the trainer's own rollout worker, :class:`agentgym.lm.workers.ModelWorker`: a ``ReplayEnv`` answers
each turn with the observation that was recorded, and a ``ReplayGenerator`` stands in for the model and
"generates" each recorded assistant text. The prompt, the chat glue and the observation tokens, and which of
them are masked, therefore come from the same ``ChatGlue`` and the same code as a GRPO rollout's, token for
token. Only the model's ids are derived from text (a results file keeps what the model wrote, not the ids it
sampled): the text's own tokenization, plus the end-of-turn token, cut where the generator cuts a turn (at
the action format's stop string, else after the end-of-turn token), so a turn the trainer's generator would
have ended at ``</search>`` does not learn an end-of-turn token it never writes there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentgym.errors import ConfigError
from agentgym.lm.generation import _stop_index
from agentgym.lm.rollout import ChatGlue, Episode, ObservationStyle, TaskSpec, Turn
from agentgym.lm.workers import ModelWorker

__all__ = ["Replay", "ReplayEnv", "ReplayGenerator", "sequence", "split_turns"]

#: no token budget while replaying: a recorded episode is as long as it was (``agentgym sft`` filters by length)
_UNBOUNDED = 1 << 40


def split_turns(messages: Sequence[Mapping[str, Any]]) -> tuple[str | None, str, list[str], list[tuple[str, str]]]:
    """``(system prompt, task prompt, assistant texts, observations)`` of a conversation.

    ``observations[i]`` is ``(role, text)`` of what followed assistant turn ``i`` (``("user", "")`` when the
    next message is the model's again); messages after the last assistant turn are not part of the episode
    the trainer sees (a truncated episode's last observation). Raises ``ConfigError`` for a conversation that
    is not system?, user, then assistant turns each followed by at most one observation.
    """
    messages = list(messages)
    system = None
    if messages and messages[0].get("role") == "system":
        system = str(messages[0].get("content") or "")
        messages = messages[1:]
    if not messages or messages[0].get("role") != "user":
        raise ConfigError("A recorded conversation must start with the task prompt as a user message (after an "
                          "optional system message).")
    prompt = str(messages[0].get("content") or "")
    texts: list[str] = []
    observations: list[tuple[str, str]] = []
    pending: list[Mapping[str, Any]] = []
    for message in messages[1:]:
        role = message.get("role")
        if role == "assistant":
            if texts:
                observations.append(_observation(pending, len(texts)))
            texts.append(str(message.get("content") or ""))
            pending = []
        elif role in ("user", "tool"):
            pending.append(message)
        else:
            raise ConfigError(f"Unexpected message role {role!r} in a recorded conversation; the roles are system "
                              "(first), user, assistant and tool.")
    if not texts:
        raise ConfigError("A recorded conversation has no assistant turn: nothing to train on.")
    observations.append(("user", ""))
    return system, prompt, texts, observations


def _observation(pending: list[Mapping[str, Any]], turn: int) -> tuple[str, str]:
    if len(pending) > 1:
        raise ConfigError(f"Assistant turn {turn} of a recorded conversation is followed by {len(pending)} messages; "
                          "the env answers each turn with one observation.")
    if not pending:
        return "user", ""
    return str(pending[0].get("role")), str(pending[0].get("content") or "")


class ReplayEnv:
    """Answers each turn with what was recorded: ``reset`` gives the task prompt, ``step`` the observation that
    followed the turn (``info["tool_calls"]`` is non-empty where it came back as a ``tool`` message, so the
    rollout code picks the observation's chat role from the format as it does for a live env)."""

    def __init__(self, prompt: str, observations: Sequence[tuple[str, str]], *, action_format: str,
                 tools: Sequence[Mapping[str, Any]] = (), task_id: str | None = None, reward: float = 0.0,
                 correct: bool = False) -> None:
        self.prompt, self.observations = prompt, list(observations)
        self.info = {"task_id": task_id, "format": action_format, "tools": list(tools), "turn": 0}
        self.reward, self.correct = reward, correct
        self.turn = 0

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        self.turn = 0
        return self.prompt, dict(self.info)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        role, observation = self.observations[self.turn]
        self.turn += 1
        info = {**self.info, "turn": self.turn, "tool_calls": [{"name": "recorded"}] if role == "tool" else []}
        if self.turn < len(self.observations):
            return observation, 0.0, False, False, info
        info["verification"] = {"reward": self.reward, "correct": self.correct}
        return "", self.reward, True, False, info

    def close(self) -> None:
        """Nothing to release."""


class ReplayGenerator:
    """Stands in for the model: each call "generates" the next recorded assistant text of one episode."""

    def __init__(self, tokenizer: Any, texts: Sequence[str]) -> None:
        self.tokenizer = tokenizer
        self.texts = list(texts)
        self.calls = 0

    def generate(self, contexts: Sequence[Sequence[int]], *, stops: Sequence[Sequence[str]], max_new_tokens: int,
                 seed: int) -> list[Turn]:
        if len(contexts) != 1:
            raise ConfigError("ReplayGenerator plays one episode at a time.")
        text = self.texts[self.calls]
        self.calls += 1
        eos = self.tokenizer.eos_token_id
        ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"]) + ([eos] if eos is not None else [])
        end, ended, stopped = _stop_index(self.tokenizer, ids, stops[0], eos)
        return [Turn(ids[:end], ended=ended, stopped=stopped)]


class Replay:
    """Conversations to the trainer's token form with one tokenizer and observation style.

    ``system_prompt`` (``agentgym train``'s option) replaces a conversation's own system message; None keeps
    the conversation's (none when it has none)."""

    def __init__(self, tokenizer: Any, *, style: ObservationStyle = "chat", system_prompt: str | None = None) -> None:
        self.tokenizer, self.style, self.system_prompt = tokenizer, style, system_prompt
        self._glues: dict[str | None, ChatGlue] = {}

    def glue(self, system_prompt: str | None) -> ChatGlue:
        chosen = self.system_prompt if self.system_prompt is not None else system_prompt
        if chosen not in self._glues:
            self._glues[chosen] = ChatGlue(self.tokenizer, style=self.style, system_prompt=chosen)
        return self._glues[chosen]

    def episode(self, messages: Sequence[Mapping[str, Any]], *, action_format: str,
                tools: Sequence[Mapping[str, Any]] = (), env_id: str = "replay", task_id: str | None = None,
                reward: float = 0.0, correct: bool = False) -> Episode:
        """The ``Episode`` the trainer would have built had its model written the conversation's assistant turns
        (``action_format``: the env's format name, ``tools``: its tool schemas; both set the stop strings)."""
        system, prompt, texts, observations = split_turns(messages)
        env = ReplayEnv(prompt, observations, action_format=action_format, tools=tools, task_id=task_id,
                        reward=reward, correct=correct)
        worker = ModelWorker(self.glue(system), max_turn_tokens=_UNBOUNDED, max_completion_tokens=_UNBOUNDED)
        [episode] = worker.play([env], [TaskSpec(env_id, task_id=task_id)], ReplayGenerator(self.tokenizer, texts),
                                seed=0)
        if episode.error is not None:
            raise ConfigError(f"Cannot replay the conversation of {env_id} {task_id}: {episode.error}")
        return episode

    def tokens(self, messages: Sequence[Mapping[str, Any]], *, action_format: str,
               tools: Sequence[Mapping[str, Any]] = ()) -> dict[str, list[int]]:
        """``input_ids`` (prompt + completion), ``loss_mask`` (1 on the model's tokens, 0 on the prompt and every
        observation and glue token: the GRPO ``env_mask`` after the prompt's zeros) and ``labels`` (the ids, -100
        where the mask is 0, as TRL's SFTTrainer and transformers read them)."""
        episode = self.episode(messages, action_format=action_format, tools=tools)
        return sequence(episode)


def sequence(episode: Episode) -> dict[str, list[int]]:
    """An episode as one training sequence: ``input_ids``, ``loss_mask`` and ``labels`` (see ``Replay.tokens``)."""
    input_ids = list(episode.prompt_ids) + list(episode.completion_ids)
    loss_mask = [0] * len(episode.prompt_ids) + list(episode.mask)
    return {"input_ids": input_ids, "loss_mask": loss_mask,
            "labels": [token if bit else -100 for token, bit in zip(input_ids, loss_mask)]}
