"""``agentgym export harbor``: SWE-bench and PyCode tasks as Harbor task directories.

In the main suite: the export's layout (the repository archive commits to ``base_commit``), the SWE verifier run
as Harbor runs it (the verifier's image built from ``tests/``, ``tests/test.sh`` with only the agent's diff at
``/logs/artifacts/model.patch``) on the gold, an empty and hostile patches, and the PyCode grading on the gold,
an empty and hostile solutions. With Harbor (``AGENTGYM_HARBOR`` names its ``harbor`` command; harbor 0.26 needs
Python >= 3.12, so .ci/run makes it a venv of its own with scripts/harbor_venv.sh and sets
AGENTGYM_REQUIRE_HARBOR=1): Harbor's own ``lint`` and ``trial start`` on the Docker engine, its ``oracle`` agent
(gold: 1), its ``nop`` agent (empty: 0) and an agent of ours that games the tests (0).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

import pytest
from helpers.gates import requires_code, requires_docker, requires_swe
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.errors import ConfigError

pytestmark = [requires_swe, requires_code]

SWE, PYCODE = "agentgym/SWEBench-v0", "agentgym/PyCode-v0"
SWE_TASK, PYCODE_TASK = "agentgym__daterange-7", "pycode-0"
HELPERS = Path(__file__).resolve().parents[1] / "helpers"
_HARBOR = os.environ.get("AGENTGYM_HARBOR") or ""
_REQUIRE_HARBOR = bool(os.environ.get("AGENTGYM_REQUIRE_HARBOR"))
requires_harbor = pytest.mark.skipif(
    not _HARBOR and not _REQUIRE_HARBOR,
    reason="needs Harbor (Python >= 3.12) and Docker Compose v2: scripts/harbor_venv.sh DIR, then "
           "AGENTGYM_HARBOR=DIR/bin/harbor (as .ci/run does)")


def _export(out: Path, *args: str) -> None:
    result = CliRunner().invoke(app, ["export", "harbor", "--out", str(out), *args])
    assert result.exit_code == 0, (result.output, result.exception)


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("harbor")
    _export(out, "--env", SWE, "--tasks", "2")
    _export(out, "--env", PYCODE, "--tasks", "1")
    return out


@pytest.fixture(scope="module")
def swe_instance() -> dict:
    import gymnasium as gym

    env = gym.make(SWE)
    try:
        return dict(env.unwrapped.tasks.get(SWE_TASK).gold)
    finally:
        env.close()


def test_export_writes_harbor_task_directories(exported, swe_instance, tmp_path):
    assert sorted(p.name for p in exported.iterdir()) == ["agentgym__daterange-16", SWE_TASK, PYCODE_TASK]
    task = exported / SWE_TASK
    for rel in ("instruction.md", "task.toml", "environment/Dockerfile", "environment/repo.tar", "tests/Dockerfile",
                "tests/test.sh", "tests/repo.tar", "tests/grading/test.sh", "tests/grading/grade.py",
                "tests/grading/eval.sh", "tests/grading/grading.json", "solution/solve.sh"):
        assert (task / rel).is_file(), rel
    config = tomllib.loads((task / "task.toml").read_text())
    assert config["task"]["name"] == f"agentgym/{SWE_TASK}"
    assert config["verifier"]["environment_mode"] == "separate"  # the verifier's own container
    assert "/logs/artifacts/model.patch" in config["verifier"]["collect"][0]["command"]
    assert config["metadata"] == {"source": "agentgym", "env_id": SWE, "task_id": SWE_TASK,
                                  "repo": swe_instance["repo"], "base_commit": swe_instance["base_commit"]}
    assert swe_instance["problem_statement"].strip() in (task / "instruction.md").read_text()
    assert swe_instance["patch"].strip() in (task / "solution" / "solve.sh").read_text()
    grading = json.loads((task / "tests" / "grading" / "grading.json").read_text())
    assert grading["FAIL_TO_PASS"] == swe_instance["FAIL_TO_PASS"]
    assert grading["PASS_TO_PASS"] == swe_instance["PASS_TO_PASS"]
    # the agent's image holds the repository at base_commit, and nothing of the tests or the gold
    with tarfile.open(task / "environment" / "repo.tar") as tar:
        tar.extractall(tmp_path / "repo")
    head = subprocess.run(["git", "-c", "safe.directory=*", "rev-parse", "HEAD"], cwd=tmp_path / "repo",
                          capture_output=True, text=True, check=True).stdout.strip()
    assert head == swe_instance["base_commit"]
    agent_side = (task / "environment" / "Dockerfile").read_text()
    assert "grading" not in agent_side and "COPY" not in agent_side
    # the same repository on every export (all but git's index, which records the files' stat data)
    again = tmp_path / "again"
    _export(again, "--env", SWE, "--task-id", SWE_TASK)

    def members(archive: Path) -> dict:
        with tarfile.open(archive) as tar:
            return {m.name: tar.extractfile(m).read() if m.isfile() else m.type for m in tar.getmembers()
                    if m.name != ".git/index"}

    assert members(again / SWE_TASK / "environment" / "repo.tar") == members(task / "environment" / "repo.tar")

    pycode = exported / PYCODE_TASK
    assert "/app/solution.py" in (pycode / "instruction.md").read_text()
    assert "asserts" in json.loads((pycode / "tests" / "grading" / "tests.json").read_text())
    assert "tests.json" not in (pycode / "environment" / "Dockerfile").read_text()


def test_export_refuses_what_it_cannot_write(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["export", "harbor", "--env", "agentgym/MathTool-v0", "--out", str(tmp_path)])
    assert isinstance(result.exception, ConfigError) and "SWE-bench envs" in str(result.exception)
    _export(tmp_path, "--env", PYCODE, "--tasks", "1")
    result = runner.invoke(app, ["export", "harbor", "--env", PYCODE, "--tasks", "1", "--out", str(tmp_path)])
    assert isinstance(result.exception, ConfigError) and "--overwrite" in str(result.exception)
    _export(tmp_path, "--env", PYCODE, "--tasks", "1", "--overwrite")
    result = runner.invoke(app, ["export", "harbor", "--env", PYCODE, "--task-id", "nope", "--out", str(tmp_path)])
    assert result.exception is not None and "nope" in str(result.exception)


# ---- the SWE verifier as Harbor runs it: its image from tests/, only the agent's diff in ----------------------------

# a conftest.py that reports every test passed, a test file rewritten to pass, a pytest.py that exits 0 printing
# passes, and a line printed at exit after pytest's summary: each either dropped or not read
_CONFTEST = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
"""
# a pytest.py that prints pytest's summary with every test the verifier grades passed (it reads them where the
# verifier keeps them) and exits 0
_SHADOW = """import json, sys
spec = json.load(open("/tests/grading.json"))
print("=" * 20 + " short test summary info " + "=" * 20)
for test in spec["FAIL_TO_PASS"] + spec["PASS_TO_PASS"]:
    print("PASSED " + test)
print("=" * 20 + " all passed in 0.01s " + "=" * 20)
sys.exit(0)
"""


def _append(repo: Path, path: str, text: str) -> str:
    """A diff that appends ``text`` to ``path``."""
    with open(repo / path, "a") as f:
        f.write(text)
    diff = subprocess.run(["git", "-c", "safe.directory=*", "diff"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout
    subprocess.run(["git", "-c", "safe.directory=*", "checkout", "--", "."], cwd=repo, check=True)
    return diff


def _new_file(path: str, content: str) -> str:
    lines = content.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n{body}")


def _test_file_rewrite(instance: dict, repo: Path) -> str:
    """A diff that replaces the FAIL_TO_PASS test's file with tests that pass."""
    name = instance["FAIL_TO_PASS"][0].split("::")[0]
    tests = [t.split("::")[1] for t in instance["FAIL_TO_PASS"] + instance["PASS_TO_PASS"] if t.startswith(name)]
    content = "".join(f"def {t}():\n    pass\n\n\n" for t in dict.fromkeys(tests))
    (repo / name).write_text(content)
    diff = subprocess.run(["git", "-c", "safe.directory=*", "diff"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout
    subprocess.run(["git", "-c", "safe.directory=*", "checkout", "--", "."], cwd=repo, check=True)
    return diff


@pytest.fixture(scope="module")
def verifier_image(exported):
    tag = f"agentgym-harbor-verifier:{uuid.uuid4().hex[:8]}"
    proc = subprocess.run(["docker", "build", "-q", "--network", "none", "-t", tag,
                           str(exported / SWE_TASK / "tests")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    yield tag
    subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, check=False)


def _verify(image: str, patch: str, tmp_path: Path) -> tuple[float, dict]:
    """Run the verifier's tests/test.sh as Harbor does, with ``patch`` as the agent's diff; the reward, the report."""
    logs = tmp_path / f"logs-{uuid.uuid4().hex[:6]}"
    (logs / "artifacts").mkdir(parents=True)
    (logs / "verifier").mkdir()
    (logs / "artifacts" / "model.patch").write_text(patch)
    os.chmod(logs / "verifier", 0o777)
    proc = subprocess.run(["docker", "run", "--rm", "--network", "none", "-v", f"{logs}:/logs", image,
                           "bash", "/tests/test.sh"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report_file = logs / "verifier" / "report.json"
    report = json.loads(report_file.read_text()) if report_file.exists() else {}
    return float((logs / "verifier" / "reward.txt").read_text().strip()), report


@requires_docker
@pytest.mark.docker
def test_the_swe_verifier_grades_only_the_diff_and_sees_through_hostile_patches(verifier_image, swe_instance,
                                                                               exported, tmp_path):
    gold = swe_instance["patch"]
    reward, report = _verify(verifier_image, gold, tmp_path)
    assert reward == 1.0 and report["resolved"] and all(report["FAIL_TO_PASS"].values())
    reward, report = _verify(verifier_image, "", tmp_path)
    assert reward == 0.0 and report["FAIL_TO_PASS"] == {t: False for t in swe_instance["FAIL_TO_PASS"]}

    with tarfile.open(exported / SWE_TASK / "environment" / "repo.tar") as tar:
        tar.extractall(tmp_path / "repo")
    package = swe_instance["repo"].split("/")[-1]
    lines = "".join(f"PASSED {t}\n" for t in swe_instance["FAIL_TO_PASS"] + swe_instance["PASS_TO_PASS"])
    hostile = {
        "conftest": _new_file("conftest.py", _CONFTEST),
        "test file": _test_file_rewrite(swe_instance, tmp_path / "repo"),
        "pytest shadow": _new_file("pytest.py", _SHADOW),
        # the package the tests import prints a PASSED line for every test when the test process exits
        "printed at exit": _append(tmp_path / "repo", f"{package}/__init__.py",
                                   f"\nimport atexit as _a, os as _o\n_a.register(lambda: _o.write(1, {lines!r}"
                                   ".encode()))\n"),
    }
    for name, patch in hostile.items():
        reward, report = _verify(verifier_image, patch, tmp_path)
        assert reward == 0.0, (name, report)
    # the gold with the hostile conftest beside it still scores 1 (the conftest is dropped, not the patch)
    reward, _ = _verify(verifier_image, gold + hostile["conftest"], tmp_path)
    assert reward == 1.0


# ---- PyCode: agentgym's harness on the agent's file ------------------------------------------------------------------

def _pycode_grade(exported: Path, solution: str | None, tmp_path: Path) -> tuple[str, dict]:
    grading = exported / PYCODE_TASK / "tests" / "grading"
    path = tmp_path / f"solution-{uuid.uuid4().hex[:6]}.py"
    if solution is not None:
        path.write_text(solution)
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-I", str(grading / "run.py"), str(path), str(grading / "tests.json"),
                           str(report)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip(), json.loads(report.read_text())


def test_the_pycode_verifier_grades_with_agentgyms_harness(exported, tmp_path):
    import gymnasium as gym

    env = gym.make(PYCODE)
    try:
        gold = env.unwrapped.tasks.tasks("test")[0].gold
    finally:
        env.close()
    reward, report = _pycode_grade(exported, gold["canonical_solution"], tmp_path)
    assert reward == "1" and report["passed"] == report["total"] > 0
    assert _pycode_grade(exported, None, tmp_path)[0] == "0"  # no file
    assert _pycode_grade(exported, "", tmp_path)[0] == "0"
    forged = json.dumps({"passed": 9, "total": 9, "failures": [], "load_error": None})
    for hostile in ("import sys\nsys.exit(0)\n",
                    f"print('@@agentgym-grade@@{forged}')\nimport os\nos._exit(0)\n",
                    f"class Eq:\n    def __eq__(self, other):\n        return True\n"
                    f"def {gold['entry_point']}(*args, **kwargs):\n    return Eq()\n"):
        reward, report = _pycode_grade(exported, hostile, tmp_path)
        assert reward == "0", (hostile, report)


# ---- Harbor's own tooling -------------------------------------------------------------------------------------------

def _harbor(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    command = _HARBOR or shutil.which("harbor")
    assert command, "AGENTGYM_REQUIRE_HARBOR=1 but AGENTGYM_HARBOR names no harbor command"
    env = {**os.environ, "PYTHONPATH": str(HELPERS), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([command, *args], capture_output=True, text=True, timeout=timeout, env=env)


def _trial(task: Path, agent: str, trials: Path) -> float:
    proc = _harbor("trial", "start", "-p", str(task), "-a", agent, "-e", "docker", "--trials-dir", str(trials))
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    results = sorted(trials.glob(f"{task.name}__*/result.json"), key=lambda p: p.stat().st_mtime)
    result = json.loads(results[-1].read_text())
    assert result.get("exception_info") is None, result.get("exception_info")
    return float(result["verifier_result"]["rewards"]["reward"])


@requires_harbor
@requires_docker
@pytest.mark.docker
def test_harbors_lint_passes_the_exported_tasks(exported):
    proc = _harbor("lint", str(exported / SWE_TASK), str(exported / PYCODE_TASK))
    assert proc.returncode == 0, proc.stdout + proc.stderr


@requires_harbor
@requires_docker
@pytest.mark.docker
@pytest.mark.parametrize("task", [SWE_TASK, PYCODE_TASK])
def test_harbor_runs_the_gold_to_1_and_nothing_to_0(exported, task, tmp_path):
    assert _trial(exported / task, "oracle", tmp_path / "trials") == 1.0
    assert _trial(exported / task, "nop", tmp_path / "trials") == 0.0


@requires_harbor
@requires_docker
@pytest.mark.docker
def test_an_agent_that_games_the_tests_gets_0_from_harbor(exported, tmp_path):
    assert _trial(exported / SWE_TASK, "harbor_agents:GamingAgent", tmp_path / "trials") == 0.0

