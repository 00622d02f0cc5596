"""Loading PyCode tasks from HumanEval- and MBPP-style files: schema detection, the gold layout, public tests."""

import gzip
import json

import pytest

from agentgym.envs.code.pycode_data import (
    bundled_code_files,
    docstring_tests,
    find_code_files,
    load_code_tasks,
    task_from_record,
)
from agentgym.errors import DataError

GOLD_KEYS = {"entry_point", "canonical_solution", "prompt", "setup_code", "asserts", "check"}

# Made-up records in the shape of real HumanEval ones: typing import, docstring with doctest examples,
# METADATA in the test, multi-line and messaged asserts, and one check() that loops.
NEAR_PAIR = {
    "task_id": "HumanEval/0",
    "prompt": ("from typing import List\n\n\ndef has_near_pair(values: List[int], gap: int) -> bool:\n"
               "    \"\"\" Return True if two numbers of values, at different positions, differ by at most gap.\n"
               "    >>> has_near_pair([1, 5, 9], 3)\n    False\n"
               "    >>> has_near_pair([1, 5, 9, 4], 1)\n    True\n    \"\"\"\n"),
    "canonical_solution": ("    for i, a in enumerate(values):\n        for b in values[i + 1:]:\n"
                           "            if abs(a - b) <= gap:\n                return True\n    return False\n"),
    "test": ("\n\nMETADATA = {\n    'author': 'nobody',\n    'dataset': 'test'\n}\n\n\n"
             "def check(candidate):\n"
             "    assert candidate([1, 5, 9], 3) == False\n"
             "    assert candidate([1, 5, 9, 4], 1) == True\n"
             "    assert candidate([], 10) == False, 'no pairs in an empty list'\n"
             "    assert candidate(\n        [7, 7],\n        0,\n    ) == True\n"
             "    assert METADATA['dataset'] == 'test'\n"),
    "entry_point": "has_near_pair",
}
TRIANGLE = {
    "task_id": "HumanEval/1",
    "prompt": ("def triangle(n: int) -> int:\n    \"\"\"Return 1 + 2 + ... + n.\n"
               "    For example: triangle(3) == 6\n    \"\"\"\n"),
    "canonical_solution": "    return n * (n + 1) // 2\n",
    "test": ("def check(candidate):\n    for n in range(20):\n        assert candidate(n) == sum(range(n + 1))\n\n"
             "check(triangle)\n"),
    "entry_point": "triangle",
}
# Made-up records in the shape of MBPP ones: \r\n in code, a builtin wrapping the call, setup code.
SHARED = {
    "task_id": 11, "text": "Write a function to find the elements two tuples have in common.",
    "code": "def common_items(a, b):\r\n  return tuple(set(a) & set(b)) ",
    "test_list": ["assert set(common_items((1, 2, 3), (3, 2, 9))) == set((2, 3))",
                  "assert set(common_items((1,), (2,))) == set()",
                  "assert len(common_items((4, 4, 5), (4, 5))) == 2"],
    "test_setup_code": "", "challenge_test_list": [],
}
ROOTS = {
    "task_id": 12, "text": "Write a function that returns the integer square root of n.",
    "code": "def int_root(n):\n    return math.isqrt(n)",
    "test_list": ["assert int_root(10) == 3", "assert int_root(16) == 4", "assert int_root(0) == 0"],
    "test_setup_code": "import math", "challenge_test_list": ["assert int_root(10**40) == 10**20"],
}


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def passes(program: str, setup: str, statements: list[str]) -> bool:
    """Trusted test data only: run the program, then the setup, then each statement."""
    namespace = {}
    exec(program, namespace)
    exec(setup, namespace)
    for statement in statements:
        exec(statement, namespace)
    return True


def test_humaneval_record_maps_to_the_gold_layout(tmp_path):
    tasks = load_code_tasks({"test": write_jsonl(tmp_path / "test.jsonl", [NEAR_PAIR, TRIANGLE])})
    task = tasks.get("HumanEval/0")
    assert task.prompt == NEAR_PAIR["prompt"] and task.split == "test" and set(task.gold) == GOLD_KEYS
    gold = task.gold
    assert gold["entry_point"] == "has_near_pair" and gold["prompt"] == NEAR_PAIR["prompt"]
    assert gold["canonical_solution"] == NEAR_PAIR["prompt"] + NEAR_PAIR["canonical_solution"]
    assert gold["check"] == NEAR_PAIR["test"] and "METADATA = {" in gold["setup_code"]
    assert gold["asserts"] == [
        "assert has_near_pair([1, 5, 9], 3) == False",
        "assert has_near_pair([1, 5, 9, 4], 1) == True",
        "assert has_near_pair([], 10) == False, 'no pairs in an empty list'",
        "assert has_near_pair([7, 7], 0) == True",
        "assert METADATA['dataset'] == 'test'",
    ]
    assert task.meta == {"format": "humaneval", "public_tests": ["assert has_near_pair([1, 5, 9], 3) == False",
                                                                 "assert has_near_pair([1, 5, 9, 4], 1) == True"]}
    assert passes(gold["canonical_solution"], gold["setup_code"], gold["asserts"] + task.meta["public_tests"])
    assert json.loads(json.dumps(task.as_dict())) == task.as_dict()  # travels over the wire as is


def test_humaneval_check_with_a_loop_is_kept_whole(tmp_path):
    tasks = load_code_tasks({"test": write_jsonl(tmp_path / "test.jsonl", [NEAR_PAIR, TRIANGLE])})
    gold = tasks.get("HumanEval/1").gold
    assert gold["asserts"] == [] and gold["check"] == TRIANGLE["test"].replace("check(triangle)\n", "")
    assert gold["setup_code"] == ""  # a trailing call of check is neither setup nor kept: the grader calls it
    assert tasks.get("HumanEval/1").meta["public_tests"] == []  # "For example: ..." is not a doctest
    namespace = {}
    exec(gold["canonical_solution"], namespace)
    exec(gold["check"], namespace)
    namespace["check"](namespace["triangle"])
    with pytest.raises(AssertionError):
        namespace["check"](lambda n: n)


def test_public_tests_field_wins_over_the_docstring():
    record = {**NEAR_PAIR, "public_tests": ["assert has_near_pair([0, 9], 9) == True"], "family": "pairs"}
    task = task_from_record(record, split="train", index=0, source="x.jsonl")
    assert task.meta == {"format": "humaneval", "public_tests": ["assert has_near_pair([0, 9], 9) == True"],
                         "family": "pairs"}


def test_docstring_tests_keeps_only_literal_results_of_the_entry_point():
    prompt = ('def helper(x):\n    """>>> helper(1)\n    1\n    """\n    return x\n\n\n'
              'def f(s: str) -> str:\n    """Echo.\n\n    >>> f(\'a\')\n    \'a\'\n    >>> print(f(\'b\'))\n    b\n'
              '    >>> f(\'c\') + helper(\'d\')\n    \'cd\'\n    >>> helper(2)\n    2\n    >>> f(\'x\')\n'
              '    Traceback (most recent call last):\n    ValueError\n    >>> f({1: [2]})\n    {1: [2]}\n'
              '    """\n')
    assert docstring_tests(prompt, "f") == ["assert f('a') == 'a'", "assert f('c') + helper('d') == 'cd'",
                                            "assert f({1: [2]}) == {1: [2]}"]
    assert docstring_tests("def f():\n    pass\n", "f") == []
    assert docstring_tests("def g(:\n  >>> g()\n  3\n", "g") == ["assert g() == 3"]  # unparsable: whole text


def test_mbpp_records(tmp_path):
    tasks = load_code_tasks({"train": write_jsonl(tmp_path / "train.jsonl", [SHARED, ROOTS])})
    task = tasks.get("11")
    assert task.prompt == (f"{SHARED['text']}\nYour code should pass tests like:\n{SHARED['test_list'][0]}")
    gold = task.gold
    assert set(gold) == GOLD_KEYS and gold["entry_point"] == "common_items"  # not set(), the builtin around it
    assert gold["asserts"] == SHARED["test_list"] and gold["check"] is None and gold["setup_code"] == ""
    assert "\r" not in gold["canonical_solution"] and gold["prompt"].startswith("# Write a function")
    assert task.meta == {"format": "mbpp", "public_tests": SHARED["test_list"][:1]}
    assert passes(gold["canonical_solution"], gold["setup_code"], gold["asserts"])
    roots = tasks.get("12")
    assert roots.gold["setup_code"] == "import math" and roots.gold["entry_point"] == "int_root"
    assert roots.meta["challenge_tests"] == ["assert int_root(10**40) == 10**20"]
    assert passes(roots.gold["canonical_solution"], roots.gold["setup_code"], roots.gold["asserts"])


def test_mbpp_sanitized_variant_uses_prompt_and_test_imports():
    record = {"task_id": 5, "prompt": "Write a function to double a number.",
              "code": "def double(x):\n    return 2 * x", "test_imports": ["import math"],
              "test_list": ["assert math.isclose(double(1.5), 3.0)"]}
    task = task_from_record(record, split="test", index=0, source="sanitized.json")
    assert task.gold["entry_point"] == "double" and task.gold["setup_code"] == "import math"
    assert task.prompt.startswith("Write a function to double a number.\nYour code should pass tests like:\n")


def test_parquet_gzip_and_json_files_found_in_a_dir(tmp_path):
    import pyarrow as pa  # in the dev extra
    import pyarrow.parquet as pq

    data = tmp_path / "data"
    data.mkdir()
    # one parquet file mixing both schemas: every row has every column, absent ones are null
    rows = [NEAR_PAIR, {**SHARED, "task_id": "11"}, TRIANGLE]
    columns = sorted({key for row in rows for key in row})
    pq.write_table(pa.Table.from_pylist([{key: row.get(key) for key in columns} for row in rows]),
                   data / "test.parquet")
    with gzip.open(data / "train.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps(ROOTS) + "\n")
    (data / "dev.json").write_text(json.dumps([{**NEAR_PAIR, "task_id": "dev/0"}]), encoding="utf-8")
    (data / "notes.txt").write_text("not data", encoding="utf-8")
    files = find_code_files(data)
    assert sorted(files) == ["dev", "test", "train"]
    tasks = load_code_tasks(files)
    assert tasks.splits() == ["dev", "test", "train"] and len(tasks) == 5
    near = tasks.get("HumanEval/0")
    assert near.meta["public_tests"] == docstring_tests(NEAR_PAIR["prompt"], "has_near_pair")
    assert len(near.gold["asserts"]) == 5 and tasks.get("HumanEval/1").gold["asserts"] == []
    assert tasks.get("11").gold["asserts"] == SHARED["test_list"] and tasks.get("12").split == "train"


def test_an_id_repeated_across_splits_gets_the_split_prefix(tmp_path):
    files = {"test": write_jsonl(tmp_path / "test.jsonl", [SHARED]),
             "train": write_jsonl(tmp_path / "train.jsonl", [SHARED, {**SHARED, "task_id": None}])}
    tasks = load_code_tasks(files)
    assert {t.id for s in tasks.splits() for t in tasks.tasks(s)} == {"11", "train/11", "train_1"}


@pytest.mark.parametrize(("record", "message"), [
    ({"question": "2 + 2?", "answer": "4"}, "neither a HumanEval record"),
    ({**NEAR_PAIR, "test": "assert has_near_pair([], 1) == False\n"}, r"must define check\(candidate\)"),
    ({**NEAR_PAIR, "test": "def check(candidate):\n    assert (\n"}, "'test' is not valid Python"),
    ({**NEAR_PAIR, "entry_point": "has near pair"}, "'entry_point' must be a function name"),
    ({**NEAR_PAIR, "canonical_solution": None}, "'canonical_solution' must be a string"),
    ({**NEAR_PAIR, "public_tests": "assert has_near_pair([], 1) == False"}, "'public_tests' must be a list"),
    ({**SHARED, "test_list": []}, "at least one assert"),
    ({**SHARED, "test_list": ["assert True"]}, "cannot tell which function"),
    ({**SHARED, "text": "  "}, "'text' must be a non-empty string"),
])
def test_bad_records_name_the_file_and_record(tmp_path, record, message):
    path = write_jsonl(tmp_path / "test.jsonl", [SHARED, record])
    with pytest.raises(DataError, match=message) as info:
        load_code_tasks({"test": path})
    assert f"{path} record 1" in str(info.value)


def test_missing_or_empty_data(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        find_code_files(tmp_path / "nope")
    with pytest.raises(DataError, match="No data files.*HumanEval or MBPP"):
        find_code_files(tmp_path)
    with pytest.raises(DataError, match="No code task records"):
        load_code_tasks({"test": write_jsonl(tmp_path / "test.jsonl", [])})


def test_bundled_files_load_with_public_tests_in_their_docstrings():
    tasks = load_code_tasks(bundled_code_files())
    assert tasks.splits() == ["test", "train"] and len(tasks) >= 150
    for split in tasks.splits():
        for task in tasks.tasks(split):
            gold, public = task.gold, task.meta["public_tests"]
            assert set(gold) == GOLD_KEYS and task.meta["format"] == "humaneval" and task.meta["family"]
            assert len(gold["asserts"]) >= 8 and gold["setup_code"] == "" and gold["prompt"] == task.prompt
            assert gold["canonical_solution"].startswith(task.prompt)
            assert 2 <= len(public) <= 3 and public == docstring_tests(task.prompt, gold["entry_point"])
            assert not set(public) & set(gold["asserts"])
            assert all(a.startswith(f"assert {gold['entry_point']}(") for a in gold["asserts"])
