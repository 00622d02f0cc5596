"""PyCode's grader: a code submission against unit tests inside the sandbox, out of the submission's reach.

A sandboxed grader (see ``agentgym.verifiers``): ``grade_code(runner, code, ...)``
runs in the sandbox it is given (a ``CodeRunner``, or anything with its ``run``).
The harness (``_harness.py``) runs in the sandbox; see its docstring for the
guards against verifier hacking. This module builds its input, runs it through
the runner and reads its verdict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol

from agentgym.sandbox import Result
from agentgym.verifiers import Score

__all__ = ["Grade", "Runner", "extract_code", "grade_code"]

_HARNESS = ((resources.files("agentgym.sandbox") / "harness_prelude.py").read_text(encoding="utf-8") + "\n\n"
            + (resources.files("agentgym.envs.code") / "_harness.py").read_text(encoding="utf-8"))
_MARK = "@@agentgym-grade@@"
_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


class Runner(Protocol):
    """What a grader runs in: ``run(code, stdin=, timeout_s=, ...) -> Result`` in a sandbox."""

    def run(self, code: str | None = None, **kwargs: Any) -> Result: ...


@dataclass(frozen=True)
class Grade:
    """How a submission did on a set of tests."""

    passed: int
    total: int
    failures: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def all_passed(self) -> bool:
        return self.total > 0 and self.passed == self.total and self.error is None

    def as_score(self) -> Score:
        return Score(1.0 if self.all_passed else 0.0, self.all_passed,
                     {"passed": self.passed, "total": self.total, "fraction": round(self.fraction, 4),
                      "error": self.error, "failures": list(self.failures)})


def extract_code(text: str | None) -> str:
    """The program in ``text``: the last fenced block if there is one, else the text itself.

    >>> extract_code("Here:\\n```python\\ndef f():\\n    return 1\\n```")
    'def f():\\n    return 1\\n'
    >>> extract_code("def g(): pass")
    'def g(): pass'
    """
    if not text:
        return ""
    blocks = _FENCE.findall(text)
    return blocks[-1] if blocks else text.strip("\n")


def _frame(obj: Mapping[str, Any]) -> str:
    body = json.dumps(obj, ensure_ascii=True)
    return f"{len(body)}\n{body}"


def grade_code(runner: Runner, code: str, *, entry_point: str, asserts: Sequence[str] = (),
               check: str | None = None, setup_code: str = "", show_failures: bool = False,
               timeout_s: float = 30.0) -> Grade:
    """Run ``asserts`` (each separately) or HumanEval's ``check(candidate)`` against ``code``.

    ``show_failures`` puts the failing asserts' text in ``failures`` (for public
    tests; hidden ones are reported by number only).
    """
    if not code.strip():
        return Grade(0, len(asserts) or int(check is not None), error="empty submission")
    stdin = _frame({"code": code, "entry_point": entry_point, "setup_code": setup_code}) + _frame(
        {"asserts": list(asserts), "check": check, "setup_code": setup_code, "entry_point": entry_point,
         "show": show_failures})
    result = runner.run(_HARNESS, stdin=stdin, timeout_s=timeout_s, code_name="<grader>")
    total = len(asserts) or int(check is not None)
    for line in reversed(result.stdout.splitlines()):
        if line.startswith(_MARK):
            verdict = json.loads(line[len(_MARK):])
            return Grade(verdict["passed"], verdict["total"], verdict["failures"], verdict["load_error"])
    if result.timed_out:
        return Grade(0, total, error=f"grading timed out after {timeout_s:g} s")
    return Grade(0, total, error=f"the grader did not finish (exit code {result.exit_code}): "
                                 f"{result.stderr.strip()[-300:]}")
