"""The rollout workers: the one place a model's episodes are played, for eval, train and train --agent alike.

A model whose tokens agentgym holds plays here, and comes back as the same token :class:`Episode` (prompt ids,
completion ids, the observation mask, the sampler's log-probabilities, the env's reward):

- :class:`ModelWorker`: a local model (the built-in one, any ``hf:`` model, the policy being trained, vLLM on a GPU)
  plays in lockstep, one batched generation per turn (:func:`agentgym.lm.rollout.play_episodes`): ``agentgym eval``
  of a local model, and the trainer's built-in loop (synchronous, its asynchronous thread worker and its Ray actors);
- :class:`AgentWorker`: an agent plays in its own loop, each episode on a thread of its own, every model call through
  a gateway that serves a model and records the tokens it sampled (:func:`agentgym.gateway.agents.run_agent`); the
  record becomes the episode (:func:`episode_from_run`): ``agentgym eval --agent`` and ``agentgym train --agent``.

Both take their envs from an :class:`EnvPool` (made on first use, reused, and replaced after a failure) and share
the failure boundary: an exception from an env ends its episode only (``Episode.error``, reward 0); the model's own
exceptions propagate. The generators live beside this module (``agentgym.lm.generation``, ``agentgym.lm.vllm``).

Policies whose tokens agentgym does not hold (an API model, the oracle, random) play text through
``agentgym.eval.episode.run_episode``: their episodes have no token record to train on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym.errors import RolloutError
from agentgym.lm.generation import Generator
from agentgym.lm.rollout import ChatGlue, Episode, TaskSpec, play_episodes

__all__ = ["AgentEpisode", "AgentWorker", "EnvPool", "ModelWorker", "Row", "episode_from_run", "leaf_rows"]

logger = logging.getLogger(__name__)


def close_env(env: Any) -> None:
    """Close ``env``; a failure to close is logged, never raised (it must not hide the error that led here)."""
    try:
        env.close()
    except Exception as e:  # noqa: BLE001 - closing a broken env must not hide the real error
        logger.warning("Closing an env failed: %s", e)


class EnvPool:
    """Envs by key (an env id, or an id with its kwargs), made by ``make(key)`` on first use and reused episode after
    episode; an env whose episode failed is closed and dropped, so the next use makes a fresh one."""

    def __init__(self, make: Callable[[str], Any]) -> None:
        self.make = make
        #: the envs of each key, in the order they were made
        self.pools: dict[str, list[Any]] = {}

    def take(self, keys: Sequence[str]) -> list[Any]:
        """One env per key: the k-th use of a key in one call gets that key's k-th env (made where there is none)."""
        out, used = [], {}
        for key in keys:
            pool = self.pools.setdefault(key, [])
            k = used.get(key, 0)
            if k == len(pool):
                pool.append(self.make(key))
            out.append(pool[k])
            used[key] = k + 1
        return out

    def drop(self, key: str, env: Any) -> None:
        """Close ``env`` and forget it (its state is unknown after a failure)."""
        self.pools[key] = [other for other in self.pools.get(key, []) if other is not env]
        close_env(env)

    def close(self) -> None:
        for pool in self.pools.values():
            for env in pool:
                close_env(env)
        self.pools.clear()


class ModelWorker:
    """A local model's episodes, in lockstep: one batched generation per turn, the env calls of a turn at once.

    ``glue`` builds the token sequence from the tokenizer's chat template; ``threads`` (torch threads while playing,
    restored after; 0: as the caller has them) and ``bf16`` (autocast, as the trainer trains) are the trainer's."""

    def __init__(self, glue: ChatGlue, *, max_turn_tokens: int, max_completion_tokens: int, threads: int = 0,
                 bf16: bool = False, env_threads: int | None = None) -> None:
        self.glue = glue
        self.max_turn_tokens = max_turn_tokens
        self.max_completion_tokens = max_completion_tokens
        self.threads = threads
        self.bf16 = bf16
        self.env_threads = env_threads

    def play(self, envs: Sequence[Any], specs: Sequence[TaskSpec], generator: Generator, *, seed: int,
             on_turn: Callable[[int], None] | None = None,
             on_done: Callable[[int, Episode], None] | None = None) -> list[Episode]:
        """Play ``specs[i]`` in ``envs[i]`` with ``generator``'s model (``on_turn``, ``on_done``: as
        :func:`~agentgym.lm.rollout.play_episodes` calls them)."""
        with self._compute():
            return play_episodes(envs, specs, generator, self.glue, max_turn_tokens=self.max_turn_tokens,
                                 max_completion_tokens=self.max_completion_tokens, seed=seed, on_turn=on_turn,
                                 on_done=on_done, env_threads=self.env_threads)

    @contextlib.contextmanager
    def _compute(self) -> Iterator[None]:
        if not (self.threads or self.bf16):
            yield
            return
        import torch

        previous = torch.get_num_threads()
        if self.threads:
            torch.set_num_threads(self.threads)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        try:
            with torch.autocast(device, dtype=torch.bfloat16, enabled=self.bf16):
                yield
        finally:
            if self.threads:
                torch.set_num_threads(previous)


@dataclass
class Row:
    """One sample the loss sees: a leaf of a rollout's call tree, cut at the token limit."""

    prompt_ids: list[int]
    completion_ids: list[int]
    mask: list[int]
    logprobs: list[float]
    #: the recorded ids this row must feed (prompt + completion), for the fidelity check
    recorded: list[int]


@dataclass
class AgentEpisode(Episode):
    """An agent's rollout as an episode (its last sample's tokens), with every sample of its call tree."""

    rows: list[Row] = field(default_factory=list)
    calls: int = 0
    branches: int = 0
    reencoded_tokens: int = 0
    retries: int = 0


def leaf_rows(rollout: Any, *, limit: int) -> tuple[list[Row], bool]:
    """The rollout's samples as loss rows (``limit``: most tokens after the prompt), and whether any was cut.

    A passed-through (text-only) rollout has no token record to train on: ``RolloutError``."""
    if rollout.text_only:
        raise RolloutError("A text-only rollout (a gateway passing calls through to --upstream) has no sampled "
                           "token ids to train on; train against the in-process gateway (agentgym train --agent).")
    rows, cut = [], False
    for sample in rollout.samples():
        ids, mask = sample["token_ids"], sample["loss_mask"]
        start = mask.index(1) if 1 in mask else len(ids)
        completion = ids[start:]
        if len(completion) > limit:
            completion, cut = completion[:limit], True
        n = len(completion)
        rows.append(Row(prompt_ids=list(ids[:start]), completion_ids=list(completion), mask=list(mask[start:start + n]),
                        logprobs=[0.0 if p is None else float(p) for p in sample["logprobs"][start:start + n]],
                        recorded=list(ids[:start + n])))
    return rows, cut


def _reencoded(rollout: Any) -> int:
    """Prompt tokens of the rollout's branched calls: turns the agent sent back as text, encoded again."""
    return sum(len(call.prompt_ids) for call in rollout.calls if call.branched)


def episode_from_run(spec: TaskSpec, run: Any, *, limit: int, retries: int = 0) -> AgentEpisode:
    """An ``AgentEpisode`` of one agent run (``agentgym.gateway.agents.AgentRun``): failed when the agent or the env
    failed (reward None to TRL), scored by the env's verifier otherwise; 0 when a sample outgrew ``limit``."""
    session, rollout = run.session, run.rollout
    episode = AgentEpisode(spec=spec, prompt_ids=[], retries=retries, error=run.error,
                           prompt=session.prompt if session is not None else "")
    if rollout is not None:
        episode.calls = len(rollout.calls)
        episode.branches = sum(c.branched for c in rollout.calls)
        episode.model_texts = [c.choices[0].text for c in rollout.calls if c.choices]
        episode.model_turns = [list(c.choices[0].ids) for c in rollout.calls if c.choices]
    if session is not None:
        info = session.info
        episode.task_id = str(info.get("task_id", "")) or None
        episode.info = dict(info)
        episode.turns = int(info.get("turn", 0))
        episode.tool_calls = sum(step.name != "answer" for step in session.steps)
        episode.observations = [step.observation for step in session.steps]
    if run.error is not None or rollout is None:
        return episode
    episode.rows, episode.over_budget = leaf_rows(rollout, limit=limit)
    episode.reencoded_tokens = _reencoded(rollout)
    if not episode.rows:
        episode.error = "AgentError: the rollout has no model call to train on"
        return episode
    last = episode.rows[-1]
    episode.prompt_ids, episode.completion_ids = last.prompt_ids, last.completion_ids
    episode.mask, episode.logprobs = last.mask, last.logprobs
    episode.terminated, episode.truncated = session.terminated, session.truncated or not session.ended
    verification = session.info.get("verification", {})
    episode.reward = 0.0 if episode.over_budget else float(session.reward)
    episode.success = bool(verification.get("correct", False)) and not episode.over_budget
    return episode


class AgentWorker:
    """An agent's episodes, each in the agent's own loop on a thread of its own, its model calls through ``gateway``
    (reached at ``base_url``; ``has_mcp``: it serves each rollout's tools over MCP too).

    ``spec`` is the agent (``agentgym.gateway.agents.AgentSpec``) and ``fn`` its loaded function (None for a
    command). The first episode the worker ever plays runs alone until its first model request (``warm``): what an
    agent's framework imports on first use is imported once, not by many threads at once."""

    def __init__(self, spec: Any, fn: Callable[[Any], Any] | None, *, gateway: Any, base_url: str,
                 has_mcp: bool, timeout_s: float = 600.0, require_model: bool = True) -> None:
        self.spec = spec
        self.fn = fn
        self.gateway = gateway
        self.base_url = base_url
        self.has_mcp = has_mcp
        self.timeout_s = timeout_s
        self.require_model = require_model
        self.warm = threading.Event()

    def run(self, env: Any, options: Mapping[str, Any], seed: int, *, rollout_id: str, env_id: str,
            env_kwargs: Mapping[str, Any], metadata: Mapping[str, Any] | None = None,
            warm: threading.Event | None = None) -> Any:
        """One episode of the agent in ``env`` (reset with ``options`` and ``seed``) as rollout ``rollout_id``:
        its ``AgentRun`` (the tool session, the gateway's record, the error if any)."""
        from agentgym.gateway.agents import run_agent

        return run_agent(env, dict(options), seed, spec=self.spec, fn=self.fn, gateway=self.gateway,
                         base_url=self.base_url, has_mcp=self.has_mcp, rollout_id=rollout_id, env_id=env_id,
                         env_kwargs=dict(env_kwargs), timeout_s=self.timeout_s, require_model=self.require_model,
                         metadata=dict(metadata or {}), warm=warm)

    def play(self, envs: Sequence[Any], specs: Sequence[TaskSpec], *, seed: int, limit: int,
             env_kwargs: Mapping[str, Any], retries: int = 0, tag: str = "") -> list[AgentEpisode]:
        """Play ``specs[i]`` in ``envs[i]``, all at once, each as a token episode (``limit``: the most tokens after
        a sample's prompt). An episode whose agent failed is played again up to ``retries`` times (not one whose
        env failed); each rollout's record is forgotten by the gateway once it is an episode."""
        episodes: list[AgentEpisode | None] = [None] * len(specs)

        def play(i: int) -> None:
            spec, env = specs[i], envs[i]
            for attempt in range(retries + 1):
                if not self.warm.is_set() and i:
                    self.warm.wait()
                run = self.run(env, spec.reset_options(), spec.seed + seed + i,
                               rollout_id=f"{tag}r{i}-a{attempt}-{os.urandom(3).hex()}", env_id=spec.env,
                               env_kwargs=env_kwargs, warm=self.warm if i == 0 else None,
                               metadata={"env_id": spec.env, "rollout": i})
                if run.rollout is not None:
                    self.gateway.close_rollout(run.rollout.id, forget=True)
                if run.error is None or run.env_failed or attempt == retries:
                    break
                logger.warning("An agent rollout of %s failed (%s); playing it again.", spec.key, run.error)
            episodes[i] = episode_from_run(spec, run, limit=limit, retries=attempt)

        threads = [threading.Thread(target=play, args=(i,), name=f"agentgym-agent-{tag}{i}", daemon=True)
                   for i in range(len(specs))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return [e for e in episodes if e is not None]

