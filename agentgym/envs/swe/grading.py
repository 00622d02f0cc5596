"""Resolved or not: run an instance's tests on a patched working copy and grade the log with swebench.

The eval script has SWE-bench's shape (apply the test patch, the test command between
swebench's start / end markers, the test files reset afterwards); the log it prints is
parsed and graded by the ``swebench`` package itself (``make_test_spec``,
``get_eval_report`` and its pytest log parser), so "resolved" means what it means on
SWE-bench: every FAIL_TO_PASS test passes and every PASS_TO_PASS test still passes.
"""

from __future__ import annotations

import re
import shlex
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentgym.envs.swe.workspace import Workspace
from agentgym.errors import DependencyNotInstalled
from agentgym.verifiers.score import Score

__all__ = ["eval_script", "grade_log", "run_tests", "test_files"]

LOG_PARSER = "parse_log_pytest"
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)
_INSTALL = "pip install 'agentgym-suite[swe]'"


def _swebench() -> Any:
    try:
        from swebench.harness import constants, grading, utils
    except ImportError as e:
        raise DependencyNotInstalled("swebench", _INSTALL) from e
    return constants, grading, utils


def test_files(test_patch: str) -> list[str]:
    """The files a test patch touches, in order."""
    return list(dict.fromkeys(m.group(2) for m in _DIFF_FILE.finditer(test_patch)))


def eval_script(instance: Mapping[str, Any]) -> str:
    """SWE-bench's eval script for a pytest repository in ``/work/repo`` (``version`` and setup aside)."""
    constants, _, _ = _swebench()
    files = " ".join(shlex.quote(f) for f in test_files(instance["test_patch"]))
    base = instance["base_commit"]
    return "\n".join([
        "#!/bin/bash", "set -uxo pipefail", "cd /work/repo",
        f"git checkout {base} -- {files} 2>/dev/null || true",
        "git apply -v - <<'EOF_TEST_PATCH'", instance["test_patch"].rstrip("\n"), "EOF_TEST_PATCH",
        f"echo '{constants.START_TEST_OUTPUT}'",
        f"python -m pytest -rA -p no:cacheprovider --tb=no -q {files}",
        f"echo '{constants.END_TEST_OUTPUT}'",
        f"git checkout {base} -- {files} 2>/dev/null || true",
    ]) + "\n"


def _apply(workspace: Workspace, patch: str) -> tuple[bool, str]:
    """Apply the model's patch as the SWE-bench harness does: git apply, then --reject, then patch --fuzz."""
    if not patch.strip():
        return True, ""
    for command in ("git apply --verbose -", "git apply --verbose --reject -", "patch --batch --fuzz=5 -p1"):
        code, out = workspace.shell(command, stdin=patch if patch.endswith("\n") else patch + "\n", limit=None)
        if code == 0:
            return True, out
        workspace.shell("git checkout -- . && git clean -fdq")
    return False, out


def run_tests(workspace: Workspace, instance: Mapping[str, Any], model_patch: str | None,
              *, timeout_s: float = 300.0) -> str:
    """The eval log of ``model_patch`` on a fresh checkout already in ``workspace``."""
    constants, _, _ = _swebench()
    ok, apply_log = _apply(workspace, model_patch or "")
    if not ok:
        return f"{apply_log}\n{constants.APPLY_PATCH_FAIL}\n"
    script = eval_script(instance)
    _, log = workspace.shell(f"bash -s <<'EOF_EVAL_SCRIPT'\n{script}EOF_EVAL_SCRIPT", timeout_s=timeout_s,
                             limit=None)
    return f"{apply_log}\n{constants.APPLY_PATCH_PASS}\n{log}"


def grade_log(instance: Mapping[str, Any], model_patch: str | None, log: str) -> Score:
    """swebench's verdict on an eval log: resolved iff every FAIL_TO_PASS and PASS_TO_PASS test passes."""
    _, grading, utils = _swebench()
    spec = utils.make_test_spec({
        "instance_id": instance["instance_id"], "repo": instance["repo"], "version": instance.get("version", ""),
        "FAIL_TO_PASS": list(instance["FAIL_TO_PASS"]), "PASS_TO_PASS": list(instance["PASS_TO_PASS"]),
        "image": instance.get("image", "agentgym-swe"), "eval_script": eval_script(instance),
        "log_parser": instance.get("log_parser", LOG_PARSER), "eval_type": instance.get("eval_type", "pass_and_fail"),
    })
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
