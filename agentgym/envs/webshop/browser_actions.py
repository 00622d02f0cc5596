"""BrowserGym's action format: the agent's function-call text, read with ``ast`` into tool calls."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentgym.core.pyparse import parse
from agentgym.core.formats import ActionFormat, ParsedAction, TagsFormat, ToolResult
from agentgym.core.tools import Tool, ToolCall
from agentgym.envs.webshop.chromium import SHOP_ORIGIN

__all__ = ["BrowserGymFormat", "BrowserTagsFormat"]

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_FENCE = re.compile(r"```[\w-]*\n?(.*?)```", re.DOTALL)
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\(")
_MAX_CLOSING_PARENS = 64  # how far a call's arguments may run; bounds the parse of one turn
# BrowserGym's argument names, accepted as keywords
_ALIASES = {"bid": "element", "key_comb": "key", "delta_x": "dx", "delta_y": "dy"}
_EXAMPLES = {"click": 'click("e12")', "fill": 'fill("e5", "red running shoes")', "press": 'press("e5", "Enter")',
             "scroll": "scroll(0, 300)", "go_back": "go_back()", "goto": f'goto("{SHOP_ORIGIN}/...")',
             "noop": "noop()"}


class BrowserGymFormat(ActionFormat):
    """BrowserGym's actions as Python calls, ``click("e12")``: the first call of a known action in the
    text (in a code fence if there is one), read with ``ast``, never evaluated.

    >>> tools = {"click": Tool("click", "Click.", {"type": "object", "properties": {"element": {"type": "string"}},
    ...                                           "required": ["element"]}, lambda element: "")}
    >>> BrowserGymFormat().parse("I will open it.\\n```python\\nclick('e12')\\n```", tools).tool_calls[0].arguments
    {'element': 'e12'}
    """

    name = "browsergym"
    has_answer = False  # the episode ends by buying, not by an answer

    def parse(self, text: str, tools: Mapping[str, Tool]) -> ParsedAction:
        if not isinstance(text, str):
            return ParsedAction(error=f"Expected the action as text, got {type(text).__name__}.")
        visible = _THINK.sub("", text)
        for chunk in (*_FENCE.findall(visible), visible):
            parsed = _first_call(chunk, tools)
            if parsed is not None:
                return parsed
        return ParsedAction(error="No action found. " + self.instructions(tools))

    def render_call(self, call: ToolCall, tools: Mapping[str, Tool]) -> str:
        names = list(tools[call.name].parameters.get("properties", {})) if call.name in tools else list(call.arguments)
        args = ", ".join(json.dumps(call.arguments[n], ensure_ascii=False) for n in names if n in call.arguments)
        return f"{call.name}({args})"

    def render_answer(self, answer: str) -> str:
        return "noop()"  # there is no answer action: only buying ends the episode

    def render_results(self, results: Sequence[ToolResult]) -> str:
        return "\n\n".join(r.output for r in results)

    def instructions(self, tools: Mapping[str, Tool]) -> str:
        lines = [f"  {_EXAMPLES.get(name, name + '(...)')}: {tool.description}" for name, tool in tools.items()]
        return ("Write one action per turn as a function call with quoted strings; only the first is run:\n"
                + "\n".join(lines))


class _Unreadable(Exception):
    """An argument that is not a literal."""


def _first_call(chunk: str, tools: Mapping[str, Tool]) -> ParsedAction | None:
    for match in _CALL.finditer(chunk):
        name = match.group(1)
        if name not in tools:
            continue
        node = _call_node(chunk, match.start())
        if node is None:
            return ParsedAction(error=f"Cannot read the call of {name}: close it and quote its strings, "
                                      f"like {_EXAMPLES.get(name, name + '()')}.")
        return _to_call(name, node, tools[name])
    return None


def _call_node(chunk: str, start: int) -> ast.Call | None:
    end = start
    for _ in range(_MAX_CLOSING_PARENS):
        end = chunk.find(")", end) + 1
        if end == 0:
            return None
        try:
            node = parse(chunk[start:end], mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # a ")" inside a string, or not the end of the call yet
        return node if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None
    return None


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Name):
        return node.id  # a bare id, click(e12), is meant as the string
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError) as e:
        raise _Unreadable from e


def _to_call(name: str, node: ast.Call, tool: Tool) -> ParsedAction:
    params = list(tool.parameters.get("properties", {}))
    if len(node.args) > len(params):
        return ParsedAction(error=f"{name} takes {len(params)} argument(s) ({', '.join(params) or 'none'}), "
                                  f"got {len(node.args)}.")
    try:
        arguments = {param: _literal(arg) for param, arg in zip(params, node.args)}
        for keyword in node.keywords:
            if keyword.arg is None:
                return ParsedAction(error=f"{name}: write the arguments out, not **kwargs.")
            arguments[_ALIASES.get(keyword.arg, keyword.arg)] = _literal(keyword.value)
    except _Unreadable:
        return ParsedAction(error=f"The arguments of {name} must be literals (quoted strings, numbers), "
                                  f"like {_EXAMPLES.get(name, name + '()')}.")
    return ParsedAction(tool_calls=(ToolCall(name, arguments),))


class BrowserTagsFormat(TagsFormat):
    """``tags`` for browser tools: a tool of several arguments takes them comma-separated,
    ``<fill>e5, red shoes</fill>`` (the last argument takes the rest of the text)."""

    def parse(self, text: str, tools: Mapping[str, Tool]) -> ParsedAction:
        parsed = super().parse(text, tools)
        if not parsed.tool_calls:
            return parsed
        call = parsed.tool_calls[0]
        properties = tools[call.name].parameters.get("properties", {})
        if len(properties) < 2:
            return parsed
        body = next(iter(call.arguments.values()), "")
        parts = [p.strip() for p in body.split(",", len(properties) - 1)]
        arguments = {name: _coerce(part, spec.get("type")) for (name, spec), part in zip(properties.items(), parts)}
        return ParsedAction(tool_calls=(ToolCall(call.name, arguments),))

    def render_call(self, call: ToolCall, tools: Mapping[str, Tool]) -> str:
        names = tools[call.name].parameters.get("properties", {})
        body = ", ".join(str(call.arguments[n]) for n in names if n in call.arguments)
        return f"<{call.name}>{body}</{call.name}>"


def _coerce(text: str, kind: str | None) -> Any:
    if kind == "number":
        try:
            return float(text) if any(c in text for c in ".eE") else int(text)
        except ValueError:
            return text  # the tool's validation says what is wrong
    return text
