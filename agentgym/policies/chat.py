"""``ChatPolicy``: the conversation bookkeeping every model policy shares.

A model policy keeps the episode as chat messages: the task prompt as the first
user message, each action as an assistant message, and each observation as a
user message, or, when the model made function calls, one ``tool`` message per
call (from ``info["tool_outputs"]``), so OpenAI-style tool calling round-trips.
Subclasses implement ``generate`` only.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym.core.env import AgentEnv
from agentgym.core.formats import format_of
from agentgym.policies.base import Policy, Sampling

__all__ = ["ChatPolicy", "Generation"]


@dataclass(frozen=True)
class Generation:
    """One model turn: its text, token counts, and any function calls (``{"id", "name", "arguments"}``)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


class ChatPolicy(Policy):
    """A policy backed by a chat model; ``generate(messages, tools)`` is the model call."""

    #: whether the model is offered the env's tools as functions (when the env's format is function calling)
    supports_tools: bool = False

    def __init__(self, *, sampling: Sampling | None = None, system_prompt: str | None = None) -> None:
        self.sampling = sampling or Sampling()
        self.system_prompt = system_prompt
        self.messages: list[dict[str, Any]] = []
        self._pending: list[dict[str, Any]] = []

    @abstractmethod
    def generate(self, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Generation:
        """The model's next assistant turn for ``messages``."""

    def reset(self, env: AgentEnv, observation: str, info: dict[str, Any]) -> None:
        super().reset(env, observation, info)
        system = self.system_prompt or info.get("system_prompt")  # the policy's, else the env's (a ToolEnv's)
        self.messages = [{"role": "system", "content": system}] if system else []
        self._pending = []

    def _use_tools(self, info: dict[str, Any]) -> bool:
        return self.supports_tools and format_of(info, self.env).function_calling and bool(info.get("tools"))

    def act(self, observation: str, info: dict[str, Any]) -> str | list[dict[str, Any]]:
        if not any(m["role"] == "user" for m in self.messages):
            self.messages.append({"role": "user", "content": observation})
        elif self._pending:
            outputs = list(info.get("tool_outputs") or [])
            for i, call in enumerate(self._pending):
                content = outputs[i] if i < len(outputs) else observation
                self.messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        else:
            self.messages.append({"role": "user", "content": observation})
        gen = self.generate(self.messages, info["tools"] if self._use_tools(info) else None)
        self.usage["prompt_tokens"] += gen.prompt_tokens
        self.usage["completion_tokens"] += gen.completion_tokens
        self._pending = list(gen.tool_calls)
        if gen.tool_calls:
            self.messages.append({"role": "assistant", "content": gen.text or None, "tool_calls": [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": c["arguments"]}} for c in gen.tool_calls]})
            return [{"name": c["name"], "arguments": c["arguments"], "id": c["id"]} for c in gen.tool_calls]
        self.messages.append({"role": "assistant", "content": gen.text})
        return gen.text
