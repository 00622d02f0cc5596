"""OpenAI chat messages and tools to a model's prompt text, and the model's text back to an assistant message.

- A request's messages are checked and normalized once (``normalize_messages``): roles, text content (a list of
  text parts is joined), an assistant's ``tool_calls`` with their arguments parsed.
- Tools reach the model the way its chat template takes them; a template that ignores ``tools`` (SmolLM2's) gets
  Hermes-style instructions in the system message, and the model's ``<tool_call>{json}</tool_call>`` blocks come
  back as OpenAI ``tool_calls`` (``parse_output``).
- ``same_assistant``: whether an agent's assistant message is the one the gateway returned (same text, or the same
  calls by name and arguments), which is when the ids the model sampled are reused instead of re-encoding text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["GatewayError", "Output", "call_text", "normalize_messages", "normalize_tools", "parse_output", "render",
           "same_assistant", "sentinel_suffix"]

ROLES = ("system", "developer", "user", "assistant", "tool")
_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_SENTINEL = "AGENTGYM-GATEWAY-SENTINEL"


class GatewayError(Exception):
    """A request the gateway refuses: OpenAI's error shape with this status, message, type and param."""

    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None,
                 kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.kind = status, message, param, code, kind

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


def _bad(message: str, param: str) -> GatewayError:
    return GatewayError(400, message, param=param)


def _text(content: Any, where: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for k, part in enumerate(content):
            if not (isinstance(part, Mapping) and part.get("type") in ("text", "input_text", "output_text")
                    and isinstance(part.get("text"), str)):
                raise _bad(f"{where}.content[{k}] must be a text part ({{'type': 'text', 'text': ...}}); this "
                           "gateway's models read text only.", f"{where}.content")
            parts.append(part["text"])
        return "".join(parts)
    raise _bad(f"{where}.content must be a string, a list of text parts, or null.", f"{where}.content")


def _calls(raw: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise _bad(f"{where}.tool_calls must be a list.", f"{where}.tool_calls")
    calls = []
    for k, call in enumerate(raw):
        function = call.get("function") if isinstance(call, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str):
            raise _bad(f"{where}.tool_calls[{k}] needs function.name.", f"{where}.tool_calls")
        arguments = function.get("arguments", "{}")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except json.JSONDecodeError:
                pass  # the text as given: the model may have written invalid JSON, and the agent sent it back
        calls.append({"id": str(call.get("id") or f"call_{k}"), "name": name, "arguments": arguments})
    return calls


def normalize_messages(messages: Any) -> list[dict[str, Any]]:
    """The request's messages as ``{"role", "content", ["tool_calls"], ["tool_call_id"]}``; a bad one is a 400."""
    if not isinstance(messages, list) or not messages:
        raise _bad("messages must be a non-empty list of {'role', 'content'} objects.", "messages")
    out = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, Mapping):
            raise _bad(f"{where} must be an object with 'role' and 'content'.", where)
        role = message.get("role")
        if role not in ROLES:
            raise _bad(f"{where}.role must be one of {', '.join(ROLES)}; got {role!r}.", f"{where}.role")
        item: dict[str, Any] = {"role": "system" if role == "developer" else role,
                                "content": _text(message.get("content"), where)}
        if role == "assistant" and message.get("tool_calls"):
            item["tool_calls"] = _calls(message["tool_calls"], where)
        elif item["content"] is None and role != "assistant":
            raise _bad(f"{where}.content is required for a {role} message.", f"{where}.content")
        if role == "tool":
            item["tool_call_id"] = str(message.get("tool_call_id") or "")
        out.append(item)
    return out


def normalize_tools(tools: Any) -> list[dict[str, Any]]:
    """The request's ``tools`` (function tools only) as ``{"type": "function", "function": {...}}``."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise _bad("tools must be a list of {'type': 'function', 'function': {...}}.", "tools")
    out = []
    for k, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, Mapping) and tool.get("type") == "function" else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise _bad(f"tools[{k}] must be {{'type': 'function', 'function': {{'name': ..., 'parameters': "
                       "...}}}; only function tools are supported.", "tools")
        out.append({"type": "function", "function": dict(function)})
    return out


def _tool_instructions(tools: Sequence[Mapping[str, Any]]) -> str:
    schemas = "\n".join(json.dumps(t["function"], ensure_ascii=False, sort_keys=True) for t in tools)
    return ("You may call one or more functions. Their signatures are:\n<tools>\n"
            f"{schemas}\n</tools>\nFor each call, write "
            '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>\n'
            "When you are done, reply with your final answer and no tool call.")


def call_text(call: Mapping[str, Any]) -> str:
    """A tool call as the model writes it (Hermes): ``<tool_call>{"name", "arguments"}</tool_call>``."""
    payload = json.dumps({"name": call["name"], "arguments": call["arguments"]}, ensure_ascii=False)
    return f"<tool_call>\n{payload}\n</tool_call>"


@dataclass(frozen=True)
class _Template:
    """What a tokenizer's chat template takes natively: ``tools=``, and a ``tool`` role."""

    tools: bool
    tool_role: bool


def _template(tokenizer: Any) -> _Template:
    known = getattr(tokenizer, "_agentgym_template", None)
    if known is not None:
        return known
    user = [{"role": "user", "content": "u"}]
    probe = [{"type": "function", "function": {"name": "agentgym_probe", "parameters": {"type": "object"}}}]
    try:
        tools = tokenizer.apply_chat_template(user, tools=probe, tokenize=False) != \
            tokenizer.apply_chat_template(user, tokenize=False)
    except Exception:  # noqa: BLE001 - a template that raises on tools does not take them
        tools = False
    try:
        tokenizer.apply_chat_template([*user, {"role": "assistant", "content": "a"},
                                       {"role": "tool", "content": "t"}], tokenize=False)
        tool_role = True
    except Exception:  # noqa: BLE001
        tool_role = False
    known = _Template(tools, tool_role)
    tokenizer._agentgym_template = known
    return known


def _for_template(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]],
                  template: _Template) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        content = m.get("content") or ""
        if m["role"] == "assistant" and m.get("tool_calls") and not template.tools:
            content = "\n".join([content, *(call_text(c) for c in m["tool_calls"])]).strip()
        elif m["role"] == "assistant" and m.get("tool_calls"):
            calls = [{"type": "function", "id": c["id"], "function": {"name": c["name"], "arguments": c["arguments"]}}
                     for c in m["tool_calls"]]
            out.append({"role": "assistant", "content": content, "tool_calls": calls})
            continue
        if m["role"] == "tool" and not template.tool_role:
            out.append({"role": "user", "content": f"<tool_response>\n{content}\n</tool_response>"})
            continue
        out.append({"role": m["role"], "content": content})
    if tools and not template.tools:
        note = _tool_instructions(tools)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{note}".strip()}
        else:
            out.insert(0, {"role": "system", "content": note})
    return out


def render(tokenizer: Any, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> str:
    """The prompt text of a conversation (normalized messages), ready for the next assistant turn."""
    template = _template(tokenizer)
    native = {"tools": list(tools)} if tools and template.tools else {}
    return tokenizer.apply_chat_template(_for_template(messages, tools, template), tokenize=False,
                                         add_generation_prompt=True, **native)


def sentinel_suffix(tokenizer: Any, messages: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]],
                    tools: Sequence[Mapping[str, Any]]) -> str | None:
    """The text a template writes after an assistant turn that followed ``messages``, up to the next turn's
    start: the turn's close, the ``new`` messages, the generation prompt. None where the template does not
    render the conversation as earlier turns plus appended ones (the caller re-encodes the whole prompt)."""
    template = _template(tokenizer)
    native = {"tools": list(tools)} if tools and template.tools else {}
    turn = {"role": "assistant", "content": _SENTINEL}
    full = tokenizer.apply_chat_template(_for_template([*messages, turn, *new], tools, template), tokenize=False,
                                         add_generation_prompt=True, **native)
    if full.count(_SENTINEL) != 1:
        return None
    return full[full.index(_SENTINEL) + len(_SENTINEL):]


@dataclass(frozen=True)
class Output:
    """A model turn as an assistant message: its text, its tool calls (name, parsed arguments), why it ended."""

    content: str | None
    tool_calls: tuple[tuple[str, Any], ...]
    finish_reason: str

    def message(self, call_ids: Sequence[str]) -> dict[str, Any]:
        """OpenAI's assistant message (arguments as JSON text, as OpenAI sends them)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [{"id": call_id, "type": "function",
                                      "function": {"name": name, "arguments": json.dumps(arguments,
                                                                                         ensure_ascii=False)}}
                                     for call_id, (name, arguments) in zip(call_ids, self.tool_calls)]
        return message


def parse_output(text: str, *, tools: bool, truncated: bool) -> Output:
    """The model's text as an assistant turn: with ``tools``, each well-formed ``<tool_call>`` block is a call
    (a malformed one stays text, for the agent to see); ``truncated``: it ran out of ``max_tokens``."""
    calls: list[tuple[str, Any]] = []
    rest = text
    if tools:
        kept = []
        for match in _CALL.finditer(text):
            try:
                data = json.loads(match.group(1))
            except json.JSONDecodeError:
                continue
            if isinstance(data, Mapping) and isinstance(data.get("name"), str):
                arguments = data.get("arguments", data.get("parameters", {}))
                calls.append((data["name"], arguments if arguments is not None else {}))
                kept.append(match.span())
        for start, end in reversed(kept):
            rest = rest[:start] + rest[end:]
    content = rest.strip() if calls else text
    reason = "length" if truncated else ("tool_calls" if calls else "stop")
    return Output(content or (None if calls else ""), tuple(calls), reason)


def same_json(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same JSON value: Python's ``==`` also holds ``1 == True == 1.0``, and an agent
    that changed a tool call's argument from ``1`` to ``true`` changed what the model wrote. Objects compare
    whatever their key order."""
    if a != b:
        return False
    return _canonical(a) == _canonical(b)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)


def same_assistant(sent: Mapping[str, Any], returned: Output) -> bool:
    """Whether the agent's assistant message ``sent`` (normalized) is the turn the gateway returned: the same
    content and the same tool calls, their arguments the same JSON."""
    if sent.get("role") != "assistant":
        return False
    calls = tuple((c["name"], c["arguments"]) for c in sent.get("tool_calls") or ())
    if not same_json(calls, returned.tool_calls):
        return False
    return (sent.get("content") or "").strip() == (returned.content or "").strip()
