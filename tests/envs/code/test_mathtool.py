"""agentgym/MathTool-v0: the ReTool protocol, the sandboxed interpreter, formats, data sources."""

from __future__ import annotations

import json

import pytest
from helpers.gates import requires_swe

import agentgym
from agentgym.core.checker import check_env
from agentgym.errors import ConfigError


@pytest.fixture(scope="module")
def env():
    env = agentgym.make("agentgym/MathTool-v0").unwrapped
    yield env
    env.close()


def test_oracle_solves_a_sample_of_both_schemas_through_the_sandbox(env):
    for split in ("train", "test"):
        tasks = env.tasks.tasks(split)
        sources = {t.meta["source"] for t in tasks}
        assert sources == {"gsm8k", "math"}
        sample = tasks[:: max(1, len(tasks) // 40)]
        for task in sample:
            obs, _ = env.reset(seed=0, options={"task_id": task.id})
            _, _, _, _, info = env.step(env.oracle_action())
            assert info["tool_outputs"], task.id
            output = info["tool_outputs"][0].strip()
            _, reward, terminated, _, info = env.step(f"<answer>\\boxed{{{output}}}</answer>")
            # the reference program's printed value is itself accepted as the answer
            assert terminated and reward == 1.0, (task.id, output, task.gold["answer"], info["verification"])


def test_interpreter_protocol(env):
    obs, info = env.reset(seed=0)
    assert "<code>" in obs and "<answer>" in obs and "Problem:" in obs
    assert [t["function"]["name"] for t in info["tools"]] == ["code"]
    obs, reward, terminated, truncated, info = env.step("<think>compute</think><code>print(2**100)</code>")
    assert "<interpreter>1267650600228229401496703205376\n</interpreter>" in obs
    assert reward == 0 and not terminated and info["tool_calls"][0]["name"] == "code"
    obs, *_ = env.step("<code>\n```python\nimport sympy\nprint(sympy.factorint(2**20 - 1))\n```\n</code>")
    assert "{3: 1, 5: 2, 11: 1, 31: 1, 41: 1}" in obs
    obs, *_ = env.step("<code>x = 1/0</code>")
    assert "ZeroDivisionError: division by zero" in obs and 'File "<code>", line 1' in obs
    obs, *_ = env.step("<code>x = 5</code>")
    assert "without output" in obs


def test_limits_come_back_as_observations():
    env = agentgym.make("agentgym/MathTool-v0", timeout_s=1, memory_mb=128, max_observation_chars=500).unwrapped
    try:
        env.reset(seed=0)
        obs, *_ = env.step("<code>while True: pass</code>")
        assert "Timed out" in obs
        obs, *_ = env.step("<code>x = bytearray(10**9)</code>")
        assert "MemoryError" in obs and "out of memory" in obs
        obs, *_ = env.step("<code>print('y' * 10000)</code>")
        assert "truncated" in obs and len(obs) < 700
        obs, *_ = env.step("<code>import socket; socket.create_connection(('1.1.1.1', 80), timeout=1)</code>")
        assert "OSError" in obs or "unreachable" in obs
    finally:
        env.close()


def test_answers_are_scored_by_math_equivalence(env):
    env.reset(seed=0, options={"task_id": "gsm8k-test-00000"})
    gold = env.task.gold["answer"]
    assert env.step(f"<answer>The answer is \\boxed{{{gold}}}.</answer>")[1] == 1.0
    env.reset(seed=0, options={"task_id": "gsm8k-test-00000"})
    assert env.step(f"<answer>{gold}</answer>")[1] == 1.0
    env.reset(seed=0, options={"task_id": "gsm8k-test-00000"})
    assert env.step(f"<answer>\\boxed{{{int(gold) + 1}}}</answer>")[1] == 0.0
    env.reset(seed=0, options={"task_id": "gsm8k-test-00000"})
    _, reward, _, _, info = env.step(f"<answer>\\boxed{{{int(gold) + 1}}} \\boxed{{{gold}}}</answer>")
    assert reward == 0.0 and "boxed" in info["verification"]["details"]["reason"]


def test_function_calling_format_uses_a_python_tool():
    env = agentgym.make("agentgym/MathTool-v0", action_format="hermes").unwrapped
    try:
        obs, info = env.reset(seed=0)
        assert [t["function"]["name"] for t in info["tools"]] == ["python"]
        call = json.dumps({"name": "python", "arguments": {"code": "print(6 * 7)"}})
        obs, *_ = env.step(f"<tool_call>{call}</tool_call>")
        assert obs.startswith("<tool_response>") and "42" in obs
        obs, *_ = env.step({"name": "python", "arguments": {"code": "print(7 * 7)"}})
        assert "49" in obs
        env.reset(seed=1)
        obs, *_ = env.step(env.oracle_action())
        assert obs.startswith("<tool_response>")
        _, reward, terminated, _, _ = env.step(env.oracle_action())
        assert terminated and reward == 1.0
    finally:
        env.close()


@requires_swe  # the Docker SDK
def test_a_broken_sandbox_is_an_observation_not_a_crash(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    env = agentgym.make("agentgym/MathTool-v0", sandbox="docker").unwrapped
    try:
        env.reset(seed=0)
        obs, reward, terminated, _, info = env.step("<code>print(1)</code>")
        assert "the sandbox failed" in obs and "Docker engine" in obs
        assert not terminated and info["action_error"] is None
    finally:
        env.close()


def test_user_gsm8k_and_math_files(tmp_path):
    (tmp_path / "test.jsonl").write_text(
        json.dumps({"question": "Tom has 3 apples and buys 4 more. How many?", "answer": "3 + 4 = 7\n#### 7"}) + "\n"
        + json.dumps({"problem": "What is $\\frac{1}{2} + \\frac{1}{4}$?",
                      "solution": "It is $\\boxed{\\frac{3}{4}}$."}) + "\n")
    env = agentgym.make("agentgym/MathTool-v0", data_dir=str(tmp_path)).unwrapped
    try:
        assert [t.gold["answer"] for t in env.tasks.tasks("test")] == ["7", "\\frac{3}{4}"]
        check_env(env, n_tasks=2, skip_gym_checker=True)
        env.reset(seed=0, options={"index": 1})
        assert env.step("<answer>0.75</answer>")[1] == 1.0
    finally:
        env.close()


def test_reasoning_gym_source():
    env = agentgym.make("agentgym/MathTool-v0", reasoning_gym=["basic_arithmetic", "gcd"],
                        reasoning_gym_size=10).unwrapped
    try:
        report = check_env(env, n_tasks=3, skip_gym_checker=True)
        assert len(report["oracle_solved"]) == 3
    finally:
        env.close()


def test_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="at most one"):
        agentgym.make("agentgym/MathTool-v0", data_dir=str(tmp_path), reasoning_gym=["gcd"])


def test_reasoning_gym_config_and_its_errors():
    env = agentgym.make("agentgym/MathTool-v0", reasoning_gym="chain_sum", reasoning_gym_size=5,
                        reasoning_gym_config={"chain_sum": {"min_terms": 2, "max_terms": 2, "max_digits": 1}},
                        split="train").unwrapped
    try:
        observation, _ = env.reset(seed=0)
        assert observation.rstrip().endswith("=") and len(env.task.prompt.split(":")[-1].split()) == 4  # "4 - 5 ="
    finally:
        env.close()
    with pytest.raises(ConfigError, match="reasoning_gym_config needs reasoning_gym"):
        agentgym.make("agentgym/MathTool-v0", reasoning_gym_config={"chain_sum": {}})


def test_tool_use_recipe_task_needs_the_tool_and_the_tool_solves_it():
    """The task of docs/training/mathtool-tooluse.yaml (issue 22): products of two 4-digit numbers, train and test
    disjoint; one python call and its printed value as the answer earns reward 1, a near miss 0."""
    import re

    env = agentgym.make("agentgym/MathTool-v0", reasoning_gym=["products"], action_format="tags", max_turns=3,
                        reasoning_gym_config={"products": {"min_terms": 2, "max_terms": 2, "min_digits": 4,
                                                           "max_digits": 4}}).unwrapped
    try:
        train, test = env.tasks.tasks("train"), env.tasks.tasks("test")
        assert len(train) == 200 and len(test) >= 190
        assert not {t.prompt for t in train} & {t.prompt for t in test}
        for task in test[:3]:
            env.reset(options={"task_id": task.id})
            a, b = re.search(r"(\d{4}) \* (\d{4})", task.prompt).groups()
            _, _, terminated, _, info = env.step(f"<code>print({a} * {b})</code>")
            assert not terminated and info["tool_outputs"] == [f"{int(a) * int(b)}\n"]
            _, reward, terminated, _, _ = env.step(f"<answer>{int(a) * int(b)}</answer>")
            assert terminated and reward == 1.0
            env.reset(options={"task_id": task.id})
            _, reward, terminated, _, _ = env.step(f"<answer>{int(a) * int(b) + 10}</answer>")
            assert terminated and reward == 0.0
    finally:
        env.close()


def test_levels_keep_the_math_problems_of_those_levels_and_are_part_of_the_env_digest():
    """``levels``: the harder MATH problems as an env kwarg (an eval or a recipe names them; the digest tells
    their episodes apart from the whole set's)."""
    from agentgym.eval.envdigest import env_digest

    whole = agentgym.make("agentgym/MathTool-v0")
    hard = agentgym.make("agentgym/MathTool-v0", levels=[4, 5])
    try:
        levels = {t.meta.get("level") for split in ("train", "test") for t in hard.unwrapped.tasks.tasks(split)}
        assert levels == {"Level 4", "Level 5"}
        assert 0 < len(hard.unwrapped.tasks.tasks("test")) < len(whole.unwrapped.tasks.tasks("test"))
        assert env_digest("agentgym/MathTool-v0", hard, {"levels": [4, 5]}, "test") != env_digest(
            "agentgym/MathTool-v0", whole, {}, "test")
        hard.reset(options={"index": 0})
        assert "Level" in hard.unwrapped.task.meta["level"]
    finally:
        whole.close()
        hard.close()
    for bad in ([0], [], "5"):
        with pytest.raises(ConfigError, match="MATH levels 1 to 5"):
            agentgym.make("agentgym/MathTool-v0", levels=bad)
