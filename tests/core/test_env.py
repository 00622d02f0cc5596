"""The AgentEnv contract on a minimal env defined here (arithmetic with a calculator tool)."""

import dataclasses
import inspect
import typing
from dataclasses import dataclass

import gymnasium as gym
import pytest

from agentgym.core.checker import check_env
from agentgym.core.env import AgentEnv, EnvDefaults, TextSpace
from agentgym.core.formats import HermesFormat, TagsFormat
from agentgym.core.registry import DEFAULT_CLIENT_KWARGS, check_kwargs
from agentgym.core.task import Task, TaskList
from agentgym.core.tools import Tool, ToolCall
from agentgym.errors import ConfigError, EnvCheckFailed, ResetNeeded, ToolError
from agentgym.verifiers.outcome import Outcome
from agentgym.verifiers.score import Score


class AddEnv(AgentEnv):
    """Add two numbers; the ``add`` tool computes a + b; ``fail`` always raises a ToolError."""

    def __init__(self, broken_oracle: bool = False, **kwargs):
        tasks = TaskList([Task(f"t{i}", f"What is {i} + {i * 3}?", {"answer": str(4 * i)}, split="test")
                          for i in range(5)] + [Task("train0", "What is 1 + 1?", {"answer": "2"}, split="train")])
        self.broken_oracle = broken_oracle
        super().__init__(tasks=tasks, **kwargs)

    def make_tools(self):
        add = Tool("add", "Add a and b.", {"type": "object", "properties": {"expr": {"type": "string"}},
                                           "required": ["expr"]},
                   lambda expr: str(sum(int(x) for x in expr.split("+"))))

        def fail(expr):
            raise ToolError("backend down")

        return [add, Tool("fail", "Always fails.", add.parameters, fail)]

    def verify(self, answer, task):
        ok = answer is not None and answer.strip() == task.gold["answer"]
        return Score(float(ok), ok, {"answer": answer})

    def oracle_action(self):
        if self.turn == 0:
            a, b = self.task.prompt.removeprefix("What is ").removesuffix("?").split(" + ")
            return self.action_format.render_call(ToolCall("add", {"expr": f"{a}+{b}"}), self.tools)
        return self.action_format.render_answer("wrong" if self.broken_oracle else self.task.gold["answer"])


def test_reset_returns_prompt_and_info():
    env = AddEnv()
    obs, info = env.reset(seed=1)
    assert obs.startswith("What is") and "<add>" in obs
    assert info["task_id"].startswith("t") and info["turn"] == 0 and info["action_error"] is None
    assert info["tools"][0]["function"]["name"] == "add" and info["format"] == "tags"


def test_step_runs_tool_then_answer_ends_with_verification():
    env = AddEnv()
    env.reset(options={"task_id": "t2"})
    obs, reward, terminated, truncated, info = env.step("<add>2+6</add>")
    assert obs == "\n\n<result>8</result>\n\n" and reward == 0.0 and not terminated and not truncated
    assert info["tool_calls"] == [{"name": "add", "arguments": {"expr": "2+6"}}] and info["turn"] == 1
    obs, reward, terminated, truncated, info = env.step("<answer>8</answer>")
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["verification"] == {"reward": 1.0, "correct": True, "details": {"answer": "8"}}


@pytest.mark.parametrize("fmt, text", [
    ("tags", "<add>2+6</add><answer>8</answer>"),
    ("hermes", '<tool_call>{"name": "add", "arguments": {"expr": "2+6"}}</tool_call> <answer>8</answer>'),
])
def test_an_answer_after_a_tool_call_is_never_dropped_silently(fmt, text):
    """One action a turn: the tool runs, and the observation says the answer written after it was not read
    (a user's SQL agent wrote <run_sql>...</run_sql><answer>...</answer> and lost its answer without a word)."""
    env = AddEnv(action_format=fmt)
    env.reset(options={"task_id": "t2"})
    obs, reward, terminated, _, info = env.step(text)
    assert not terminated and reward == 0.0
    assert [(c["name"], c["arguments"]) for c in info["tool_calls"]] == [("add", {"expr": "2+6"})]
    assert "8" in obs and "<answer>" in obs and "not read" in obs and "turn of its own" in obs
    obs, reward, terminated, _, _ = env.step(env.action_format.render_answer("8"))
    assert terminated and reward == 1.0
    env.reset(options={"task_id": "t2"})
    obs, *_ = env.step(env.action_format.render_call(ToolCall("add", {"expr": "2+6"}), env.tools))
    assert "not read" not in obs  # one action: nothing to say


def test_malformed_action_is_observation_and_counts_a_turn():
    env = AddEnv(max_turns=2)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("I think it is 4")
    assert "No valid action" in obs and info["action_error"] == obs and info["turn"] == 1
    obs, reward, terminated, truncated, info = env.step({"name": "nope", "arguments": {}})
    assert "Unknown tool 'nope'" in info["action_error"]
    assert truncated and not terminated and reward == 0.0 and info["verification"]["correct"] is False
    with pytest.raises(ResetNeeded):
        env.step("<answer>4</answer>")


@pytest.mark.parametrize("action", [5, 3.5, None, True, b"<answer>4</answer>", {1, 2}, object()])
def test_an_action_of_another_type_is_an_observation(action):
    env = AddEnv()
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs.startswith("Unsupported action: send text") and info["action_error"] == obs
    assert info["turn"] == 1 and reward == 0.0 and not terminated and not truncated


def test_a_tuple_action_is_the_list_json_makes_of_it():
    as_tuple, as_list = AddEnv(), AddEnv()
    call = {"name": "add", "arguments": {"expr": "1+2"}}
    as_tuple.reset(seed=0)
    as_list.reset(seed=0)
    assert as_tuple.step((call,)) == as_list.step([call])


def test_tool_error_becomes_observation():
    env = AddEnv()
    env.reset(seed=0)
    obs, *_ , info = env.step("<fail>1</fail>")
    assert "Tool 'fail' failed: backend down" in obs and info["action_error"] is None


def test_long_tool_output_is_truncated():
    env = AddEnv(max_observation_chars=3)
    env.reset(seed=0)
    obs, *_ = env.step("<add>500000+500000</add>")
    assert "1000" not in obs and "truncated to 3 characters" in obs


def test_step_before_reset_raises():
    with pytest.raises(ResetNeeded):
        AddEnv().step("<answer>1</answer>")


def test_reset_options():
    env = AddEnv()
    assert env.reset(options={"split": "train", "index": 0})[1]["task_id"] == "train0"
    assert env.reset(options={"index": 3})[1]["task_id"] == "t3"
    with pytest.raises(ConfigError, match="index must be an int"):
        env.reset(options={"index": 99})
    with pytest.raises(ConfigError, match="Unknown reset option"):
        env.reset(options={"task": "t1"})
    with pytest.raises(ConfigError, match="Unknown task_id"):
        env.reset(options={"task_id": "zzz"})


def test_seeded_reset_is_deterministic_and_seeds_differ():
    env = AddEnv()
    ids = [env.reset(seed=s)[1]["task_id"] for s in range(20)]
    assert ids == [env.reset(seed=s)[1]["task_id"] for s in range(20)]
    assert len(set(ids)) > 1


def test_config_errors():
    with pytest.raises(ConfigError, match="max_turns"):
        AddEnv(max_turns=0)
    with pytest.raises(ConfigError, match="Unknown split"):
        AddEnv(split="dev")
    with pytest.raises(ConfigError, match="render_mode"):
        AddEnv(render_mode="rgb_array")


def test_render_modes(capsys):
    env = AddEnv(render_mode="ansi")
    env.reset(seed=0)
    env.step("<add>1+1</add>")
    text = env.render()
    assert "[prompt]" in text and "[action] <add>1+1</add>" in text and "<result>2</result>" in text
    human = AddEnv(render_mode="human")
    human.reset(seed=0)
    human.step("<add>1+1</add>")
    assert "<result>2</result>" in capsys.readouterr().out


def test_hermes_format_env():
    env = AddEnv(action_format="hermes")
    obs, _ = env.reset(options={"task_id": "t1"})
    assert "<tool_call>" in obs
    obs, *_ = env.step('<tool_call>{"name": "add", "arguments": {"expr": "1+3"}}</tool_call>')
    assert obs == "<tool_response>\n4\n</tool_response>"
    assert env.step("4")[1] == 1.0


def test_text_space():
    space = TextSpace(max_length=5)
    space.seed(0)
    assert space.contains("Zürich") is False and space.contains("Zü") and not space.contains(3)
    sample = space.sample()
    assert isinstance(sample, str) and sample == (lambda s: (s.seed(0), s.sample())[1])(TextSpace(max_length=5))


def test_check_env_passes_and_catches_a_broken_oracle():
    report = check_env(AddEnv())
    assert len(report["oracle_solved"]) == 5  # every task of the split (up to 100), not 3
    with pytest.raises(EnvCheckFailed, match="oracle scored 0.0"):
        check_env(AddEnv(broken_oracle=True))


def test_check_env_rejects_non_agent_env():
    with pytest.raises(EnvCheckFailed, match="expected an AgentEnv"):
        check_env(gym.make("CartPole-v1"))


# ---- the base keyword arguments, declared once ---------------------------------------------------------
class DeclaredEnv(AgentEnv[str]):
    """Declares its defaults once and passes the base arguments on unread."""

    defaults = EnvDefaults(action_format="hermes", max_turns=3)

    def __init__(self, *, size: int = 2, **base):
        self.size = size
        super().__init__(tasks=TaskList([Task("t0", "Say ok.", {"answer": "ok"})]), **base)

    def verify(self, outcome, task):
        return Score(float(outcome == "ok"), outcome == "ok")

    def oracle_action(self):
        return self.action_format.render_answer("ok")


def test_an_env_declares_its_base_defaults_once_and_its_signature_lists_them():
    params = inspect.signature(DeclaredEnv).parameters
    assert list(params) == ["size", *(f.name for f in dataclasses.fields(EnvDefaults))]
    assert params["max_turns"].default == 3 and params["action_format"].default == "hermes"
    assert params["split"].default == "test" and params["max_turns"].annotation is int
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())
    env = DeclaredEnv()
    assert (env.max_turns, env.split, env.size, env.max_observation_chars) == (3, "test", 2, 8_000)
    assert isinstance(env.action_format, HermesFormat)
    env = DeclaredEnv(max_turns=5, action_format="tags", size=4)
    assert env.max_turns == 5 and isinstance(env.action_format, TagsFormat) and env.size == 4


def test_the_kwarg_check_reads_the_base_arguments_of_the_signature():
    check_kwargs(DeclaredEnv, {"max_turns": 4, "split": "test", "size": 1}, owner="declared")
    with pytest.raises(ConfigError, match=r"^declared: max_turns must be int, got '4' \(str\)"):
        check_kwargs(DeclaredEnv, {"max_turns": "4"}, owner="declared")
    with pytest.raises(ConfigError, match=r"render_mode must be one of 'ansi', 'human', None"):
        check_kwargs(DeclaredEnv, {"render_mode": "rgb"}, owner="declared")
    with pytest.raises(ConfigError, match=r"unknown keyword argument 'max_turn'\. Did you mean 'max_turns'\?"):
        check_kwargs(DeclaredEnv, {"max_turn": 4}, owner="declared")
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_turn'"):
        DeclaredEnv(max_turn=4)


def test_a_subclass_that_does_not_declare_defaults_has_its_own_signature():
    class Sub(DeclaredEnv):
        def __init__(self, extra: int = 0, **kwargs):
            super().__init__(**kwargs)

    assert list(inspect.signature(Sub).parameters) == ["extra", "kwargs"]
    assert Sub(max_turns=2).max_turns == 2  # the parent's defaults and checks still apply
    assert list(inspect.signature(AddEnv).parameters) == ["broken_oracle", "kwargs"]


def test_the_default_client_kwargs_are_the_base_arguments_but_render_mode():
    # render_mode prints on the server; a rubric decides what counts as correct: both the operator's
    assert set(DEFAULT_CLIENT_KWARGS) == {f.name for f in dataclasses.fields(EnvDefaults)} - {"render_mode", "rubric"}


def test_an_env_adds_format_names_of_its_own():
    class Upper(TagsFormat):
        name = "upper"

    class OwnFormatEnv(DeclaredEnv):
        defaults = EnvDefaults(action_format="upper")

        def __init__(self, **base):
            super().__init__(**base)

        def make_action_format(self, spec):
            return Upper() if spec == "upper" else super().make_action_format(spec)

    assert isinstance(OwnFormatEnv().action_format, Upper)
    assert isinstance(OwnFormatEnv(action_format="hermes").action_format, HermesFormat)
    with pytest.raises(ConfigError, match="Unknown action format 'nope'"):
        OwnFormatEnv(action_format="nope")


# ---- typed outcomes -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pressed(Outcome):
    """The button of ButtonEnv was pressed (or not), after so many turns."""

    pressed: bool
    turn: int

    def as_answer(self):
        return f"pressed at turn {self.turn}" if self.pressed else "not pressed"


class ButtonEnv(AgentEnv[Pressed]):
    """Ends in the world: pressing the button ends the episode; verify sees the typed outcome."""

    def __init__(self, **base):
        self.seen = []
        self.pressed = False
        super().__init__(tasks=TaskList([Task("b0", "Press the button.", {})]), **base)

    def make_tools(self):
        def press():
            self.pressed = True
            return "Click."

        return [Tool("press", "Press the button.", {"type": "object", "properties": {}}, press),
                Tool("wait", "Wait.", {"type": "object", "properties": {}}, lambda: "...")]

    def on_reset(self, task):
        self.pressed = False

    def episode_outcome(self):
        return Pressed(True, self.turn) if self.pressed else None

    def default_outcome(self):
        return Pressed(False, self.turn)

    def verify(self, outcome, task):
        self.seen.append(outcome)
        ok = isinstance(outcome, Pressed) and outcome.pressed
        return Score(float(ok), ok)

    def oracle_action(self):
        return {"name": "press", "arguments": {}}


def test_an_outcome_in_the_world_reaches_verify_typed_and_info_as_text():
    env = ButtonEnv()
    env.reset(seed=0)
    assert env.episode_outcome() is None
    env.step({"name": "wait", "arguments": {}})
    _, reward, terminated, _, info = env.step({"name": "press", "arguments": {}})
    assert terminated and reward == 1.0 and env.seen == [Pressed(True, 2)] == [env.episode_outcome()]
    assert info["answer"] == "pressed at turn 2"


def test_without_an_outcome_verify_scores_the_default_and_info_keeps_the_answer_text():
    env = ButtonEnv(max_turns=1)
    env.reset(seed=0)
    _, reward, _, truncated, info = env.step({"name": "wait", "arguments": {}})
    assert truncated and reward == 0.0 and env.seen == [Pressed(False, 1)] and info["answer"] is None
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("<answer>I pressed it</answer>")  # text cannot press the button
    assert terminated and reward == 0.0 and env.seen[-1] == Pressed(False, 1)
    assert info["answer"] == "I pressed it" and env.episode_outcome() is None


def test_an_answer_env_s_outcome_is_its_answer_text():
    env = AddEnv()
    env.reset(options={"task_id": "t2"})
    assert env.episode_outcome() is None
    env.step("<add>2+6</add>")
    assert env.episode_outcome() is None
    _, _, _, _, info = env.step("<answer>8</answer>")
    assert env.episode_outcome() == "8" == info["answer"]
    env.reset(options={"task_id": "t2"})
    assert env.episode_outcome() is None


def test_the_outcome_type_is_named_by_the_class():
    assert typing.get_args(ButtonEnv.__orig_bases__[0]) == (Pressed,)
    assert typing.get_args(DeclaredEnv.__orig_bases__[0]) == (str,)
