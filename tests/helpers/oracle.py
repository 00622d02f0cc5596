"""``Oracle``: a scripted model for the framework adapters' tests."""

from __future__ import annotations

import agentgym


class Oracle:
    """The model: a separate local env at the same task, stepped in lockstep, plays its oracle's actions
    (after ``mistakes``); ``actions`` are what it played, ``observations`` what the local env answered.
    Called with whatever the framework passes a model (a chat history, or nothing)."""

    def __init__(self, env_id: str, task_id: str, mistakes=()):
        self.env = agentgym.make(env_id).unwrapped
        self.prompt, _ = self.env.reset(options={"task_id": task_id})
        self.mistakes = list(mistakes)
        self.actions: list[str] = []
        self.observations: list[str] = []

    def __call__(self, *_: object) -> str:
        action = self.mistakes.pop(0) if self.mistakes else self.env.oracle_action()
        self.actions.append(action)
        self.observations.append(self.env.step(action)[0])
        return action


def play_oracle_over_mcp(local, call) -> dict:
    """Play ``local``'s (an unwrapped env, reset) oracle episode to its end as MCP tool calls: ``call(name,
    arguments)`` returns the ``tools/call`` result; each must show what the local env answered. The last result."""
    while True:
        parsed = local.action_format.parse(local.oracle_action(), local.tools)
        name, arguments = ("answer", {"answer": parsed.answer}) if parsed.is_final else (
            parsed.tool_calls[0].name, dict(parsed.tool_calls[0].arguments))
        observation, reward, terminated, _, _ = local.step(
            {"answer": parsed.answer} if parsed.is_final else {"name": name, "arguments": arguments})
        result = call(name, arguments)
        assert result["structuredContent"]["observation"] == observation and result["data"]["reward"] == reward
        if terminated:
            return result
