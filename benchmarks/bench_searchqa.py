"""In-process SearchQA throughput: reset+step episodes per second, against raw retrieval.

    python benchmarks/bench_searchqa.py [--episodes 500] [--json out.json]

Baseline: the retriever's own ``search`` for the same queries, so the ratio is the
env's overhead (parsing, rendering, verification) on top of retrieval.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from harness import measure, report  # noqa: E402

import agentgym  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=500)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    env = agentgym.make("agentgym/SearchQA-v0").unwrapped
    n = min(args.episodes, len(env.tasks.tasks("test")))
    questions = [t.prompt for t in env.tasks.tasks("test")[:n]]

    def retrieval_only() -> int:
        for q in questions:
            env.retriever.search(q, env.topk)
        return n

    def reset_search_answer() -> int:
        for i in range(n):
            env.reset(seed=i, options={"index": i})
            env.step(f"<search>{questions[i]}</search>")
            env.step("<answer>unknown</answer>")
        return n

    def reset_step_malformed() -> int:
        for i in range(n):
            env.reset(seed=i, options={"index": i})
            env.step("no action here")
        return n

    rows = [measure("retrieval only (search/s, baseline)", retrieval_only),
            measure("episode: reset + search + answer (episodes/s)", reset_search_answer),
            measure("reset + malformed step, no retrieval (/s)", reset_step_malformed)]
    report(rows, baseline=rows[0].name, json_path=args.json)


if __name__ == "__main__":
    main()
