"""``agentgym.ToolEnv`` / ``SingleTurnEnv``: an env from rows, plain functions and a verifier, and the clear
errors a user gets at make time for a tool without hints, a missing column or a verifier of the wrong shape."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from helpers.gates import requires_code

import agentgym
from agentgym.envs.functions import function_tool, tool
from agentgym.errors import ConfigError
from agentgym.verifiers.score import Score

TASKS = [{"question": "What is the capital of Peru?", "answer": "Lima"},
         {"question": "What is the capital of Kenya?", "answer": "Nairobi"}]


def capital_of(country: str) -> str:
    """Look up the capital city of a country.

    Args:
        country: The country's English name.
    """
    return {"Peru": "Lima", "Kenya": "Nairobi"}.get(country, "unknown country")


def test_the_issues_example_works_as_written_and_passes_the_checker():
    agentgym.register("byo/CapitalsTest-v0", agentgym.ToolEnv, tasks=TASKS, tools=[capital_of], verifier="qa")
    env = agentgym.make("byo/CapitalsTest-v0")
    agentgym.check_env(env)
    obs, info = env.reset(options={"index": 0})
    assert obs.startswith("What is the capital of Peru?") and "<capital_of>" in obs
    assert info["tools"][0]["function"]["parameters"]["properties"]["country"]["description"] == \
        "The country's English name."
    obs, *_ = env.step("<capital_of>Peru</capital_of>")
    assert "Lima" in obs
    _, reward, terminated, _, info = env.step("<answer>Lima</answer>")
    assert reward == 1.0 and terminated and info["verification"]["correct"]


@pytest.mark.parametrize("action_format", ["tags", "hermes", "json"])
def test_every_action_format_plays_the_tool_and_the_answer(action_format):
    env = agentgym.ToolEnv(tasks=TASKS, tools=[capital_of], action_format=action_format)
    env.reset(options={"index": 1})
    obs, reward, *_ = env.step({"name": "capital_of", "arguments": {"country": "Kenya"}})
    assert "Nairobi" in obs and reward == 0.0
    obs, reward, terminated, _, _ = env.step(env.oracle_action())
    assert reward == 1.0 and terminated


def test_a_malformed_call_and_a_bad_argument_are_observations():
    env = agentgym.ToolEnv(tasks=TASKS, tools=[capital_of])
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step({"name": "capital_of", "arguments": {"land": "Peru"}})
    assert info["action_error"] and not terminated and reward == 0.0
    obs, *_, info = env.step("<nope>x</nope>")
    assert info["action_error"]


def test_columns_splits_templates_seeding_and_truncation():
    rows = [{"q": f"Q{i}", "a": str(i), "qid": f"t{i}", "part": "train" if i < 3 else "test"} for i in range(5)]
    env = agentgym.ToolEnv(tasks=rows, columns={"question": "q", "answer": "a", "id": "qid", "split": "part"},
                           prompt_template="Question {qid}: {q}", max_turns=2, max_observation_chars=5,
                           tools=[lambda_free_tool], split="train")
    assert env.tasks.splits() == ["test", "train"] and len(env.tasks.tasks("train")) == 3
    first = env.reset(seed=7)
    again = env.reset(seed=7)
    assert first == again and first[0].startswith("Question t")
    obs, *_ = env.step("<long_text>x</long_text>")
    assert "[... truncated to 5 characters]" in obs
    *_, truncated, info = env.step("still thinking")
    assert truncated and info["verification"]["reward"] == 0.0


def lambda_free_tool(text: str) -> str:
    """Return a long text."""
    return text * 100


lambda_free_tool.__name__ = "long_text"


def test_tasks_from_a_jsonl_file_a_split_dict_and_a_hugging_face_dataset(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in TASKS))
    assert len(agentgym.ToolEnv(tasks=path).tasks.tasks("test")) == 2
    env = agentgym.ToolEnv(tasks={"train": TASKS[:1], "test": TASKS[1:]})
    assert env.tasks.splits() == ["test", "train"]
    datasets = pytest.importorskip("datasets")
    env = agentgym.ToolEnv(tasks=datasets.Dataset.from_list(TASKS))
    env.reset(seed=0)
    assert env.step(env.oracle_action())[1] == 1.0


def test_a_user_verifier_gets_the_answer_and_the_row_and_may_return_float_bool_or_score():
    seen = []

    def starts_with_gold(answer, task):
        seen.append((answer, task["answer"]))
        return answer is not None and answer.startswith(task["answer"])

    env = agentgym.ToolEnv(tasks=TASKS, verifier=starts_with_gold)
    env.reset(options={"index": 0})
    assert env.step("<answer>Lima, Peru</answer>")[1] == 1.0 and seen == [("Lima, Peru", "Lima")]
    for value, reward in ((0.25, 0.25), (Score(0.5, False, {"why": "half"}), 0.5)):
        env = agentgym.ToolEnv(tasks=TASKS, verifier=lambda answer, task, v=value: v)
        env.reset(seed=0)
        assert env.step("<answer>x</answer>")[1] == reward


def test_the_oracle_can_be_a_column_or_a_function():
    rows = [{"question": "2+2?", "answer": "4", "worked": "four"}]
    env = agentgym.ToolEnv(tasks=rows, oracle="worked", verifier=lambda a, t: a in ("4", "four"))
    env.reset(seed=0)
    assert env.step(env.oracle_action())[1] == 1.0
    calls = []

    def oracle(task, turn):
        calls.append(turn)
        return {"name": "capital_of", "arguments": {"country": "Peru"}} if turn == 0 else {"answer": "Lima"}

    env = agentgym.ToolEnv(tasks=TASKS[:1], tools=[capital_of], oracle=oracle)
    agentgym.check_env(env)
    assert 0 in calls and 1 in calls


def test_single_turn_env_has_no_tools_and_one_answer():
    env = agentgym.SingleTurnEnv(tasks=TASKS, verifier="qa")
    agentgym.check_env(env)
    obs, info = env.reset(seed=0)
    assert info["tools"] == [] and env.max_turns == 2
    assert env.step("<answer>Lima</answer>")[2]  # the answer ends it


def test_function_tools_get_schemas_from_hints_and_docstrings():
    def lookup(city: str, country: str | None = None, mode: Literal["fast", "full"] = "fast",
               tags: list[str] | None = None, limit: int = 3) -> dict:
        """Find a city.

        Args:
            city: The city's name.
            mode: How hard to look.
        """
        return {"city": city}

    schema = function_tool(lookup).schema()["function"]
    assert schema["description"] == "Find a city."
    props = schema["parameters"]["properties"]
    assert props["city"] == {"type": "string", "description": "The city's name."}
    assert props["mode"]["enum"] == ["fast", "full"] and props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert schema["parameters"]["required"] == ["city"] and schema["parameters"]["additionalProperties"] is False
    assert function_tool(lookup).fn(city="Lima") == '{"city": "Lima"}'


@pytest.mark.parametrize("make, message", [
    (lambda: agentgym.ToolEnv(tasks=TASKS, tools=[_no_hints]), "argument 'x' has no type hint"),
    (lambda: agentgym.ToolEnv(tasks=TASKS, tools=[lambda x: x]), "has no name a model can call"),
    (lambda: agentgym.ToolEnv(tasks=[{"q": "x"}]), "has no 'question' column"),
    (lambda: agentgym.ToolEnv(tasks=TASKS, columns={"query": "q"}), "unknown key(s) ['query']"),
    (lambda: agentgym.ToolEnv(tasks=TASKS, verifier=lambda answer: 1.0), "must take (answer, task)"),
    (lambda: agentgym.ToolEnv(tasks=TASKS, verifier="exact"), "unknown built-in 'exact'"),
    (lambda: agentgym.ToolEnv(tasks=TASKS, prompt_template="{query}"), "prompt_template names 'query'"),
    (lambda: agentgym.ToolEnv(tasks=TASKS, tools=[capital_of, capital_of]), "two tools are named 'capital_of'"),
    (lambda: agentgym.ToolEnv(tasks=TASKS, tools=[_takes_a_set]), "which JSON cannot carry"),
])
def test_bad_config_is_one_config_error_at_make_time_naming_the_field(make, message):
    with pytest.raises(ConfigError) as caught:
        make()
    assert message in str(caught.value)


def _no_hints(x):
    return x


def _takes_a_set(values: set) -> str:
    return ""


def test_a_verifier_returning_something_else_is_a_clear_error():
    env = agentgym.ToolEnv(tasks=TASKS, verifier=lambda answer, task: "yes")
    env.reset(seed=0)
    with pytest.raises(ConfigError, match="return a float, a bool or an agentgym.Score"):
        env.step("<answer>x</answer>")


@requires_code
def test_a_tool_marked_sandbox_runs_in_the_sandbox_not_in_process():
    @tool(sandbox=True, timeout_s=5)
    def where(path: str) -> str:
        """Whether a host path is visible."""
        import os

        return f"{os.getpid()} {os.path.exists(path)}"

    import os

    output = function_tool(where).fn(path=os.path.abspath(__file__))
    pid, seen = output.split()
    assert int(pid) != os.getpid() and seen == "False"  # another process, which cannot see the host's files


def test_check_env_checks_the_oracle_on_every_task_by_default():
    """check_env checked the oracle on 3 tasks while the scaffold's tests checked 100: an oracle wrong on the 4th
    task passed. By default it now checks every task of the split, up to 100."""
    tasks = [{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(6)]
    broken = agentgym.ToolEnv(tasks=tasks, verifier="qa",
                              oracle=lambda task, turn: {"answer": "wrong" if task["question"].startswith("What is 4")
                                                         else task["answer"]})
    with pytest.raises(agentgym.errors.EnvCheckFailed):
        agentgym.check_env(broken)
    assert len(agentgym.check_env(agentgym.ToolEnv(tasks=tasks, verifier="qa"))["oracle_solved"]) == 6
