"""SWE-bench's grader: run an instance's tests on a patched fresh working copy and grade the log with swebench.

A sandboxed grader (see ``agentgym.verifiers``): ``grade_patch(workspace, instance,
patch)`` runs in the ``Workspace`` it is given, a pristine checkout that is the
grader's own, never the episode's.

The eval script is the instance's own (``eval_script``, as SWE-bench 5.x datasets ship
it) or, for bundled instances, one of SWE-bench's shape written here (apply the test
patch, the test command between swebench's start / end markers, the test files reset
afterwards). Either way it runs as swebench's ``TestSpec.eval_script`` (which records
the test command's exit code), the model patch is applied with the harness's own
``GIT_APPLY_CMDS`` in order, and the log is parsed and graded by the ``swebench``
package (``make_test_spec``, ``get_eval_report``, the instance's log parser), so
"resolved" means what it means on SWE-bench: every FAIL_TO_PASS test passes and
every PASS_TO_PASS test still passes.
"""

from __future__ import annotations

import re
import shlex
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgym.envs.swe.workspace import REPO_DIR, Workspace
from agentgym.errors import DataError, DependencyNotInstalled
from agentgym.verifiers.outcome import Outcome
from agentgym.verifiers.score import Score

__all__ = ["TEST_TOOLING", "Patch", "eval_script", "grade_log", "grade_patch", "instance_image", "run_tests",
           "swebench_spec", "test_files", "tooling_guard"]

LOG_PARSER = "parse_log_pytest"
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)
_INSTALL = "pip install 'agentgym-suite[swe]'"
_PATCH_FILE = "/work/.agentgym-patch.diff"


@dataclass(frozen=True)
class Patch(Outcome):
    """What a SWE-bench episode submits: the working copy's diff against ``base_commit`` (empty: no change)."""

    diff: str

    def as_answer(self) -> str:
        return self.diff


def _swebench() -> Any:
    try:
        from swebench.harness import constants, grading, run_evaluation, utils
    except ImportError as e:
        raise DependencyNotInstalled("swebench", _INSTALL) from e
    return constants, grading, run_evaluation, utils


def instance_image(instance: Mapping[str, Any]) -> str:
    """The instance's swebench image: its ``image`` field, else the name the harness derives from its id."""
    if instance.get("image"):
        return str(instance["image"])
    try:
        from swebench.task.checks import expected_image
    except ImportError as e:
        raise DependencyNotInstalled("swebench", _INSTALL) from e
    return expected_image(instance["instance_id"])


def test_files(test_patch: str) -> list[str]:
    """The files a test patch touches, in order."""
    return list(dict.fromkeys(m.group(2) for m in _DIFF_FILE.finditer(test_patch)))


def eval_script(instance: Mapping[str, Any]) -> str:
    """A SWE-bench shaped eval script for a bundled pytest repository in ``/work/repo``."""
    constants, _, _, _ = _swebench()
    files = " ".join(shlex.quote(f) for f in test_files(instance["test_patch"]))
    base = instance["base_commit"]
    return "\n".join([
        "#!/bin/bash", "set -uxo pipefail", f"cd {REPO_DIR}",
        f"git checkout {base} -- {files} 2>/dev/null || true",
        "git apply -v - <<'EOF_TEST_PATCH'", instance["test_patch"].rstrip("\n"), "EOF_TEST_PATCH",
        f"echo '{constants.START_TEST_OUTPUT}'",
        f"python -m pytest -rA -p no:cacheprovider --tb=no -q {files}",
        f"echo '{constants.END_TEST_OUTPUT}'",
        f"git checkout {base} -- {files} 2>/dev/null || true",
    ]) + "\n"


def swebench_spec(instance: Mapping[str, Any]) -> Any:
    """swebench's ``TestSpec``: from the instance's own fields (SWE-bench 5.x: ``image``, ``eval_script``,
    ``log_parser``, ``eval_type``), with this module's eval script and pytest parser for bundled instances."""
    _, _, _, utils = _swebench()
    if instance.get("image") and not instance.get("eval_script"):
        raise DataError(f"{instance['instance_id']} names an image but has no eval_script: swebench 5 grades an "
                        "instance with the eval_script, log_parser and eval_type fields of its dataset row.")
    return utils.make_test_spec({
        **instance, "version": instance.get("version", ""), "image": instance.get("image") or "agentgym-swe",
        "eval_script": instance.get("eval_script") or eval_script(instance),
        "log_parser": instance.get("log_parser") or LOG_PARSER,
        "eval_type": instance.get("eval_type") or "pass_and_fail",
    })


def _apply(workspace: Workspace, patch: str) -> tuple[bool, str]:
    """Apply the model's patch as the swebench harness does: its ``GIT_APPLY_CMDS`` in order on a pristine
    tree each time, then, if all failed, accept a patch that is already fully applied."""
    _, _, run_evaluation, _ = _swebench()
    if not patch.strip():
        return True, ""
    files = {_PATCH_FILE.removeprefix("/work/"): patch if patch.endswith("\n") else patch + "\n"}
    out = ""
    for attempt, command in enumerate(run_evaluation.GIT_APPLY_CMDS):
        if attempt:
            workspace.shell("git checkout -- . ; git clean -fdq")
        code, out = workspace.shell(f"{command} {_PATCH_FILE}", files=files, limit=None)
        if code == 0:
            return True, out
    code, _ = workspace.shell(f"git apply --check --reverse {_PATCH_FILE}", files=files, limit=None)
    return code == 0, out


# What a patch may not change, because it steers how the tests are collected, configured or run rather than
# what the code does: pytest's configuration files, conftest plugins, modules named like pytest's own, and
# Python's startup hooks. A patch's changes to these are undone before the tests run (tracked files restored
# from the base commit, added ones removed); so is any module or package it adds, outside a package, whose
# name shadows an installed or standard-library module (``string.py``, ``pluggy.py`` at the repository root or
# in a tests directory pytest puts on the path). The test patch is applied afterwards, by the eval script, so
# an instance's own test configuration still counts.
TEST_TOOLING = ("conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", ".pytest.ini", "pytest.py",
                "py.py", "sitecustomize.py", "usercustomize.py")
_TOOLING_SPECS = [f":(glob)**/{name}" for name in TEST_TOOLING] + [
    ":(glob)**/*.pth", ":(glob)**/pytest/**", ":(glob)**/_pytest/**"]
_SHADOWS = """
import importlib.util, os, shutil, subprocess
added = subprocess.run(["git", "ls-files", "-z", "--others"], capture_output=True, text=True).stdout
for path in filter(None, added.split(chr(0))):
    parts = path.split("/")
    name, ext = os.path.splitext(parts[-1])
    if parts[-1] == "__init__.py" and len(parts) > 1:  # a package the patch adds
        name, ext, path = parts[-2], ".py", "/".join(parts[:-1])
    inside = os.path.dirname(path)
    if inside and os.path.exists(os.path.join(inside, "__init__.py")):
        continue  # a submodule (pkg.string) shadows nothing
    if ext == ".py" and name.isidentifier() and os.path.exists(path) and importlib.util.find_spec(name):
        print("removed (shadows the module %s): %s" % (name, path))
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
"""


def tooling_guard(base_commit: str) -> str:
    """A shell script that undoes a patch's changes to test tooling (see ``TEST_TOOLING``) in the repository."""
    specs = " ".join(shlex.quote(spec) for spec in _TOOLING_SPECS)
    base = shlex.quote(base_commit)
    return "\n".join([
        f"cd {REPO_DIR}",
        f"git ls-files -z --others -- {specs} | xargs -0 -r rm -rfv --",
        f"git diff -z --name-only --diff-filter=A {base} -- {specs} | xargs -0 -r git rm -qf --",
        f"git diff -z --name-only --diff-filter=MDT {base} -- {specs} | xargs -0 -r git checkout {base} --",
        # -I: neither the repository nor the environment's variables are on this check's import path
        f"python3 -I -c {shlex.quote(_SHADOWS)}",
    ]) + "\n"


def run_tests(workspace: Workspace, instance: Mapping[str, Any], model_patch: str | None,
              *, timeout_s: float = 300.0) -> str:
    """The eval log of ``model_patch`` on a fresh working copy already in ``workspace``: the patch applied, its
    changes to test tooling undone (``tooling_guard``), then the instance's eval script."""
    constants, _, _, _ = _swebench()
    ok, apply_log = _apply(workspace, model_patch or "")
    if not ok:
        return f"{apply_log}\n{constants.APPLY_PATCH_FAIL}\n"
    _, guard_log = workspace.shell("bash /work/.agentgym-guard.sh",
                                   files={".agentgym-guard.sh": tooling_guard(instance["base_commit"])}, limit=None)
    apply_log = f"{apply_log}\n{guard_log}".rstrip("\n")
    _, log = workspace.shell("bash /work/.agentgym-eval.sh",
                             files={".agentgym-eval.sh": swebench_spec(instance).eval_script},
                             timeout_s=timeout_s, limit=None)
    return f"{apply_log}\n{constants.APPLY_PATCH_PASS}\n{log}"


def grade_log(instance: Mapping[str, Any], model_patch: str | None, log: str) -> Score:
    """swebench's verdict on an eval log: resolved iff every FAIL_TO_PASS and PASS_TO_PASS test passes."""
    _, grading, _, _ = _swebench()
    spec = swebench_spec(instance)
    with tempfile.TemporaryDirectory(prefix="agentgym-swe-") as tmp:
        path = Path(tmp) / "test_output.txt"
        path.write_text(log, encoding="utf-8")
        prediction = {"instance_id": instance["instance_id"], "model_name_or_path": "agentgym",
                      "model_patch": model_patch}
        report = grading.get_eval_report(spec, prediction, str(path), include_tests_status=True)
    result = report[instance["instance_id"]]
    status = result.get("tests_status", {})
    f2p, p2p = status.get("FAIL_TO_PASS", {}), status.get("PASS_TO_PASS", {})
    details = {
        "resolved": bool(result["resolved"]), "patch_applied": bool(result["patch_successfully_applied"]),
        "patch_exists": bool(result["patch_exists"]),
        "fail_to_pass": {"success": f2p.get("success", []), "failure": f2p.get("failure", [])},
        "pass_to_pass": {"success": p2p.get("success", []), "failure": p2p.get("failure", [])},
    }
    return Score(1.0 if details["resolved"] else 0.0, details["resolved"], details)


def grade_patch(workspace: Workspace, instance: Mapping[str, Any], patch: Patch | str | None, *,
                timeout_s: float = 300.0) -> Score:
    """Resolved or not: ``patch`` applied to the fresh working copy of ``instance`` in ``workspace`` (which
    this changes: give it a checkout of its own), the instance's tests run, the log graded by swebench."""
    diff = patch.diff if isinstance(patch, Patch) else patch
    return grade_log(instance, diff, run_tests(workspace, instance, diff, timeout_s=timeout_s))
