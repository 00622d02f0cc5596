"""``ToolEnv`` and ``SingleTurnEnv``: an env from tasks, plain Python tool functions and a verifier.

The public way to add an env (docs/custom-envs.md)::

    import agentgym

    def capital_of(country: str) -> str:
        '''Look up the capital city of a country.'''
        return {"Peru": "Lima", "Kenya": "Nairobi"}.get(country, "unknown country")

    TASKS = [{"question": "What is the capital of Peru?", "answer": "Lima"}]
    agentgym.register("byo/Capitals-v0", agentgym.ToolEnv, tasks=TASKS, tools=[capital_of], verifier="qa")

Everything an ``AgentEnv`` does comes with it: every action format, malformed
actions as observations, ``max_turns``, observation truncation, splits and seeding,
an oracle (the gold answer by default), so ``agentgym.check_env`` passes on it, and
every command serves, evaluates and trains it.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentgym.core.env import AgentEnv, EnvDefaults
from agentgym.core.task import Task, TaskList, TaskSource, read_records
from agentgym.core.tools import Tool, ToolCall
from agentgym.envs.functions import function_tool
from agentgym.errors import ConfigError, DataError
from agentgym.verifiers.score import Score

__all__ = ["COLUMNS", "SingleTurnEnv", "ToolEnv", "load_tasks", "resolve_verifier"]

# The columns a row is read by, and their defaults; ``columns=`` maps them to a dataset's own names.
COLUMNS = {"question": "question", "answer": "answer", "id": "id", "split": "split"}
Verifier = Callable[[Any, Mapping[str, Any]], Any]


def load_tasks(tasks: Any, *, columns: Mapping[str, str] | None = None, split: str = "test") -> TaskList:
    """Tasks from a list of dicts, a ``{split: rows}`` dict, a JSONL / JSON / Parquet path (or a directory of
    ``<split>.jsonl`` files), a ``datasets.Dataset`` or ``DatasetDict``. Each row's question (``columns``
    maps the names) is the task's prompt; the whole row is its gold, which verifiers and oracles read.
    Rows without a split column go to ``split``; without an id column they are numbered."""
    mapping = {**COLUMNS, **(columns or {})}
    unknown = sorted(set(columns or {}) - set(COLUMNS))
    if unknown:
        raise ConfigError(f"columns: unknown key(s) {unknown}; map {sorted(COLUMNS)} to your dataset's columns.")
    by_split = _rows_by_split(tasks, split)
    out: list[Task] = []
    for name, rows in by_split.items():
        for index, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise DataError(f"tasks: row {index} of split {name!r} is a {type(row).__name__}, not a dict.")
            row = dict(row)
            if mapping["question"] not in row:
                raise ConfigError(f"tasks: row {index} of split {name!r} has no {mapping['question']!r} column "
                                  f"(its columns: {sorted(row)}); pass columns={{'question': '<your column>'}}.")
            task_split = str(row.get(mapping["split"], name))
            task_id = str(row[mapping["id"]]) if mapping["id"] in row else f"{task_split}-{index}"
            out.append(Task(id=task_id, prompt=str(row[mapping["question"]]), gold=row, split=task_split))
    if not out:
        raise DataError("tasks: no rows; pass at least one task.")
    return TaskList(out)


def _rows_by_split(tasks: Any, split: str) -> dict[str, list[Any]]:
    if isinstance(tasks, (str, os.PathLike)):
        path = Path(tasks)
        if path.is_dir():
            from agentgym.core.task import find_split_files

            return {name: list(read_records(file)) for name, file in find_split_files(path, schema="task").items()}
        return {split: list(read_records(path))}
    if isinstance(tasks, TaskSource):
        raise ConfigError("tasks: pass rows (dicts), a file or a dataset; a TaskSource needs no loading: pass it "
                          "to ToolEnv(tasks=...) as it is.")
    if isinstance(tasks, Mapping):  # {split: rows} or a datasets.DatasetDict
        return {str(name): list(rows) for name, rows in tasks.items()}
    if hasattr(tasks, "to_list") and hasattr(tasks, "column_names"):  # a datasets.Dataset
        return {split: tasks.to_list()}
    if isinstance(tasks, Iterable) and not isinstance(tasks, (bytes, str)):
        return {split: list(tasks)}
    raise ConfigError(f"tasks: expected a list of dicts, a path or a datasets.Dataset, got {type(tasks).__name__}.")


def resolve_verifier(verifier: str | Verifier, *, answer_column: str = "answer") -> Callable[[Any, Mapping], Score]:
    """A ``(answer, row) -> Score`` function: a built-in by name (``"qa"``, ``"qa_f1"``, ``"math"``,
    ``"code"``), or the user's ``(answer, task) -> float | bool | Score``."""
    if isinstance(verifier, str):
        return _builtin(verifier, answer_column)
    if not callable(verifier):
        raise ConfigError(f"verifier: expected a built-in name or a function (answer, task), got {verifier!r}.")
    try:
        inspect.signature(verifier).bind("answer", {})
    except TypeError as e:
        raise ConfigError(f"verifier: {getattr(verifier, '__name__', verifier)!r} must take (answer, task): {e}.") \
            from None
    except ValueError:  # a builtin without a signature: trust it
        pass

    def verify(answer: Any, row: Mapping[str, Any]) -> Score:
        return _as_score(verifier(answer, row))

    return verify


def _as_score(value: Any) -> Score:
    if isinstance(value, Score):
        return value
    if isinstance(value, bool):
        return Score(float(value), value)
    if isinstance(value, (int, float)):
        return Score(float(value), float(value) >= 1.0)
    raise ConfigError(f"verifier returned {value!r}; return a float, a bool or an agentgym.Score.")


def _gold_answers(row: Mapping[str, Any], column: str) -> list[str]:
    value = row.get(column)
    if value is None:
        raise DataError(f"This task has no {column!r} column for the verifier; pass columns={{'answer': ...}}.")
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def _builtin(name: str, column: str) -> Callable[[Any, Mapping], Score]:
    from agentgym.verifiers import verify_math, verify_qa

    metrics = {"qa": "em", "qa_em": "em", "qa_f1": "f1", "qa_cover_em": "cover_em"}
    if name in metrics:
        return lambda answer, row: verify_qa(answer, _gold_answers(row, column), metric=metrics[name])
    if name == "math":
        return lambda answer, row: verify_math(answer, _gold_answers(row, column)[0])
    if name == "code":
        return _code_verifier
    known = sorted([*metrics, "math", "code"])
    raise ConfigError(f"verifier: unknown built-in {name!r}; use one of {known} or a function (answer, task).")


def _code_verifier(answer: Any, row: Mapping[str, Any]) -> Score:
    """The program in the answer passes the row's tests (``entry_point`` and ``asserts`` or ``check``) in the
    sandbox, as PyCode grades."""
    from agentgym.envs.code.grader import extract_code, grade_code
    from agentgym.envs.code.tool import CodeRunner

    if "entry_point" not in row:
        raise DataError("The code verifier needs an 'entry_point' column and 'asserts' (or 'check').")
    return grade_code(CodeRunner(), extract_code(answer), entry_point=row["entry_point"],
                      asserts=row.get("asserts") or (), check=row.get("check"),
                      setup_code=row.get("setup_code") or "").as_score()


class ToolEnv(AgentEnv[str]):
    """An env from tasks, tools and a verifier, without writing a class.

    ``tasks``: rows (``load_tasks``), or a ``TaskSource`` already built (used as it is; ``columns`` then names
    only the answer column that the built-in verifiers and the default oracle read in ``task.gold``);
    ``tools``: plain Python functions (``function_tool``: the JSON schema from type hints and docstrings;
    ``@agentgym.tool(sandbox=True)`` runs one in the sandbox) or ``Tool`` objects; ``verifier``: a built-in
    name or ``(answer, task) -> float | bool | Score`` (``task``: the row, ``task.gold`` of a ``TaskSource``);
    ``columns``: your column names for ``question``, ``answer``, ``id``, ``split``; ``prompt_template``:
    the first observation, ``str.format`` of the row (the format's tool instructions follow);
    ``system_prompt``: reported in ``info["system_prompt"]`` for policies that take one; ``oracle``: a
    column holding the answer (default: the answer column) or ``(task, turn) -> action``.

    A subclass keeps ``AgentEnv``'s hooks: ``build_prompt`` (its own prompt; ``prompt_template`` is then checked
    against the first task only when one is passed), ``result_tag`` (the ``tags`` format's result tag per call),
    ``oracle_action``, ``on_reset``, ``extra_info``. ``SearchQAEnv`` and ``MathToolEnv`` are built so.
    """

    defaults = EnvDefaults(max_turns=8)

    def __init__(self, *, tasks: Any, tools: Sequence[Any] = (), verifier: Any = "qa",
                 columns: Mapping[str, str] | None = None, prompt_template: str | None = None,
                 system_prompt: str | None = None, oracle: Any = None, **base: Any) -> None:
        self.columns = {**COLUMNS, **(columns or {})}
        self._function_tools = [function_tool(fn) for fn in tools]
        names = [t.name for t in self._function_tools]
        duplicate = sorted({n for n in names if names.count(n) > 1})
        if duplicate:
            raise ConfigError(f"tools: two tools are named {duplicate[0]!r}; tool names must be unique.")
        self._verify = resolve_verifier(verifier, answer_column=self.columns["answer"])
        self._rubric = verifier
        self.prompt_template = prompt_template or "{" + self.columns["question"] + "}"
        self.system_prompt = system_prompt
        if oracle is not None and not callable(oracle) and not isinstance(oracle, str):
            raise ConfigError(f"oracle: expected a column name or a function (task, turn) -> action, got {oracle!r}.")
        self._oracle = oracle
        task_list = tasks if isinstance(tasks, TaskSource) else load_tasks(tasks, columns=columns,
                                                                            split=base.get("split", "test"))
        # the template is checked where it is used: by this build_prompt, or passed to a subclass's own
        if prompt_template is not None or type(self).build_prompt is ToolEnv.build_prompt:
            first = task_list.tasks(task_list.splits()[0])[0]
            try:
                self.prompt_template.format(**first.gold)
            except (KeyError, IndexError) as e:
                raise ConfigError(f"prompt_template names {e} which the rows do not have (columns: "
                                  f"{sorted(first.gold)}).") from None
        if "split" not in base and "test" not in task_list.splits():
            base["split"] = task_list.splits()[0]
        super().__init__(tasks=task_list, **base)

    @classmethod
    def check_base_kwargs(cls, base: Mapping[str, Any]) -> None:
        """For a subclass that fixes ``ToolEnv``'s own arguments (tasks, tools, verifier) and takes only
        ``EnvDefaults``' as ``**base``: Python's ``TypeError`` for any other name, as ``AgentEnv`` raises it."""
        unknown = sorted(set(base) - {f.name for f in dataclasses.fields(EnvDefaults)})
        if unknown:
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {unknown[0]!r}")

    def make_tools(self) -> Sequence[Tool]:
        return self._function_tools

    def build_prompt(self, task: Task) -> str:
        prompt = self.prompt_template.format(**task.gold)
        return f"{prompt}\n\n{self.action_format.instructions(self._tools)}"

    def verify(self, outcome: str | None, task: Task) -> Score:
        if getattr(self._rubric, "wants_transcript", False):  # a rubric part reads the episode, not the answer
            return self._rubric(outcome, task.rubric_view(), transcript=list(self._transcript))
        if hasattr(self._rubric, "parts") or hasattr(self._rubric, "score_group"):  # a Rubric or a JudgeRubric
            return self._verify(outcome, task.rubric_view())
        return self._verify(outcome, task.gold)

    def oracle_action(self) -> str | Mapping[str, Any]:
        if callable(self._oracle):
            action = self._oracle(self.task.gold, self.turn)
            if isinstance(action, ToolCall):
                return self.action_format.render_call(action, self._tools)
            return action
        column = self._oracle or self.columns["answer"]
        answers = self.task.gold.get(column)
        if answers is None:
            raise DataError(f"No oracle for {self.task.id}: its row has no {column!r} column; pass oracle= a column "
                            "or a function (task, turn) -> action.")
        answer = answers[0] if isinstance(answers, (list, tuple)) else answers
        return self.action_format.render_answer(str(answer))

    def extra_info(self) -> dict[str, Any]:
        return {"system_prompt": self.system_prompt} if self.system_prompt else {}


class SingleTurnEnv(ToolEnv):
    """One answer, no tools: a question in, the verifier's score out. The first answer ends the episode; a reply
    that is not an answer in the action format is an observation saying so, with one more turn to answer
    (``max_turns=2``; pass ``max_turns=1`` for none)."""

    defaults = EnvDefaults(max_turns=2)

    def __init__(self, *, tasks: Any, verifier: Any = "qa", columns: Mapping[str, str] | None = None,
                 prompt_template: str | None = None, system_prompt: str | None = None, oracle: Any = None,
                 **base: Any) -> None:
        super().__init__(tasks=tasks, tools=(), verifier=verifier, columns=columns, prompt_template=prompt_template,
                         system_prompt=system_prompt, oracle=oracle, **base)
