"""Multi-turn rollouts built at token level, with the observation mask.

An episode is one token sequence: the prompt's ids, then, turn by turn, the ids the
model generated (mask 1) and the ids of the observation the env answered with
(mask 0), including the chat template's glue around it and any end-of-turn token
the model did not write itself. Nothing is ever re-tokenized: the ids the model
was conditioned on while playing are the ids it is trained on, so the masked-in
tokens decode to exactly what the model wrote. The reward is the env's verifier
score at the end of the episode, never a parse of the completion text (which
contains observations).

Two observation styles:

- ``append`` (Search-R1): the observation continues the assistant's turn, as the
  env wrote it (SearchQA's ``<information>...</information>``);
- ``chat``: the model's turn is closed and the observation comes back as its
  own message, followed by the template's generation prompt for the next
  assistant turn: a ``tool`` message after function calls (hermes/json formats;
  ``user`` for templates without a tool role), else a ``user`` message, exactly
  as the eval policies send it (so a trained model is evaluated on the
  conversation shape it was trained on).

The glue is derived once from the tokenizer's chat template by rendering a tiny
conversation with sentinel contents, so any chat model works.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
import time
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agentgym.core.formats import format_of
from agentgym.errors import ConfigError, describe
from agentgym.lm.generation import Generator, StopOnText, TransformersGenerator, Turn, _seed
from agentgym.settings import count_from_env
from agentgym.verifiers.budget import over_budget

__all__ = ["ChatGlue", "Episode", "Generator", "StopOnText", "TaskSpec", "TransformersGenerator", "Turn",
           "action_stop_strings", "default_env_threads", "play_episodes"]

ObservationStyle = Literal["append", "chat"]
_CONTENT = "AGENTGYM-SENTINEL-CONTENT"
logger = logging.getLogger(__name__)
#: env calls of one turn made at the same time (``play_episodes``) unless AGENTGYM_ENV_THREADS says otherwise: one a
#: core the process may use, so that a sandboxed run (whose time limits are wall-clock) gets the core it would get
#: alone; at most 16
ENV_THREADS = min(16, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def default_env_threads() -> int:
    """How many env calls of a turn ``play_episodes`` makes at once: ``AGENTGYM_ENV_THREADS`` (1: one after another),
    else one a core."""
    return count_from_env("AGENTGYM_ENV_THREADS", ENV_THREADS)


@dataclass(frozen=True)
class TaskSpec:
    """One task to play: an env id, and either a task id or a (split, index) pair, plus the reset seed."""

    env: str
    seed: int = 0
    task_id: str | None = None
    split: str | None = None
    index: int | None = None

    def reset_options(self) -> dict[str, Any]:
        if self.task_id is not None:
            return {"task_id": self.task_id}
        options: dict[str, Any] = {}
        if self.split is not None:
            options["split"] = self.split
        if self.index is not None:
            options["index"] = self.index
        return options

    @property
    def key(self) -> str:
        """The same for every rollout of a GRPO group."""
        return f"{self.env}|{self.task_id}|{self.split}|{self.index}|{self.seed}"


@dataclass
class Episode:
    """One played episode as tokens: ``prompt_ids`` + ``completion_ids`` with ``mask`` (1 = model tokens)."""

    spec: TaskSpec
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    #: each model turn's token ids and decoded text, in order
    model_turns: list[list[int]] = field(default_factory=list)
    model_texts: list[str] = field(default_factory=list)
    reward: float = 0.0
    success: bool = False
    terminated: bool = False
    truncated: bool = False
    #: the episode ran out of its token budget before the env ended it (reward 0)
    over_budget: bool = False
    #: the verifier ran past its time or memory budget (reward 0; see agentgym.verifiers.budget)
    verifier_over_budget: bool = False
    turns: int = 0
    tool_calls: int = 0
    format_errors: int = 0
    task_id: str | None = None
    #: the sampler's log-probability of each completion token (0.0 for masked ones), when the backend reports
    #: them (vLLM: TRL corrects for the sampler/trainer mismatch with them); None when it does not
    logprobs: list[float] | None = field(default_factory=list)
    #: the task prompt and each observation as text (the eval's transcript), and the env's last ``info``
    prompt: str = ""
    observations: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    #: tokens the model was conditioned on, summed over its turns (what a chat API bills as prompt tokens)
    context_tokens: int = 0
    #: why the episode failed (an exception from the env: the RolloutError boundary), or None; reward 0
    error: str | None = None
    #: seconds in its env (reset and steps, the final verification included), and in the batched generations it
    #: took part in (wall time shared with the batch's other episodes)
    env_s: float = 0.0
    generate_s: float = 0.0

    @property
    def failed(self) -> bool:
        """An env or grader raised while the episode was played (``error`` says what); its reward is 0."""
        return self.error is not None

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated or self.failed

    def add(self, ids: Sequence[int], model: bool, logprobs: Sequence[float] | None = None) -> None:
        self.completion_ids.extend(ids)
        self.mask.extend([1 if model else 0] * len(ids))
        if self.logprobs is not None:
            if model and (logprobs is None or len(logprobs) != len(ids)):
                self.logprobs = None
            else:
                self.logprobs.extend(logprobs if model else [0.0] * len(ids))  # type: ignore[arg-type]

    @property
    def tokens_model(self) -> int:
        return sum(self.mask)

    @property
    def tokens_masked(self) -> int:
        return len(self.mask) - sum(self.mask)


class ChatGlue:
    """Prompt ids and the ids around an observation, from the tokenizer's own chat template."""

    def __init__(self, tokenizer: Any, *, style: ObservationStyle = "chat", system_prompt: str | None = None) -> None:
        if style not in typing.get_args(ObservationStyle):
            raise ConfigError(f"observation style must be 'append' or 'chat', got {style!r}.")
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigError("The tokenizer has no chat template; the trainer needs an instruct (chat) model.")
        self.tokenizer = tokenizer
        self.style = style
        self.system_prompt = system_prompt
        # a fast tokenizer's call sets split_special_tokens on the one Rust tokenizer it shares, then encodes: two
        # threads at once (play_episodes' env threads) can encode an observation with the other call's setting,
        # and a special-token string in it would become the special token
        self._encoding = threading.Lock()
        self.end_of_turn = tokenizer.eos_token
        self.end_of_turn_id = tokenizer.eos_token_id
        base = [{"role": "user", "content": "u"}, {"role": "assistant", "content": _CONTENT}]
        rendered = self._render(base)
        # what the template writes after an assistant message's content: the turn's end (e.g. "<|im_end|>\n")
        self.close = rendered[rendered.rindex(_CONTENT) + len(_CONTENT):]
        # the observation's message: "tool" after function calls (hermes/json formats), else "user", as the
        # eval policies send it; templates without a tool role take it as a user turn
        self.messages = {"user": self._message(rendered, base, "user")}
        try:
            self.messages["tool"] = self._message(rendered, base, "tool")
        except Exception:  # noqa: BLE001 - jinja raises what the template raises
            self.messages["tool"] = self.messages["user"]

    def _message(self, rendered: str, base: list[dict[str, Any]], role: str) -> tuple[str, str]:
        after = self._render([*base, {"role": role, "content": _CONTENT}], generation_prompt=True)
        if not after.startswith(rendered):
            raise ConfigError("The chat template renders earlier turns differently once a turn is added; the "
                              "'chat' observation style needs a template that only appends. Use style='append'.")
        prefix, _, suffix = after[len(rendered):].partition(_CONTENT)
        return prefix, suffix

    def _render(self, messages: list[dict[str, Any]], *, generation_prompt: bool = False) -> str:
        if self.system_prompt is not None:
            messages = [{"role": "system", "content": self.system_prompt}, *messages]
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)

    def _ids(self, text: str, *, literal: bool = False) -> list[int]:
        """``literal``: text from outside (an observation): special-token strings in it stay plain text."""
        if not text:
            return []
        with self._encoding:
            return list(self.tokenizer(text, add_special_tokens=False, split_special_tokens=literal)["input_ids"])

    def prompt_ids(self, prompt: str) -> list[int]:
        text = self._render([{"role": "user", "content": prompt}], generation_prompt=True)
        return self._ids(text)

    def observation_ids(self, observation: str, *, turn_ended: bool, role: str = "user") -> list[int]:
        """The ids after a model turn: (the rest of) the turn's end, the observation, the next turn's start."""
        if self.style == "append":
            return self._ids(observation, literal=True)
        close = self.close
        if turn_ended and self.end_of_turn and close.startswith(self.end_of_turn):
            close = close[len(self.end_of_turn):]
        prefix, suffix = self.messages[role]
        return self._ids(close + prefix) + self._ids(observation, literal=True) + self._ids(suffix)


def action_stop_strings(info: dict[str, Any], env: Any = None) -> tuple[str, ...]:
    """Where a model's turn ends besides its end-of-turn token: what the env's action format says
    (for ``tags``, after the first closing tool or answer tag)."""
    names = [t.get("function", t).get("name") for t in info.get("tools") or []]
    return format_of(info, env).stop_strings(names)


def play_episodes(envs: Sequence[Any], specs: Sequence[TaskSpec], generator: Generator, glue: ChatGlue,
                  *, max_turn_tokens: int = 256, max_completion_tokens: int = 1024, seed: int = 0,
                  on_turn: Callable[[int], None] | None = None,
                  on_done: Callable[[int, Episode], None] | None = None,
                  env_threads: int | None = None) -> list[Episode]:
    """Play ``specs[i]`` in ``envs[i]``, all episodes in lockstep (one batched generation per turn).

    The ``RolloutError`` boundary: an exception from an env while an episode plays
    (its reset, a tool's, the verifier's or grader's, a remote server's, or an
    observation that cannot be read) ends that episode only: ``failed``, ``error``
    says what was raised, reward 0; the others play on. The env is left as the
    failure left it: a caller that plays on with it may replace it first (the
    trainer does). The generator's own exceptions (the model's) are not an
    episode's and propagate.
    ``on_turn(round)`` runs after every batched turn, ``on_done(i, episode)`` once
    per episode as soon as it ends (on the calling thread, in index order within a turn).

    The env calls of one turn (the resets, then each turn's steps) run at the same time,
    on up to ``env_threads`` threads [default: :func:`default_env_threads`]: an env that
    waits (a sandboxed grading, a browser page, a remote server) holds up the batch for
    its own time, not for the sum of all of theirs. Each episode's env sees its calls in
    order and the generator sees the batches it saw with the calls one after another, so
    the results are the same.
    """
    if len(envs) != len(specs):
        raise ConfigError(f"play_episodes needs one env per spec, got {len(envs)} envs for {len(specs)} specs.")
    episodes = [Episode(spec=spec, prompt_ids=[]) for spec in specs]
    stops: list[tuple[str, ...]] = [() for _ in specs]

    def guarded(i: int, play: Callable[..., tuple[str, ...]], *args: Any) -> None:
        """Run one env interaction of episode ``i`` (it returns the next turn's stop strings) inside the boundary."""
        start = time.perf_counter()
        try:
            stops[i] = play(episodes[i], envs[i], glue, *args)
        except Exception as e:  # noqa: BLE001 - the RolloutError boundary: one bad rollout never kills the batch
            _fail(episodes[i], e)
        episodes[i].env_s += time.perf_counter() - start

    workers = min(env_threads or default_env_threads(), len(specs))
    pool = (concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="agentgym-env") if workers > 1
            else None)

    def each(calls: Sequence[tuple[int, Callable[..., tuple[str, ...]], tuple[Any, ...]]]) -> None:
        """Make one env call per episode, at the same time where there are several; report who ended."""
        if pool is None or len(calls) < 2:
            for i, play, args in calls:
                guarded(i, play, *args)
        else:
            for future in [pool.submit(guarded, i, play, *args) for i, play, args in calls]:
                future.result()  # guarded raises nothing an env raised: only what must stop the run
        for i, _, _ in calls:
            if episodes[i].done and on_done is not None:
                on_done(i, episodes[i])

    try:
        each([(i, _start, ()) for i in range(len(specs))])
        round_no = 0
        while live := [i for i, e in enumerate(episodes) if not e.done]:
            budget = min(max_turn_tokens, *(max_completion_tokens - len(episodes[i].completion_ids) for i in live))
            contexts = [episodes[i].prompt_ids + episodes[i].completion_ids for i in live]
            start = time.perf_counter()
            turns = generator.generate(contexts, stops=[stops[i] for i in live], max_new_tokens=max(1, budget),
                                       seed=_seed(seed, round_no, *live))
            for i in live:
                episodes[i].generate_s += time.perf_counter() - start
            round_no += 1
            texts = [_record_turn(episodes[i], context, turn, generator.tokenizer)
                     for i, context, turn in zip(live, contexts, turns)]
            each([(i, _step, (text, turn, max_completion_tokens)) for i, text, turn in zip(live, texts, turns)])
            if on_turn is not None:
                on_turn(round_no)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    return episodes


def _fail(episode: Episode, error: Exception) -> None:
    logger.debug("episode %s failed", episode.spec.key, exc_info=error)
    episode.error = describe(error)
    episode.reward, episode.success = 0.0, False


def _start(episode: Episode, env: Any, glue: ChatGlue) -> tuple[str, ...]:
    """Reset ``env`` for the episode; the stop strings of its first turn."""
    observation, info = env.reset(seed=episode.spec.seed, options=episode.spec.reset_options())
    episode.prompt_ids, episode.prompt = glue.prompt_ids(observation), observation
    episode.task_id, episode.info = info.get("task_id"), info
    return action_stop_strings(info, getattr(env, "unwrapped", env))


def _record_turn(episode: Episode, context: Sequence[int], turn: Turn, tokenizer: Any) -> str:
    """Add the model's turn to the episode; its text, as the env will read it."""
    episode.context_tokens += len(context)
    text = tokenizer.decode(turn.ids, skip_special_tokens=True)
    episode.add(turn.ids, model=True, logprobs=turn.logprobs)
    episode.model_turns.append(list(turn.ids))
    episode.model_texts.append(text)
    return text


def _step(episode: Episode, env: Any, glue: ChatGlue, text: str, turn: Turn,
          max_completion_tokens: int) -> tuple[str, ...]:
    """Step ``env`` with the model's turn and add the observation (or end the episode); the next turn's stops."""
    observation, reward, terminated, truncated, info = env.step(text)
    episode.info = info
    episode.observations.append(observation)
    episode.turns += 1
    episode.tool_calls += len(info.get("tool_calls") or [])
    episode.format_errors += info.get("action_error") is not None
    if terminated or truncated:
        episode.terminated, episode.truncated = terminated, truncated
        episode.reward = float(reward)
        episode.success = bool((info.get("verification") or {}).get("correct"))
        episode.verifier_over_budget = over_budget(info.get("verification"))
        return ()
    role = format_of(info, env).observation_role(made_tool_calls=bool(info.get("tool_calls")))
    ids = glue.observation_ids(observation, turn_ended=turn.ended, role=role)
    if len(episode.completion_ids) + len(ids) + 1 > max_completion_tokens:
        episode.truncated, episode.over_budget = True, True
        return ()
    episode.add(ids, model=False)
    return action_stop_strings(info, getattr(env, "unwrapped", env))
