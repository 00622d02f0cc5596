"""WebShop browser-mode throughput and page-load latency, against the text mode on the same goals.

    python benchmarks/bench_webshop_browser.py [--episodes 20] [--samples 60] [--data-dir DIR] [--json out.json]

Baseline: the text mode (``agentgym/WebShop-v0``) replaying its oracle's episodes, so
the ratio is what a real Chromium page costs per action. Browser rows replay the
browser oracle's recorded actions (ids are deterministic per episode), so the oracle's
own parsing is not timed. Latency: milliseconds from an action to its observation
(navigation + accessibility tree), median and p90 over ``--samples`` steps.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from urllib.parse import urlencode

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from bench_webshop import record_oracle
from harness import measure, report

from agentgym.envs.webshop import WebShopEnv
from agentgym.envs.webshop.browser import SHOP_ORIGIN, WebShopBrowserEnv, parse_tree


def replay(env, plans: list[list]) -> Callable[[], int]:
    def run() -> int:
        steps = 0
        for i, plan in enumerate(plans):
            env.reset(options={"index": i})
            for action in plan:
                reward = env.step(action)[1]
            if reward < 1.0:  # a replay that drifted from the recording would time something else
                raise SystemExit(f"replaying episode {i} scored {reward}")
            steps += len(plan)
        return steps
    return run


def latency_ms(step: Callable[[int], None], samples: int) -> tuple[float, float]:
    times = []
    for i in range(samples):
        start = time.perf_counter()
        step(i)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), statistics.quantiles(times, n=10)[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--data-dir", default=None, help="WebShop data (default: the bundled catalog)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    text = WebShopEnv(data_dir=args.data_dir)
    browser = WebShopBrowserEnv(data_dir=args.data_dir, max_turns=10_000)  # latency rows step a lot
    n = min(args.episodes, len(browser.tasks.tasks("test")))
    text_plans, browser_plans = record_oracle(text, n), record_oracle(browser, n)

    def resets() -> int:
        for i in range(n):
            browser.reset(options={"index": i})
        return n

    rows = [measure("text mode oracle episodes (steps/s, baseline)", replay(text, text_plans)),
            measure("browser oracle episodes (actions/s, w/ resets)", replay(browser, browser_plans), repeats=1),
            measure("browser reset: new page + search page (/s)", resets, repeats=1)]
    report(rows, baseline=rows[0].name, json_path=args.json)

    product = browser.catalog.products[browser.tasks.tasks("test")[0].gold["asin"]]
    browser.reset(options={"index": 0})
    pages = [f"{SHOP_ORIGIN}/search?{urlencode({'q': product.name})}", f"{SHOP_ORIGIN}/item/{product.asin}"]

    def goto(i: int) -> None:
        browser.step(f'goto("{pages[i % 2]}")')

    def click_link(i: int) -> None:  # results -> item by its link, then back to the results by "< Prev"
        nodes = parse_tree(browser.page.view.tree)
        name = "< Prev" if "/item/" in browser.page.view.url else product.asin
        browser.step(f'click("{next(n.ref for n in nodes if n.role == "link" and n.name == name)}")')

    latencies = [("goto a page (navigation + tree)", goto), ("click a link (navigation + tree)", click_link),
                 ("noop (tree only, no navigation)", lambda i: browser.step("noop()"))]
    print(f"\n{'action -> observation latency':<48} {'samples':>7} {'median ms':>12} {'p90 ms':>12}")
    for name, step in latencies:
        browser.reset(options={"index": 0})
        browser.step(f'goto("{pages[0]}")')
        median, p90 = latency_ms(step, args.samples)
        print(f"{name:<48} {args.samples:>7} {median:>12.1f} {p90:>12.1f}")
    browser.close()


if __name__ == "__main__":
    main()
