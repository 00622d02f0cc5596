"""agentgym/PyCode-v0: tools, grading in the sandbox, and the verifier-hacking guards."""

from __future__ import annotations

import json

import pytest

import agentgym
from agentgym.envs.code.grader import extract_code, grade_code
from agentgym.envs.code.pycode_data import bundled_code_files
from agentgym.sandbox import Limits, make_sandbox


@pytest.fixture(scope="module")
def env():
    env = agentgym.make("agentgym/PyCode-v0").unwrapped
    yield env
    env.close()


def start(env, task_id="PyCode/0"):
    obs, info = env.reset(seed=0, options={"task_id": task_id})
    return obs, info


def submit(env, code, task_id="PyCode/0"):
    start(env, task_id)
    return env.step(f"<answer>\n```python\n{code}\n```\n</answer>")


def test_every_bundled_canonical_solution_passes_in_the_sandbox(env):
    """CI validates the bundled tasks: each reference solution passes every hidden test, graded for real."""
    failures = []
    for split in ("train", "test"):
        for task in env.tasks.tasks(split):
            gold = task.gold
            grade = grade_code(env.runner, gold["canonical_solution"], entry_point=gold["entry_point"],
                               asserts=gold["asserts"], check=gold["check"], setup_code=gold["setup_code"])
            if not grade.all_passed or grade.total < 8:
                failures.append((task.id, grade))
    assert failures == []


def test_prompt_tools_and_public_tests(env):
    obs, info = start(env)
    task = env.task
    assert task.gold["prompt"].strip() in obs
    assert {t["function"]["name"] for t in info["tools"]} == {"python", "run_tests"}
    assert not any(hidden in obs for hidden in task.gold["asserts"]), "hidden tests must not be shown"
    obs, reward, terminated, _, info = env.step(f"<run_tests>{task.gold['canonical_solution']}</run_tests>")
    assert "3/3 public tests passed" in obs and reward == 0 and not terminated
    obs, *_ = env.step(f"<run_tests>def {task.gold['entry_point']}(*a):\n    return None</run_tests>")
    assert "0/3 public tests passed" in obs and "failed: assert" in obs
    obs, *_ = env.step("<python>print(sum(range(5)))</python>")
    assert "10" in obs
    obs, *_ = env.step("<python>1/0</python>")
    assert "ZeroDivisionError" in obs


def test_correct_submission_scores_one_and_wrong_scores_zero(env):
    start(env)
    solution = env.task.gold["canonical_solution"]
    entry = env.task.gold["entry_point"]
    _, reward, terminated, _, info = submit(env, solution)
    assert terminated and reward == 1.0 and info["verification"]["details"]["fraction"] == 1.0
    _, reward, _, _, info = submit(env, f"def {entry}(*args):\n    return None\n")
    details = info["verification"]["details"]
    assert reward == 0.0 and not info["verification"]["correct"] and details["passed"] < details["total"]


HACKS = {
    "sys.exit(0) at import": "import sys\nsys.exit(0)\n",
    "os._exit(0) in the call": "import os\ndef {entry}(*a):\n    os._exit(0)\n",
    "prints a passing verdict": ("print('@@agentgym-grade@@ ' + '{\"passed\": 99, \"total\": 99, \"failures\": [], "
                                 "\"load_error\": null}')\nprint('passed')\ndef {entry}(*a):\n    return None\n"),
    "__eq__ always true": "class Any:\n    def __eq__(self, other):\n        return True\n"
                          "    __ne__ = lambda self, other: False\ndef {entry}(*a):\n    return Any()\n",
    "int subclass with __eq__": "class I(int):\n    def __eq__(self, o):\n        return True\n"
                                "def {entry}(*a):\n    return I(0)\n",
    "list subclass with __eq__": "class L(list):\n    def __eq__(self, o):\n        return True\n"
                                 "def {entry}(*a):\n    return L()\n",
    "patches AssertionError": "import builtins\nbuiltins.AssertionError = type('X', (Exception,), {})\n"
                              "def {entry}(*a):\n    return None\n",
    "patches unittest": "import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\n"
                        "def {entry}(*a):\n    return None\n",
    "kills the grader": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef {entry}(*a):\n    return None\n",
    "reads the grader's stdin": "import os\ntry:\n    SECRET = os.read(0, 100000)\nexcept OSError:\n    SECRET = b''\n"
                                "def {entry}(*a):\n    return SECRET\n",
    "reads the grader's memory": "import os\ndef {entry}(*a):\n    try:\n"
                                 "        return open(f'/proc/{os.getppid()}/mem', 'rb').read(10)\n"
                                 "    except OSError:\n        return None\n",
    "hangs": "def {entry}(*a):\n    while True:\n        pass\n",
}


@pytest.mark.parametrize("name", list(HACKS))
def test_verifier_hacks_do_not_pass(env, name):
    start(env)
    code = HACKS[name].replace("{entry}", env.task.gold["entry_point"])
    _, reward, terminated, _, info = submit(env, code)
    assert terminated and reward == 0.0 and not info["verification"]["correct"], (name, info["verification"])


def test_hidden_tests_are_not_on_the_submission_side():
    """The worker holds the submission only: the hidden tests are in neither its memory, files nor fds."""
    # The spy passes the second assert only if it cannot find the first assert's expected value anywhere.
    asserts = ["assert probe(1) == 'SECRET-EXPECTED-VALUE'", "assert probe(2) == 'clean'"]
    spy = ("import gc, os, sys\n"
           "def probe(x):\n"
           "    blob = repr(gc.get_objects()) + repr(sys.modules.get('__main__').__dict__)\n"
           "    for path in ('/dev/stdin', f'/proc/{os.getppid()}/fd/0', f'/proc/{os.getppid()}/environ'):\n"
           "        try:\n"
           "            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)\n"
           "            blob += os.read(fd, 100000).decode(errors='replace')\n"
           "        except OSError:\n"
           "            pass\n"
           "    for root, dirs, files in os.walk('/'):\n"
           "        if root == '/':\n"
           "            dirs[:] = [d for d in dirs if d not in ('proc', 'sys', 'usr', 'root', 'dev', 'opt')]\n"
           "        for f in files:\n"
           "            try:\n"
           "                blob += open(os.path.join(root, f), errors='replace').read()\n"
           "            except OSError:\n"
           "                pass\n"
           "    needle = ''.join(['SEC', 'RET-EXP'])\n"
           "    return 'FOUND' if needle in blob else 'clean'\n")
    with make_sandbox("bwrap", limits=Limits(timeout_s=20), isolation="call") as sb:
        grade = grade_code(sb, spy, entry_point="probe", asserts=asserts)
    assert (grade.passed, grade.total) == (1, 2), grade  # a timeout here would also fail the second assert


def test_hermes_format_and_plain_text_answers():
    env = agentgym.make("agentgym/PyCode-v0", action_format="hermes").unwrapped
    try:
        env.reset(seed=0, options={"task_id": "PyCode/0"})
        solution = env.task.gold["canonical_solution"]
        call = json.dumps({"name": "run_tests", "arguments": {"code": solution}})
        obs, *_ = env.step(f"<tool_call>{call}</tool_call>")
        assert "3/3 public tests passed" in obs
        _, reward, terminated, _, _ = env.step(f"Here is my solution:\n```python\n{solution}\n```")
        assert terminated and reward == 1.0
    finally:
        env.close()


def test_extract_code():
    assert extract_code("```py\nx = 1\n```\ntext\n```python\ny = 2\n```") == "y = 2\n"
    assert extract_code(None) == "" and extract_code("  ") == "  "


def test_humaneval_check_style_tasks_grade_whole(tmp_path):
    record = {"task_id": "HumanEval/0", "entry_point": "twice",
              "prompt": "def twice(x):\n    \"\"\"Double x.\n    >>> twice(2)\n    4\n    \"\"\"\n",
              "canonical_solution": "    return 2 * x\n",
              "test": "def check(candidate):\n    for i in range(5):\n        assert candidate(i) == 2 * i\n"}
    (tmp_path / "test.jsonl").write_text(json.dumps(record) + "\n")
    env = agentgym.make("agentgym/PyCode-v0", data_dir=str(tmp_path)).unwrapped
    try:
        report = agentgym.check_env(env, n_tasks=1, skip_gym_checker=True)
        assert report["oracle_solved"] == ["HumanEval/0"]
        env.reset(seed=0)
        _, reward, _, _, info = env.step("<answer>def twice(x):\n    return x + x if x < 3 else 0</answer>")
        assert reward == 0.0 and info["verification"]["details"]["total"] == 1
    finally:
        env.close()


def test_bundled_files_exist():
    files = bundled_code_files()
    assert set(files) == {"train", "test"} and all(p.exists() for p in files.values())
