"""Envs that are not agentgym's own: ``agentgym.register``, packages' ``agentgym.envs`` entry points, and
``--import MODULE_OR_FILE``.

A package makes its envs visible to every agentgym command by declaring, in its ``pyproject.toml``::

    [project.entry-points."agentgym.envs"]
    capitals = "byo_capitals"          # a module whose import calls agentgym.register(...)
                                       # (or "module:function": a function that does, called with no arguments)

``import agentgym`` loads every such entry point, and every module or file named in ``AGENTGYM_IMPORT``
(``os.pathsep``-separated; the commands' ``--import`` sets it, so the processes a command starts, a server's
``--processes`` and Ray hosts, import them too). A plugin whose import fails does not stop the others: its error
is kept (``plugin_errors()``) and ``agentgym list`` shows it, naming the package.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from agentgym.core import registry
from agentgym.core.imports import IMPORT_VARIABLE
from agentgym.core.registry import EnvInfo
from agentgym.errors import ConfigError

__all__ = ["ENTRY_POINT_GROUP", "IMPORT_VARIABLE", "import_envs", "load_plugins", "plugin_errors", "register"]

ENTRY_POINT_GROUP = "agentgym.envs"
log = logging.getLogger(__name__)
_ERRORS: dict[str, str] = {}  # plugin -> its error, for `agentgym list`
_LOADED: set[str] = set()
_SOURCE: list[str] = []  # what is being imported now: the source of the ids it registers


def register(env_id: str, entry_point: Any, *, description: str = "", extras: Sequence[str] = (),
             client_kwargs: Sequence[str] = (), session_cost: Any = None, **kwargs: Any) -> EnvInfo:
    """Register ``env_id`` with Gymnasium and agentgym's registry in one call.

    ``entry_point``: an env class, a callable that returns an env, or a ``"module:attr"`` string (imported
    when the env is made). ``kwargs`` are passed to it on every make (what ``gym.make`` adds overrides them).
    ``description`` shows in ``agentgym list``; ``extras`` name the pip extras it needs; ``client_kwargs`` are
    the keyword arguments a remote client may set when it creates a session (besides ``action_format``,
    ``max_turns``, ``max_observation_chars`` and ``split``); ``session_cost`` (``SessionCost`` or a dict with
    ``memory_mb``, ``processes``, ``holds``) gives the env a default per-host session limit, as SWEBench has.
    Registering an id twice from the same place is a no-op; from two places, a ``ConfigError`` naming both.
    """
    if not isinstance(env_id, str) or "/" not in env_id or not env_id.split("/")[-1]:
        raise ConfigError(f"register: env ids look like 'namespace/Name-v0', got {env_id!r}.")
    target, entry = _entry_point(env_id, entry_point)
    source = _SOURCE[-1] if _SOURCE else _caller_source()
    old = registry._REGISTERED.get(env_id)
    if old is not None and old.source != source:
        raise ConfigError(f"register: {env_id} is already registered by {old.source}; {source} registers it "
                          "again. Rename one of them.")
    info = EnvInfo(id=env_id, entry_point=entry, description=description or _describe(target, kwargs),
                   extras=tuple(extras), kwargs=dict(kwargs),
                   client_kwargs=registry.client_kwargs(*client_kwargs), source=source)
    registry._REGISTERED[env_id] = info
    if target is not None:
        registry._OBJECTS[env_id] = target
    else:
        registry._OBJECTS.pop(env_id, None)
    if env_id in gym.registry:
        del gym.registry[env_id]
    gym.register(id=env_id, entry_point="agentgym.core.registry:create_env",
                 kwargs={"env_id": env_id, **kwargs}, disable_env_checker=True)
    if session_cost is not None:
        from agentgym.core.costs import SESSION_COSTS, SessionCost

        cost = session_cost if isinstance(session_cost, SessionCost) else SessionCost(
            memory_mb=int(session_cost["memory_mb"]), processes=int(session_cost.get("processes", 0)),
            holds=str(session_cost.get("holds", "its own processes and memory")))
        SESSION_COSTS[env_id] = cost
    return info


def _entry_point(env_id: str, entry_point: Any) -> tuple[Any, str]:
    """The object (None for a string entry point, imported at make) and the "module:attr" string naming it."""
    if isinstance(entry_point, str):
        if ":" not in entry_point:
            raise ConfigError(f"register {env_id}: a string entry point is 'module:attr', got {entry_point!r}.")
        return None, entry_point
    if not callable(entry_point):
        raise ConfigError(f"register {env_id}: the entry point must be an env class, a callable or a "
                          f"'module:attr' string, got {entry_point!r}.")
    module, name = getattr(entry_point, "__module__", None), getattr(entry_point, "__qualname__", "")
    return entry_point, f"{module}:{name}"


def _describe(target: Any, kwargs: Mapping[str, Any]) -> str:
    """A description for an env registered without one: a ToolEnv's tools and verifier, else the docstring's
    first line."""
    if getattr(target, "__module__", "").startswith("agentgym.") and "tasks" in kwargs:
        tools = ", ".join(getattr(t, "__name__", getattr(t, "name", "?")) for t in kwargs.get("tools", ()))
        verifier = kwargs.get("verifier", "qa")
        verifier = verifier if isinstance(verifier, str) else getattr(verifier, "__name__", "custom")
        return f"{target.__name__}: tools {tools or 'none'}; verifier {verifier}"
    doc = inspect.getdoc(target) if target is not None else ""
    return (doc or "").split("\n", 1)[0]


def _caller_source() -> str:
    """Where a ``register`` call outside a plugin import comes from: its module."""
    frame = inspect.currentframe()
    while frame is not None and frame.f_globals.get("__name__", "").startswith("agentgym.core."):
        frame = frame.f_back
    name = frame.f_globals.get("__name__", "?") if frame is not None else "?"
    return "module __main__" if name == "__main__" else f"module {name}"


def plugin_errors() -> dict[str, str]:
    """The plugins whose import failed, and why."""
    return dict(_ERRORS)


def load_plugins() -> None:
    """Import every ``agentgym.envs`` entry point and every module or file in ``AGENTGYM_IMPORT`` (once each)."""
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(point.dist, "name", None) or "?"
        label = f"package {dist} ({point.name} = {point.value})"
        if label in _LOADED:
            continue
        _LOADED.add(label)
        _run(label, lambda point=point: _call(point.load()))
    for spec in filter(None, os.environ.get(IMPORT_VARIABLE, "").split(os.pathsep)):
        if spec not in _LOADED:
            _LOADED.add(spec)
            _run(_label(spec), lambda spec=spec: _import(spec))


def import_envs(specs: Sequence[str]) -> None:
    """Import the modules or ``.py`` files ``specs`` (``--import``), and add them to ``AGENTGYM_IMPORT`` so that the
    processes started from here import them too. A failing import is a ``ConfigError`` (the user named it)."""
    for spec in specs:
        spec = str(Path(spec).resolve()) if spec.endswith(".py") else spec
        if spec not in _LOADED:
            _SOURCE.append(_label(spec))
            try:
                _import(spec)
            except ConfigError:
                raise
            except Exception as e:
                raise ConfigError(f"--import {spec}: {type(e).__name__}: {e}") from e
            finally:
                _SOURCE.pop()
            _LOADED.add(spec)
        current = [s for s in os.environ.get(IMPORT_VARIABLE, "").split(os.pathsep) if s]
        if spec not in current:
            os.environ[IMPORT_VARIABLE] = os.pathsep.join([*current, spec])


def _label(spec: str) -> str:
    return f"file {spec}" if spec.endswith(".py") else f"module {spec}"


def _run(label: str, load: Any) -> None:
    _SOURCE.append(label)
    try:
        load()
    except Exception as e:  # one broken plugin must not take the others (or agentgym) down
        _ERRORS[label] = f"{type(e).__name__}: {e}"
        log.warning("agentgym: the env plugin %s failed to load: %s: %s", label, type(e).__name__, e)
    finally:
        _SOURCE.pop()


def _call(target: Any) -> None:
    if callable(target) and not inspect.ismodule(target):
        target()


def _import(spec: str) -> None:
    if not spec.endswith(".py"):
        importlib.import_module(spec)
        return
    path = Path(spec)
    if not path.is_file():
        raise ConfigError(f"--import {spec}: no such file.")
    name = f"agentgym_user_{path.stem}"
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
        return
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ConfigError(f"--import {spec}: not a Python file.")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise


def info_kwargs(env_id: str) -> Mapping[str, Any]:
    """The keyword arguments ``register`` stored for ``env_id`` (passed on every make)."""
    return registry.env_info(env_id).kwargs

