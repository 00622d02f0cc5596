"""The package's shape: no import cycles, the layers import downwards only, moved names keep working (with a
warning) for one release."""

from __future__ import annotations

import ast
import importlib
import sys
import warnings
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "agentgym"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the agentgym modules it imports, at module level or inside functions (a lazy import is still
    a dependency). ``from pkg import name`` counts as importing ``pkg.name`` when that is a module."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        edges: set[str] = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base
                           for alias in node.names]
            else:
                continue
            edges.update(t for t in targets if t in paths and t != name)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _imports_between(graph: dict[str, set[str]], source: str, target: str) -> list[str]:
    return sorted(f"{m} -> {t}" for m, targets in graph.items() if m == source or m.startswith(source + ".")
                  for t in targets if t == target or t.startswith(target + "."))


def test_the_graph_finds_a_cycle_and_a_forbidden_import():
    """The checks below can fail: a made-up graph with a cycle and a layer violation is caught."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "agentgym.core.x": {"agentgym.eval.y"},
             "agentgym.eval.y": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _imports_between(graph, "agentgym.core", "agentgym.eval") == ["agentgym.core.x -> agentgym.eval.y"]


def test_no_import_cycles():
    assert _cycles(_import_graph()) == []


@pytest.mark.parametrize(("source", "target"), [
    ("agentgym.trainer", "agentgym.eval"), ("agentgym.eval", "agentgym.trainer"),
    ("agentgym.core", "agentgym.eval"), ("agentgym.core", "agentgym.envs"), ("agentgym.core", "agentgym.server"),
    ("agentgym.core", "agentgym.trainer"), ("agentgym.core", "agentgym.policies"),
    ("agentgym.envs", "agentgym.server"), ("agentgym.envs", "agentgym.eval"), ("agentgym.envs", "agentgym.trainer"),
    ("agentgym.policies", "agentgym.eval"), ("agentgym.policies", "agentgym.trainer"),
    ("agentgym.lm", "agentgym.eval"), ("agentgym.lm", "agentgym.trainer"),
    ("agentgym.verifiers", "agentgym.envs"), ("agentgym.verifiers", "agentgym.server"),
])
def test_layers_import_downwards_only(source, target):
    assert _imports_between(_import_graph(), source, target) == []


@pytest.mark.parametrize(("old", "new", "name"), [
    ("agentgym.eval.policies", "agentgym.policies", "make_policy"),
    ("agentgym.eval.chat", "agentgym.policies.chat", "ChatPolicy"),
    ("agentgym.eval.models", "agentgym.policies.hf", "TransformersPolicy"),
    ("agentgym.eval.openai_policy", "agentgym.policies.openai", "OpenAIPolicy"),
    ("agentgym.eval.vllm_policy", "agentgym.policies.vllm", "VLLMPolicy"),
])
def test_moved_policy_modules_still_import_with_a_warning(old, new, name):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


@pytest.mark.parametrize(("name", "new"), [
    ("EpisodeResult", "agentgym.eval.episode"), ("run_episode", "agentgym.eval.episode"),
    ("plan_episodes", "agentgym.eval.plan"), ("load_results", "agentgym.eval.results"),
    ("summarize", "agentgym.eval.stats"), ("EpisodeWorker", "agentgym.eval.worker"),
])
def test_names_moved_out_of_the_runner_still_import_with_a_warning(name, new):
    runner = importlib.import_module("agentgym.eval.runner")
    with pytest.warns(DeprecationWarning, match=f"runner.{name} moved to {new}"):
        found = getattr(runner, name)
    assert found is getattr(importlib.import_module(new), name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.import_module("agentgym.eval.runner").run_plan  # noqa: B018 - what stayed does not warn
    with pytest.raises(AttributeError):
        runner.no_such_name  # noqa: B018
