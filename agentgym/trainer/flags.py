"""The ``agentgym train`` and ``agentgym sft`` flags, generated from their config's fields (``TrainConfig``,
``SFTConfig``): one flag per field, with the field's help.

``--field-name`` for every field (plus the aliases a field declares, e.g. ``-k``),
``--flag/--no-flag`` for booleans, a repeatable flag for lists, and for mappings a
repeatable ``KEY=VALUE`` (VALUE read as JSON when it can be) or a JSON object.
Choices are plain text here and checked by the config, so a flag and a YAML
key fail with the same message. A flag left out leaves the YAML's value (or the
default) alone: flags win over ``--config``.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Optional

import typer

from agentgym.errors import ConfigError
from agentgym.trainer.config import TrainConfig, load_config

__all__ = ["flag_overrides", "train_command"]

_KEYWORD = inspect.Parameter.KEYWORD_ONLY


def _without_none(hint: Any) -> Any:
    """``X`` for ``X | None`` (``Optional[X]``), else ``hint`` itself."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def _kind(hint: Any) -> tuple[str, Any]:
    """How a field's type is given on the command line: (bool | list | mapping | choice | scalar, the flag's type)."""
    base = _without_none(hint)
    origin = typing.get_origin(base)
    if base is bool:
        return "bool", bool
    if origin is list:
        return "list", list[str]
    if origin is dict:
        return "mapping", list[str]
    if origin is Literal:
        return "choice", str
    return "scalar", base


def _names(f: dataclasses.Field) -> list[str]:
    return [f"--{f.name.replace('_', '-')}", *f.metadata.get("flags", ())]


def _help(f: dataclasses.Field, kind: str) -> str:
    text = f.metadata.get("help", "")
    default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    if kind == "mapping":
        text += " Repeatable KEY=VALUE (VALUE read as JSON when it can be: 3, true, [\"a\"]), or a JSON object."
    elif kind == "list":
        text += " Repeat the flag for several."
    if default not in (None, {}, []) and kind != "bool":
        shown = ", ".join(map(str, default)) if isinstance(default, list) else default
        text += f" [default: {shown}]"
    return text


def _flag(f: dataclasses.Field, hint: Any) -> inspect.Parameter:
    kind, flag_type = _kind(hint)
    names = _names(f)
    metavar = f.metadata.get("metavar")
    if kind == "bool":
        names = [f"{names[0]}/--no-{names[0][2:]}", *names[1:]]
    elif kind == "mapping":
        metavar = metavar or "KEY=VALUE"
    elif kind == "choice":
        metavar = metavar or f"[{'|'.join(typing.get_args(_without_none(hint)))}]"
    option = typer.Option(None, *names, help=_help(f, kind), metavar=metavar, show_default=False)
    return inspect.Parameter(f.name, _KEYWORD, default=option, annotation=Optional[flag_type])  # noqa: UP045 - as typer reads it everywhere


def _mapping(flag: str, items: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` items and JSON objects, merged in order; a key given twice is an error."""
    out: dict[str, Any] = {}
    for item in items:
        if item.lstrip().startswith("{"):
            try:
                given = json.loads(item)
            except json.JSONDecodeError as e:
                raise ConfigError(f"{flag}: {item!r} is not a JSON object ({e}).") from e
        else:
            key, sep, text = item.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"{flag} expects KEY=VALUE or a JSON object, got {item!r}.")
            try:
                given = {key.strip(): json.loads(text)}
            except json.JSONDecodeError:
                given = {key.strip(): text}
        if not isinstance(given, dict):
            raise ConfigError(f"{flag}: {item!r} is not a JSON object.")
        for key, value in given.items():
            if key in out:
                raise ConfigError(f"{flag} {key} is given twice ({out[key]!r} and {value!r}); give it once.")
            out[key] = value
    return out


def flag_overrides(values: dict[str, Any], config_type: type[Any] = TrainConfig) -> dict[str, Any]:
    """The ``config_type`` values of the flags given (as typer parsed them), mappings parsed; others left out."""
    hints = typing.get_type_hints(config_type)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config_type):
        value = values.get(f.name)
        if value is None or (isinstance(value, (list, tuple)) and not value):
            continue
        kind, _ = _kind(hints[f.name])
        if kind == "mapping":
            value = _mapping("/".join(_names(f)), value)
        elif kind == "list":
            value = list(value)
        out[f.name] = value
    return out


def train_command(run: Callable[[Any], None], config_type: type[Any] = TrainConfig) -> Callable[..., None]:
    """A typer command calling ``run(config)``: ``--config`` (a YAML file) and one flag per field of
    ``config_type`` (``TrainConfig`` for ``agentgym train``, ``SFTConfig`` for ``agentgym sft``).

    The command's signature is generated (typer reads ``__signature__``), so a new
    field is a new flag without touching the CLI.
    """
    hints = typing.get_type_hints(config_type)
    name = config_type.__name__
    config = typer.Option(None, "--config", "-c", help=f"YAML file of {name} fields; flags win over it.",
                          show_default=False)
    params = [inspect.Parameter("config", _KEYWORD, default=config, annotation=Optional[Path])]  # noqa: UP045
    params += [_flag(f, hints[f.name]) for f in dataclasses.fields(config_type)]

    def command(**values: Any) -> None:
        path = values.pop("config", None)
        run(load_config(path, config_type=config_type, **flag_overrides(values, config_type)))

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__name__, command.__qualname__, command.__doc__ = run.__name__, run.__qualname__, run.__doc__
    command.__module__ = run.__module__
    return command
