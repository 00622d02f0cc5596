"""agentgym/SWEBench-v0 on a tiny instance: tools, the diff as prediction, swebench grading, oracle and empty patch."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys

import gymnasium as gym
import pytest
from helpers.gates import requires_swe
from helpers.tiny_instance import FIXED_OPS, write_instance

import agentgym
from agentgym.envs.swe.env import SWEBenchEnv
from agentgym.envs.swe.grader import Patch
from agentgym.errors import ConfigError, DependencyNotInstalled


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("swe")
    write_instance(directory)
    return directory


@pytest.fixture(scope="module")
def env(data_dir):
    env = SWEBenchEnv(data_dir=data_dir)
    yield env
    env.close()


def call(name, **arguments):
    return json.dumps({"name": name, "arguments": arguments})


def tool(env, name, **arguments):
    obs, reward, terminated, _truncated, info = env.step(f"<tool_call>{call(name, **arguments)}</tool_call>")
    return obs, reward, terminated, info


@requires_swe
def test_oracle_resolves_and_lists_each_test(env):
    obs, info = env.reset(seed=0)
    assert "mean()" in obs and "/work/repo" in obs and {t["function"]["name"] for t in info["tools"]} == {
        "bash", "view", "edit", "create", "search", "submit"}
    done = False
    while not done:
        _, reward, terminated, truncated, info = env.step(env.oracle_action())
        done = terminated or truncated
    assert terminated and reward == 1.0
    details = info["verification"]["details"]
    assert details["fail_to_pass"]["success"] == ["tests/test_ops.py::test_mean", "tests/test_ops.py::test_mean_empty"]
    assert details["pass_to_pass"]["success"] == ["tests/test_ops.py::test_add"]
    assert "calc/ops.py" in details["model_patch"]


@requires_swe
def test_empty_patch_is_not_resolved(env):
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(f"<tool_call>{call('submit')}</tool_call>")
    assert terminated and reward == 0.0
    assert info["verification"]["details"]["fail_to_pass"]["failure"] == [
        "tests/test_ops.py::test_mean", "tests/test_ops.py::test_mean_empty"]


@requires_swe
def test_tools_edit_view_search_create_bash_and_a_half_fix(env):
    env.reset(seed=0)
    obs, *_ = tool(env, "view", path="calc/ops.py", start=5, end=7)
    assert "     5\tdef mean(values):" in obs and "add" not in obs
    obs, *_ = tool(env, "search", pattern=r"len\(values\)")
    assert "<tool_response>\ncalc/ops.py:7:     return sum(values) / (len(values) - 1)" in obs
    obs, *_ = tool(env, "edit", path="calc/ops.py", old="no such text", new="x")
    assert "was not found" in obs
    obs, *_ = tool(env, "edit", path="calc/ops.py", old="values", new="v")
    assert "appears 4 times" in obs
    obs, *_ = tool(env, "edit", path="calc/ops.py", old="(len(values) - 1)", new="len(values)")
    assert "Edited calc/ops.py" in obs
    obs, *_ = tool(env, "create", path="calc/ops.py", content="x")
    assert "already exists" in obs
    obs, *_ = tool(env, "view", path="../../etc/passwd")
    assert "outside the repository" in obs
    obs, *_ = tool(env, "bash", command="python -m pytest -q tests 2>&1 | tail -1; exit 3")
    assert "1 passed" in obs and "[exit code 3]" in obs
    obs, *_ = tool(env, "bash", command="sleep 5", timeout_s=1)
    assert "timed out" in obs
    # half a fix: mean is right, the empty case still raises ZeroDivisionError
    _, reward, terminated, info = tool(env, "submit")
    assert terminated and reward == 0.0
    details = info["verification"]["details"]
    assert details["fail_to_pass"] == {"success": ["tests/test_ops.py::test_mean"],
                                       "failure": ["tests/test_ops.py::test_mean_empty"]}


@requires_swe
def test_running_out_of_turns_auto_submits_the_diff(data_dir):
    env = SWEBenchEnv(data_dir=data_dir, max_turns=1)
    try:
        env.reset(seed=0)
        _, reward, terminated, truncated, _info = env.step(
            f"<tool_call>{call('bash', command=f'cat > calc/ops.py <<EOF{chr(10)}{FIXED_OPS}EOF')}</tool_call>")
        assert truncated and not terminated and reward == 1.0
    finally:
        env.close()


@requires_swe
def test_a_patch_in_the_answer_text_is_not_the_prediction(env):
    env.reset(seed=0)
    gold = env.task.gold["patch"]
    _, reward, terminated, _, info = env.step(f"<answer>{gold}</answer>")
    assert terminated and reward == 0.0 and info["verification"]["details"]["model_patch"] == ""


@requires_swe
def test_malformed_calls_are_observations(env):
    env.reset(seed=0)
    _obs, reward, terminated, _, info = env.step('<tool_call>{"name": "edit", "arguments": {"path": 1}}</tool_call>')
    assert info["action_error"] and not terminated and reward == 0.0


@requires_swe
def test_check_env(data_dir):
    env = SWEBenchEnv(data_dir=data_dir)
    try:
        assert agentgym.check_env(env, n_tasks=1)["oracle_solved"]
    finally:
        env.close()


@pytest.mark.parametrize("missing, backend", [("swebench", "bwrap"), ("docker", "docker")])
def test_a_missing_extra_fails_at_make_not_at_submit(monkeypatch, missing, backend):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == missing else find_spec(name, *a))
    with pytest.raises(DependencyNotInstalled, match=r"Install it with: pip install 'agentgym-suite\[swe\]'"):
        gym.make("agentgym/SWEBench-v0", backend=backend)


@requires_swe
def test_verify_leaves_the_episodes_working_copy_as_it_was(env):
    """Grading runs on a checkout of the grader's own: after the episode the agent's files, its diff and its sandbox
    are what they were, and the hidden tests were never written into the agent's repository."""
    env.reset(seed=0)
    sandbox = env.workspace.sandbox
    tool(env, "edit", path="calc/ops.py", old="(len(values) - 1)", new="len(values)")
    before = env.workspace.diff()
    _, reward, terminated, info = tool(env, "submit")
    assert terminated and reward == 0.0 and info["verification"]["details"]["model_patch"] == before
    assert env.workspace.sandbox is sandbox and env.workspace.diff() == before
    assert env.episode_outcome() == Patch(before) and info["answer"] == before
    _, files = env.workspace.shell("cat calc/ops.py; cat tests/test_ops.py")
    assert "return sum(values) / len(values)" in files and "test_mean" not in files
    # and graded again, the same patch gets the same verdict
    assert env.verify(Patch(before), env.task).as_dict() == info["verification"]


@requires_swe
def test_data_is_the_old_name_of_data_dir(data_dir):
    with pytest.warns(DeprecationWarning, match="data= is now data_dir="):
        old = SWEBenchEnv(data=data_dir)
    new = SWEBenchEnv(data_dir=data_dir)
    try:
        assert old.tasks is new.tasks and [t.id for t in old.tasks.tasks("test")] == ["calc__calc-1"]
        with pytest.warns(DeprecationWarning, match="data= is now data_dir="):
            made = gym.make("agentgym/SWEBench-v0", data=str(data_dir)).unwrapped
        assert made.tasks is new.tasks
        made.close()
        with pytest.raises(ConfigError, match="Pass data_dir only"):
            SWEBenchEnv(data=data_dir, data_dir=data_dir)
    finally:
        old.close()
        new.close()


def test_the_grading_module_moved_to_grader_with_a_warning():
    sys.modules.pop("agentgym.envs.swe.grading", None)
    with pytest.warns(DeprecationWarning, match="agentgym.envs.swe.grading moved to agentgym.envs.swe.grader"):
        old = importlib.import_module("agentgym.envs.swe.grading")
    grader = importlib.import_module("agentgym.envs.swe.grader")
    assert all(getattr(old, name) is getattr(grader, name) for name in old.__all__)


@requires_swe
def test_a_second_grading_of_an_instance_reuses_what_it_read_from_git_and_still_checks_the_patch(monkeypatch):
    """What a grading reads from the pristine checkout (the patched test files, the base commit's pytest
    configuration, the .git listing) is read once per instance: a GRPO group grades one task many times. A patch
    that writes into .git is still refused with a warm cache, and a gold patch after it still scores 1."""
    from helpers.swe_attacks import GIT_METADATA, attack_patch

    from agentgym.envs.swe.workspace import Workspace

    calls = []
    original = Workspace.shell_run
    monkeypatch.setattr(Workspace, "shell_run", lambda self, command, **kw: calls.append(command[:40])
                        or original(self, command, **kw))
    env = SWEBenchEnv()
    try:
        task = next(iter(env.tasks.tasks("test")))
        counts = []
        for patch in (task.gold["patch"], task.gold["patch"]):
            calls.clear()
            score = env.grade(task, patch)
            assert score.reward == 1.0 and not score.details["tampered"]
            counts.append(len(calls))
        assert counts[1] == counts[0] - 3, counts  # test sources, pytest configuration, .git listing: not again
        refused = env.grade(task, attack_patch(GIT_METADATA, env.repos[task.id]))
        assert refused.reward == 0.0 and not refused.details["patch_applied"] and refused.details["tampered"]
        assert env.grade(task, task.gold["patch"]).reward == 1.0
    finally:
        env.close()
