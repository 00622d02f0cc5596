"""BM25 queries/s, top-k, on the bundled corpus and on a synthetic large corpus, per engine.

    python benchmarks/bench_retrieval.py [--passages 100000] [--queries 2000] [--k 5] \
        [--engines bm25s,tantivy,pyserini] [--json out.json]

The synthetic corpus draws words from the bundled corpus's vocabulary with Zipfian
frequencies (seeded), ~80 words a passage; queries are 3-8 words taken from random
passages. Single = one query per call, as the env searches; batch = ``batch_search``.
The baseline row is tantivy single-query on the large corpus, from the same run.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from harness import Measurement, measure, report  # noqa: E402

from agentgym.envs.search.data import bundled_corpus  # noqa: E402
from agentgym.envs.search.retrieval import Corpus, make_retriever  # noqa: E402


def synthetic_corpus(n: int, seed: int, vocabulary: list[str]) -> Corpus:
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]  # Zipf, s = 1
    corpus = Corpus()
    for i in range(n):
        words = rng.choices(vocabulary, weights=weights, k=rng.randint(60, 100))
        corpus.add(str(i), " ".join(words[:3]).title(), " ".join(words[3:]))
    return corpus


def make_queries(corpus: Corpus, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    queries = []
    for _ in range(n):
        words = corpus.texts[rng.randrange(len(corpus))].split()
        start = rng.randrange(max(1, len(words) - 8))
        queries.append(" ".join(words[start:start + rng.randint(3, 8)]))
    return queries


def bench_engine(engine: str, corpus: Corpus, label: str, queries: list[str], k: int, cache: str) -> list[Measurement]:
    start = time.perf_counter()
    make_retriever(engine, corpus=corpus, cache_dir=cache)
    build_s = time.perf_counter() - start
    start = time.perf_counter()
    retriever = make_retriever(engine, corpus=corpus, cache_dir=cache)
    load_s = time.perf_counter() - start
    print(f"# {engine} on {label}: index build {build_s:.2f} s, load from cache {load_s:.2f} s", flush=True)

    def single() -> int:
        for q in queries:
            retriever.search(q, k)
        return len(queries)

    def batch() -> int:
        retriever.batch_search(queries, k)
        return len(queries)

    return [measure(f"{engine} {label} single top-{k} (q/s)", single),
            measure(f"{engine} {label} batch top-{k} (q/s)", batch, repeats=1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--engines", default="bm25s,tantivy,pyserini")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    engines = [e for e in args.engines.split(",") if e]
    bundled = Corpus.load(bundled_corpus())
    vocabulary = sorted({w.strip(".,()").lower() for t in bundled.texts for w in t.split() if w.isalpha()})
    random.Random(args.seed).shuffle(vocabulary)
    large = synthetic_corpus(args.passages, args.seed, vocabulary)
    rows: list[Measurement] = []
    with tempfile.TemporaryDirectory() as cache:
        for label, corpus in (("bundled", bundled), (f"synthetic-{args.passages // 1000}k", large)):
            queries = make_queries(corpus, args.queries, args.seed)
            for engine in engines:
                try:
                    rows += bench_engine(engine, corpus, label, queries, args.k, cache)
                except ImportError as e:  # DependencyNotInstalled: report and go on with the others
                    print(f"# {engine}: skipped ({e})")
    baseline = next((r.name for r in rows if r.name.startswith("tantivy synthetic") and "single" in r.name), None)
    report(rows, baseline=baseline, json_path=args.json)


if __name__ == "__main__":
    main()
