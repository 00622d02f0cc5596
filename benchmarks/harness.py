"""A tiny benchmark harness: rates with repeats, and ratios against a baseline from the same run.

Machines differ and are noisy; an absolute rate means little on its own, so each
benchmark also times a baseline in the same process and reports the ratio.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Measurement:
    name: str
    ops: int
    rate_per_s: float
    best_rate_per_s: float
    repeats: int


def measure(name: str, fn: Callable[[], int], *, repeats: int = 3, warmup: bool = True) -> Measurement:
    """Call ``fn`` (which does some operations and returns how many) ``repeats`` times; median rate."""
    if warmup:
        fn()
    rates, ops = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        ops = fn()
        rates.append(ops / (time.perf_counter() - start))
    return Measurement(name, ops, statistics.median(rates), max(rates), repeats)


def report(rows: list[Measurement], *, baseline: str | None = None, json_path: str | Path | None = None) -> None:
    """Print a table (rate and ratio to ``baseline``) and optionally write JSON."""
    base = next((r.rate_per_s for r in rows if r.name == baseline), None)
    print(f"{'benchmark':<48} {'ops':>7} {'median/s':>12} {'best/s':>12} {'x baseline':>11}")
    for r in rows:
        ratio = f"{r.rate_per_s / base:.3f}" if base else "-"
        print(f"{r.name:<48} {r.ops:>7} {r.rate_per_s:>12.1f} {r.best_rate_per_s:>12.1f} {ratio:>11}")
    if json_path:
        payload = [dict(asdict(r), ratio_to_baseline=(r.rate_per_s / base if base else None)) for r in rows]
        Path(json_path).write_text(json.dumps(payload, indent=2) + "\n")
