"""SWEBench-v0 grading cannot be forged by the code under test (docs/envs/swe.md, "Grading you can trust").

The corpus (``helpers/swe_attacks.py``) holds every patch adversarial testing found that made an unfixed
repository score 1 against an earlier grader. Each must score 0 on all 30 bundled instances. The attacks that
steer how pytest is configured or started never act (a gold patch with one still scores 1); the attacks that run
code inside the test process are caught by the canaries and the outcome channel (the run is tampered with, with
the evidence, and scores 0 with or without a fix). No canary may fire on a gold patch.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers.gates import requires_docker, requires_swe
from helpers.swe_attacks import ATTACKS, DETECTED, GIT_METADATA, NEUTRALISED, attack_patch

from agentgym.envs.swe.grader import _SHADOWS


@pytest.fixture(scope="module")
def envs():
    """Two envs (each with a grader sandbox of its own): gradings run two at a time."""
    from agentgym.envs.swe.env import SWEBenchEnv

    pair = [SWEBenchEnv(), SWEBenchEnv()]
    yield pair
    for env in pair:
        env.close()


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
@pytest.mark.parametrize("attack", ATTACKS)
def test_every_attack_scores_zero_on_every_bundled_instance(envs, tasks, attack):
    scores = grade_all(envs, [(task, attack_patch(attack, envs[0].repos[task.id])) for task in tasks])
    assert len(scores) == 30
    assert all(s.details["patch_applied"] != (attack == GIT_METADATA) for s in scores)  # that one is refused
    assert [t.id for t, s in zip(tasks, scores) if s.reward] == []
    if attack in DETECTED:  # caught, with the evidence
        assert all(s.details["tampered"] and s.details["integrity"]["evidence"] for s in scores), [
            (t.id, s.details["integrity"]) for t, s in zip(tasks, scores) if not s.details["tampered"]]


@requires_swe
@pytest.mark.slow
@pytest.mark.parametrize("attack", NEUTRALISED)
def test_a_gold_patch_with_an_attack_the_grader_never_runs_still_scores_one(envs, tasks, attack):
    picked = one_per_project(tasks)
    scores = grade_all(envs, [(t, t.gold["patch"] + attack_patch(attack, envs[0].repos[t.id])) for t in picked])
    assert [(t.id, s.details) for t, s in zip(picked, scores) if s.reward != 1.0 or s.details["tampered"]] == []


@requires_swe
@pytest.mark.slow
@pytest.mark.parametrize("attack", DETECTED)
def test_a_gold_patch_that_also_tampers_with_the_test_process_scores_zero(envs, tasks, attack):
    """The fix is there, but so is code that rewrites what pytest reports: nothing the run says can be believed."""
    picked = [t for t in one_per_project(tasks) if "__init__.py" not in t.gold["patch"]]
    scores = grade_all(envs, [(t, t.gold["patch"] + attack_patch(attack, envs[0].repos[t.id])) for t in picked])
    assert len(picked) >= 5
    assert all(s.reward == 0.0 and s.details["tampered"] for s in scores), [s.details for s in scores]


@requires_swe
@pytest.mark.slow
def test_no_canary_fires_on_a_gold_patch_and_the_empty_patch_is_not_tampering(envs, tasks):
    """Every bundled instance, three gradings of its gold patch (fresh canaries each time) and one of no patch."""
    jobs = [(t, t.gold["patch"]) for t in tasks for _ in range(3)] + [(t, "") for t in tasks]
    scores = grade_all(envs, jobs)
    gold, empty = scores[:90], scores[90:]
    assert [(t.id, s.details) for (t, _), s in zip(jobs, gold) if s.reward != 1.0 or s.details["tampered"]] == []
    assert all(s.details["integrity"]["canaries"] >= 3 for s in gold)
    assert [(t.id, s.details) for t, s in zip(tasks, empty) if s.reward or s.details["tampered"]] == []


@requires_swe
@requires_docker
@pytest.mark.docker
@pytest.mark.slow
def test_the_docker_backend_grades_with_the_same_protections():
    from agentgym.envs.swe.env import SWEBenchEnv

    env = SWEBenchEnv(backend="docker")
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
