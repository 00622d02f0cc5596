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

import configparser
import hashlib
import json
import re
import secrets
import shlex
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

try:
    import tomllib
except ImportError:  # Python 3.10: pytest's own TOML reader
    import tomli as tomllib

from agentgym.envs.swe.integrity import canary_manifest, check_run
from agentgym.envs.swe.isolation import grade_isolated, isolation_blocker, test_sources
from agentgym.envs.swe.workspace import REPO_DIR, Workspace
from agentgym.errors import DataError, DependencyNotInstalled, SandboxError, VerifierError
from agentgym.verifiers.outcome import Outcome
from agentgym.verifiers.score import Score

__all__ = ["GRADER_DIR", "TEST_TOOLING", "EvalRun", "GradingInputs", "Patch", "eval_script", "grade_log",
           "grade_patch", "harden",
           "instance_image", "is_pytest_instance", "run_instance", "run_tests", "swebench_spec", "test_files",
           "tooling_guard", "trusted_config"]

LOG_PARSER = "parse_log_pytest"
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)
_INSTALL = "pip install 'agentgym-suite[swe]'"
_PATCH_FILE = "/work/.agentgym-patch.diff"


class GradingInputs:
    """What a grading reads from a pristine checkout that depends on the instance alone: the test files as the test
    patch makes them (``isolation.test_sources``), the base commit's pytest configuration, and the checkout's .git
    listing (what a patch may not change). A commit hash names its tree (and the checkout's is checked), so these are
    a function of the base commit, the test patch and the tests: read once
    per instance and reused by its later gradings (a GRPO group grades one task many times), never read from a
    working copy a patch touched. At most ``max_entries`` kept (least recently used dropped)."""

    def __init__(self, max_entries: int = 256) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, ...], Any] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(kind: str, instance: Mapping[str, Any]) -> tuple[str, ...]:
        if kind != "tests":  # the base commit's configuration, its pristine checkout's .git listing
            return kind, str(instance["base_commit"])
        fields = [instance.get(k) for k in ("test_patch", "FAIL_TO_PASS", "PASS_TO_PASS")]
        return kind, str(instance["base_commit"]), hashlib.sha256(json.dumps(fields).encode()).hexdigest()

    def get(self, kind: str, instance: Mapping[str, Any], read: Callable[[], Any]) -> Any:
        key = self.key(kind, instance)
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        value = read()
        with self._lock:
            self._entries[key] = value
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return value


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


# The grader's files in the sandbox, outside the repository: the trusted pytest configuration, the outcome plugin
# (under a module name drawn per grading), the canary writer and the outcomes the plugin reports.
GRADER_DIR = "/work/.agentgym-grader"
_SANDBOXED = Path(__file__).with_name("sandboxed")
# pytest's configuration files at the root, in the order it looks for them (pytest.toml: pytest 9)
_CONFIGS = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
_PYTEST_PARSERS = ("parse_log_pytest", "parse_log_pytest_options", "parse_log_pytest_v2")

# Which conftests run is the base commit's (with the test patch's, applied later by the eval script): a patch's
# changes to any ``conftest.py`` are undone, and to any ``.gitattributes`` (a filter or working-tree-encoding would
# change what the eval script's git commands write into the test files: they are restored by content). A top-level module the patch adds that shadows an installed or
# standard-library one (``pytest.py``, ``string.py``) is removed, so ``python -m pytest`` runs pytest. Every other
# file is the patch's: the grading design (docs/envs/swe.md) does not depend on what code the patch changes.
TEST_TOOLING = ("conftest.py", ".gitattributes")
_TOOLING_SPECS = [f":(glob)**/{name}" for name in TEST_TOOLING]
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
    """A shell script that restores the base commit's conftests and removes added modules that shadow others."""
    specs = " ".join(shlex.quote(spec) for spec in _TOOLING_SPECS)
    base = shlex.quote(base_commit)
    return "\n".join([
        f"git ls-files -z --others -- {specs} | xargs -0 -r rm -rfv --",
        f"git diff -z --name-only --diff-filter=A {base} -- {specs} | xargs -0 -r git rm -qf --",
        f"git diff -z --name-only --diff-filter=MDT {base} -- {specs} | xargs -0 -r git checkout {base} --",
        # -I: neither the repository nor the environment's variables are on this check's import path
        f"python3 -I -c {shlex.quote(_SHADOWS)}",
    ]) + "\n"


def _ini_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "".join(f"\n    {item}" for item in value)
    return str(value)


def _options(sources: Mapping[str, str]) -> dict[str, Any]:
    """The pytest options of the first configuration file pytest would read among ``sources``."""
    options: dict[str, Any] = {}
    for name in _CONFIGS:
        text = sources.get(name)
        if text is None:
            continue
        try:
            if name.endswith(".toml"):
                table = tomllib.loads(text)
                table = table.get("tool", {}).get("pytest", {}) if name == "pyproject.toml" else table.get("pytest")
                if isinstance(table, dict) and isinstance(table.get("ini_options"), dict):
                    table = table["ini_options"]
                if not isinstance(table, dict):
                    continue
                options = dict(table)
            else:
                parser = configparser.RawConfigParser(interpolation=None)
                parser.read_string(text)
                section = {"setup.cfg": "tool:pytest"}.get(name, "pytest")
                if not parser.has_section(section):
                    if name.startswith(("pytest", ".pytest")):
                        break  # pytest.ini is the configuration even when empty
                    continue
                options = dict(parser.items(section))
        except (ValueError, configparser.Error, tomllib.TOMLDecodeError):
            continue
        break
    return options


def trusted_config(sources: Mapping[str, str], repo_dir: str) -> str:
    """The pytest configuration the grader runs with: the base commit's own (``sources``: file name -> text at the
    base commit), the first file pytest would read, as an ini file outside the repository, with ``pythonpath``
    made absolute. A configuration file the patch adds or changes is never read: pytest is given this with
    ``-c``."""
    options = _options(sources)
    if "pythonpath" in options:
        paths = options["pythonpath"]
        paths = paths if isinstance(paths, list) else str(paths).split()
        options["pythonpath"] = [str(PurePosixPath(repo_dir) / path) for path in paths]
    lines = ["[pytest]"] + [f"{key} = {_ini_value(value)}" for key, value in options.items()]
    return "\n".join(lines) + "\n"


def pytest_options(instance: Mapping[str, Any], workspace: Workspace,
                   inputs: GradingInputs | None = None) -> dict[str, Any]:
    """The base commit's pytest options (from git, not the working copy)."""
    return _options(_base_config(workspace, instance, inputs))


def _base_config(workspace: Workspace, instance: Mapping[str, Any],
                 inputs: GradingInputs | None) -> Mapping[str, str]:
    def read() -> dict[str, str]:
        return _config_sources(workspace, instance["base_commit"])

    return read() if inputs is None else inputs.get("config", instance, read)


def _config_sources(workspace: Workspace, base_commit: str) -> dict[str, str]:
    """The pytest configuration files at the root of the repository at ``base_commit`` (git's copy, not the
    working tree's)."""
    names = " ".join(_CONFIGS)
    commit = shlex.quote(base_commit)
    # one ls-tree for which of them exist, then a git show for each that does (1-2 processes, not 7)
    script = (f"git ls-tree --name-only {commit} -- {names} | while IFS= read -r f; do "
              f"printf '\\0%s\\0' \"$f\"; git show {commit}:\"$f\"; done")
    code, out = workspace.shell(script, limit=None)
    if code != 0:
        raise SandboxError(f"Could not read the base commit's pytest configuration: {out[-300:]}")
    parts = out.split("\0")
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def is_pytest_instance(instance: Mapping[str, Any]) -> bool:
    """Whether the instance's tests run under pytest (its log parser is one of swebench's pytest parsers): the
    instances the hardened grading covers. Others (Django's and SymPy's own runners) are graded from the log."""
    return (instance.get("log_parser") or LOG_PARSER) in _PYTEST_PARSERS


def _test_file(test: str) -> str | None:
    path = test.split("::", 1)[0]
    return path if "::" in test and path.endswith(".py") else None


def harden(script: str, *, instance: Mapping[str, Any], repo_dir: str, plugin: str) -> str:
    """``script`` (an eval script of SWE-bench's shape) with the grader's protections before its test command:
    pytest's configuration from ``GRADER_DIR`` (``-c``, ``--rootdir``, no cache provider), the outcome plugin
    ``plugin`` loaded with ``-p`` before any repository code, and canaries written into the test files of the
    FAIL_TO_PASS tests."""
    constants, _, _, _ = _swebench()
    lines = script.split("\n")
    at = next((i for i, line in enumerate(lines) if constants.START_TEST_OUTPUT in line), None)
    if at is None:
        raise DataError(f"{instance['instance_id']}'s eval script has no '{constants.START_TEST_OUTPUT}' line: the "
                        "grader puts its protections before the test command, which SWE-bench eval scripts mark "
                        "with it.")
    files = list(dict.fromkeys(f for f in map(_test_file, _tests(instance, "FAIL_TO_PASS")) if f))
    addopts = (f"-c {GRADER_DIR}/pytest.ini --rootdir={repo_dir} --confcutdir={repo_dir} -p no:cacheprovider "
               f"-p {plugin}")
    setup = [
        f"export AGENTGYM_OUTCOMES={GRADER_DIR}/outcomes.jsonl",
        f'export PYTHONPATH={GRADER_DIR}${{PYTHONPATH:+:$PYTHONPATH}}',
        f'export PYTEST_ADDOPTS="{addopts}${{PYTEST_ADDOPTS:+ $PYTEST_ADDOPTS}}"',
        f"(cd {repo_dir} && AGENTGYM_NONCE_FILE={GRADER_DIR}/nonce python3 -I {GRADER_DIR}/canaries.py "
        f"{' '.join(shlex.quote(f) for f in files)})",
    ]
    return "\n".join(lines[:at] + setup + lines[at:])


def _tests(instance: Mapping[str, Any], field: str) -> list[str]:
    value = instance.get(field) or []
    return json.loads(value) if isinstance(value, str) else list(value)


@dataclass(frozen=True)
class EvalRun:
    """What one run of an instance's tests produced: the log, and (pytest instances) the outcomes the grader's
    plugin reported outside it (None: the run had no such channel); ``evidence`` of tampering found before the
    tests ran (the patch was then not run at all)."""

    log: str
    outcomes: str | None = None
    timed_out: bool = False
    evidence: tuple[str, ...] = ()
    #: the nonce the canary writer's manifest line must carry (None: a run without canaries)
    nonce: str | None = None


# Every entry of the repository's .git but the index and the object store (which git apply --3way writes):
# path, type, mode, size and, for files, content hash. A patch may change the working tree, never this.
# (one sha1sum for all the files: a process per file cost ~60 ms a listing, two listings a grading)
_PRUNED = r"find .git \( -path .git/index -o -path '.git/objects/??' -o -path .git/objects/pack \) -prune -o "
_METADATA = (_PRUNED + r"\( -type f -printf '%p %y %m %s\n' \) -o -printf '%p %y %m %l\n'" + " && "
             + _PRUNED + r"-type f -exec sha1sum {} + | sed 's/^\([0-9a-f]*\)  \(.*\)$/\2 sha1 \1/'")


def _metadata(workspace: Workspace) -> list[str]:
    code, out = workspace.shell(_METADATA, limit=None)
    if code != 0:
        raise SandboxError(f"Could not list the repository's .git: {out[-300:]}")
    return sorted(out.splitlines())


def _changed(before: list[str], after: list[str]) -> list[str]:
    """The .git paths that differ between two listings."""
    return sorted({line.split(" ", 1)[0] for line in set(before) ^ set(after)})


def run_tests(workspace: Workspace, instance: Mapping[str, Any], model_patch: str | None,
              *, timeout_s: float = 300.0) -> str:
    """The eval log of ``model_patch`` on a fresh working copy already in ``workspace`` (see ``run_instance``)."""
    return run_instance(workspace, instance, model_patch, timeout_s=timeout_s).log


def _apply_checked(workspace: Workspace, patch: str, before: list[str] | None = None) -> tuple[bool, str, list[str]]:
    """``patch`` applied as swebench applies it, and evidence if it wrote into .git (then it counts as not
    applied: no git command of the grader may read that .git). ``before``: the pristine checkout's listing
    (``_pristine_metadata``), else listed now."""
    before = _metadata(workspace) if before is None else before
    ok, apply_log = _apply(workspace, patch)
    if not ok:
        return False, apply_log, []
    changed = _changed(before, _metadata(workspace))
    if changed:  # git's hooks, config or refs would run or steer every git command after this
        return False, apply_log, ["the patch wrote into the repository's metadata (.git), which no git command of "
                                  f"the grader may read after it: {', '.join(changed[:10])}"]
    return True, apply_log, []


def apply_checked(workspace: Workspace, patch: str, before: list[str] | None = None) -> tuple[bool, list[str]]:
    """Whether ``patch`` applied cleanly (as swebench applies it) without touching .git; the evidence if not."""
    ok, _, evidence = _apply_checked(workspace, patch, before)
    return ok, evidence


def _pristine_metadata(workspace: Workspace, instance: Mapping[str, Any],
                       inputs: GradingInputs | None) -> list[str] | None:
    """The .git listing of the pristine checkout, reused per instance (a bundled checkout is the same every time:
    its commit hash is checked); None (list it at apply time) in an instance image."""
    if inputs is None or workspace.in_image:
        return None
    return list(inputs.get("metadata", instance, lambda: _metadata(workspace)))


def run_instance(workspace: Workspace, instance: Mapping[str, Any], model_patch: str | None,
                 *, timeout_s: float = 300.0, inputs: GradingInputs | None = None) -> EvalRun:
    """``model_patch`` on a fresh working copy already in ``workspace``: the patch applied, the base commit's
    conftests restored (``tooling_guard``), then the instance's eval script, hardened (``harden``) for pytest
    instances; the log, and the outcomes the grader's plugin wrote."""
    constants, _, _, _ = _swebench()
    # the base commit's pytest configuration, read (or reused) before the patch touches anything
    config = _base_config(workspace, instance, inputs) if is_pytest_instance(instance) else {}
    ok, apply_log, evidence = _apply_checked(workspace, model_patch or "", _pristine_metadata(workspace, instance,
                                                                                             inputs))
    if not ok:
        return EvalRun(f"{apply_log}\n{constants.APPLY_PATCH_FAIL}\n", evidence=tuple(evidence))
    _, guard_log = workspace.shell("bash /work/.agentgym-guard.sh",
                                   files={".agentgym-guard.sh": tooling_guard(instance["base_commit"])}, limit=None)
    apply_log = f"{apply_log}\n{guard_log}".rstrip("\n")
    script = swebench_spec(instance).eval_script
    grader = GRADER_DIR.removeprefix("/work/")
    files, nonce = {}, None
    if is_pytest_instance(instance):
        plugin, nonce = f"_agentgym_outcomes_{secrets.token_hex(8)}", secrets.token_hex(16)
        script = harden(script, instance=instance, repo_dir=workspace.repo_dir, plugin=plugin)
        files = {f"{grader}/pytest.ini": trusted_config(config, workspace.repo_dir),
                 f"{grader}/{plugin}.py": (_SANDBOXED / "outcomes.py").read_text(encoding="utf-8"),
                 f"{grader}/canaries.py": (_SANDBOXED / "canaries.py").read_text(encoding="utf-8"),
                 f"{grader}/outcomes.jsonl": "", f"{grader}/nonce": nonce}
    # whether the run was cut off is the sandbox's own report, never text in the log (the tests can print any)
    code, log, timed_out = workspace.shell_run("bash /work/.agentgym-eval.sh", files={**files,
                                               ".agentgym-eval.sh": script}, timeout_s=timeout_s, limit=None)
    outcomes = None
    if files:
        code, outcomes = workspace.shell(f"cat {GRADER_DIR}/outcomes.jsonl", limit=None)
        outcomes = outcomes if code == 0 else ""
    return EvalRun(f"{apply_log}\n{constants.APPLY_PATCH_PASS}\n{log}", outcomes, timed_out, nonce=nonce)


def grade_log(instance: Mapping[str, Any], model_patch: str | None, log: str, *, outcomes: str | None = None,
              timed_out: bool = False, evidence: tuple[str, ...] = (), nonce: str | None = None) -> Score:
    """swebench's verdict on an eval log: resolved iff every FAIL_TO_PASS and PASS_TO_PASS test passes.

    With ``outcomes`` (what the grader's plugin reported, see ``run_instance``) a test counts only if the log and
    the plugin agree, and a canary with the wrong outcome, or missing from a run that was not ``timed_out``,
    makes the run tampered with: reward 0, ``details["tampered"]`` and the evidence (``integrity``), as do
    ``evidence`` found before the tests ran and a manifest that is empty, repeated, or (with ``nonce``) lacks this
    run's nonce."""
    constants, grading, _, _ = _swebench()
    spec = swebench_spec(instance)
    with tempfile.TemporaryDirectory(prefix="agentgym-swe-") as tmp:
        path = Path(tmp) / "test_output.txt"
        path.write_text(log, encoding="utf-8")
        prediction = {"instance_id": instance["instance_id"], "model_name_or_path": "agentgym",
                      "model_patch": model_patch}
        report = grading.get_eval_report(spec, prediction, str(path), include_tests_status=True)
        status_map, _ = grading.get_logs_eval(spec, str(path)) if outcomes is not None else ({}, False)
    result = report[instance["instance_id"]]
    status = result.get("tests_status", {})
    f2p, p2p = status.get("FAIL_TO_PASS", {}), status.get("PASS_TO_PASS", {})
    details: dict[str, Any] = {
        "resolved": bool(result["resolved"]), "patch_applied": bool(result["patch_successfully_applied"]),
        "patch_exists": bool(result["patch_exists"]),
        "fail_to_pass": {"success": f2p.get("success", []), "failure": f2p.get("failure", [])},
        "pass_to_pass": {"success": p2p.get("success", []), "failure": p2p.get("failure", [])},
        "tampered": False, "integrity": {"channels": "log"},
    }
    if outcomes is not None and constants.APPLY_PATCH_FAIL not in log:
        manifest, manifest_evidence = canary_manifest(log, constants.START_TEST_OUTPUT, nonce)
        if manifest is None:
            raise VerifierError(f"{instance['instance_id']}: the grader's canary writer did not run before the "
                                "tests (no canary manifest in the log); the run cannot be graded.")
        verdict = check_run(status_map, outcomes, manifest, _tests(instance, "FAIL_TO_PASS"),
                            _tests(instance, "PASS_TO_PASS"), finished=not timed_out)
        if manifest_evidence:
            verdict.evidence = manifest_evidence + verdict.evidence
            verdict.tampered = True
        for key in ("fail_to_pass", "pass_to_pass"):
            moved = [t for t in details[key]["success"] if t in verdict.failed or verdict.tampered]
            details[key] = {"success": [t for t in details[key]["success"] if t not in moved],
                            "failure": details[key]["failure"] + moved}
        details["resolved"] = details["resolved"] and not verdict.failed and not verdict.tampered
        details["tampered"] = verdict.tampered
        details["integrity"] = verdict.details()
    if evidence:
        details.update(resolved=False, tampered=True,
                       integrity={**details["integrity"], "tampered": True, "evidence": list(evidence)})
    return Score(1.0 if details["resolved"] else 0.0, details["resolved"], details)


def grade_patch(workspace: Workspace, instance: Mapping[str, Any], patch: Patch | str | None, *,
                timeout_s: float = 300.0, isolated: bool = True, inputs: GradingInputs | None = None) -> Score:
    """Resolved or not: ``patch`` applied to the fresh working copy of ``instance`` in ``workspace`` (which
    this changes: give it a checkout of its own), the instance's tests run, the verdict made out of the patch's
    reach where the instance allows it (``agentgym.envs.swe.isolation``: ``details["isolation"]`` is
    ``"isolated"``), else from the log by swebench (``"in-process"``, with ``isolation_reason``);
    ``isolated=False`` always grades in-process. ``inputs``: what earlier gradings of the instance read from git
    (``GradingInputs``), reused."""
    diff = (patch.diff if isinstance(patch, Patch) else patch) or ""
    blocker = "it runs in an instance image with its own eval script" if isolated else "grading='in-process' was asked"
    if isolated and not workspace.in_image:
        sources = (test_sources(workspace, instance) if inputs is None
                   else inputs.get("tests", instance, lambda: test_sources(workspace, instance)))
        blocker = isolation_blocker(instance, sources, in_image=False, pytest_tests=is_pytest_instance(instance))
        if blocker is None:
            pythonpath = pytest_options(instance, workspace, inputs).get("pythonpath") or []
            before = _pristine_metadata(workspace, instance, inputs)
            return grade_isolated(workspace, instance, diff, sources=sources,
                                  apply=lambda p: apply_checked(workspace, p, before), timeout_s=timeout_s,
                                  pythonpath=pythonpath if isinstance(pythonpath, list) else str(pythonpath).split())
    run = run_instance(workspace, instance, diff, timeout_s=timeout_s, inputs=inputs)
    score = grade_log(instance, diff, run.log, outcomes=run.outcomes, timed_out=run.timed_out, evidence=run.evidence,
                      nonce=run.nonce)
    return Score(score.reward, score.correct, {**score.details, "isolation": "in-process",
                                               "isolation_reason": blocker})
