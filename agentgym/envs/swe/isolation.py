"""SWE grading out of the patch's reach: the tests in a trusted process, the patched repository in a worker.

``grade_isolated(workspace, instance, patch)`` reads the instance's test files from git objects (the base commit
with the test patch applied to a private index: no working copy, no ``.gitattributes`` filter, nothing the patch
wrote), applies the patch, and runs ``sandboxed/isolated.py`` in the sandbox: the harness runs the tests and the
repository's code runs in a worker it forked before it read them (see that file's docstring for the protocol).
The verdict is the line the harness prints with a nonce the worker never had; a run that prints none (the
sandbox killed it, the worker stopped it) fails every test. ``isolation_blocker`` says why an instance cannot be
graded so (its tests need fixtures, plugins or parametrization the harness does not provide, or it runs in an
instance image): the grader then takes the in-process path (``agentgym.envs.swe.grader``) and says so.
"""

from __future__ import annotations

import ast
import json
import secrets
import shlex
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import PurePosixPath
from typing import Any

from agentgym.core.pyparse import parse
from agentgym.envs.swe.workspace import Workspace
from agentgym.errors import SandboxError
from agentgym.verifiers.score import Score

__all__ = ["HARNESS", "MARK", "grade_isolated", "isolation_blocker", "read_verdict", "test_sources"]

HARNESS = "\n\n".join((resources.files(package) / name).read_text(encoding="utf-8") for package, name in (
    ("agentgym.sandbox", "harness_prelude.py"), ("agentgym.envs.swe.sandboxed", "isolated_wire.py"),
    ("agentgym.envs.swe.sandboxed", "isolated_worker.py"), ("agentgym.envs.swe.sandboxed", "isolated.py")))
MARK = "@@agentgym-isolated@@"
#: the fixtures the harness provides
FIXTURES = frozenset({"self", "tmp_path"})


def _tests(instance: Mapping[str, Any], field: str) -> list[str]:
    value = instance.get(field) or []
    return json.loads(value) if isinstance(value, str) else list(value)


def _test_dirs(tests: list[str]) -> list[str]:
    return sorted({str(PurePosixPath(t.split("::", 1)[0]).parent) for t in tests})


def test_sources(workspace: Workspace, instance: Mapping[str, Any]) -> dict[str, str]:
    """The Python files of the test files' directories (and their ``__init__.py``/``conftest.py`` up to the
    root) at the base commit with the test patch applied, read from git objects through a private index: call it
    on a pristine working copy, before the patch is applied."""
    tests = _tests(instance, "FAIL_TO_PASS") + _tests(instance, "PASS_TO_PASS")
    dirs = _test_dirs(tests)
    ancestors = {str(p) for d in dirs for p in [PurePosixPath(d), *PurePosixPath(d).parents]} - {"."}
    pathspecs = [f"{d}/*.py" if d != "." else "*.py" for d in dirs]
    pathspecs += [f"{a}/{name}" for a in sorted(ancestors) for name in ("__init__.py", "conftest.py")]
    pathspecs += ["conftest.py"]
    scratch = f"/tmp/agentgym-tests-{secrets.token_hex(8)}"
    specs = " ".join(shlex.quote(f":(literal){p}" if "*" not in p else f":(glob){p}") for p in pathspecs)
    script = "\n".join([
        # Nothing of the test patch may stay where the worker (next, in this sandbox) can read it: the patch comes
        # on stdin (never a file), the index is private, and every object git writes for it (the patched test
        # files' blobs, a tree) goes to a scratch object directory that borrows the repository's objects as an
        # alternate; all of it is deleted on exit, the repository's own .git is never written.
        "set -e", f"trap 'rm -rf {scratch}' EXIT", f"mkdir -m 700 {scratch} {scratch}/objects",
        f"export GIT_INDEX_FILE={scratch}/index GIT_OBJECT_DIRECTORY={scratch}/objects",
        'export GIT_ALTERNATE_OBJECT_DIRECTORIES="$(cd "$(git rev-parse --git-common-dir)" && pwd)/objects"',
        f"git read-tree {shlex.quote(instance['base_commit'])}",
        "git apply --cached -",
        f"git ls-files -z -- {specs} | while IFS= read -r -d '' f; do printf '\\0%s\\0' \"$f\"; git show \":$f\"; done",
    ])
    patch = instance["test_patch"] if instance["test_patch"].endswith("\n") else instance["test_patch"] + "\n"
    code, out = workspace.shell(script, stdin=patch, limit=None)
    if code != 0:
        raise SandboxError(f"{instance['instance_id']}: could not read the test files from git: {out[-400:]}")
    parts = out.split("\0")
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def isolation_blocker(instance: Mapping[str, Any], sources: Mapping[str, str], *, in_image: bool,
                      pytest_tests: bool = True) -> str | None:
    """Why the isolated harness cannot run this instance's tests as pytest would (None: it can);
    ``pytest_tests``: its tests run under pytest (``grader.is_pytest_instance``)."""
    if in_image or instance.get("image") or instance.get("eval_script"):
        return "it runs in an instance image with its own eval script"
    if not pytest_tests:
        return "its tests run under another runner than pytest"
    for path, text in sources.items():
        if PurePosixPath(path).name == "conftest.py" and text.strip():
            return f"{path} (a conftest) sets up the tests in-process"
    tests = _tests(instance, "FAIL_TO_PASS") + _tests(instance, "PASS_TO_PASS")
    trees: dict[str, ast.Module] = {}
    for test in tests:
        path, _, name = test.partition("::")
        if not name or "[" in name:
            return f"{test} is not a plain test function (parametrized or a file)"
        if path not in sources:
            return f"{test}'s file is not among the test files"
        if path not in trees:
            try:
                trees[path] = parse(sources[path])
            except SyntaxError as e:
                return f"{path} does not parse ({e.msg})"
            reason = _module_blocker(path, trees[path])
            if reason:
                return reason
        reason = _test_blocker(test, trees[path], name.split("::"))
        if reason:
            return reason
    return None


def _module_blocker(path: str, tree: ast.Module) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("fixture", "usefixtures", "parametrize"):
            return f"{path} uses pytest.{node.attr}"
        if isinstance(node, ast.Name) and node.id in ("pytestmark", "pytest_plugins", "fixture"):
            return f"{path} sets {node.id}"
        if isinstance(node, ast.FunctionDef) and node.name in ("setup_module", "teardown_module", "setup_function",
                                                                "teardown_function", "setup_method",
                                                                "teardown_method", "setup_class", "teardown_class",
                                                                "setup", "teardown", "setUp", "tearDown"):
            return f"{path} has {node.name}"
    return None


def _test_blocker(test: str, tree: ast.Module, names: list[str]) -> str | None:
    scope: list[ast.stmt] = list(tree.body)
    node: ast.AST | None = None
    for name in names:
        node = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == name), None)
        if node is None:
            return f"{test} is not defined at the top of its file"
        scope = list(node.body) if isinstance(node, ast.ClassDef) else []
    if not isinstance(node, ast.FunctionDef) or node.decorator_list:
        return f"{test} is decorated or not a plain function"
    args = node.args
    params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    if args.vararg or args.kwarg or not set(params) <= FIXTURES:
        return f"{test} takes fixtures the isolated harness does not provide ({', '.join(params)})"
    return None


def read_verdict(stdout: str, nonce: str) -> dict[str, Any] | None:
    """The harness's verdict: the last line with the mark and this grading's nonce (None: there is none)."""
    prefix = f"{MARK} {nonce} "
    for line in reversed(stdout.splitlines()):
        if line.startswith(prefix):
            try:
                verdict = json.loads(line[len(prefix):])
            except ValueError:
                return None
            return verdict if isinstance(verdict, dict) and isinstance(verdict.get("outcomes"), dict) else None
    return None


def _frame(obj: Mapping[str, Any]) -> str:
    body = json.dumps(obj, ensure_ascii=True)
    return f"{len(body)}\n{body}"


#: comparison kinds decided by the repository's own equality or order (asked of the worker); every other kind
#: is decided by the harness on data
REPOSITORY_DECIDED = ("object == built", "object == object", "object order object", "built == value",
                      "built order value")


def _comparisons(decided: Any, tests: list[str], f2p: list[str]) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """The harness's count of how the tests' comparisons of repository objects were decided: kind ->
    {"false": n, "true": n, "tests": how many tests made one}; and the trust summary: how many tests rest only on
    data the harness compared (``on_data``) and how many on at least one answer of the repository's own equality
    or order (``on_repository_equality``, code under test that the worker answers), and of the FAIL_TO_PASS
    tests (the ones a patch that fixes nothing must not turn) ``fail_to_pass_on_repository_equality``."""
    out: dict[str, dict[str, int]] = {}
    on_repository = f2p_on_repository = 0
    for test in tests:
        kinds = decided.get(test) if isinstance(decided, dict) else None
        asked = False
        for kind, pair in (kinds or {}).items():
            if isinstance(kind, str) and isinstance(pair, list) and len(pair) == 2 and all(type(n) is int for n in pair):
                row = out.setdefault(kind[:40], {"false": 0, "true": 0, "tests": 0})
                row["false"] += pair[0]
                row["true"] += pair[1]
                row["tests"] += 1
                asked = asked or kind in REPOSITORY_DECIDED
        on_repository += asked
        f2p_on_repository += asked and test in f2p
    return out, {"tests": len(tests), "on_data": len(tests) - on_repository, "on_repository_equality": on_repository,
                 "fail_to_pass": len(f2p), "fail_to_pass_on_repository_equality": f2p_on_repository}


def grade_isolated(workspace: Workspace, instance: Mapping[str, Any], model_patch: str, *,
                   sources: Mapping[str, str], apply: Callable[[str], tuple[bool, list[str]]],
                   pythonpath: list[str], timeout_s: float = 300.0) -> Score:
    """``model_patch`` applied in ``workspace`` (pristine, the grader's own) by ``apply`` (whether it applied,
    and evidence of tampering: ``grader.apply_checked``), the instance's tests run by the isolated harness on
    ``sources`` (``test_sources``, read before) with the base commit's ``pythonpath`` entries (relative to the
    repository): resolved iff every FAIL_TO_PASS and PASS_TO_PASS test passed."""
    f2p, p2p = _tests(instance, "FAIL_TO_PASS"), _tests(instance, "PASS_TO_PASS")
    details: dict[str, Any] = {"resolved": False, "patch_applied": False, "patch_exists": bool(model_patch.strip()),
                               "fail_to_pass": {"success": [], "failure": list(f2p)},
                               "pass_to_pass": {"success": [], "failure": list(p2p)},
                               "tampered": False, "isolation": "isolated", "integrity": {"channels": "harness"}}
    applied, evidence = apply(model_patch)
    if evidence:
        details.update(tampered=True, integrity={"channels": "harness", "tampered": True, "evidence": evidence})
    if not applied:
        return Score(0.0, False, details)
    details["patch_applied"] = True
    nonce = secrets.token_hex(16)
    stdin = _frame({"repo_dir": workspace.repo_dir,
                    "pythonpath": [str(PurePosixPath(workspace.repo_dir) / p) for p in pythonpath]})
    stdin += _frame({"files": dict(sources), "tests": f2p + p2p, "nonce": nonce})
    result = workspace.sandbox.run(HARNESS, stdin=stdin, timeout_s=timeout_s, env=workspace.env,
                                   code_name="<swe-grader>")
    verdict = read_verdict(result.stdout, nonce)
    if verdict is None:
        why = (f"the tests were stopped at the time limit ({timeout_s:g} s, the sandbox's own report)"
               if result.timed_out else f"the harness printed no verdict (exit code {result.exit_code}): "
                                        f"{result.stderr.strip()[-300:]}")
        details["integrity"] = {"channels": "harness", "error": why, "timed_out": bool(result.timed_out)}
        return Score(0.0, False, details)
    outcomes, errors = verdict["outcomes"], verdict.get("errors") or {}
    for key, tests in (("fail_to_pass", f2p), ("pass_to_pass", p2p)):
        details[key] = {"success": [t for t in tests if outcomes.get(t) == "PASSED"],
                        "failure": [t for t in tests if outcomes.get(t) != "PASSED"]}
    failed = details["fail_to_pass"]["failure"] + details["pass_to_pass"]["failure"]
    details["errors"] = {t: str(errors.get(t, "not run"))[:300] for t in failed[:5]}
    rejected = [str(r)[:300] for r in verdict.get("rejected") or []]
    details["integrity"] = {"channels": "harness", "worker": str(verdict.get("worker")),
                            "timed_out": bool(result.timed_out)}
    details["comparisons"], details["trust"] = _comparisons(verdict.get("decided"), f2p + p2p, f2p)
    if rejected:  # an honest class is never equal to a decoy, nor both < and >= one value
        details["tampered"] = True
        details["integrity"].update(tampered=True, evidence=rejected)
    details["resolved"] = not failed and not details["tampered"]
    return Score(1.0 if details["resolved"] else 0.0, details["resolved"], details)
