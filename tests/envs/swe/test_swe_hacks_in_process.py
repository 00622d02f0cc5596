"""SWEBench-v0's in-process grading path (``grading="in-process"``, and upstream instances in their images)
keeps the canaries and the outcome channel: the attacks on the test process are caught there, and what it cannot
prevent is listed in docs/envs/swe.md. The isolated path is tested in ``test_swe_hacks.py``."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers.gates import requires_docker, requires_swe
from helpers.swe_attacks import ATTACKS, DETECTED, GIT_METADATA, NEUTRALISED, attack_patch
from helpers.swe_grading import any_patch, env_pair, grade_all, one_per_project

from agentgym.envs.swe.grader import _SHADOWS

# what the in-process path catches of the post-canary round (the rest is in docs/envs/swe.md's list of limits)
CAUGHT_IN_PROCESS = ("a path with a newline forges the canary manifest", "a forged timeout marker and verdict")


@pytest.fixture(scope="module")
def in_process():
    """Two envs grading every instance in-process (SWE-bench's log grading, hardened), two at a time."""
    yield from env_pair(grading="in-process")


@pytest.fixture(scope="module")
def tasks(in_process):
    return list(in_process[0].tasks.tasks("test"))


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
