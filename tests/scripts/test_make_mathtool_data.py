"""The bundled MathTool data: schemas, counts, gold answers, oracle programs, and that the seeded script reproduces it."""

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest
from helpers.gates import requires_math_verify

from agentgym.envs.code.math_data import BUNDLED_DIR
from agentgym.verifiers.math import extract_boxed

ROOT = Path(__file__).resolve().parents[2]
FILES = ("gsm8k_train.jsonl", "gsm8k_test.jsonl", "math_train.jsonl", "math_test.jsonl")
MATH_TYPES = {"Prealgebra", "Algebra", "Intermediate Algebra", "Number Theory", "Counting & Probability",
              "Precalculus", "Calculus"}
TOPICS = {"arithmetic", "algebra", "number_theory", "combinatorics", "probability", "calculus", "precalculus"}
ALLOWED_IMPORTS = {"math", "fractions", "itertools", "sympy"}


def records(name):
    return [json.loads(line) for line in (BUNDLED_DIR / name).read_text(encoding="utf-8").splitlines()]


def gold(record):
    if "question" in record:
        return record["answer"].rsplit("####", 1)[1].strip()
    return extract_boxed(record["solution"])


def test_files_are_small_and_counted():
    sizes = {name: len(records(name)) for name in FILES}
    assert sizes == {"gsm8k_train.jsonl": 600, "gsm8k_test.jsonl": 200, "math_train.jsonl": 900,
                     "math_test.jsonl": 300}
    assert sum((BUNDLED_DIR / name).stat().st_size for name in FILES) < 3_000_000


def test_gsm8k_schema_and_calculator_annotations():
    for name in ("gsm8k_train.jsonl", "gsm8k_test.jsonl"):
        split = name.split("_")[1].split(".")[0]
        for i, r in enumerate(records(name)):
            assert set(r) == {"id", "question", "answer", "topic", "code"}
            assert r["id"] == f"gsm8k-{split}-{i:05d}" and r["topic"] == "arithmetic"
            *steps, final = r["answer"].split("\n")
            assert len(steps) >= 3 and re.fullmatch(r"#### [1-9]\d*", final), r["answer"]
            for expr, value in re.findall(r"<<([^=<>]+)=([^<>]+)>>", r["answer"]):
                assert eval(expr, {"__builtins__": {}}) == Fraction(value), (expr, value)  # our own arithmetic


def test_math_schema_levels_types_and_topics():
    for name in ("math_train.jsonl", "math_test.jsonl"):
        rows = records(name)
        for r in rows:
            assert set(r) == {"id", "problem", "level", "type", "solution", "topic", "code"}
            assert r["level"] in {f"Level {k}" for k in range(1, 6)} and r["type"] in MATH_TYPES
            assert r["solution"].rstrip().endswith("}$.") and gold(r), r["solution"]
        topics = Counter(r["topic"] for r in rows)
        assert set(topics) == TOPICS and min(topics.values()) >= len(rows) // 40, topics
        assert set(Counter(r["type"] for r in rows)) == MATH_TYPES


def test_problems_are_distinct_and_splits_disjoint():
    texts = {name: [r.get("question") or r["problem"] for r in records(name)] for name in FILES}
    every = [t for ts in texts.values() for t in ts]
    assert len(set(every)) == len(every)
    ids = [r["id"] for name in FILES for r in records(name)]
    assert len(set(ids)) == len(ids)


def test_oracle_programs_import_only_the_allowed_modules():
    for name in FILES:
        for r in records(name):
            imports = set(re.findall(r"^(?:from|import) (\w+)", r["code"], flags=re.MULTILINE))
            assert imports <= ALLOWED_IMPORTS, (r["id"], imports)


@pytest.mark.slow
def test_every_oracle_program_prints_its_gold():
    """All 2,000 programs, each exec'd in a fresh namespace, in one interpreter: under 60 s (about 5 s here; the
    bound leaves room for a machine ten times slower and busy, it only catches a program that hangs or loops)."""
    script = textwrap.dedent("""
        import contextlib, io, json, sys, time
        start, wrong = time.perf_counter(), []
        for code, gold in json.load(sys.stdin):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, "<oracle>", "exec"), {"__name__": "__main__"})
            if out.getvalue().strip() != gold:
                wrong.append([gold, out.getvalue()])
        print(json.dumps({"wrong": wrong, "seconds": time.perf_counter() - start}))
    """)
    pairs = [[r["code"], gold(r)] for name in FILES for r in records(name)]
    proc = subprocess.run([sys.executable, "-c", script], input=json.dumps(pairs), capture_output=True, text=True,
                          timeout=300, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["wrong"] == []
    assert result["seconds"] < 60


@pytest.mark.slow
@requires_math_verify
def test_every_gold_is_accepted_by_the_verifier_and_a_wrong_answer_is_not():
    from agentgym.verifiers.math import verify_math

    for name in FILES:
        for r in records(name):
            g = gold(r)
            assert verify_math(f"\\boxed{{{g}}}", g).correct, (r["id"], g)
            assert not verify_math(f"\\boxed{{{g} + 1}}", g).correct, (r["id"], g)


@pytest.mark.slow
def test_generator_is_deterministic_and_matches_the_bundled_files(tmp_path):
    """Regenerating with the default seed, under another hash seed, reproduces the files byte for byte (~25 s)."""
    out = tmp_path / "gen"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_mathtool_data.py"), "--out", str(out)],
                          capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)
    assert {k: v["total"] for k, v in stats.items()} == {"gsm8k_train": 600, "gsm8k_test": 200,
                                                         "math_train": 900, "math_test": 300}
    for name in FILES:
        digest = hashlib.sha256((out / name).read_bytes()).hexdigest()
        assert digest == hashlib.sha256((BUNDLED_DIR / name).read_bytes()).hexdigest(), name
