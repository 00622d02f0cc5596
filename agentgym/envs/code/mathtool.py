"""``agentgym/MathTool-v0``: the ReTool / ToRL protocol, Python in a sandbox and a math-equivalence reward, built
on ``ToolEnv``."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentgym.core.env import EnvDefaults
from agentgym.core.formats import ActionFormat, TagsFormat
from agentgym.core.shared import load_shared
from agentgym.core.task import Task, TaskList, TaskSource
from agentgym.core.tools import Tool, ToolCall
from agentgym.envs.code.grader import extract_code
from agentgym.envs.code.tool import CodeRunner, format_result
from agentgym.envs.toolenv import ToolEnv
from agentgym.errors import ConfigError
from agentgym.verifiers import Score, verify_math
from agentgym.verifiers.budget import budget_seconds

__all__ = ["MathToolEnv", "verify_answer"]

_TAGS_PROMPT = (
    "Solve the following math problem. You may use a Python interpreter: write code between <code> and "
    "</code> (numpy and sympy are available; print what you need), and its output comes back between "
    "<interpreter> and </interpreter>. Think step by step, run code as often as you need, and give the "
    "final answer between <answer> and </answer> as \\boxed{{...}}, for example <answer>\\boxed{{42}}</answer>.\n"
    "Problem: {problem}\n"
)
_TOOL_PROMPT = (
    "Solve the following math problem. You may call the python tool to run code (numpy and sympy are "
    "available; print what you need). Think step by step, and give the final answer as \\boxed{{...}} "
    "between <answer> and </answer>.\n{instructions}\nProblem: {problem}\n"
)


def verify_answer(answer: str | None, gold: Mapping[str, Any], *, budget_s: float | None = None) -> Score:
    r"""MathTool's verifier: ``answer`` (a ``\boxed{}`` inside is accepted) is math-equivalent to ``gold["answer"]``.

    >>> verify_answer("\\boxed{0.5}", {"answer": "\\frac{1}{2}"}).reward
    1.0
    """
    return verify_math(answer, gold["answer"], budget_s=budget_s)


def _tool_name(action_format: ActionFormat) -> str:
    return "code" if isinstance(action_format, TagsFormat) else "python"


def _of_levels(tasks: TaskSource, levels: Sequence[int]) -> TaskList:
    """The MATH-schema problems of ``levels`` (1 to 5, MATH's own ``level``: ``"Level 3"``); others are dropped."""
    wanted = {int(n) for n in levels} if not isinstance(levels, (str, int)) else set()
    if not wanted or not wanted <= {1, 2, 3, 4, 5}:
        raise ConfigError(f"levels must be a list of MATH levels 1 to 5, e.g. [4, 5]; got {levels!r}.")
    kept = [t for split in tasks.splits() for t in tasks.tasks(split)
            if str(t.meta.get("level", "")).removeprefix("Level ").strip() in {str(n) for n in wanted}]
    if not kept:
        raise ConfigError(f"No problem of MATH level {sorted(wanted)} in these tasks (levels keeps MATH-schema "
                          "problems, whose `level` is 'Level N'; GSM8K and reasoning-gym tasks have none).")
    return TaskList(kept)


class MathToolEnv(ToolEnv):
    """ReTool / ToRL: ``<code>`` runs Python in the sandbox, ``<interpreter>`` returns its output.

    The final ``<answer>`` (a ``\\boxed{}`` inside is accepted) is scored by
    math equivalence with the gold (``verify_math``). In function-calling
    formats the tool is ``python(code)``. Tasks: the bundled GSM8K- and
    MATH-schema problems, your own files (``data_dir`` or ``files``), or
    ``reasoning_gym=[names]`` for procedural tasks from the reasoning-gym package
    (``reasoning_gym_config={name: {field: value}}`` sets a dataset's difficulty). ``levels=[4, 5]`` keeps the
    MATH-schema problems of those levels (MATH's 1 to 5).
    """

    defaults = EnvDefaults(max_turns=6, max_observation_chars=4_000)

    def __init__(self, *, data_dir: str | Path | None = None,
                 files: Mapping[str, str | Path | Sequence[str | Path]] | None = None,
                 reasoning_gym: Sequence[str] | None = None, reasoning_gym_size: int = 200,
                 reasoning_gym_config: Mapping[str, Mapping[str, Any]] | None = None,
                 sandbox: str = "bwrap", timeout_s: float = 10.0, memory_mb: int = 1024,
                 preload: Sequence[str] = ("numpy", "sympy"), verifier_budget_s: float | None = None,
                 levels: Sequence[int] | None = None, **base: Any) -> None:
        from agentgym.envs.code import math_data

        budget_seconds(verifier_budget_s)  # a bad budget is an error here, not at the end of an episode
        self.verifier_budget_s = verifier_budget_s

        if sum(x is not None for x in (data_dir, files, reasoning_gym)) > 1:
            raise ConfigError("Pass at most one of data_dir, files and reasoning_gym.")
        if reasoning_gym_config is not None and reasoning_gym is None:
            raise ConfigError("reasoning_gym_config needs reasoning_gym (the dataset names it configures).")
        if reasoning_gym is not None:
            if isinstance(reasoning_gym, str):
                reasoning_gym = [reasoning_gym]
            tasks: TaskSource = math_data.reasoning_gym_tasks(list(reasoning_gym), size_per_split=reasoning_gym_size,
                                                              seed=0, configs=reasoning_gym_config)
        else:
            if data_dir is not None:
                files = math_data.find_math_files(data_dir)
            tasks = load_shared(math_data.load_math_tasks, files or math_data.bundled_math_files())
        if levels is not None:
            tasks = _of_levels(tasks, levels)
        self.runner = CodeRunner(backend=sandbox, timeout_s=timeout_s, memory_mb=memory_mb, preload=tuple(preload))
        self.check_base_kwargs(base)
        interpreter = Tool(
            # the tool is named as the format's models know it: <code> in tags, python(code) as a function
            name=_tool_name(self.make_action_format(base.get("action_format", self.defaults.action_format))),
            description="Run Python 3 code in a sandbox (no network; numpy and sympy installed) and return "
                        "what it prints, or its error.",
            parameters={"type": "object", "properties": {"code": {"type": "string",
                        "description": "The Python program to run; print the values you need."}},
                        "required": ["code"]},
            fn=self.run_code,
        )
        # the split named: data without a test split is an error to fix, not ToolEnv's switch to its first split
        base.setdefault("split", self.defaults.split)
        super().__init__(tasks=tasks, tools=[interpreter], **base,
                         verifier=functools.partial(verify_answer, budget_s=verifier_budget_s))

    @property
    def tool_name(self) -> str:
        return _tool_name(self.action_format)

    def run_code(self, code: str) -> str:
        """The interpreter tool: run ``code`` (a fenced block inside is accepted) and report its output."""
        return format_result(self.runner.run(extract_code(code)), max_chars=self.max_observation_chars)

    def result_tag(self, call: ToolCall) -> str:
        return "interpreter"

    def build_prompt(self, task: Task) -> str:
        if isinstance(self.action_format, TagsFormat):
            return _TAGS_PROMPT.format(problem=task.prompt)
        return _TOOL_PROMPT.format(problem=task.prompt, instructions=self.action_format.instructions(self.tools))

    def oracle_action(self) -> str:
        """Run the task's reference program (when it has one), then answer the gold in ``\\boxed{}``."""
        code = self.task.meta.get("oracle_code")
        if code and self.turn == 0 and self.max_turns > 1:
            return self.action_format.render_call(ToolCall(self.tool_name, {"code": code}), self.tools)
        return self.action_format.render_answer(f"\\boxed{{{self.task.gold['answer']}}}")
