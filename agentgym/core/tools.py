"""Tools an env exposes to the agent, and the calls the agent makes to them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Tool", "ToolCall"]

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
}


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool by the agent: ``name`` and keyword ``arguments``."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "arguments": dict(self.arguments)}
        if self.id is not None:
            out["id"] = self.id
        return out


@dataclass(frozen=True)
class Tool:
    """A named function the agent may call, described by a JSON schema.

    ``fn`` takes the validated arguments as keywords and returns the
    observation text. ``parameters`` is a JSON-schema object; its first
    required property is the one the ``tags`` format fills from the tag body.

    >>> echo = Tool("echo", "Repeat the text.",
    ...             {"type": "object", "properties": {"text": {"type": "string"}},
    ...              "required": ["text"]}, lambda text: text)
    >>> echo.validate({"text": 3})
    "argument 'text' must be of type string, got int"
    >>> echo(ToolCall("echo", {"text": "hi"}))
    'hi'
    """

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., str] = field(repr=False, compare=False)

    @property
    def primary_argument(self) -> str | None:
        """The argument the ``tags`` format fills from a tag's body."""
        required = self.parameters.get("required") or list(self.parameters.get("properties", {}))
        return required[0] if required else None

    def schema(self) -> dict[str, Any]:
        """The OpenAI / Hermes function-calling schema of this tool."""
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}}

    def validate(self, arguments: Mapping[str, Any]) -> str | None:
        """Return what is wrong with ``arguments`` for this tool, or None if they fit."""
        if not isinstance(arguments, Mapping):
            return f"arguments must be a JSON object, got {type(arguments).__name__}"
        properties: dict[str, Any] = self.parameters.get("properties", {})
        for name in self.parameters.get("required", []):
            if name not in arguments:
                return f"missing required argument {name!r}"
        for name, value in arguments.items():
            if name not in properties:
                return f"unknown argument {name!r}; expected {sorted(properties)}"
            expected = properties[name].get("type")
            types = _JSON_TYPES.get(expected) if isinstance(expected, str) else None
            if types and (not isinstance(value, types) or (expected != "boolean" and isinstance(value, bool)
                                                           and bool not in types)):
                return f"argument {name!r} must be of type {expected}, got {type(value).__name__}"
            if "enum" in properties[name] and value not in properties[name]["enum"]:
                return f"argument {name!r} must be one of {properties[name]['enum']}"
        return None

    def __call__(self, call: ToolCall) -> str:
        return self.fn(**call.arguments)
