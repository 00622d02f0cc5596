"""Loading MathTool tasks: GSM8K / MATH / MATH-500 schema detection, gold extraction, ids, files, reasoning-gym."""

import gzip
import json
import re
import sys

import pytest
from helpers.gates import requires_reasoning_gym

from agentgym.envs.code.math_data import (
    REASONING_GYM_NUMERIC,
    bundled_math_files,
    find_math_files,
    load_math_tasks,
    reasoning_gym_tasks,
    task_from_record,
)
from agentgym.errors import ConfigError, DataError, DependencyNotInstalled

GSM8K = [
    {"question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
                 "How many clips did Natalia sell altogether in April and May?",
     "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips.\n#### 72"},
    {"question": "A shop sells 1,250 pens a day. How many pens does it sell in 4 days?",
     "answer": "1250*4 = <<1250*4=5000>>5000\n#### 5,000", "code": "print(1250 * 4)\n"},
]
MATH = [
    {"problem": "What is $\\frac{1}{4} + \\frac{1}{4}$?", "level": "Level 1", "type": "Prealgebra",
     "solution": "We have $\\frac{1}{4} + \\frac{1}{4} = \\boxed{\\frac{1}{2}}$."},
    {"problem": "Find the larger root of $x^2 - 6x + 4 = 0$.", "level": "Level 3", "type": "Algebra",
     "solution": "The roots are $\\boxed{3 - \\sqrt{5}}$ and $3 + \\sqrt{5}$, so the larger is $\\boxed{3 + \\sqrt{5}}$."},
]
MATH500 = [
    {"problem": "Compute $\\dbinom{10}{5}$.", "solution": "... $\\boxed{252}$.", "answer": "252",
     "subject": "Counting & Probability", "level": 2, "unique_id": "test/counting_and_probability/1.json"},
    {"problem": "Simplify $\\frac{2}{4}$.", "solution": "It is $\\boxed{\\dfrac12}$.", "answer": "\\frac{1}{2}",
     "subject": "Prealgebra", "level": 1, "unique_id": "test/prealgebra/7.json"},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_parquet(path, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_gsm8k_records_give_the_number_after_the_last_hashes(tmp_path):
    tasks = load_math_tasks({"train": write_jsonl(tmp_path / "train.jsonl", GSM8K)})
    first, second = tasks.tasks("train")
    assert (first.id, first.gold, first.prompt) == ("train_0", {"answer": "72"}, GSM8K[0]["question"])
    assert first.meta == {"source": "gsm8k"}
    assert second.gold == {"answer": "5000"}  # thousands commas removed
    assert second.meta["oracle_code"] == "print(1250 * 4)"


def test_math_records_give_the_last_boxed_answer_with_nested_braces(tmp_path):
    tasks = load_math_tasks({"test": write_jsonl(tmp_path / "test.jsonl", MATH)})
    half, root = tasks.tasks("test")
    assert half.gold == {"answer": "\\frac{1}{2}"}
    assert root.gold == {"answer": "3 + \\sqrt{5}"}  # the last box, not the first
    assert half.meta == {"source": "math", "level": "Level 1", "type": "Prealgebra"}
    assert half.prompt == MATH[0]["problem"]


def test_math500_records_use_their_answer_field_and_unique_id(tmp_path):
    tasks = load_math_tasks({"test": write_jsonl(tmp_path / "test.jsonl", MATH500)})
    binom, half = tasks.tasks("test")
    assert binom.id == "test/counting_and_probability/1.json" and binom.gold == {"answer": "252"}
    assert half.gold == {"answer": "\\frac{1}{2}"}  # the explicit answer wins over the \dfrac12 box
    assert half.meta == {"source": "math", "level": 1, "subject": "Prealgebra"}


def test_parquet_gzip_and_mixed_files_in_one_split(tmp_path):
    parquet = write_parquet(tmp_path / "math.parquet", MATH)
    gz = tmp_path / "gsm8k.jsonl.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in GSM8K)
    tasks = load_math_tasks({"train": [gz, parquet]})
    assert [t.id for t in tasks.tasks("train")] == ["train_0", "train_1", "train_2", "train_3"]
    assert [t.meta["source"] for t in tasks.tasks("train")] == ["gsm8k", "gsm8k", "math", "math"]
    assert tasks.get("train_2").gold == {"answer": "\\frac{1}{2}"}


def test_case_insensitive_keys_and_numeric_answers_load_aime_style_files(tmp_path):
    rows = [{"ID": "2024-I-1", "Problem": "Find $x$.", "Solution": "So $x = 204$.", "Answer": 204}]
    task = load_math_tasks({"test": write_jsonl(tmp_path / "aime.jsonl", rows)}).get("2024-I-1")
    assert task.gold == {"answer": "204"} and task.prompt == "Find $x$."


def test_repeated_ids_get_split_then_file_prefixes(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", [dict(GSM8K[0], id="q1")])
    b = write_jsonl(tmp_path / "b.jsonl", [dict(GSM8K[1], id="q1")])
    c = write_jsonl(tmp_path / "c.jsonl", [dict(MATH[0], id="q1")])
    d = write_jsonl(tmp_path / "d.jsonl", [dict(MATH[1], id="q1")])
    tasks = load_math_tasks({"test": [a, b, c], "train": d})
    assert [t.id for t in tasks.tasks("test")] == ["q1", "test/q1", "test/c/q1"]
    assert [t.id for t in tasks.tasks("train")] == ["train/q1"]
    same_file = write_jsonl(tmp_path / "e.jsonl", [dict(GSM8K[0], id="x")] * 4)
    with pytest.raises(DataError, match=r"e\.jsonl: record 4 repeats the id 'x'"):
        load_math_tasks({"train": same_file})


@pytest.mark.parametrize(("record", "message"), [
    ({"question": "How many?", "answer": "Twelve."}, "must end with '#### <final answer>'"),
    ({"problem": "Compute $1+1$.", "solution": "It is 2."}, "balanced \\\\boxed"),
    ({"problem": "Compute $1+1$.", "solution": "It is $\\boxed{2$."}, "balanced \\\\boxed"),
    ({"prompt": "Compute 1+1.", "completion": "2"}, "neither the GSM8K schema .* keys \\['completion', 'prompt'\\]"),
    ({"question": "", "answer": "#### 3"}, "neither the GSM8K schema"),
])
def test_bad_records_name_the_file_and_record(tmp_path, record, message):
    path = write_jsonl(tmp_path / "train.jsonl", [GSM8K[0], record])
    with pytest.raises(DataError, match=f"train\\.jsonl: record 2: .*{message}"):
        load_math_tasks({"train": path})


def test_task_from_record_is_usable_alone():
    task = task_from_record(MATH[0], split="dev", index=7, source="inline")
    assert (task.id, task.split, task.gold) == ("dev_7", "dev", {"answer": "\\frac{1}{2}"})
    with pytest.raises(DataError, match="^inline: neither"):
        task_from_record({"text": "hi"}, split="dev", index=0, source="inline")


def test_find_math_files_groups_files_by_split(tmp_path):
    write_jsonl(tmp_path / "train.jsonl", GSM8K)
    write_jsonl(tmp_path / "gsm8k_test.jsonl", GSM8K)
    write_parquet(tmp_path / "test-00000-of-00001.parquet", MATH)
    write_jsonl(tmp_path / "validation.jsonl", MATH)
    (tmp_path / "README.md").write_text("not data")
    found = find_math_files(tmp_path)
    assert {s: [p.name for p in ps] for s, ps in found.items()} == {
        "test": ["gsm8k_test.jsonl", "test-00000-of-00001.parquet"], "train": ["train.jsonl"],
        "validation": ["validation.jsonl"]}
    assert len(load_math_tasks(found)) == 8


def test_find_math_files_reads_the_original_math_release_tree(tmp_path):
    for i, record in enumerate(MATH):
        folder = tmp_path / "MATH" / "train" / ("algebra" if i else "prealgebra")
        folder.mkdir(parents=True)
        (folder / f"{i}.json").write_text(json.dumps(record))
    found = find_math_files(tmp_path / "MATH")
    tasks = load_math_tasks(found)
    assert [t.id for t in tasks.tasks("train")] == ["train/algebra/1.json", "train/prealgebra/0.json"]


def test_find_math_files_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        find_math_files(tmp_path / "missing")
    with pytest.raises(DataError, match="No math files"):
        find_math_files(tmp_path)


def test_bundled_files_load_into_train_and_test():
    files = bundled_math_files()
    assert {s: [p.name for p in ps] for s, ps in files.items()} == {
        "train": ["gsm8k_train.jsonl", "math_train.jsonl"], "test": ["gsm8k_test.jsonl", "math_test.jsonl"]}
    tasks = load_math_tasks(files)
    assert (len(tasks.tasks("train")), len(tasks.tasks("test"))) == (1500, 500)
    sources = {t.meta["source"] for s in tasks.splits() for t in tasks.tasks(s)}
    assert sources == {"gsm8k", "math"}
    assert all(t.meta["oracle_code"] and t.gold["answer"] for s in tasks.splits() for t in tasks.tasks(s))
    assert tasks.get("gsm8k-test-00000").meta == {"source": "gsm8k", "oracle_code": tasks.get(
        "gsm8k-test-00000").meta["oracle_code"], "topic": "arithmetic"}


@requires_reasoning_gym
def test_reasoning_gym_tasks_are_numeric_seeded_and_split():
    tasks = reasoning_gym_tasks(["gcd", "dice", "gsm_symbolic"], size_per_split=6, seed=3)
    again = reasoning_gym_tasks(["gcd", "dice", "gsm_symbolic"], size_per_split=6, seed=3)
    assert tasks.splits() == ["test", "train"]
    for split in tasks.splits():
        assert [t.as_dict() for t in tasks.tasks(split)] == [t.as_dict() for t in again.tasks(split)]
    train = {t.prompt for t in tasks.tasks("train")}
    assert len(tasks.tasks("train")) == 18 and not train & {t.prompt for t in tasks.tasks("test")}
    dice = [t for t in tasks.tasks("train") if t.meta == {"source": "reasoning_gym", "dataset": "dice"}]
    assert len(dice) == 6 and all("/" in t.gold["answer"] for t in dice)  # probabilities as reduced fractions
    assert tasks.get("gcd/test_0").gold["answer"].isdigit()
    assert reasoning_gym_tasks(["gcd"], size_per_split=2, seed=4).get("gcd/train_0").prompt != \
        tasks.get("gcd/train_0").prompt


def test_reasoning_gym_rejects_non_numeric_datasets_and_bad_sizes():
    with pytest.raises(ConfigError, match="'word_ladder'.*pick from basic_arithmetic"):
        reasoning_gym_tasks(["gcd", "word_ladder"], size_per_split=2, seed=0)
    with pytest.raises(ConfigError, match="at least 1"):
        reasoning_gym_tasks(["gcd"], size_per_split=0, seed=0)
    assert "prime_factorization" not in REASONING_GYM_NUMERIC  # "2 × 2 × 5" is not one number


def test_missing_reasoning_gym_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "reasoning_gym", None)
    with pytest.raises(DependencyNotInstalled, match="pip install reasoning-gym"):
        reasoning_gym_tasks(["gcd"], size_per_split=2, seed=0)


@requires_reasoning_gym
def test_reasoning_gym_config_sets_a_datasets_difficulty():
    easy = reasoning_gym_tasks(["chain_sum"], size_per_split=20, seed=0,
                               configs={"chain_sum": {"min_terms": 2, "max_terms": 2, "max_digits": 1}})
    for task in easy.tasks("train"):
        terms = re.findall(r"\d+", task.prompt.split(":")[-1])
        assert len(terms) == 2 and all(len(t) == 1 for t in terms), task.prompt
    with pytest.raises(ConfigError, match="reasoning_gym_config names \\['gcd'\\]"):
        reasoning_gym_tasks(["chain_sum"], size_per_split=2, seed=0, configs={"gcd": {}})
    with pytest.raises(ConfigError, match="'chain_sum' rejected the config"):
        reasoning_gym_tasks(["chain_sum"], size_per_split=2, seed=0, configs={"chain_sum": {"no_such_field": 1}})
