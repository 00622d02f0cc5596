"""A tiny SWE-bench instance written by tests: a repository, its bug, the gold patch and the test patch."""

from __future__ import annotations

import functools
import gzip
import json
import subprocess
import tempfile
from pathlib import Path

from agentgym.envs.swe.repo import materialize

FILES = {
    "calc/__init__.py": '"""A tiny calculator."""\n\nfrom calc.ops import add, mean\n\n__all__ = ["add", "mean"]\n',
    "calc/ops.py": ('def add(a, b):\n    return a + b\n\n\ndef mean(values):\n    """The arithmetic mean; '
                    'ValueError for no values."""\n    return sum(values) / (len(values) - 1)\n'),
    "tests/test_ops.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}
FIXED_OPS = FILES["calc/ops.py"].replace(
    "    return sum(values) / (len(values) - 1)\n",
    '    if not values:\n        raise ValueError("mean() of no values")\n    return sum(values) / len(values)\n')
NEW_TESTS = FILES["tests/test_ops.py"] + (
    "\n\ndef test_mean():\n    from calc import mean\n\n    assert mean([1, 2, 3]) == 2\n"
    "\n\ndef test_mean_empty():\n    import pytest\n    from calc import mean\n\n"
    "    with pytest.raises(ValueError):\n        mean([])\n")


# The same files, message and dates give the same commit and diffs every time: each is computed once per process
# (a few git processes each), and callers get copies.
@functools.cache
def _diff(path: str, before: str, after: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        materialize({path: before}, Path(tmp), "x")
        (Path(tmp) / path).write_text(after)
        return subprocess.run(["git", "diff"], cwd=tmp, capture_output=True, text=True, check=True).stdout


@functools.cache
def _calc_instance() -> dict:
    """``calc__calc-1``'s fields (computed once: ``write_instance`` hands out copies)."""
    with tempfile.TemporaryDirectory() as tmp:
        base = materialize(FILES, Path(tmp), "calc 1.0")
    return {
        "instance_id": "calc__calc-1", "repo": "calc/calc", "base_commit": base, "version": "1.0",
        "environment_setup_commit": base, "created_at": "2024-01-01T00:00:00Z", "hints_text": "",
        "problem_statement": "mean() is wrong: mean([1, 2, 3]) returns 3.0, and mean([]) raises ZeroDivisionError "
                             "instead of ValueError.",
        "patch": _diff("calc/ops.py", FILES["calc/ops.py"], FIXED_OPS),
        "test_patch": _diff("tests/test_ops.py", FILES["tests/test_ops.py"], NEW_TESTS),
        "FAIL_TO_PASS": json.dumps(["tests/test_ops.py::test_mean", "tests/test_ops.py::test_mean_empty"]),
        "PASS_TO_PASS": json.dumps(["tests/test_ops.py::test_add"]),
    }


def write_instance(directory: Path) -> dict:
    """``instances.jsonl`` + ``repos.json.gz`` with one instance, ``calc__calc-1``."""
    directory.mkdir(parents=True, exist_ok=True)
    instance = dict(_calc_instance())  # the caller's own: some add fields
    (directory / "instances.jsonl").write_text(json.dumps(instance) + "\n")
    with gzip.open(directory / "repos.json.gz", "wt") as f:
        json.dump({instance["instance_id"]: FILES}, f)
    return instance


@functools.cache
def _diff_new(path: str, text: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        materialize({"README": "x\n"}, Path(tmp), "x")
        (Path(tmp) / path).parent.mkdir(parents=True, exist_ok=True)
        (Path(tmp) / path).write_text(text)
        subprocess.run(["git", "add", "-N", path], cwd=tmp, check=True)
        return subprocess.run(["git", "diff"], cwd=tmp, capture_output=True, text=True, check=True).stdout


def file_diff(files: dict[str, str], path: str, text: str) -> str:
    """The diff that makes ``path`` hold ``text`` in a repository of ``files`` (a new file where it has none)."""
    return _diff(path, files[path], text) if path in files else _diff_new(path, text)


def write_files_instance(directory: Path, *, instance_id: str, files: dict[str, str], fixed: dict[str, str],
                         tests: dict[str, str], fail_to_pass: list[str], pass_to_pass: list[str]) -> dict:
    """One instance of a repository of ``files``: ``fixed`` (path -> new text) is the gold patch, ``tests`` (path ->
    text at the test patch) the test patch; written as ``instances.jsonl`` + ``repos.json.gz``."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        base = materialize(files, Path(tmp), f"{instance_id.split('__')[0]} 1.0")
    name = instance_id.split("__")[0]
    instance = {
        "instance_id": instance_id, "repo": f"{name}/{name}", "base_commit": base, "version": "1.0",
        "environment_setup_commit": base, "created_at": "2024-01-01T00:00:00Z", "hints_text": "",
        "problem_statement": "A bug.",
        "patch": "".join(file_diff(files, p, text) for p, text in fixed.items()),
        "test_patch": "".join(file_diff(files, p, text) for p, text in tests.items()),
        "FAIL_TO_PASS": json.dumps(fail_to_pass), "PASS_TO_PASS": json.dumps(pass_to_pass),
    }
    (directory / "instances.jsonl").write_text(json.dumps(instance) + "\n")
    with gzip.open(directory / "repos.json.gz", "wt") as f:
        json.dump({instance_id: files}, f)
    return instance
