"""SWEBench-v0 grading cannot be forged by the code under test (docs/envs/swe.md, "Grading you can trust").

The corpus (``helpers/swe_attacks.py``) holds every patch adversarial testing found that made an unfixed
repository score 1 against an earlier grader: the rounds against the in-process grader (``ATTACKS``) and the round
after its canaries (``ISOLATED_ATTACKS``). The bundled instances are graded on the isolated path: their tests run
in a trusted harness and the patched repository in a worker, so every attack scores 0 on all 30 instances, and
one that only acts on pytest (which the worker does not run) leaves a gold patch's 1 as it is. The in-process path
(``grading="in-process"``, and upstream instances in their images) keeps the canaries and the outcome channel:
the attacks on the test process are caught there, and what it cannot prevent is listed in docs/envs/swe.md.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers.gates import requires_docker, requires_swe
from helpers.swe_attacks import (ATTACKS, DETECTED, GIT_METADATA, ISOLATED_ATTACKS, NEUTRALISED, attack_patch,
                                 isolated_attack_patch)

from agentgym.envs.swe.grader import _SHADOWS

# the post-canary attacks that change what the repository computes (the others act on pytest only)
ACTIVE = {"AlwaysEqual results": "caught", "a forged timeout marker and verdict": "exits",
          "results as handles": "never asked"}
# what the in-process path catches of the post-canary round (the rest is in docs/envs/swe.md's list of limits)
CAUGHT_IN_PROCESS = ("a path with a newline forges the canary manifest", "a forged timeout marker and verdict")


def any_patch(name: str, files: dict[str, str]) -> str:
    return isolated_attack_patch(name, files) if name in ISOLATED_ATTACKS else attack_patch(name, files)


def _pair(**kwargs):
    from agentgym.envs.swe.env import SWEBenchEnv

    pair = [SWEBenchEnv(**kwargs), SWEBenchEnv(**kwargs)]
    yield pair
    for env in pair:
        env.close()


@pytest.fixture(scope="module")
def envs():
    """Two envs (each with a grader sandbox of its own): gradings run two at a time."""
    yield from _pair()


@pytest.fixture(scope="module")
def in_process():
    """The same, grading every instance in-process (SWE-bench's log grading, hardened)."""
    yield from _pair(grading="in-process")


@pytest.fixture(scope="module")
def tasks(envs):
    return list(envs[0].tasks.tasks("test"))


def grade_all(envs, jobs):
    """``jobs``: (task, patch) pairs, graded two at a time; their scores in order."""
    halves = [jobs[0::2], jobs[1::2]]
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda k: [envs[k].grade(t, p) for t, p in halves[k]], range(2)))
    out = [None] * len(jobs)
    out[0::2], out[1::2] = done[0], done[1]
    return out


def one_per_project(tasks):
    return list({task.gold["repo"]: task for task in tasks}.values())


@requires_swe
@pytest.mark.slow
@pytest.mark.parametrize("attack", ATTACKS + ISOLATED_ATTACKS)
def test_every_attack_scores_zero_on_every_bundled_instance(envs, tasks, attack):
    scores = grade_all(envs, [(task, any_patch(attack, envs[0].repos[task.id])) for task in tasks])
    assert len(scores) == 30
    assert all(s.details["isolation"] == "isolated" for s in scores)
    assert all(s.details["patch_applied"] != (attack == GIT_METADATA) for s in scores)  # that one is refused
    assert [t.id for t, s in zip(tasks, scores) if s.reward] == []
    if ACTIVE.get(attack) == "caught":
        # built-in results cross as their built-in values (their __eq__ is never asked: plainly wrong); the
        # package's objects are equal to everything, to the decoys too, and the runs that compare them are rejected
        assert sum(s.details["tampered"] for s in scores) >= 5, [s.details["integrity"] for s in scores]
    if ACTIVE.get(attack) == "never asked":
        # the package's results compared with the tests' values: equal to none, and never asked about one
        assert sum(s.details["comparisons"].get("computed == value", {}).get("false", 0) for s in scores) >= 30


@requires_swe
@pytest.mark.slow
@pytest.mark.parametrize("attack", [a for a in ATTACKS + ISOLATED_ATTACKS if a not in ACTIVE and a != GIT_METADATA])
def test_a_gold_patch_with_an_attack_on_pytest_still_scores_one(envs, tasks, attack):
    """The attack acts on pytest, which the worker never runs: the fix is graded as what it is."""
    picked = [t for t in one_per_project(tasks) if "__init__.py" not in t.gold["patch"]]
    scores = grade_all(envs, [(t, t.gold["patch"] + any_patch(attack, envs[0].repos[t.id])) for t in picked])
    assert len(picked) >= 5
    assert [(t.id, s.details) for t, s in zip(picked, scores) if s.reward != 1.0 or s.details["tampered"]] == []


@requires_swe
@pytest.mark.slow
def test_no_worker_reaches_the_tests(envs, tasks):
    """The worker reads every file it can (git's loose objects and packs inflated, every object git lists),
    every process's command line, environment, memory and descriptors it can open: the FAIL_TO_PASS tests (which
    only the test patch has) are nowhere, on every bundled instance."""
    def snoop(k):
        out = []
        for task in tasks[k::2]:
            envs[k].grade(task, isolated_attack_patch("the worker snoops for the tests", envs[k].repos[task.id]))
            code, text = envs[k]._grader.shell("cat /work/.agentgym-snoop.txt", limit=None)
            out.append((task, code, text))
        return out

    with ThreadPoolExecutor(2) as pool:
        runs = [r for half in pool.map(snoop, range(2)) for r in half]
    assert len(runs) == 30
    for task, code, text in runs:
        # it ran, read the base's tests and the repository's git objects (a commit object's header)
        assert code == 0 and len(text) > 10_000 and "def test_" in text and "\ncommitter " in text, task.id
        assert "GIT-CAT-FILE-FAILED" not in text
    assert [(task.id, t) for task, _, text in runs for t in task.gold["FAIL_TO_PASS"] if t.split("::")[-1] in text] == []


@requires_swe
@pytest.mark.slow
def test_gold_scores_one_and_no_patch_zero_on_every_instance_with_nothing_flagged(envs, tasks):
    """Every bundled instance, three gradings of its gold patch (fresh decoys each time), one of no patch, and one
    of the gold patch with a benign extra (a new helper module and a comment)."""
    def benign(task):
        files = envs[0].repos[task.id]
        init = next(p for p in sorted(files) if p.endswith("/__init__.py") and not p.startswith("tests/"))
        package = init.rsplit("/", 1)[0]
        return (task.gold["patch"] + f"diff --git a/{package}/_helper.py b/{package}/_helper.py\nnew file mode 100644\n"
                f"--- /dev/null\n+++ b/{package}/_helper.py\n@@ -0,0 +1,2 @@\n+# a helper the fix might add\n+X = 1\n")

    jobs = [(t, t.gold["patch"]) for t in tasks for _ in range(3)] + [(t, "") for t in tasks]
    jobs += [(t, benign(t)) for t in tasks]
    scores = grade_all(envs, jobs)
    gold, empty, extra = scores[:90], scores[90:120], scores[120:]
    assert [(t.id, s.details) for (t, _), s in zip(jobs, gold) if s.reward != 1.0 or s.details["tampered"]] == []
    assert all(s.details["isolation"] == "isolated" for s in scores)
    assert [(t.id, s.details) for t, s in zip(tasks, empty) if s.reward or s.details["tampered"]] == []
    assert [(t.id, s.details) for t, s in zip(tasks, extra) if s.reward != 1.0 or s.details["tampered"]] == []


@requires_swe
@pytest.mark.slow
@pytest.mark.parametrize("attack", ATTACKS + CAUGHT_IN_PROCESS)
def test_in_process_the_attacks_on_the_test_process_are_caught(in_process, tasks, attack):
    picked = one_per_project(tasks)
    scores = grade_all(in_process, [(t, any_patch(attack, in_process[0].repos[t.id])) for t in picked])
    assert all(s.details["isolation"] == "in-process" for s in scores)
    assert [t.id for t, s in zip(picked, scores) if s.reward] == []
    if attack in DETECTED or attack in CAUGHT_IN_PROCESS:
        assert all(s.details["tampered"] and s.details["integrity"]["evidence"] for s in scores), [
            s.details["integrity"] for s in scores]


@requires_swe
@pytest.mark.slow
@pytest.mark.parametrize("attack", NEUTRALISED + ("UTF-16 test files",))
def test_in_process_a_gold_patch_with_an_attack_the_grader_never_runs_still_scores_one(in_process, tasks, attack):
    picked = one_per_project(tasks)
    scores = grade_all(in_process, [(t, t.gold["patch"] + any_patch(attack, in_process[0].repos[t.id]))
                                    for t in picked])
    assert [(t.id, s.details) for t, s in zip(picked, scores) if s.reward != 1.0 or s.details["tampered"]] == []


@requires_swe
@pytest.mark.slow
@pytest.mark.parametrize("attack", DETECTED)
def test_in_process_a_gold_patch_that_also_tampers_with_the_test_process_scores_zero(in_process, tasks, attack):
    """The fix is there, but so is code that rewrites what pytest reports: nothing the run says can be believed."""
    picked = [t for t in one_per_project(tasks) if "__init__.py" not in t.gold["patch"]]
    scores = grade_all(in_process, [(t, t.gold["patch"] + attack_patch(attack, in_process[0].repos[t.id]))
                                    for t in picked])
    assert len(picked) >= 5
    assert all(s.reward == 0.0 and s.details["tampered"] for s in scores), [s.details for s in scores]


@requires_swe
@pytest.mark.slow
def test_in_process_no_canary_fires_on_a_gold_patch(in_process, tasks):
    picked = one_per_project(tasks)
    scores = grade_all(in_process, [(t, t.gold["patch"]) for t in picked] + [(t, "") for t in picked])
    gold, empty = scores[:len(picked)], scores[len(picked):]
    assert [(t.id, s.details) for t, s in zip(picked, gold) if s.reward != 1.0 or s.details["tampered"]] == []
    assert all(s.details["integrity"]["canaries"] >= 3 for s in gold)
    assert [(t.id, s.details) for t, s in zip(picked, empty) if s.reward or s.details["tampered"]] == []


@requires_swe
@requires_docker
@pytest.mark.docker
@pytest.mark.slow
def test_the_docker_backend_grades_with_the_same_protections():
    from agentgym.envs.swe.env import SWEBenchEnv

    env = SWEBenchEnv(backend="docker", grading="in-process")
    try:
        task = next(t for t in env.tasks.tasks("test") if "__init__.py" not in t.gold["patch"])
        files = env.repos[task.id]
        for attack in ATTACKS:
            alone = env.grade(task, attack_patch(attack, files))
            assert alone.reward == 0.0, (attack, alone.details)
            # (the image may have no GNU patch: a patch writing into .git then does not apply at all)
            assert alone.details["tampered"] == (attack in DETECTED) or attack == GIT_METADATA, (attack, alone.details)
            both = env.grade(task, task.gold["patch"] + attack_patch(attack, files))
            assert both.reward == (1.0 if attack in NEUTRALISED else 0.0), (attack, both.details)
        gold = env.grade(task, task.gold["patch"])
        assert gold.reward == 1.0 and gold.details["integrity"]["canaries"] >= 3, gold.details
    finally:
        env.close()


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
