"""Plain Python functions as agent tools: the JSON schema from type hints and the docstring.

``function_tool(fn)`` is what ``agentgym.ToolEnv`` does with each function it is given::

    def capital_of(country: str) -> str:
        '''Look up the capital city of a country.

        Args:
            country: The country's English name.
        '''

The schema's description is the docstring's first paragraph; each argument's is
its line under ``Args:`` (Google style). An argument without a type hint, or with
one JSON cannot carry, is a ``ConfigError`` naming the function and the argument.
``@agentgym.tool(sandbox=True, timeout_s=..., memory_mb=...)`` runs a function in
the agentgym sandbox instead of in process: its source (self-contained, imports
inside) runs there with the call's arguments, and what it returns (or prints, and
its error) is the observation.
"""

from __future__ import annotations

import collections.abc
import inspect
import json
import re
import textwrap
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Union

from agentgym.core.tools import Tool
from agentgym.errors import ConfigError, ToolError

__all__ = ["SandboxSpec", "function_tool", "tool"]

_SCALARS: dict[Any, dict[str, Any]] = {str: {"type": "string"}, int: {"type": "integer"},
                                      float: {"type": "number"}, bool: {"type": "boolean"}}
_ARG_LINE = re.compile(r"^\s{2,}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True)
class SandboxSpec:
    """How a tool marked ``sandbox=True`` runs: its limits in the agentgym sandbox."""

    timeout_s: float = 10.0
    memory_mb: int = 512
    backend: str = "bwrap"


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None, sandbox: bool = False,
         timeout_s: float = 10.0, memory_mb: int = 512, backend: str = "bwrap") -> Any:
    """Mark a function as a tool with options: ``@tool(sandbox=True, timeout_s=5)`` runs it in the sandbox;
    ``name`` overrides the tool's name (default: the function's)."""

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        f.__agentgym_tool__ = {"name": name or f.__name__,  # type: ignore[attr-defined]
                               "sandbox": SandboxSpec(timeout_s, memory_mb, backend) if sandbox else None}
        return f

    return mark(fn) if fn is not None else mark


def function_tool(fn: Callable[..., Any] | Tool) -> Tool:
    """A ``Tool`` from ``fn``: name, description and parameters from its signature, hints and docstring."""
    if isinstance(fn, Tool):
        return fn
    if not callable(fn):
        raise ConfigError(f"tools: {fn!r} is not a function; pass plain Python functions (or agentgym.Tool).")
    options = getattr(fn, "__agentgym_tool__", {})
    name = options.get("name") or getattr(fn, "__name__", "")
    if not name.isidentifier():
        raise ConfigError(f"tools: {fn!r} has no name a model can call; use a def, or @agentgym.tool(name=...).")
    description, arg_docs = _docstring(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception as e:  # a hint naming something undefined
        raise ConfigError(f"tool {name!r}: its type hints cannot be read ({e}).") from e
    properties, required = {}, []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigError(f"tool {name!r}: *{param.name} cannot be described to a model; give each argument "
                              "a name and a type hint.")
        if param.name not in hints:
            raise ConfigError(f"tool {name!r}: argument {param.name!r} has no type hint; write e.g. "
                              f"`{param.name}: str` so its JSON schema can be built.")
        schema, optional = _schema(hints[param.name], f"tool {name!r}: argument {param.name!r}")
        if arg_docs.get(param.name):
            schema["description"] = arg_docs[param.name]
        properties[param.name] = schema
        if param.default is param.empty and not optional:
            required.append(param.name)
    parameters = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    sandbox = options.get("sandbox")
    run = _sandboxed(fn, name, sandbox) if sandbox is not None else _in_process(fn)
    return Tool(name, description or name, parameters, run)


def _in_process(fn: Callable[..., Any]) -> Callable[..., str]:
    def run(**arguments: Any) -> str:
        return _text(fn(**arguments))

    return run


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


_RUNNER = """
import json, sys
_args = json.loads(sys.stdin.read())
_out = {name}(**_args)
sys.stdout.write(_out if isinstance(_out, str) else json.dumps(_out, default=str))
"""


def _sandboxed(fn: Callable[..., Any], name: str, spec: SandboxSpec) -> Callable[..., str]:
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as e:
        raise ConfigError(f"tool {name!r} runs in the sandbox, which needs its source; define it in a file "
                          f"(not a REPL or lambda): {e}") from e
    source = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("@"))
    program = f"{source}\n{_RUNNER.format(name=fn.__name__)}"
    runner: list[Any] = []

    def run(**arguments: Any) -> str:
        from agentgym.envs.code.tool import CodeRunner, format_result

        if not runner:
            runner.append(CodeRunner(backend=spec.backend, timeout_s=spec.timeout_s, memory_mb=spec.memory_mb))
        result = runner[0].run(program, stdin=json.dumps(arguments))
        if result.exit_code != 0 or result.timed_out or result.oom:
            raise ToolError(format_result(result))
        return result.stdout

    return run


def _schema(hint: Any, where: str) -> tuple[dict[str, Any], bool]:
    """The JSON schema of a type hint, and whether None is allowed (an optional argument)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _schema(rest[0], where)[0], len(rest) < len(args)
        return {"anyOf": [_schema(a, where)[0] for a in rest]}, len(rest) < len(args)
    if hint in _SCALARS:
        return dict(_SCALARS[hint]), False
    if origin is Literal:
        return {"enum": list(args)}, False
    if hint in (list, tuple) or origin in (list, tuple, collections.abc.Sequence):
        schema: dict[str, Any] = {"type": "array"}
        if args and args[0] is not Ellipsis:
            schema["items"] = _schema(args[0], where)[0]
        return schema, False
    if hint is dict or origin in (dict, collections.abc.Mapping):
        return {"type": "object"}, False
    if hint is Any:
        return {}, False
    raise ConfigError(f"{where} has type {hint!r}, which JSON cannot carry; use str, int, float, bool, "
                      "list, dict, Literal[...] or an Optional of them.")


def _docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The docstring's first paragraph, and each argument's description under ``Args:``."""
    doc = inspect.getdoc(fn) or ""
    head = doc.split("\n\n", 1)[0].strip().replace("\n", " ")
    args: dict[str, str] = {}
    section = None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            section = "args"
            continue
        if section == "args":
            if stripped and not line.startswith((" ", "\t")):
                section = None
                continue
            match = _ARG_LINE.match(line)
            if match:
                current = match.group(1)
                args[current] = match.group(2).strip()
            elif stripped and args:
                last = list(args)[-1]
                args[last] = f"{args[last]} {stripped}".strip()
    return head, args
