"""Model policies play many episodes at once: batched, left-padded generation across episodes in lockstep.

The eval runs a local model (``smollm2``, ``hf:<path>``) through the trainer's own
rollout worker, :class:`agentgym.lm.workers.ModelWorker`: the episodes of one suite
entry are played ``batch_size`` at a time, one batched ``generate`` per turn, so a
trained model is evaluated on exactly the token sequences it was trained on, and a
2-core machine runs a suite in minutes instead of generating one episode at a time.

Greedy decoding (the default) gives each episode the same tokens whatever it is
batched with. With ``temperature > 0`` a batch draws from one seeded generator, so
an episode's sample depends on its batch (its seed is derived from the batch's
episode seeds); the results record the sampling settings either way.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from agentgym.core.registry import make
from agentgym.eval.episode import EpisodeResult, answer_of, final_answer, provenance
from agentgym.eval.plan import PlannedEpisode
from agentgym.lm.compute import kernel_path
from agentgym.lm.rollout import ChatGlue, Episode, TaskSpec, TransformersGenerator
from agentgym.lm.workers import EnvPool, ModelWorker
from agentgym.policies.hf import TransformersPolicy

__all__ = ["BatchProgress", "run_batched"]

logger = logging.getLogger(__name__)

#: tokens of context kept free for the task prompt when an episode's token budget is set from the model's context
_PROMPT_ROOM = 1024


@dataclass(frozen=True)
class BatchProgress:
    """Where a batched run is: the entry, which of its episodes are in flight, the turn and its tokens so far."""

    env_id: str
    first: int
    last: int
    live: int
    turn: int
    tokens: int
    max_tokens: int

    def describe(self) -> str:
        name = self.env_id.removeprefix("agentgym/")
        return (f"{name} · episodes {self.first}-{self.last} ({self.live} playing) · turn {self.turn} · "
                f"{self.tokens}/{self.max_tokens} tokens")


def _groups(pending: Sequence[tuple[PlannedEpisode, str]]) -> list[list[tuple[PlannedEpisode, str]]]:
    """Pending episodes grouped by env id and kwargs, in plan order (one env per episode slot)."""
    groups: dict[str, list[tuple[PlannedEpisode, str]]] = {}
    for planned, key in pending:
        name = json.dumps([planned.env_id, dict(planned.env_kwargs)], sort_keys=True)
        groups.setdefault(name, []).append((planned, key))
    return list(groups.values())


def _result(planned: PlannedEpisode, key: str, episode: Episode, policy: TransformersPolicy, *,
            wall_s: float, remote: str | None, compute: dict[str, Any], env: Any = None) -> EpisodeResult:
    transcript = [{"role": "user", "content": episode.prompt}] if episode.prompt else []
    for text, observation in zip(episode.model_texts, [*episode.observations, *[""] * len(episode.model_texts)]):
        transcript.append({"role": "assistant", "content": text})
        if observation:
            transcript.append({"role": "tool", "content": observation})
    info = episode.info
    origin = {**provenance(planned.env_id, policy), "prompt_tokens": episode.context_tokens,
              "completion_tokens": episode.tokens_model}
    verification = info.get("verification", {}) if episode.error is None else {}
    answer = final_answer(info, episode.error)
    if episode.error is not None and episode.error.startswith("JudgeError") and episode.model_texts:
        answer = answer_of(episode.model_texts[-1], env)  # the answer the judge could not score, for --rescore
    return EpisodeResult(
        env_id=planned.env_id, task_id=str(info.get("task_id") or episode.task_id or ""),
        split=str(info.get("split") or planned.split), seed=planned.seed, policy=policy.name,
        reward=episode.reward if episode.error is None else 0.0,
        correct=bool(verification.get("correct", False)), turns=int(info.get("turn", episode.turns)),
        tool_calls=episode.tool_calls, action_errors=episode.format_errors, truncated=episode.truncated,
        verification=verification, wall_s=round(wall_s, 4), transcript=transcript, error=episode.error,
        episode=planned.episode, key=key, suite=planned.suite, suite_version=planned.suite_version,
        remote=remote, entry=planned.entry, sample=planned.sample, env_s=round(episode.env_s, 4),
        generate_s=round(episode.generate_s, 4), compute=dict(compute), answer=answer, **origin)


def run_batched(pending: Sequence[tuple[PlannedEpisode, str]], policy: TransformersPolicy, *,
                batch_size: int = 32, remote: str | None = None,
                on_result: Callable[[EpisodeResult], None],
                on_progress: Callable[[BatchProgress], None] | None = None,
                stop: threading.Event | None = None) -> None:
    """Play ``pending`` (episode, results key) pairs with ``policy``'s model, ``batch_size`` episodes at a time.

    ``on_result`` gets each episode as soon as it ends (the caller writes it);
    ``stop`` stops starting new batches, the running one finishes.
    """
    model, tokenizer = policy.load()
    sampling = policy.sampling
    state: dict[str, Any] = {}

    def report(tokens: int, max_tokens: int) -> None:
        if on_progress is not None and state:
            on_progress(BatchProgress(tokens=tokens, max_tokens=max_tokens, **state))

    generator = TransformersGenerator(model, tokenizer, temperature=sampling.temperature, top_p=sampling.top_p,
                                      top_k=0, on_token=report if on_progress is not None else None)
    glue = ChatGlue(tokenizer, style="chat", system_prompt=policy.system_prompt)
    context = int(getattr(model.config, "max_position_embeddings", 0) or 8192)
    budget = max(sampling.max_tokens, context - _PROMPT_ROOM)
    parameter = next(model.parameters())
    compute = {"kernel": kernel_path(str(parameter.device)), "dtype": str(parameter.dtype).removeprefix("torch."),
               "batch_size": batch_size}
    worker = ModelWorker(glue, max_turn_tokens=sampling.max_tokens, max_completion_tokens=budget)
    for group in _groups(pending):
        first = group[0][0]
        envs = EnvPool(lambda _key, p=first: make(p.env_id, **p.env_kwargs, **({"remote": remote} if remote else {})))
        try:
            for start in range(0, len(group), batch_size):
                if stop is not None and stop.is_set():
                    return
                batch = group[start:start + batch_size]
                _play_batch(batch, envs.take([first.env_id] * len(batch)), policy, worker, generator,
                            remote=remote, on_result=on_result, state=state,
                            compute={**compute, "batch": len(batch)})
        finally:
            envs.close()


def _play_batch(batch: Sequence[tuple[PlannedEpisode, str]], envs: Sequence[gym.Env], policy: TransformersPolicy,
                worker: ModelWorker, generator: TransformersGenerator, *, remote: str | None,
                on_result: Callable[[EpisodeResult], None], state: dict[str, Any],
                compute: dict[str, Any]) -> None:
    first = batch[0][0]
    specs = [TaskSpec(p.env_id, seed=p.seed, split=p.split, index=p.task_index) for p, _ in batch]
    started = time.perf_counter()
    live = {"n": len(batch)}
    state.update(env_id=first.entry or first.env_id, first=batch[0][0].episode + 1, last=batch[-1][0].episode + 1,
                 live=len(batch), turn=1)

    def done(i: int, episode: Episode) -> None:
        live["n"] -= 1
        state["live"] = live["n"]
        planned, key = batch[i]
        on_result(_result(planned, key, episode, policy, wall_s=time.perf_counter() - started, remote=remote,
                          compute=compute, env=envs[i]))

    def next_turn(round_no: int) -> None:
        state["turn"] = round_no + 1

    worker.play(envs, specs, generator, seed=first.seed, on_turn=next_turn, on_done=done)
    state.clear()
