"""What an env *is*, as a short hash: part of every eval episode's key, so that an env changed under the same id
never reuses stored episodes (its verifier edited, its data regenerated, other kwargs).

The digest covers:

- where the id comes from (``EnvInfo.source``, the entry point) and, for an env from an installed package, that
  distribution's version;
- the code: the source files of the modules that define the env's class and its bases (outside gymnasium and the
  standard library), every module of the env's own package folder (``agentgym/envs/code/``: its data builders
  too), the module of the entry point (an ``--import`` file), the functions a ``ToolEnv`` was built from (its
  verifier, tools and oracle), and agentgym's verifier modules those modules import;
- the kwargs the env is made with;
- the tasks of the split played (ids, prompts, gold), as their JSON.

Files are hashed by content (never by path or time), so the digest is the same on every machine for the same code,
data and kwargs. A change it cannot see: code reached only through deeper imports (a helper module imported by a
verifier module), and data files read at verification time that are not tasks.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import json
import sys
import sysconfig
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["env_digest"]

_STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()


def _json(value: Any) -> Any:
    """JSON text of ``value``; what JSON cannot carry is named by its ``digest_text()`` where it has one (a
    rubric: its parts, weights, gates; a judge: its model and prompt digests), else by its type (never its
    address)."""
    def name(o: Any) -> str:
        text = getattr(o, "digest_text", None)
        return text() if callable(text) else f"<{type(o).__module__}.{type(o).__qualname__}>"

    return json.dumps(value, sort_keys=True, default=name)


def _file(obj: Any) -> Path | None:
    try:
        name = inspect.getsourcefile(obj)
    except (TypeError, OSError):
        return None
    return Path(name).resolve() if name else None


def _ours(path: Path) -> bool:
    """A source file that is the env's (not the standard library's, not gymnasium's)."""
    if path.is_relative_to(_STDLIB) and "site-packages" not in path.parts:
        return False
    return not any(part in ("gymnasium", "gym") for part in path.parts)


def _code_files(env: Any, entry: Any) -> set[Path]:
    files: set[Path] = set()
    for cls in type(env).__mro__:
        if cls.__module__ in ("builtins", "abc", "typing") or cls.__module__.startswith("gymnasium"):
            continue
        path = _file(cls)
        if path is not None and _ours(path):
            files.add(path)
            if path.parent.name != "core" and (path.parent / "__init__.py").exists() and "envs" in path.parts:
                files.update(p.resolve() for p in path.parent.glob("*.py"))  # the env family's own package
    for fn in (entry, *_builders(env)):
        path = _file(fn)
        if path is not None and _ours(path):
            files.add(path)
    return files


def _builders(env: Any) -> Iterable[Any]:
    """The callables an env was built from (a ``ToolEnv``'s verifier, tools, oracle), where it holds them, and the
    functions they wrap (a user's verifier inside agentgym's adapter)."""
    found = [getattr(env, name, None) for name in ("_verify", "_oracle")]
    found += [getattr(tool, "fn", None) for tool in getattr(env, "_function_tools", ()) or ()]
    seen: set[int] = set()
    while found:
        fn = found.pop()
        if not callable(fn) or id(fn) in seen:
            continue
        seen.add(id(fn))
        yield fn
        found.append(getattr(fn, "__wrapped__", None))
        found += list(getattr(fn, "builders", lambda: ())())  # a rubric's part functions
        found += [cell.cell_contents for cell in getattr(fn, "__closure__", None) or ()
                  if callable(getattr(cell, "cell_contents", None))]


def _verifier_files(files: Iterable[Path]) -> set[Path]:
    """agentgym's verifier modules that the modules of ``files`` import (one level)."""
    found: set[Path] = set()
    by_file = {Path(m.__file__).resolve(): m for m in list(sys.modules.values())
               if isinstance(m, types.ModuleType) and getattr(m, "__file__", None)}
    for path in files:
        module = by_file.get(path)
        for value in vars(module).values() if module is not None else ():
            name = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", "")
            if isinstance(name, str) and name.startswith("agentgym.verifiers"):
                source = sys.modules.get(name)
                if source is not None and getattr(source, "__file__", None):
                    found.add(Path(source.__file__).resolve())
    return found


def _distribution_version(source: str) -> str | None:
    if not source.startswith("package "):
        return None
    dist = source.split()[1]
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def env_digest(env_id: str, env: Any, kwargs: Mapping[str, Any], split: str) -> str:
    """The digest of ``env`` (made from ``env_id`` with ``kwargs``) for episodes of ``split``; 16 hex digits."""
    from agentgym.core.registry import env_info, load_env_class

    info = env_info(env_id)
    inner = getattr(env, "unwrapped", env)
    files = _code_files(inner, load_env_class(env_id))
    files |= _verifier_files(files)
    h = hashlib.sha256()
    described = [_json(b) for b in _builders(inner) if hasattr(b, "digest_text")]  # a rubric, a judge
    h.update(_json([info.source, info.entry_point, _distribution_version(info.source),
                    {k: v for k, v in kwargs.items()}, *([described] if described else [])]).encode())
    for path in sorted(files, key=lambda p: (p.name, p.read_bytes())):
        h.update(path.name.encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    for task in inner.tasks.tasks(split):
        h.update(_json(task.as_dict()).encode())
    return h.hexdigest()[:16]
