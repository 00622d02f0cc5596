"""The bundled SearchQA data: schema, counts, grounding, and that the seeded script reproduces it."""

import gzip
import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from agentgym.envs.search.data import BUNDLED_DIR
from agentgym.verifiers.qa import normalize_answer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus():
    with gzip.open(BUNDLED_DIR / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    return {r["id"]: r["contents"] for r in rows}


def questions(split):
    return [json.loads(line) for line in (BUNDLED_DIR / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()]


def test_corpus_schema_and_size(corpus):
    assert len(corpus) >= 10_000
    titles = [c.split("\n", 1)[0] for c in corpus.values()]
    assert all(t.startswith('"') and t.endswith('"') and len(t) > 2 for t in titles)
    assert len(set(titles)) == len(titles), "titles must be unique"
    assert all(len(c.split("\n", 1)[1]) > 20 for c in corpus.values())


def test_questions_schema_counts_and_grounding(corpus):
    train, test = questions("train"), questions("test")
    assert len(train) + len(test) >= 2_000 and len(test) >= 500
    assert not {q["question"] for q in train} & {q["question"] for q in test}
    types = Counter(q["metadata"]["type"] for q in train + test)
    assert set(types) == {"single-hop", "bridge", "comparison"} and min(types.values()) >= 300
    for q in train + test:
        assert q["question"].endswith("?") and q["golden_answers"] and all(q["golden_answers"])
        meta = q["metadata"]
        assert len(meta["supporting_docs"]) == len(meta["oracle_queries"]) == (1 if meta["type"] == "single-hop" else 2)
        support = " ".join(normalize_answer(corpus[d]) for d in meta["supporting_docs"])
        assert normalize_answer(q["golden_answers"][0]) in support, q
    assert len({q["id"] for q in train + test}) == len(train) + len(test)


def test_generator_is_deterministic_and_matches_the_bundled_files(tmp_path):
    """Regenerating with the default seed reproduces the committed files byte for byte."""
    out = tmp_path / "gen"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_searchqa_data.py"), "--out", str(out)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)
    assert stats["answer_in_support_rate"] == 1.0 and stats["retrieval_check_rate"] >= 0.99
    for name in ("corpus.jsonl.gz", "train.jsonl", "test.jsonl"):
        digest = hashlib.sha256((out / name).read_bytes()).hexdigest()
        assert digest == hashlib.sha256((BUNDLED_DIR / name).read_bytes()).hexdigest(), name
