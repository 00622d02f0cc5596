"""An agentgym env as a verifiers 0.4 environment: its taskset, the env that plays it and an in-process harness.

verifiers (``verifiers.v1``) loads an environment by its taskset id, importing the module of that name and taking
the ``Taskset``, ``Env`` and ``Harness`` subclasses it exports; ``agentgym_verifiers`` is that module for agentgym
(``vf-eval agentgym-verifiers --env.taskset.env agentgym/SearchQA-v0``), and
``agentgym.integrations.verifiers.load_environment`` builds the same thing in Python. This module imports
verifiers: import it only where verifiers is installed (``pip install 'agentgym-suite[verifiers]'``).

- ``AgentGymTaskset``: one verifiers task per agentgym task of a split; its prompt is the env's first observation.
- ``AgentGymEnv``: one episode is one agentgym episode. The model's replies are the env's actions, each observation
  goes back as the next user message, until the env ends the episode (or verifiers' own limits end the rollout).
- ``AgentGymTask``: its one reward, ``agentgym``, is the env's verified reward of that episode; scoring a trace
  that did not come from ``AgentGymEnv`` replays its assistant messages through a fresh env.
- ``ChatHarness``: one chat completion per turn, made in this process through verifiers' interception endpoint (so
  verifiers records the call), with no program to install. verifiers' own ``null`` harness plays the same turns
  (``--env.agent.harness.id null``) where its runtime can install its program with ``uv``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.dialects.chat import message_to_wire

from agentgym.errors import ConfigError

__all__ = ["AgentGymEnv", "AgentGymEnvConfig", "AgentGymTask", "AgentGymTaskset", "AgentGymTasksetConfig",
           "ChatHarness", "ChatHarnessConfig", "EpisodeRecord"]


@dataclass
class EpisodeRecord:
    """What one played episode left: the env's reward, its verification and how many steps and tool calls."""

    reward: float = 0.0
    steps: int = 0
    tool_calls: int = 0
    terminated: bool = False
    truncated: bool = False
    verification: dict[str, Any] = field(default_factory=dict)


class AgentGymTaskData(vf.TaskData):
    """A verifiers task row for one agentgym task: its id (``id``), the env that plays it and how."""

    env: str
    split: str
    env_kwargs: dict[str, Any] = {}


class AgentGymTasksetConfig(vf.TasksetConfig):
    """Which agentgym env and split the taskset holds (``--env.taskset.env``, ``--env.taskset.split``)."""

    env: str = "agentgym/SearchQA-v0"
    split: str = "test"
    env_kwargs: dict[str, Any] = {}
    """Keyword arguments of the env (``gym.make(env, **env_kwargs)``), e.g. ``{"action_format": "hermes"}``."""


def make_env(env_id: str, env_kwargs: dict[str, Any]) -> Any:
    """The agentgym env ``env_id`` in this process (``agentgym.make``: a did-you-mean error for an unknown id)."""
    from agentgym.core.registry import make

    return make(env_id, **env_kwargs)


class AgentGymTask(vf.Task[AgentGymTaskData]):
    """One agentgym task; ``record`` is set by ``AgentGymEnv`` on the copy it plays."""

    record: EpisodeRecord | None = None

    @vf.reward
    async def agentgym(self, trace: vf.Trace) -> float:
        """The env's own verified reward of the episode (0 when it ended without the env ending it)."""
        return (self.record or self.replay(trace)).reward

    @vf.metric
    async def env_steps(self, trace: vf.Trace) -> float:
        return float((self.record or self.replay(trace)).steps)

    def replay(self, trace: vf.Trace) -> EpisodeRecord:
        """The episode the trace's assistant messages make when played through a fresh env, step by step."""
        env = make_env(self.data.env, self.data.env_kwargs)
        try:
            env.reset(options={"task_id": self.data.id})
            record = EpisodeRecord()
            for message in trace.assistant_messages:
                step(env, record, message.content or "")
                if record.terminated or record.truncated:
                    break
            self.record = record
            return record
        finally:
            env.close()


def step(env: Any, record: EpisodeRecord, action: str) -> str:
    """One env step with the model's reply; updates ``record``; returns the observation."""
    observation, reward, terminated, truncated, info = env.step(action)
    record.steps += 1
    record.tool_calls += len(info.get("tool_calls") or ())
    record.reward, record.terminated, record.truncated = float(reward), terminated, truncated
    record.verification = dict(info.get("verification") or {})
    return observation


class AgentGymTaskset(vf.Taskset[AgentGymTask, AgentGymTasksetConfig]):
    """The tasks of one split of an agentgym env, in the env's order."""

    def load(self) -> Iterator[AgentGymTask]:
        config = self.config
        env = make_env(config.env, config.env_kwargs)
        try:
            for task in env.unwrapped.tasks.tasks(config.split):
                prompt, _ = env.reset(options={"task_id": task.id})
                yield AgentGymTask(AgentGymTaskData(id=task.id, prompt=prompt, env=config.env, split=config.split,
                                                    env_kwargs=config.env_kwargs), config.task)
        finally:
            env.close()


class ChatHarnessConfig(vf.HarnessConfig):
    pass


class ChatHarness(vf.Harness[ChatHarnessConfig]):
    """One chat completion per segment, in this process, through verifiers' interception endpoint."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx: vf.ModelContext, trace: vf.Trace, runtime: vf.Runtime, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: vf.TaskData) -> vf.ProgramResult:
        import httpx

        system, prompt = self.resolve_prompt(data)
        messages = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages.extend(message_to_wire(m) for m in prompt or ())
        async with httpx.AsyncClient(timeout=None) as client:
            reply = await client.post(f"{endpoint.rstrip('/')}/chat/completions",
                                      headers={"Authorization": f"Bearer {secret}"},
                                      json={"model": ctx.model, "messages": messages})
        if reply.status_code != 200:
            return vf.ProgramResult(exit_code=1, stdout="", stderr=f"HTTP {reply.status_code}: {reply.text[:500]}")
        return vf.ProgramResult(exit_code=0, stdout=json.dumps(reply.json().get("usage") or {}), stderr="")


class AgentGymEnvConfig(vf.EnvConfig):
    """One agent seat; its harness program runs in this process, so the runtime is a local subprocess one."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class AgentGymEnv(vf.Env[AgentGymEnvConfig]):
    """Plays one agentgym episode per verifiers episode: the model's replies step the env."""

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        if not isinstance(task, AgentGymTask):
            raise ConfigError(f"AgentGymEnv plays agentgym tasks (the agentgym_verifiers taskset), got "
                              f"{type(task).__name__}.")
        played = task.with_data()  # this episode's own copy: it carries the episode's record to scoring
        played.record = record = EpisodeRecord()
        env = make_env(task.data.env, task.data.env_kwargs)
        try:
            prompt, _ = env.reset(options={"task_id": task.data.id})
            if prompt != task.data.prompt:
                raise ConfigError(f"The env's prompt for task {task.data.id!r} is not the taskset's: the env "
                                  "changed since the taskset was loaded.")
            async with agents.agent.interaction(played) as chat:
                segment = await chat.turn()
                while not segment.terminated:
                    observation = step(env, record, segment.last_reply)
                    if record.terminated or record.truncated:
                        break
                    segment = await chat.turn(observation or "(no output)")
        finally:
            env.close()
