"""SWEBench-v0 grading cannot be forged by the code under test (docs/envs/swe.md, "Grading you can trust"): the
isolated path, which grades the bundled instances.

The corpus (``helpers/swe_attacks.py``) holds every patch adversarial testing found that made an unfixed
repository score 1 against an earlier grader: the rounds against the in-process grader (``ATTACKS``) and the rounds
after its canaries (``ISOLATED_ATTACKS``). The bundled instances are graded on the isolated path: their tests run
in a trusted harness and the patched repository in a worker, so every attack scores 0 on all 30 instances, and
one that only acts on pytest (which the worker does not run) leaves a gold patch's 1 as it is. The in-process path
is tested in ``test_swe_hacks_in_process.py`` (a file of its own, so the two run on two test workers).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers.gates import requires_swe
from helpers.swe_attacks import ATTACKS, GIT_METADATA, ISOLATED_ATTACKS, isolated_attack_patch
from helpers.swe_grading import any_patch, env_pair, grade_all, one_per_project

# the post-canary attacks that change what the repository computes (the others act on pytest only)
ACTIVE = {"AlwaysEqual results": "caught", "a forged timeout marker and verdict": "exits",
          "results as handles": "never asked"}


@pytest.fixture(scope="module")
def envs():
    """Two envs (each with a grader sandbox of its own): gradings run two at a time."""
    yield from env_pair()


@pytest.fixture(scope="module")
def tasks(envs):
    return list(envs[0].tasks.tasks("test"))


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
    found = [(task.id, t) for task, _, text in runs for t in task.gold["FAIL_TO_PASS"] if t.split("::")[-1] in text]
    assert found == []


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
