"""An env's MCP tools as plain JSON: their schemas, the env action each call is, and what a call answers.

Shared by agentgym's MCP server (``integrations/mcp.py``, ``agentgym mcp``) and the OpenEnv ``/mcp`` of
``agentgym serve`` (``server/openenv_mcp.py``), so one env has one set of MCP tools wherever it is served.
No SDK is imported here.

- The tools: the env's own (the names and schemas of ``info["tools"]``) and ``answer`` where the env's
  episodes end with an answer. Every input schema is closed (``additionalProperties: false``): the env
  refuses an argument its tool does not declare.
- ``reset``'s arguments carry the bounds of the HTTP protocol (``server/protocol.py``): a seed in
  [0, 2**63), an index in [0, 2**31], a split of at most 200 characters. They are checked here, before
  any env code runs, so a bad reset is the caller's error and changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ANSWER", "ANSWER_INPUT", "MAX_INDEX", "MAX_SEED", "MAX_SPLIT_CHARS", "RESET", "RESET_INPUT",
           "RESET_OUTPUT", "STEP_OUTPUT", "ToolSpec", "call_action", "closed", "env_tools", "json_value",
           "reset_arguments", "step_answer"]

ANSWER, RESET = "answer", "reset"
# the HTTP protocol's bounds (agentgym.server.protocol, which needs the server extra to import; a test keeps
# the two equal)
MAX_SEED = 2**63 - 1
MAX_INDEX = 2**31
MAX_SPLIT_CHARS = 200

STEP_OUTPUT = {"type": "object", "required": ["observation", "reward", "terminated", "truncated", "info"],
               "properties": {"observation": {"type": "string"}, "reward": {"type": "number"},
                              "terminated": {"type": "boolean"}, "truncated": {"type": "boolean"},
                              "info": {"type": "object"}}}
RESET_OUTPUT = {"type": "object", "required": ["observation", "info"],
                "properties": {"observation": {"type": "string"}, "info": {"type": "object"}}}
RESET_INPUT = {"type": "object", "additionalProperties": False, "properties": {
    "seed": {"type": "integer", "minimum": 0, "maximum": MAX_SEED,
             "description": "Seeds the env, in [0, 2**63); with no task_id or index it also picks the task."},
    "task_id": {"type": ["string", "integer"], "description": "Play this task."},
    "split": {"type": "string", "maxLength": MAX_SPLIT_CHARS, "description": "Pick the task from this split."},
    "index": {"type": "integer", "minimum": 0, "maximum": MAX_INDEX,
              "description": "Play the task at this index of the split (0-based)."}}}
ANSWER_INPUT = {"type": "object", "required": [ANSWER], "additionalProperties": False,
                "properties": {ANSWER: {"type": "string", "description": "The final answer."}}}
_ANSWER_DESCRIPTION = "Give your final answer. This ends the episode and scores it."


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: what ``tools/list`` says of it."""

    name: str
    description: str
    input_schema: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """MCP's wire form (``inputSchema``)."""
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema}


def closed(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An object schema that says no other arguments are allowed (unless it says otherwise itself).

    >>> closed({"type": "object", "properties": {"query": {"type": "string"}}})["additionalProperties"]
    False
    """
    return {**schema, "additionalProperties": schema.get("additionalProperties", False)}


def env_tools(tool_schemas: Sequence[Mapping[str, Any]], *, has_answer: bool) -> list[ToolSpec]:
    """The MCP tools of an env: its own (``info["tools"]``, function-calling schemas), then ``answer``."""
    tools = [ToolSpec(s["function"]["name"], s["function"].get("description", ""),
                      closed(s["function"].get("parameters") or {"type": "object", "properties": {}}))
             for s in tool_schemas]
    if has_answer:
        tools.append(ToolSpec(ANSWER, _ANSWER_DESCRIPTION, ANSWER_INPUT))
    return tools


def call_action(name: str, arguments: Any, *, tool_names: Collection[str], has_answer: bool) -> dict[str, Any] | str:
    """The env action of a ``tools/call``, or why it is no action at all (no turn is counted for it).

    Arguments an env tool refuses are the agent's mistake, which the env answers as in process.

    >>> call_action("search", {"query": "Lima"}, tool_names={"search"}, has_answer=True)
    {'name': 'search', 'arguments': {'query': 'Lima'}}
    >>> call_action("answer", {"text": "Lima"}, tool_names={"search"}, has_answer=True)
    "answer takes one argument, 'answer': your final answer as text."
    """
    if name == ANSWER and has_answer:
        if not isinstance(arguments, Mapping) or set(arguments) != {ANSWER} or not isinstance(arguments[ANSWER], str):
            return f"{ANSWER} takes one argument, {ANSWER!r}: your final answer as text."
        return {ANSWER: arguments[ANSWER]}
    if name not in tool_names:
        known = [*sorted(tool_names), *[ANSWER] * has_answer]
        return f"Unknown tool {name!r}; the tools are {', '.join(known)}."
    return {"name": name, "arguments": dict(arguments) if isinstance(arguments, Mapping) else arguments}


def reset_arguments(arguments: Mapping[str, Any]) -> tuple[int | None, dict[str, Any]] | str:
    """``(seed, options)`` for ``env.reset`` from ``reset``'s arguments, or what is wrong with them.

    >>> reset_arguments({"seed": 3, "index": 0})
    (3, {'index': 0})
    >>> reset_arguments({"seed": -1})
    "reset's 'seed' must be an integer in [0, 2**63), got -1."
    """
    for name, value in arguments.items():
        if name not in RESET_INPUT["properties"]:
            return f"reset takes {', '.join(RESET_INPUT['properties'])} (all optional), not {name!r}."
        problem = _problem(name, value)
        if problem:
            return f"reset's {name!r} must be {problem}, got {_short(value)}."
    return arguments.get("seed"), {k: v for k, v in arguments.items() if k != "seed"}


def _problem(name: str, value: Any) -> str | None:
    """What ``value`` of reset's argument ``name`` must be, where it is not."""
    if name in ("seed", "index"):
        high = "2**63)" if name == "seed" else f"{MAX_INDEX}]"
        ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= (
            MAX_SEED if name == "seed" else MAX_INDEX)
        return None if ok else f"an integer in [0, {high}"
    if name == "split":
        return None if isinstance(value, str) and len(value) <= MAX_SPLIT_CHARS else \
            f"a string of at most {MAX_SPLIT_CHARS} characters"
    ok = isinstance(value, (str, int)) and not isinstance(value, bool)  # task_id
    return None if ok else "a string (or an integer)"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def json_value(value: Any) -> Any:
    """``value`` as JSON would carry it (what is not JSON becomes its str)."""
    return json.loads(json.dumps(value, default=str))


def step_answer(observation: str, reward: float, terminated: bool, truncated: bool,
                info: Mapping[str, Any]) -> tuple[str, dict[str, Any], bool]:
    """What a step's ``tools/call`` answers: ``(text, structured content, is_error)``.

    The text is what the tools returned (the observation, where no tool ran: an answer, the env's word on a
    mistake; and, once the episode is over, how it ended and the reward); the structured
    content is everything, ``info`` without its ``tools`` (they are ``tools/list``); ``is_error`` says the env
    saw an agent's mistake (which counted a turn, as in process).
    """
    outputs = info.get("tool_outputs")
    info = {k: v for k, v in info.items() if k != "tools"}
    # the tools' own outputs, not the text protocol's rendering of them (a tags env wraps each in <result>...</result>,
    # which an MCP client would show its model as if the tool had written it)
    text = "\n\n".join(map(str, outputs)) if outputs else observation
    if terminated or truncated:
        how = "terminated" if terminated else "truncated: out of turns"
        text = f"{observation}\n\n[Episode over ({how}); reward {reward:g}.]".lstrip()
    structured = {"observation": observation, "reward": float(reward), "terminated": bool(terminated),
                  "truncated": bool(truncated), "info": json_value(info)}
    return text, structured, bool(info.get("action_error"))
