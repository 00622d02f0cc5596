"""SWEBench-v0 grading cannot be steered by files a patch adds: only source changes make tests pass.

The hacks are the ones adversarial testing found (each made an unfixed repository
score 1): a conftest.py that rewrites every test report to "passed" (at the root or
beside the tests), a pytest.py shadowing pytest under ``python -m pytest``, and a
pytest.ini whose ``addopts`` loads a plugin that does the same.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers.gates import requires_swe

from agentgym.envs.swe.grader import _SHADOWS

FORCE_PASS = '''import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
'''
FAKE_PYTEST = '''import re
import sys

for path in sys.argv[1:]:
    if path.endswith(".py"):
        for name in re.findall(r"^def (test_\\w+)", open(path).read(), re.M):
            print("PASSED %s::%s" % (path, name))
'''
HACKS = {
    "root conftest.py": {"conftest.py": FORCE_PASS},
    "tests/conftest.py": {"tests/conftest.py": FORCE_PASS},
    "pytest.py shadowing pytest": {"pytest.py": FAKE_PYTEST},
    "pytest.ini loading a plugin": {"pytest.ini": "[pytest]\naddopts = -p forcepass\n", "forcepass.py": FORCE_PASS},
}


def new_files(files: dict[str, str]) -> str:
    """A git patch that adds ``files``."""
    out = []
    for path, text in files.items():
        lines = text.splitlines()
        out += [f"diff --git a/{path} b/{path}", "new file mode 100644", "--- /dev/null", f"+++ b/{path}",
                f"@@ -0,0 +1,{len(lines)} @@", *("+" + line for line in lines)]
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def env():
    from agentgym.envs.swe.env import SWEBenchEnv

    env = SWEBenchEnv()
    yield env
    env.close()


@pytest.fixture(scope="module")
def tasks(env):
    return list(env.tasks.tasks("test"))


@requires_swe
def test_a_force_pass_conftest_scores_zero_on_every_bundled_instance(env, tasks):
    patch = new_files(HACKS["root conftest.py"])
    scores = {task.id: env.grade(task, patch) for task in tasks}
    assert len(scores) == 30 and all(s.reward == 0.0 for s in scores.values()), {
        k: s.reward for k, s in scores.items() if s.reward}


@requires_swe
@pytest.mark.parametrize("hack", list(HACKS))
def test_tooling_hacks_score_zero_and_the_gold_patch_with_them_still_scores_one(env, tasks, hack):
    """One instance of each bundled project: the hack alone scores 0; the gold patch plus the hack scores 1 (the
    hack is undone, not the whole patch rejected)."""
    for task in {task.gold["repo"]: task for task in tasks}.values():
        hacked = env.grade(task, new_files(HACKS[hack]))
        assert hacked.reward == 0.0 and hacked.details["patch_applied"], (task.id, hacked.details)
        both = env.grade(task, task.gold["patch"] + new_files(HACKS[hack]))
        assert both.reward == 1.0, (task.id, both.details)


def test_added_modules_that_shadow_installed_ones_are_removed_outside_packages(tmp_path):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    for path in ("pkg/__init__.py", "pkg/string.py", "string.py", "heapq/__init__.py", "tests/copy.py",
                 "tests/helpers.py", "mymodule.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x = 1\n")
    proc = subprocess.run([sys.executable, "-I", "-c", _SHADOWS], cwd=tmp_path, capture_output=True, text=True,
                          check=True)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.py"))
    # string.py, the heapq package and tests/copy.py shadowed the standard library; a submodule and new names stay
    assert left == ["mymodule.py", "pkg/__init__.py", "pkg/string.py", "tests/helpers.py"], (left, proc.stdout)
