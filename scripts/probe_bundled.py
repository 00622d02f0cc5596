#!/usr/bin/env python
"""Run `agentgym probe`'s battery on every bundled env and write what the leaderboard and the docs show:
agentgym/data/probes/bundled.json (each env's report without the episodes' transcripts) and, on stdout, the table
of docs/probe.md. Rerun it whenever the battery's version changes (tests/test_probe.py checks the file's).

    python scripts/probe_bundled.py [--episodes 20] [--out agentgym/data/probes/bundled.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path

from agentgym.probe import BATTERY_VERSION, probe_env

ROOT = Path(__file__).resolve().parents[1]
# the browser and SWE play a task in seconds, not milliseconds: fewer tasks
ENVS = {"agentgym/SearchQA-v0": 1.0, "agentgym/MathTool-v0": 1.0, "agentgym/PyCode-v0": 1.0,
        "agentgym/WebShop-v0": 1.0, "agentgym/ALFWorld-v0": 1.0, "agentgym/SWEBench-v0": 0.5,
        "agentgym/WebShopBrowser-v0": 0.5}


def _cpu() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        return platform.processor() or "unknown CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "agentgym" / "data" / "probes" / "bundled.json")
    args = parser.parse_args()
    start = time.perf_counter()
    reports, rows = [], []
    for env_id, share in ENVS.items():
        report = probe_env(env_id, episodes=max(1, round(args.episodes * share)))
        body = report.as_dict()
        for probe in body["probes"].values():
            probe.pop("best_episode", None)
        reports.append(body)
        played = [r for r in report.probes.values() if not r.skipped]
        best = max(played, key=lambda r: r.mean_reward)
        families = sorted({r.family for r in played})
        rows.append(f"| `{env_id}` | {len(report.tasks)} | {len(played)} ({', '.join(families)}) | "
                    f"**{report.exploit_rate:.2f}** | {best.mean_reward:.2f} (`{best.name}`) | {report.seconds:.1f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"battery_version": BATTERY_VERSION, "cpu": _cpu(), "envs": reports}, indent=1)
                        + "\n", encoding="utf-8")
    print(f"battery v{BATTERY_VERSION}, {_cpu()}, {time.perf_counter() - start:.0f} s in all; wrote {args.out}\n")
    print("| env | tasks | probes that apply | exploit rate | best mean reward of a probe | seconds |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
