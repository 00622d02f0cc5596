"""The bundled PyCode data: schema, counts, every reference solution passing, and that the script reproduces it."""

import ast
import hashlib
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from agentgym.envs.code.pycode_data import BUNDLED_DIR

ROOT = Path(__file__).resolve().parents[2]
KEYS = ["task_id", "prompt", "canonical_solution", "test", "entry_point", "public_tests", "split", "family",
        "variant"]

# Runs in a fresh interpreter: the reference solutions are trusted, and a subprocess keeps them out of pytest's.
RUNNER = r"""
import json, sys, time

start = time.perf_counter()
failures = []
for t in json.load(sys.stdin):
    entry, params = t["entry_point"], t["prompt"].split("(", 1)[1].split(")", 1)[0]
    ref = {}
    exec(t["prompt"] + t["canonical_solution"], ref)
    for line in t["test"].splitlines()[1:] + t["public_tests"]:
        try:
            exec(line.strip().replace("candidate(", entry + "(", 1), dict(ref))
        except Exception as e:
            failures.append(f"{t['task_id']} {line.strip()[:80]}: {type(e).__name__}")
    first = params.split(",", 1)[0].split(":", 1)[0].strip()
    for body in ("None", first):  # trivial wrong solutions must fail a hidden assert
        bad = {}
        exec(t["prompt"] + f"    return {body}\n", bad)
        check = {}
        exec(t["test"], check)
        try:
            check["check"](bad[entry])
            failures.append(f"{t['task_id']}: 'return {body}' passes every hidden assert")
        except AssertionError:
            pass
print(json.dumps({"failures": failures, "seconds": time.perf_counter() - start}))
"""


def records(split):
    return [json.loads(line) for line in (BUNDLED_DIR / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()]


def hidden_asserts(test: str) -> list[ast.Assert]:
    """The body of check(candidate), which must be one top-level assert per line."""
    lines = test.splitlines()
    assert lines[0] == "def check(candidate):", lines[0]
    nodes = []
    for line in lines[1:]:
        assert line.startswith("    assert candidate(") and line == line.rstrip(), line
        (node,) = ast.parse(line.strip()).body
        nodes.append(node)
    return nodes


def is_literal(node: ast.expr) -> bool:
    value = ast.literal_eval(node)
    return not isinstance(value, float) or (value * 64).is_integer()  # floats only if exact, like 2.5


def test_schema_and_counts():
    train, test = records("train"), records("test")
    tasks = train + test
    assert len(tasks) >= 150 and train and test and 0.2 <= len(test) / len(tasks) <= 0.4
    assert all(t["split"] == "train" for t in train) and all(t["split"] == "test" for t in test)
    assert len({t["task_id"] for t in tasks}) == len(tasks) and len({t["prompt"] for t in tasks}) == len(tasks)
    assert len({t["family"] for t in tasks}) >= 40
    # splits are by family variant: no (family, variant) has tasks in both
    assert not {(t["family"], t["variant"]) for t in train} & {(t["family"], t["variant"]) for t in test}
    for t in tasks:
        entry = t["entry_point"]
        assert list(t) == KEYS and t["task_id"].startswith("PyCode/")
        assert t["prompt"].startswith(f"def {entry}(") and t["prompt"].endswith('    """\n')
        assert all(line.startswith("    ") for line in t["canonical_solution"].splitlines())
        asserts = hidden_asserts(t["test"])
        assert len(asserts) >= 8
        for node in asserts:
            call, (op,), (expected,) = node.test.left, node.test.ops, node.test.comparators
            assert isinstance(op, ast.Eq) and call.func.id == "candidate" and not call.keywords
            assert all(is_literal(arg) for arg in call.args) and is_literal(expected)
        public = t["public_tests"]
        assert 2 <= len(public) <= 3 and all(p.startswith(f"assert {entry}(") for p in public)
        hidden = {line.strip() for line in t["test"].splitlines()[1:]}
        for p in public:
            assert p.replace(f"assert {entry}(", "assert candidate(", 1) not in hidden
            call, want = p[len("assert "):].split(" == ", 1)  # shown as a doctest example too
            assert f"    >>> {call}\n    {want}\n" in t["prompt"]
    per_family = Counter(t["family"] for t in tasks)
    assert min(per_family.values()) >= 2


def test_every_reference_solution_passes_and_trivial_ones_fail():
    """All hidden and public asserts of all tasks, in one fresh interpreter."""
    tasks = records("train") + records("test")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(tasks), capture_output=True, text=True,
                          timeout=60)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["failures"] == []
    assert elapsed < 20, f"running every reference solution took {elapsed:.1f} s"


def test_generator_is_deterministic_and_matches_the_bundled_files(tmp_path):
    """Regenerating with the default seed reproduces the committed files byte for byte, whatever the hash seed."""
    for hash_seed in ("0", "12345"):
        out = tmp_path / hash_seed
        proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_pycode_data.py"), "--seed", "0",
                               "--out", str(out)], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONHASHSEED": hash_seed})
        assert proc.returncode == 0, proc.stderr[-2000:]
        stats = json.loads(proc.stdout)
        assert stats["train"] + stats["test"] >= 150
        for name in ("train.jsonl", "test.jsonl"):
            digest = hashlib.sha256((out / name).read_bytes()).hexdigest()
            assert digest == hashlib.sha256((BUNDLED_DIR / name).read_bytes()).hexdigest(), (hash_seed, name)


def test_another_seed_gives_other_tasks(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_pycode_data.py"), "--seed", "1",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    other = {json.loads(line)["prompt"] for line in (tmp_path / "train.jsonl").read_text().splitlines()}
    bundled = {t["prompt"] for t in records("train")}
    assert len(other & bundled) < len(bundled) // 2
