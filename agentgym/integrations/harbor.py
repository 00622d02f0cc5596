"""Harbor task directories from agentgym envs: ``agentgym export harbor --env ENV --out DIR``.

Harbor (terminal-bench's task format, read by TRL, verl, SkyRL, verifiers and rLLM) runs a task as: build
``environment/``, let an agent work in it from ``instruction.md``, then run ``tests/test.sh``, which writes the
reward to ``/logs/verifier/reward.txt``; ``solution/solve.sh`` is what Harbor's ``oracle`` agent runs.

Exported here, one directory per task:

- **SWE-bench** (``agentgym/SWEBench-v0`` and any ``SWEBenchEnv``): the repository at ``/testbed`` at
  ``base_commit`` (a bundled repository is built from the base image and checked against its hash; an instance
  without one starts from its SWE-bench instance image). The verifier runs in a container of its own
  (``environment_mode = "separate"``): a collect hook writes the agent's diff against ``base_commit`` to
  ``/logs/artifacts/model.patch``, and only that diff crosses. There it is applied to a pristine checkout, without
  its changes to test tooling (``conftest.py``, ``.gitattributes``) and to the files the test patch writes, and
  without modules it adds that shadow installed ones (``pytest.py``); then the test patch, the FAIL_TO_PASS and
  PASS_TO_PASS tests by pytest, and SWE-bench's rule: reward 1 when every FAIL_TO_PASS and every PASS_TO_PASS test
  passes, else 0.
- **PyCode** (``agentgym/PyCode-v0``): the agent writes ``/app/solution.py``; the verifier, in a container of its
  own, grades that file alone with agentgym's own test harness (the hidden tests never enter the agent's
  container; the harness keeps them out of the submission's reach, as in the env).

Both verifiers run without a network and without agentgym installed in the container. The grading is the env's
rule, not its verifier object: docs/frameworks.md says where the two differ.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError

__all__ = ["DEFAULT_BASE_IMAGE", "export_harbor"]

DEFAULT_BASE_IMAGE = "agentgym-base:bookworm"
_SCHEMA = "1.4"  # harbor's task.toml schema_version (harbor 0.26)
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)
# the git settings of every command on a repository the agent had: no hooks, no external diff drivers or filters
_GIT = ("git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c diff.external= -c core.attributesFile=/dev/null "
        "-c core.autocrlf=false -c core.safecrlf=false -c safe.directory='*'")


def _slug(task_id: str) -> str:
    slug = _SLUG.sub("-", task_id).strip("-.").lower()
    if not slug:
        raise ConfigError(f"Task id {task_id!r} has no characters a Harbor task name can use.")
    return slug


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _heredoc(text: str, marker: str) -> str:
    if any(line == marker for line in text.splitlines()):
        raise ConfigError(f"The text contains the line {marker!r}, which ends its here-document.")
    return text.rstrip("\n") + "\n" + marker


def _task_toml(name: str, description: str, metadata: Mapping[str, Any], *, agent_timeout_s: float,
               verifier_timeout_s: float, collect: str) -> str:
    meta = "\n".join(f"{k} = {_toml_str(str(v))}" for k, v in metadata.items())
    return f"""schema_version = "{_SCHEMA}"
artifacts = []

[task]
name = {_toml_str(name)}
version = "1.0.0"
description = {_toml_str(description)}
authors = []
keywords = ["agentgym"]

[metadata]
{meta}

[verifier]
timeout_sec = {verifier_timeout_s:.1f}
environment_mode = "separate"

[[verifier.collect]]
command = {_toml_str(collect)}
timeout_sec = 120.0

[verifier.env]

[agent]
timeout_sec = {agent_timeout_s:.1f}

[environment]
network_mode = "public"
build_timeout_sec = 600.0
os = "linux"
mcp_servers = []

[environment.env]

[solution.env]
"""


def _write(path: Path, text: str, *, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if executable:
        path.chmod(0o755)


# ---- SWE-bench ------------------------------------------------------------------------------------------------------

def _swe_dockerfile(instance: Mapping[str, Any], base_image: str, has_repo: bool, *, tests: bool) -> str:
    """No RUN step: a build then needs no network (an engine without a default bridge, as .ci/run starts, builds it);
    ADD unpacks the repository's archive, its .git at ``base_commit`` included."""
    from agentgym.envs.swe.grader import instance_image

    lines = [f"FROM {base_image}", "ADD repo.tar /testbed"] if has_repo else [f"FROM {instance_image(instance)}"]
    lines += ["WORKDIR /testbed"]
    if tests:
        lines += ["COPY grading /tests"]
    return "\n".join(lines) + "\n"


def _repo_archive(instance: Mapping[str, Any], files: Mapping[str, str], dest: Path) -> None:
    """The bundled repository committed as agentgym commits it (the hash checked against ``base_commit``), as a tar
    archive with its .git (the same files on every export; git's index records their stat data)."""
    import tarfile
    import tempfile

    from agentgym.envs.swe.repo import commit_message, materialize

    with tempfile.TemporaryDirectory() as tmp:
        head = materialize(files, Path(tmp) / "repo", commit_message(instance))
        if head != instance["base_commit"]:
            raise ConfigError(f"{instance['instance_id']}: the bundled repository commits to {head}, not its "
                              f"base_commit {instance['base_commit']}.")
        root = Path(tmp) / "repo"
        dest.parent.mkdir(parents=True, exist_ok=True)

        def fixed(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.mtime, info.uid, info.gid, info.uname, info.gname = 1704067200, 0, 0, "root", "root"
            return info

        with tarfile.open(dest, "w", format=tarfile.PAX_FORMAT) as tar:
            for path in sorted(root.rglob("*")):
                tar.add(path, arcname=str(path.relative_to(root)), recursive=False, filter=fixed)


def _swe_eval_script(instance: Mapping[str, Any]) -> str:
    """The instance's own eval script (SWE-bench 5.x rows), else one of its shape for a bundled pytest repo."""
    from agentgym.envs.swe.grader import test_files

    if instance.get("eval_script"):
        return str(instance["eval_script"])
    files = " ".join(shlex.quote(f) for f in test_files(instance["test_patch"]))
    base = instance["base_commit"]
    return "\n".join([
        "#!/bin/bash", "set -uxo pipefail", "cd /testbed",
        f"{_GIT} checkout {base} -- {files} 2>/dev/null || true",
        f"{_GIT} apply -v - <<'EOF_TEST_PATCH'", _heredoc(instance["test_patch"], "EOF_TEST_PATCH"),
        ": '>>>>> Start Test Output'",
        f"python3 -m pytest -rA -p no:cacheprovider --tb=no {files}",
        ": '>>>>> End Test Output'",
    ]) + "\n"


_SWE_TEST_SH = """#!/bin/bash
# agentgym's SWE-bench grading for Harbor: the agent's diff on a pristine checkout, the test patch, the tests,
# SWE-bench's rule. Runs in the verifier's own container; only /logs/artifacts/model.patch comes from the agent.
set -u
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
cd /testbed
python3 -I /tests/grade.py prepare /logs/artifacts/model.patch /tmp/model.patch /tests/grading.json \\
    > /logs/verifier/prepare.log 2>&1 || { cat /logs/verifier/prepare.log; exit 0; }
g() { __GIT__ "$@"; }
log=/logs/verifier/apply.log
if [ -s /tmp/model.patch ]; then  # as SWE-bench's harness applies a patch: git apply, then with --reject, then patch
    if g apply --verbose /tmp/model.patch >> $log 2>&1; then :
    elif (g checkout -- . && g clean -fdq && g apply --verbose --reject /tmp/model.patch) >> $log 2>&1; then :
    elif (g checkout -- . && g clean -fdq && patch --batch --fuzz=5 -p1 -i /tmp/model.patch) >> $log 2>&1; then :
    else echo "the patch does not apply"; exit 0
    fi
fi
python3 -I /tests/grade.py shadows /testbed >> /logs/verifier/prepare.log 2>&1 || exit 0
bash /tests/eval.sh > /logs/verifier/test_output.log 2>&1
python3 -I /tests/grade.py grade /logs/verifier/test_output.log /tests/grading.json /logs/verifier/report.json \\
    > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
cat /logs/verifier/report.json 2>/dev/null
"""

# grade.py: standard library only (the verifier's container has no agentgym). Three commands:
#   prepare IN OUT GRADING  the model's patch without the files it may not change
#   shadows DIR             remove modules the patch added at the top of DIR that shadow installed ones
#   grade LOG GRADING REPORT  print 1 when every FAIL_TO_PASS and PASS_TO_PASS test passed, else 0
_SWE_GRADE_PY = r'''"""agentgym's SWE-bench grading steps for a Harbor verifier (standard library only)."""
import importlib.util
import json
import os
import re
import subprocess
import sys

DIFF = re.compile(r"^diff --git a/(\S+) b/(\S+)$")
STATUSES = ("PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL", "XPASS")
TOOLING = ("conftest.py", ".gitattributes")


def prepare(src, dst, grading):
    protected = set(json.load(open(grading))["test_files"])
    text = open(src, encoding="utf-8", errors="surrogateescape").read() if os.path.exists(src) else ""
    kept, keep = [], True
    for line in text.splitlines(keepends=True):
        match = DIFF.match(line.rstrip("\n"))
        if match:
            paths = {match.group(1), match.group(2)}
            keep = not any(p in protected or p.split("/")[-1] in TOOLING for p in paths)
            if not keep:
                print("dropped the patch's change to", " ".join(sorted(paths)))
        if keep:
            kept.append(line)
    with open(dst, "w", encoding="utf-8", errors="surrogateescape") as out:
        out.write("".join(kept))


def shadows(root):
    added = subprocess.run(["git", "-c", "safe.directory=*", "ls-files", "-z", "--others", "--exclude-standard"],
                           cwd=root, capture_output=True, text=True, check=True).stdout
    for path in filter(None, added.split("\0")):
        parts = path.split("/")
        name, ext = os.path.splitext(parts[-1])
        top = path
        if parts[-1] == "__init__.py" and len(parts) == 2:
            name, ext, top = parts[0], ".py", parts[0]
        elif len(parts) > 1:
            continue
        # run with -I from outside the repository: found means installed (or standard library), so shadowed
        if ext == ".py" and name.isidentifier() and importlib.util.find_spec(name) is not None:
            print("removed", top, "(it shadows the installed module", name + ")")
            full = os.path.join(root, top)
            subprocess.run(["rm", "-rf", full], check=True)


SUMMARY = re.compile(r"^=+ short test summary info =+$")
RULE = re.compile(r"^=+ .* =+$")


def parse(log):
    """Test id -> status from pytest -rA's short test summary: only the lines between the last summary header and
    the closing rule that follows it (pytest writes them once every test has run, so output a test printed, or
    printed at exit after the closing rule, is not read as a result)."""
    lines = [line.rstrip() for line in log.splitlines()]
    starts = [i for i, line in enumerate(lines) if SUMMARY.match(line)]
    if not starts:
        return {}
    results = {}
    for line in lines[starts[-1] + 1:]:
        if RULE.match(line):
            break
        for status in STATUSES:
            if line.startswith(status + " "):
                results[line[len(status) + 1:].split(" - ")[0].strip()] = status
    return results


def grade(log_path, grading, report):
    spec = json.load(open(grading))
    log = open(log_path, encoding="utf-8", errors="replace").read()
    start, end = ">>>>> Start Test Output", ">>>>> End Test Output"
    if start in log:
        log = log[log.index(start):]
    if end in log:
        log = log[:log.rindex(end)]
    results = parse(log)
    ok = lambda t: results.get(t) in ("PASSED", "XFAIL")
    f2p = {t: ok(t) for t in spec["FAIL_TO_PASS"]}
    p2p = {t: ok(t) for t in spec["PASS_TO_PASS"]}
    resolved = bool(f2p) and all(f2p.values()) and all(p2p.values())
    with open(report, "w") as out:
        json.dump({"resolved": resolved, "FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p}, out, indent=1)
    print(1 if resolved else 0)


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    {"prepare": prepare, "shadows": shadows, "grade": grade}[command](*args)
'''


def _swe_task(env: Any, task: Any, out: Path, base_image: str, env_id: str) -> str:
    from agentgym.envs.swe.grader import test_files

    instance = task.gold
    files = env.repos.get(instance["instance_id"])
    base = instance["base_commit"]
    name = _slug(instance["instance_id"])
    collect = (f"cd /testbed && {_GIT} add -A && {_GIT} diff --cached --binary --no-ext-diff --no-textconv "
               f"{base} > /logs/artifacts/model.patch")
    _write(out / "task.toml", _task_toml(
        f"agentgym/{name}", f"SWE-bench instance {instance['instance_id']} ({instance['repo']}), from {env_id}",
        {"source": "agentgym", "env_id": env_id, "task_id": task.id, "repo": instance["repo"], "base_commit": base},
        agent_timeout_s=1800.0, verifier_timeout_s=900.0, collect=collect))
    _write(out / "instruction.md", (
        f"You are a software engineer working in the repository at /testbed ({instance['repo']}, commit "
        f"{base[:12]}). Resolve the issue below by editing the repository's source code so that the issue is "
        "fixed; the repository's hidden tests decide. You can run the tests with `python3 -m pytest`. Your changes "
        f"to the repository (its diff against {base[:12]}) are the submission.\n\n<issue>\n"
        f"{instance['problem_statement'].rstrip()}\n</issue>\n"))
    for side, tests in (("environment", False), ("tests", True)):
        if files:
            _repo_archive(instance, files, out / side / "repo.tar")
        _write(out / side / "Dockerfile", _swe_dockerfile(instance, base_image, bool(files), tests=tests))
    grading = out / "tests" / "grading"
    _write(grading / "test.sh", _SWE_TEST_SH.replace("__GIT__", _GIT), executable=True)
    _write(grading / "grade.py", _SWE_GRADE_PY)
    _write(grading / "eval.sh", _swe_eval_script(instance), executable=True)
    _write(grading / "grading.json", json.dumps({
        "instance_id": instance["instance_id"], "FAIL_TO_PASS": instance["FAIL_TO_PASS"],
        "PASS_TO_PASS": instance["PASS_TO_PASS"], "test_files": test_files(instance["test_patch"])}, indent=1))
    # Harbor finds tests/test.sh; the verifier's image (built from tests/) holds the same file at /tests/test.sh
    _write(out / "tests" / "test.sh", _SWE_TEST_SH.replace("__GIT__", _GIT), executable=True)
    _write(out / "solution" / "solve.sh", "#!/bin/bash\n# the instance's gold patch\nset -euo pipefail\n"
           f"cd /testbed\n{_GIT} apply --verbose - <<'EOF_GOLD_PATCH'\n{_heredoc(instance['patch'], 'EOF_GOLD_PATCH')}"
           "\n", executable=True)
    return name


# ---- PyCode ---------------------------------------------------------------------------------------------------------

_PYCODE_TEST_SH = """#!/bin/bash
# agentgym's PyCode grading for Harbor: /logs/artifacts/solution.py (the agent's /app/solution.py) against the
# hidden tests, by agentgym's own harness (it keeps the tests out of the submission's reach).
set -u
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
python3 -I /tests/run.py /logs/artifacts/solution.py /tests/tests.json /logs/verifier/report.json \\
    > /logs/verifier/reward.txt 2> /logs/verifier/grading.log || echo 0 > /logs/verifier/reward.txt
cat /logs/verifier/report.json 2>/dev/null
"""

_PYCODE_RUN_PY = r'''"""Frames the submission and the tests for agentgym's harness, runs it, prints the reward."""
import json
import os
import subprocess
import sys

MARK = "@@agentgym-grade@@"


def frame(obj):
    body = json.dumps(obj, ensure_ascii=True)
    return f"{len(body)}\n{body}"


def main(solution, tests_file, report):
    spec = json.load(open(tests_file))
    code = open(solution, encoding="utf-8").read() if os.path.exists(solution) else ""
    verdict = {"passed": 0, "total": spec["total"], "error": "empty submission"}
    if code.strip():
        stdin = frame({"code": code, "entry_point": spec["entry_point"], "setup_code": spec["setup_code"]}) + frame(
            {"asserts": spec["asserts"], "check": spec["check"], "setup_code": spec["setup_code"],
             "entry_point": spec["entry_point"], "show": False})
        here = os.path.dirname(os.path.abspath(__file__))
        try:
            done = subprocess.run([sys.executable, os.path.join(here, "harness.py")], input=stdin, text=True,
                                  capture_output=True, cwd="/tmp", timeout=spec["timeout_s"])
            lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
            verdict = json.loads(lines[-1][len(MARK):]) if lines else {
                "passed": 0, "total": spec["total"], "error": "the grader did not finish: " + done.stderr[-300:]}
        except subprocess.TimeoutExpired:
            verdict = {"passed": 0, "total": spec["total"], "error": "grading timed out"}
    passed = verdict.get("passed", 0) == verdict.get("total") and verdict.get("total", 0) > 0 \
        and not verdict.get("load_error") and not verdict.get("error")
    with open(report, "w") as out:
        json.dump({**verdict, "all_passed": passed}, out, indent=1)
    print(1 if passed else 0)


if __name__ == "__main__":
    main(*sys.argv[1:])
'''


def _pycode_task(env: Any, task: Any, out: Path, base_image: str, env_id: str) -> str:
    from agentgym.envs.code.grader import _HARNESS

    gold = task.gold
    name = _slug(task.id)
    collect = "mkdir -p /logs/artifacts && cp /app/solution.py /logs/artifacts/solution.py 2>/dev/null || true"
    _write(out / "task.toml", _task_toml(
        f"agentgym/{name}", f"Python function {gold['entry_point']} ({task.id}), from {env_id}",
        {"source": "agentgym", "env_id": env_id, "task_id": task.id, "entry_point": gold["entry_point"]},
        agent_timeout_s=600.0, verifier_timeout_s=300.0, collect=collect))
    _write(out / "instruction.md", (
        "Complete the Python function below so that it passes hidden unit tests. Write the complete program (the "
        f"function `{gold['entry_point']}` and anything it needs) to `/app/solution.py`; `python3` is installed. "
        "That file, and nothing else, is graded once on the hidden tests.\n\n```python\n"
        f"{gold['prompt'].rstrip()}\n```\n"))
    _write(out / "environment" / "Dockerfile", f"FROM {base_image}\nWORKDIR /app\n")
    _write(out / "tests" / "Dockerfile", f"FROM {base_image}\nCOPY grading /tests\nWORKDIR /tests\n")
    asserts = list(gold.get("asserts") or ())
    _write(out / "tests" / "grading" / "tests.json", json.dumps({
        "entry_point": gold["entry_point"], "asserts": asserts, "check": gold.get("check"),
        "setup_code": gold.get("setup_code") or "", "total": len(asserts) or int(gold.get("check") is not None),
        "timeout_s": float(getattr(env, "grade_timeout_s", 30.0))}, indent=1))
    _write(out / "tests" / "grading" / "harness.py", _HARNESS)
    _write(out / "tests" / "grading" / "run.py", _PYCODE_RUN_PY)
    _write(out / "tests" / "grading" / "test.sh", _PYCODE_TEST_SH, executable=True)
    _write(out / "tests" / "test.sh", _PYCODE_TEST_SH, executable=True)
    _write(out / "solution" / "solve.sh", "#!/bin/bash\n# the task's reference solution\nset -euo pipefail\n"
           "mkdir -p /app\ncat > /app/solution.py <<'EOF_SOLUTION'\n"
           f"{_heredoc(gold['canonical_solution'], 'EOF_SOLUTION')}\n", executable=True)
    return name


def export_harbor(env_id: str, out: str | Path, *, split: str | None = None, limit: int | None = None,
                  task_ids: Sequence[str] = (), base_image: str = DEFAULT_BASE_IMAGE,
                  env_kwargs: Mapping[str, Any] | None = None, overwrite: bool = False) -> list[Path]:
    """Write one Harbor task directory per task of ``env_id`` under ``out``; their paths.

    ``task_ids`` picks tasks by id (any split); otherwise the first ``limit`` tasks of ``split`` (the env's own
    split when None). ``base_image`` is the image the tasks build from (a SWE-bench instance without a bundled
    repository starts from its own instance image instead).
    """
    import gymnasium as gym

    from agentgym.envs.code.pycode import PyCodeEnv
    from agentgym.envs.swe.env import SWEBenchEnv

    env = gym.make(env_id, **dict(env_kwargs or {}))
    try:
        inner = env.unwrapped
        families = ((SWEBenchEnv, _swe_task), (PyCodeEnv, _pycode_task))
        write = next((fn for cls, fn in families if isinstance(inner, cls)), None)
        if write is None:
            raise ConfigError(f"{env_id} is a {type(inner).__name__}; Harbor export writes SWE-bench envs "
                              "(agentgym/SWEBench-v0) and PyCode envs (agentgym/PyCode-v0).")
        if task_ids:
            tasks = [inner.tasks.get(str(t)) for t in task_ids]
        else:
            tasks = list(inner.tasks.tasks(split or inner.split))
            if not tasks:
                raise ConfigError(f"{env_id} has no tasks in split {split or inner.split!r}.")
            tasks = tasks[:limit] if limit is not None else tasks
        root = Path(out)
        written = []
        for task in tasks:
            directory = root / _slug(task.id)
            if directory.exists():
                if not overwrite:
                    raise ConfigError(f"{directory} exists; pass --overwrite to replace it, or another --out.")
                shutil.rmtree(directory)
            write(inner, task, directory, base_image, env_id)
            written.append(directory)
        return written
    finally:
        env.close()
