"""In-process WebShop text-mode throughput: env steps per second, against raw catalog search.

    python benchmarks/bench_webshop.py [--episodes 200] [--json out.json]

Baseline: the catalog's own BM25 ``search`` for the oracle's queries (one per episode),
so the ratios show what pages, parsing and the reward add on top of search.
The issue's target: >= 500 text-mode steps/s in process on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from harness import measure, report

import agentgym


def record_oracle(env, n: int) -> list[list]:
    """The oracle's actions for the first ``n`` test goals (each episode must score 1)."""
    plans = []
    for i in range(n):
        env.reset(options={"index": i})
        actions, done = [], False
        while not done:
            actions.append(env.oracle_action())
            *_, terminated, truncated, info = env.step(actions[-1])
            done = terminated or truncated
        if info["verification"]["reward"] < 1.0:
            raise SystemExit(f"the oracle failed on {env.task.id}: {info['verification']}")
        plans.append(actions)
    return plans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    env = agentgym.make("agentgym/WebShop-v0").unwrapped
    n = min(args.episodes, len(env.tasks.tasks("test")))
    plans = record_oracle(env, n)  # recorded once, so the timing excludes the oracle
    queries = [plan[0][len("search["):-1] for plan in plans]

    def search_only() -> int:
        for q in queries:
            env.catalog.search(q)
        return n

    def oracle_steps() -> int:
        steps = 0
        for i, plan in enumerate(plans):
            env.reset(options={"index": i})
            for action in plan:
                env.step(action)
            steps += len(plan)
        return steps

    def click_steps() -> int:
        steps = 0
        for i, plan in enumerate(plans):
            env.reset(options={"index": i})
            env.step(plan[0])
            for _ in range(3):  # open the product, read its features, come back: no search involved
                env.step(plan[1])
                env.step("click[Features]")
                env.step("click[< Prev]")
                env.step("click[< Prev]")
                steps += 4
        return steps

    rows = [measure("catalog search only (searches/s, baseline)", search_only),
            measure("oracle episodes (env steps/s, incl. search)", oracle_steps),
            measure("navigation clicks (env steps/s, no search)", click_steps)]
    report(rows, baseline=rows[0].name, json_path=args.json)


if __name__ == "__main__":
    main()
