"""Action formats: model text (or a dict) to tool calls or a final answer, and back.

A format never raises on agent input: anything it cannot parse comes back as a
``ParsedAction`` whose ``error`` tells the agent what was wrong and how to fix it.

- ``tags``: Search-R1 / ReTool style, ``<search>query</search>`` and
  ``<answer>text</answer>``; the first complete action tag in the text is the action.
- ``hermes`` (alias ``json``): Qwen / Hermes function calling,
  ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``; several calls per
  turn are allowed; a turn with no tool call is the final answer.
- ``plain``: one action per turn in plain words after ``Action:``, ``search capital of
  Peru`` or ``answer Lima``: for clients that keep only the letters, digits, commas and
  spaces of an action (AgentGym's TextCraft client).
- ``dict``: structured actions for programmatic clients,
  ``{"name": "search", "arguments": {...}}``, a list of those, or ``{"answer": "..."}``.
  Every env accepts dict actions whatever its text format.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentgym.core.tools import Tool, ToolCall
from agentgym.errors import ConfigError

__all__ = ["ActionFormat", "DictFormat", "HermesFormat", "ParsedAction", "PlainFormat", "TagsFormat", "ToolResult",
           "check_calls", "format_of", "get_format"]

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


@dataclass(frozen=True)
class ParsedAction:
    """What the agent asked for: tool calls, a final answer, or an error message."""

    tool_calls: tuple[ToolCall, ...] = ()
    answer: str | None = None
    error: str | None = None
    #: what of the turn was not read (an answer written after a tool call): the env says so with the results
    note: str | None = None

    @property
    def is_final(self) -> bool:
        return self.error is None and self.answer is not None


@dataclass(frozen=True)
class ToolResult:
    """A tool's output for one call, as the format renders it back to the model."""

    call: ToolCall
    output: str
    result_tag: str = "result"


class ActionFormat(ABC):
    """Translate between model output and ``ParsedAction``; render tool results."""

    name: str = ""
    # False for formats whose episodes end by an action in the world (WebShop's Buy Now), not an answer
    has_answer: bool = True
    #: whether the model calls tools as functions (a chat template's tool calls) in this format
    function_calling: bool = False

    def stop_strings(self, tool_names: Iterable[str]) -> tuple[str, ...]:
        """Text after which a model's turn is over, besides its end-of-turn token (none unless the format says)."""
        return ()

    def observation_role(self, *, made_tool_calls: bool) -> str:
        """The chat role of the observation that follows a turn: ``tool`` after function calls, else ``user``."""
        return "tool" if self.function_calling and made_tool_calls else "user"

    @abstractmethod
    def parse(self, text: str, tools: Mapping[str, Tool]) -> ParsedAction:
        """Parse one model turn. Never raises on malformed text."""

    @abstractmethod
    def render_call(self, call: ToolCall, tools: Mapping[str, Tool]) -> str:
        """The text a model would write to make ``call`` (the inverse of ``parse``)."""

    @abstractmethod
    def render_answer(self, answer: str) -> str:
        """The text a model would write to give ``answer`` as its final answer."""

    @abstractmethod
    def render_results(self, results: Sequence[ToolResult]) -> str:
        """The observation text for the outputs of one turn's tool calls."""

    @abstractmethod
    def instructions(self, tools: Mapping[str, Tool]) -> str:
        """How to call the tools and answer, for the task prompt."""


def _check_call(call: ToolCall, tools: Mapping[str, Tool]) -> str | None:
    tool = tools.get(call.name)
    if tool is None:
        return f"Unknown tool {call.name!r}. Available tools: {', '.join(sorted(tools)) or 'none'}."
    problem = tool.validate(call.arguments)
    return f"Invalid call to {call.name!r}: {problem}." if problem else None


class TagsFormat(ActionFormat):
    """``<tool>body</tool>`` calls and ``<answer>...</answer>``, as in Search-R1 and ReTool."""

    name = "tags"

    def __init__(self, *, answer_tag: str = "answer") -> None:
        self.answer_tag = answer_tag

    def stop_strings(self, tool_names: Iterable[str]) -> tuple[str, ...]:
        """After the first closing tool or answer tag: what follows would be the model inventing the result."""
        return tuple(f"</{name}>" for name in (*tool_names, self.answer_tag) if name)

    def _pattern(self, tools: Mapping[str, Tool]) -> re.Pattern[str]:
        names = "|".join(re.escape(n) for n in sorted((*tools, self.answer_tag), key=len, reverse=True))
        return re.compile(rf"<({names})>(.*?)</\1>", re.DOTALL)

    def parse(self, text: str, tools: Mapping[str, Tool]) -> ParsedAction:
        if not isinstance(text, str):
            return ParsedAction(error=f"Expected the action as text, got {type(text).__name__}.")
        match = self._pattern(tools).search(_THINK.sub("", text))
        if match is None:
            return ParsedAction(error=self._help(tools, prefix="No valid action found in your output."))
        tag, body = match.group(1), match.group(2).strip()
        if tag == self.answer_tag:
            return ParsedAction(answer=body)
        later = [m.group(1) for m in self._pattern(tools).finditer(_THINK.sub("", text), match.end())]
        note = (f"Only the first action of a turn is read (<{tag}>); what followed it ("
                f"{', '.join(f'<{t}>' for t in later)}) was not read: write one action per turn"
                + (", and the final answer in a turn of its own." if self.answer_tag in later else ".")
                if later else None)
        tool = tools[tag]
        arg = tool.primary_argument
        if arg is None:
            return ParsedAction(tool_calls=(ToolCall(tag, {}),), note=note)
        if not body:
            return ParsedAction(error=f"The <{tag}> tag is empty: put the {arg} between <{tag}> and </{tag}>.")
        return ParsedAction(tool_calls=(ToolCall(tag, {arg: body}),), note=note)

    def _help(self, tools: Mapping[str, Tool], *, prefix: str) -> str:
        uses = [f"to call {n}, put its {t.primary_argument or 'input'} between <{n}> and </{n}>"
                for n, t in sorted(tools.items())]
        uses.append(f"to give the final answer, put it between <{self.answer_tag}> and </{self.answer_tag}>")
        return f"{prefix} Write exactly one action per turn: {'; '.join(uses)}."

    def render_call(self, call: ToolCall, tools: Mapping[str, Tool]) -> str:
        arg = tools[call.name].primary_argument
        body = str(call.arguments.get(arg, "")) if arg else ""
        return f"<{call.name}>{body}</{call.name}>"

    def render_answer(self, answer: str) -> str:
        return f"<{self.answer_tag}>{answer}</{self.answer_tag}>"

    def render_results(self, results: Sequence[ToolResult]) -> str:
        return "".join(f"\n\n<{r.result_tag}>{r.output}</{r.result_tag}>\n\n" for r in results)

    def instructions(self, tools: Mapping[str, Tool]) -> str:
        return self._help(tools, prefix="Actions:")


class HermesFormat(ActionFormat):
    """Qwen / Hermes ``<tool_call>{json}</tool_call>``; a turn without calls is the answer."""

    name = "hermes"
    function_calling = True
    _CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)

    def __init__(self, *, answer_tag: str = "answer", plain_text_answers: bool = True) -> None:
        self.answer_tag = answer_tag
        # False: a turn without a tool call or an answer tag is a format error (SWE-agent's behaviour)
        self.plain_text_answers = plain_text_answers

    def parse(self, text: str, tools: Mapping[str, Tool]) -> ParsedAction:
        if not isinstance(text, str):
            return ParsedAction(error=f"Expected the action as text, got {type(text).__name__}.")
        visible = _THINK.sub("", text)
        bodies = self._CALL.findall(visible)
        if not bodies:
            if "<tool_call>" in visible:
                return ParsedAction(error="Unclosed <tool_call>: end every call with </tool_call>.")
            answer = re.search(rf"<{self.answer_tag}>(.*?)</{self.answer_tag}>", visible, re.DOTALL)
            if answer is None and not self.plain_text_answers:
                return ParsedAction(error="No tool call found. Call a tool with "
                                          '<tool_call>{"name": ..., "arguments": {...}}</tool_call>.')
            return ParsedAction(answer=(answer.group(1) if answer else visible).strip())
        calls = []
        for i, body in enumerate(bodies):
            try:
                data = json.loads(body)
            except json.JSONDecodeError as e:
                return ParsedAction(error=f"Tool call {i + 1} is not valid JSON ({e.msg} at char {e.pos}). "
                                          'Write <tool_call>{"name": "...", "arguments": {...}}</tool_call>.')
            call, problem = _call_from_mapping(data, call_id=f"call_{i}")
            if problem:
                return ParsedAction(error=f"Tool call {i + 1}: {problem}")
            calls.append(call)
        outside = self._CALL.sub("", visible)
        note = (f"Your <{self.answer_tag}> was not read: a turn that calls tools gets their results; give the final "
                f"answer in a turn of its own, without a tool call."
                if re.search(rf"<{self.answer_tag}>.*?</{self.answer_tag}>", outside, re.DOTALL) else None)
        return ParsedAction(tool_calls=tuple(calls), note=note)

    def render_call(self, call: ToolCall, tools: Mapping[str, Tool]) -> str:
        payload = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
        return f"<tool_call>\n{payload}\n</tool_call>"

    def render_answer(self, answer: str) -> str:
        return f"<{self.answer_tag}>{answer}</{self.answer_tag}>"

    def render_results(self, results: Sequence[ToolResult]) -> str:
        return "\n".join(f"<tool_response>\n{r.output}\n</tool_response>" for r in results)

    def instructions(self, tools: Mapping[str, Tool]) -> str:
        schemas = "\n".join(json.dumps(t.schema(), ensure_ascii=False) for _, t in sorted(tools.items()))
        return ("You may call one or more functions. Their signatures are:\n<tools>\n"
                f"{schemas}\n</tools>\nFor each call, write "
                '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>\n'
                f"When you are done, give the final answer between <{self.answer_tag}> and "
                f"</{self.answer_tag}> without any tool call.")


class PlainFormat(ActionFormat):
    """One action per turn in plain words: ``Action: search capital of Peru``, ``Action: answer Lima``.

    The action is the line after the last ``Action:`` (the whole text's first line when
    there is none): its first word names a tool, or ``answer``; the rest is the tool's
    main argument, or the answer. No brackets, tags or quotes are needed, so an action
    survives a client that deletes every character but letters, digits, commas and
    spaces (AgentGym's TextCraft client does). An argument is one line: this format is
    not for code.

    >>> from agentgym.core.tools import Tool
    >>> search = Tool(name="search", description="Search.", fn=lambda query: query,
    ...               parameters={"type": "object", "properties": {"query": {"type": "string"}}})
    >>> PlainFormat().parse("Thought: I need it. Action: search capital of Peru", {"search": search}).tool_calls
    (ToolCall(name='search', arguments={'query': 'capital of Peru'}, id=None),)
    >>> PlainFormat().parse("answer Lima", {"search": search}).answer
    'Lima'
    """

    name = "plain"
    _MARKER = "Action:"

    def __init__(self, *, answer_word: str = "answer") -> None:
        self.answer_word = answer_word

    def parse(self, text: str, tools: Mapping[str, Tool]) -> ParsedAction:
        if not isinstance(text, str):
            return ParsedAction(error=f"Expected the action as text, got {type(text).__name__}.")
        visible = _THINK.sub("", text)
        line = visible.rpartition(self._MARKER)[2].lstrip().partition("\n")[0]
        word, _, rest = line.strip().partition(" ")
        name, body = word.lower(), " ".join(rest.split())
        if name == self.answer_word:
            return ParsedAction(answer=body)
        tool = tools.get(name)
        if tool is None:
            return ParsedAction(error=self._help(tools, prefix="No valid action found in your output."))
        arg = tool.primary_argument
        if arg is None:
            return ParsedAction(tool_calls=(ToolCall(name, {}),))
        if not body:
            return ParsedAction(error=f"Write the {arg} after {name}: Action: {name} <{arg}>.")
        return ParsedAction(tool_calls=(ToolCall(name, {arg: body}),))

    def _help(self, tools: Mapping[str, Tool], *, prefix: str) -> str:
        uses = [f"to call {n}, write Action: {n} <{t.primary_argument or 'nothing else'}>"
                for n, t in sorted(tools.items())]
        uses.append(f"to give the final answer, write Action: {self.answer_word} <the answer>")
        return f"{prefix} Write exactly one action per turn, on one line, in plain words: {'; '.join(uses)}."

    def render_call(self, call: ToolCall, tools: Mapping[str, Tool]) -> str:
        arg = tools[call.name].primary_argument
        body = " ".join(str(call.arguments.get(arg, "")).split()) if arg else ""
        return f"{self._MARKER} {call.name} {body}".rstrip()

    def render_answer(self, answer: str) -> str:
        return f"{self._MARKER} {self.answer_word} {' '.join(answer.split())}".rstrip()

    def render_results(self, results: Sequence[ToolResult]) -> str:
        return "".join(f"\n\nObservation:\n{r.output}\n\n" for r in results)

    def instructions(self, tools: Mapping[str, Tool]) -> str:
        return self._help(tools, prefix="Actions:")


def _call_from_mapping(data: Any, *, call_id: str | None = None) -> tuple[ToolCall, str | None]:
    empty = ToolCall("")
    if not isinstance(data, Mapping):
        return empty, f"expected a JSON object with 'name' and 'arguments', got {type(data).__name__}."
    name = data.get("name", data.get("tool"))
    if not isinstance(name, str) or not name:
        return empty, "missing the tool 'name'."
    arguments = data.get("arguments", data.get("args", {}))
    if isinstance(arguments, str):  # OpenAI sends arguments as a JSON string
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return empty, f"the arguments of {name!r} are a string that is not valid JSON."
    if not isinstance(arguments, Mapping):
        return empty, f"the arguments of {name!r} must be a JSON object."
    return ToolCall(name, dict(arguments), data.get("id", call_id)), None


class DictFormat(ActionFormat):
    """Structured actions: ``{"name", "arguments"}``, a list of them, or ``{"answer"}``."""

    name = "dict"

    def parse(self, text: Any, tools: Mapping[str, Tool]) -> ParsedAction:
        action = text
        if isinstance(action, str):  # the JSON text render_call writes
            try:
                action = json.loads(action)
            except json.JSONDecodeError as e:
                return ParsedAction(error=f"The action is not valid JSON ({e.msg} at char {e.pos}). "
                                          'Send {"name": ..., "arguments": {...}} or {"answer": ...}.')
        if isinstance(action, Mapping) and "answer" in action:
            answer = action["answer"]
            if answer is not None and not isinstance(answer, str):
                return ParsedAction(error="'answer' must be a string.")
            return ParsedAction(answer=(answer or "").strip())
        items = action if isinstance(action, list) else [action]
        calls = []
        for item in items:
            call, problem = _call_from_mapping(item)
            if problem:
                return ParsedAction(error=f"Invalid action: {problem} "
                                          'Send {"name": ..., "arguments": {...}} or {"answer": ...}.')
            calls.append(call)
        if not calls:
            return ParsedAction(error="Empty action list: send at least one tool call or an answer.")
        return ParsedAction(tool_calls=tuple(calls))

    def render_call(self, call: ToolCall, tools: Mapping[str, Tool]) -> str:
        return json.dumps(call.as_dict(), ensure_ascii=False)

    def render_answer(self, answer: str) -> str:
        return json.dumps({"answer": answer}, ensure_ascii=False)

    def render_results(self, results: Sequence[ToolResult]) -> str:
        return "\n\n".join(r.output for r in results)

    def instructions(self, tools: Mapping[str, Tool]) -> str:
        return ('Send actions as {"name": <tool>, "arguments": {...}} or {"answer": <text>}. Tools: '
                + ", ".join(sorted(tools)) + ".")


_FORMATS: dict[str, type[ActionFormat]] = {"tags": TagsFormat, "hermes": HermesFormat,
                                          "json": HermesFormat, "plain": PlainFormat, "dict": DictFormat}


def get_format(spec: str | ActionFormat) -> ActionFormat:
    """An ``ActionFormat`` from its name (``tags``, ``hermes``/``json``, ``plain``, ``dict``) or itself."""
    if isinstance(spec, ActionFormat):
        return spec
    if spec not in _FORMATS:
        raise ConfigError(f"Unknown action format {spec!r}; choose one of {sorted(_FORMATS)}.")
    return _FORMATS[spec]()


def format_of(info: Mapping[str, Any], env: Any = None) -> ActionFormat:
    """The action format of the env an ``info`` came from: the env's own when it has one (its answer tag may be
    its own), else the one ``info["format"]`` names (a ``RemoteEnv`` carries only the name)."""
    own = getattr(getattr(env, "unwrapped", env), "action_format", None)
    if isinstance(own, ActionFormat):
        return own
    # no known name (not an agentgym env's info): structured actions, which have no stop strings and no tool role
    name = info.get("format")
    return get_format(name) if name in _FORMATS else DictFormat()


def check_calls(parsed: ParsedAction, tools: Mapping[str, Tool]) -> ParsedAction:
    """``parsed`` with an error if any call names an unknown tool or has bad arguments."""
    for call in parsed.tool_calls:
        problem = _check_call(call, tools)
        if problem:
            return ParsedAction(error=problem)
    return parsed

