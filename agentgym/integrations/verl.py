"""agentgym envs behind verl's multi-turn interfaces, in process or over HTTP.

- ``AgentGymAgentLoop``: a verl 0.9 agent loop (``verl.experimental.agent_loop.AgentLoopBase``), the multi-turn
  interface of the pinned verl. Name it in an ``agent_loop_config_path`` file and in each row's ``agent_name``.
- ``AgentGymInteraction``: the interaction interface of verl <= 0.7 (``verl.interactions.base.BaseInteraction``,
  removed in 0.8), written without importing verl. Each ``instance_id`` is one env session; the agent loop
  above plays its episodes through it.

Per-row settings (``EpisodeSpec``: ``env_id``, ``task_id``/``index``/``seed``, ...) go in the row's
``extra_info.interaction_kwargs``, which verl's ``RLHFDataset`` hands to both; settings given in the config
file (the interaction's ``config``, or extra keys of the agent loop's entry) are the defaults.

Infrastructure failures (``RemoteEnvError``, ``SandboxError``, any exception of the env) are raised, after the
session is closed: verl has no per-trajectory error path, and a failure scored 0 would be trained on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any
from uuid import uuid4

import gymnasium as gym

from agentgym.errors import ConfigError, DependencyNotInstalled, ResetNeeded, RolloutError
from agentgym.integrations.episode import EpisodeSpec, info_subset, task_prompts

try:
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
    from verl.utils.profiler import simple_timer
except ImportError:  # AgentGymAgentLoop raises DependencyNotInstalled when made
    AgentLoopBase, AgentLoopOutput, register, simple_timer = object, None, None, None

__all__ = ["AGENT_NAME", "VERL_INSTALL", "AgentGymAgentLoop", "AgentGymInteraction", "verl_rows"]

VERL_INSTALL = "pip install 'agentgym-suite[verl]' torch==2.13.0"
AGENT_NAME = "agentgym"
_SETTINGS = frozenset(f.name for f in fields(EpisodeSpec))


@dataclass
class _Session:
    env: gym.Env | None
    prompt: str
    reward: float = 0.0


class AgentGymInteraction:
    """verl's interaction interface over agentgym env sessions, one per ``instance_id``.

    ``config``: the interaction's ``name`` and default settings. ``start_interaction`` starts the task its
    kwargs (the row's ``interaction_kwargs``) name; ``generate_response`` plays the latest assistant message
    and answers ``(done, observation, reward, info subset)``; ``calculate_score`` is the episode's reward.
    A finished episode's env is closed at once (verl <= 0.7 never calls ``finalize_interaction``).
    """

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)
        self.name: str = self.config.pop("name", AGENT_NAME)
        unknown = sorted(set(self.config) - _SETTINGS)
        if unknown:  # here, not at the first row
            raise ConfigError(f"Unknown agentgym setting(s) {unknown}; the settings are {sorted(_SETTINGS)}.")
        self._sessions: dict[str, _Session] = {}

    def prompt(self, instance_id: str) -> str:
        """The task prompt of the episode ``instance_id`` (the first observation)."""
        return self._session(instance_id).prompt

    async def start_interaction(self, instance_id: str | None = None, **kwargs: Any) -> str:
        instance_id = instance_id or str(uuid4())
        kwargs.pop("name", None)  # verl's routing key, not a setting
        spec = EpisodeSpec.merge(self.config, kwargs)
        env = await asyncio.to_thread(spec.open)
        try:
            prompt, _ = await asyncio.to_thread(spec.reset, env)
        except Exception:
            await asyncio.to_thread(_close_quietly, env)
            raise
        self._sessions[instance_id] = _Session(env, prompt)
        return instance_id

    async def generate_response(self, instance_id: str, messages: list[dict[str, Any]],
                                **kwargs: Any) -> tuple[bool, str, float, dict[str, Any]]:
        session = self._session(instance_id)
        if session.env is None:
            raise ResetNeeded(f"The episode of interaction {instance_id!r} is over; start a new interaction.")
        action = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "assistant"), "")
        try:
            observation, reward, terminated, truncated, info = await asyncio.to_thread(session.env.step, action)
        except Exception:
            await self.finalize_interaction(instance_id)
            raise
        session.reward += float(reward)
        done = bool(terminated or truncated)
        if done:
            env, session.env = session.env, None
            await asyncio.to_thread(_close_quietly, env)
        return done, observation, float(reward), info_subset(info, terminated, truncated)

    async def calculate_score(self, instance_id: str, **kwargs: Any) -> float:
        return self._session(instance_id).reward

    async def finalize_interaction(self, instance_id: str, **kwargs: Any) -> None:
        session = self._sessions.pop(instance_id, None)
        if session is not None and session.env is not None:
            await asyncio.to_thread(_close_quietly, session.env)

    def _session(self, instance_id: str) -> _Session:
        try:
            return self._sessions[instance_id]
        except KeyError:
            raise ResetNeeded(f"No interaction {instance_id!r}: call start_interaction first.") from None


def _close_quietly(env: gym.Env) -> None:
    """Close, not raising a server's failure to: it cannot change the episode's outcome, or comes after the
    failure that is the news."""
    try:
        env.close()
    except RolloutError:
        pass


class AgentGymAgentLoop(AgentLoopBase):
    """A verl agent loop that plays one agentgym episode per row, token in, token out.

    The prompt is the row's system messages and the env's task prompt; each turn the model's tokens go in
    with mask 1, the env's observation as a user message with mask 0. It ends when the env does or
    ``rollout.response_length`` is reached; ``reward_score`` is the episode's reward.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if AgentLoopBase is object:
            raise DependencyNotInstalled("verl (for the verl agent loop)", VERL_INSTALL)
        from omegaconf import OmegaConf

        settings = {k: kwargs.pop(k) for k in list(kwargs) if k in _SETTINGS}  # extra keys of the config entry
        super().__init__(*args, **kwargs)
        settings = {k: OmegaConf.to_container(v, resolve=True) if OmegaConf.is_config(v) else v
                    for k, v in settings.items()}
        self.interaction = AgentGymInteraction({"name": AGENT_NAME, **settings})
        self.response_length = self.rollout_config.response_length

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        instance_id = uuid4().hex
        await self.interaction.start_interaction(instance_id, **dict(kwargs.get("interaction_kwargs") or {}))
        try:
            system = [m for m in kwargs.get("raw_prompt", ()) if m.get("role") == "system"]
            messages = [*system, {"role": "user", "content": self.interaction.prompt(instance_id)}]
            prompt_ids = await self.ct_build_initial_tokens(messages)
            token_ids, mask, logprobs = list(prompt_ids), [], None
            metrics: dict[str, Any] = {}
            turns = 1
            while True:
                with simple_timer("generate_sequences", metrics):
                    output = await self.server_manager.generate(request_id=instance_id, prompt_ids=token_ids,
                                                                sampling_params=sampling_params)
                if output.log_probs and logprobs is None:
                    logprobs = []
                merged, mask, logprobs = await self.ct_merge_assistant_token(
                    token_ids, output.token_ids, mask, logprobs, assistant_logprobs=output.log_probs or None)
                token_ids, turns = merged.token_ids, turns + 1
                text = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
                messages.append({"role": "assistant", "content": text})
                if len(mask) >= self.response_length:
                    break
                with simple_timer("tool_calls", metrics):
                    done, observation, _, _ = await self.interaction.generate_response(instance_id, messages)
                if done:
                    break
                previous = list(messages)
                messages.append({"role": "user", "content": observation})
                merged, new_mask, new_logprobs = await self.ct_merge_context_msg(
                    previous, messages, token_ids, mask, logprobs)
                if len(new_mask) >= self.response_length:
                    break
                token_ids, mask, logprobs, turns = merged.token_ids, new_mask, new_logprobs, turns + 1
            reward = await self.interaction.calculate_score(instance_id)
        finally:
            await self.interaction.finalize_interaction(instance_id)
        prompt_length = len(token_ids) - len(mask)
        return AgentLoopOutput(
            prompt_ids=token_ids[:prompt_length], response_ids=token_ids[prompt_length:][:self.response_length],
            response_mask=mask[:self.response_length],
            response_logprobs=logprobs[:self.response_length] if logprobs else None,
            reward_score=reward, num_turns=turns, metrics=metrics)


if register is not None:  # in-process use; verl's workers find it through agent_loop_config_path
    register(AGENT_NAME)(AgentGymAgentLoop)


def verl_rows(env_id: str, *, split: str = "train", env_kwargs: Mapping[str, Any] | None = None,
              count: int | None = None) -> list[dict[str, Any]]:
    """verl dataset rows, one per task of ``split`` (the first ``count``): the task prompt, ``agent_name`` and
    ``extra_info.interaction_kwargs`` naming the task. ``datasets.Dataset.from_list(rows).to_parquet(...)``
    writes ``data.train_files``."""
    settings = {"name": AGENT_NAME, "env_id": env_id, **({"env_kwargs": dict(env_kwargs)} if env_kwargs else {})}
    return [{"data_source": env_id, "prompt": [{"role": "user", "content": prompt}], "agent_name": AGENT_NAME,
             "extra_info": {"index": i, "interaction_kwargs": {**settings, "task_id": task_id}}}
            for i, (task_id, prompt) in enumerate(task_prompts(env_id, split=split, env_kwargs=env_kwargs,
                                                               count=count))]
