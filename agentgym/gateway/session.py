"""One rollout's env episode, stepped by the agent's tool calls: ``call_tool`` in process, the gateway's HTTP tool
route, and its per-rollout MCP endpoint all act on the same :class:`ToolSession`.

The env is made with structured (``dict``) actions, so a tool's output reaches the agent as the tool wrote it,
without the text protocol's tag wrapping, and the task prompt is the env's without the text protocol's action
instructions (the agent calls tools as functions). An agent's mistake with a tool (bad arguments, a tool error) is
an observation, as in process; what is no action at all (an unknown tool, a call after the episode ended, a call
on a closed session) raises :class:`NoAction` and changes nothing.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentgym.core.formats import DictFormat, format_of
from agentgym.errors import AgentGymError
from agentgym.integrations.mcp_tools import ANSWER, ToolSpec, call_action, env_tools, step_answer

__all__ = ["NoAction", "StepRecord", "ToolSession", "agent_prompt"]


class NoAction(AgentGymError):
    """A tool call that is no action (unknown tool, episode over, session closed): nothing happened."""


@dataclass(frozen=True)
class StepRecord:
    """One env step an agent made: the call, what the env answered, and whether it ended the episode."""

    name: str
    arguments: Any
    observation: str
    reward: float
    done: bool
    error: str | None
    #: when the step ended (``time.time()``): a transcript interleaves steps and model calls by it
    at: float


#: the text protocols' own tags only: a task's content (an issue that says "between <b> and </b>") stays as it is
_TAG_PHRASE = re.compile(r",? (?:inside|between|within) <(answer|think|code|search|interpreter|information)> and </\1>")


def agent_prompt(env: Any, observation: str) -> str:
    """The task prompt for an agent that calls tools as functions: the reset observation without the ``dict``
    format's action instructions (the agent's framework tells its model how to call tools)."""
    unwrapped = getattr(env, "unwrapped", env)
    fmt = getattr(unwrapped, "action_format", None)
    tools = getattr(unwrapped, "tools", None)
    if isinstance(fmt, DictFormat) and isinstance(tools, Mapping):
        observation = observation.replace(fmt.instructions(tools), "")
    # the text protocol's tags ("give the answer between <answer> and </answer>", "think inside <think> and
    # </think>"): an agent answers by returning its text, and thinks as its framework lets it
    observation = _TAG_PHRASE.sub("", observation)
    while "\n\n\n" in observation:
        observation = observation.replace("\n\n\n", "\n\n")
    return observation.strip()


class ToolSession:
    """The env episode of one rollout after its reset: its prompt, tools, and steps; thread-safe."""

    def __init__(self, env: Any, observation: str, info: Mapping[str, Any]) -> None:
        self.env = env
        self.prompt = agent_prompt(env, observation)
        self.info: dict[str, Any] = dict(info)
        self.schemas: list[dict[str, Any]] = [dict(s) for s in info.get("tools") or []]
        self.names = frozenset(s["function"]["name"] for s in self.schemas)
        self.has_answer = format_of(info, env).has_answer
        self.steps: list[StepRecord] = []
        self.reward = 0.0
        self.terminated = self.truncated = False
        self.closed = False
        #: an error the env raised in a step (its verifier's, a judge's): the episode's error, even when the agent
        #: caught the exception its tool call raised and ended the run as if nothing happened
        self.failure: str | None = None
        self._lock = threading.Lock()

    @property
    def ended(self) -> bool:
        return self.terminated or self.truncated

    def openai_tools(self) -> list[dict[str, Any]]:
        """The env's tools as OpenAI tool schemas (``{"type": "function", "function": {...}}``); no answer tool:
        an agent answers by returning its final text."""
        return [{"type": "function", "function": dict(s["function"])} for s in self.schemas]

    def mcp_tools(self) -> list[ToolSpec]:
        """The same tools for MCP clients, with ``answer`` where the env's episodes end with an answer."""
        return env_tools(self.schemas, has_answer=self.has_answer)

    def call_tool(self, name: str, arguments: Any = None) -> str:
        """Run one tool call as an env step; the tool's output, or the env's word on the agent's mistake (a call
        that is no action, such as an unknown tool, comes back as its reason and changes nothing)."""
        try:
            return self.call(name, arguments)[0]
        except NoAction as e:
            return f"Error: {e}"

    def call(self, name: str, arguments: Any = None) -> tuple[str, dict[str, Any], bool]:
        """One step for a tool call: ``(text, structured, is_error)`` as an MCP ``tools/call`` answers it."""
        action = call_action(name, {} if arguments is None else arguments, tool_names=self.names,
                             has_answer=self.has_answer)
        if isinstance(action, str):
            raise NoAction(action)
        observation, reward, terminated, truncated, info = self._step(action, name, arguments)
        return step_answer(observation, reward, terminated, truncated, info)

    def answer(self, text: str) -> tuple[float, bool]:
        """End the episode with the agent's final answer (where it is not over yet); ``(reward, ended)``."""
        with self._lock:
            if self.ended or self.closed:
                return self.reward, self.ended
        if self.has_answer:
            self._step({ANSWER: text}, ANSWER, {ANSWER: text})
        return self.reward, self.ended

    def _step(self, action: Any, name: str, arguments: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        with self._lock:
            if self.closed:
                raise NoAction("This rollout is closed: its episode was scored (or timed out); start a new one.")
            if self.ended:
                raise NoAction("The episode is over: no more tool calls are taken.")
            try:
                observation, reward, terminated, truncated, info = self.env.step(action)
            except Exception as e:
                self.failure = self.failure or f"{type(e).__name__}: {e}"
                raise
            self.info = dict(info)
            self.terminated, self.truncated = bool(terminated), bool(truncated)
            if self.ended:
                self.reward = float(reward)
            self.steps.append(StepRecord(name, arguments, observation, float(reward), self.ended,
                                         info.get("action_error"), time.time()))
            return observation, float(reward), self.terminated, self.truncated, self.info

    def close(self) -> None:
        """No further call is taken (a timed-out agent's thread may still try)."""
        with self._lock:
            self.closed = True
