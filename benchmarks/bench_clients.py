"""An honest client's latency while another client floods the server, against its own latency alone (same run).

    python benchmarks/bench_clients.py [--rounds 40] [--json out.json]

A real ``agentgym serve`` (SearchQA and MathTool, its default threads). The honest client is on the same host
with a token the operator issued it (``--client-token honest=...``: another loopback address is the same client)
and times, per round, a ``/v1/verify``, a new SearchQA session (create), and a step of it; p50 and
p99 over the rounds, first alone, then while the flood runs from 127.0.0.1: threads that post verifications
without pause, each with a made-up bearer token and ``X-Forwarded-For`` (the old server counted each as a new
client), and 16 MathTool sessions whose every step runs code that sleeps 9 s (holding the env threads). The
ratio loaded / alone is what the issue bounds (2x at p99).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from agentgym.testing import serving  # noqa: E402

SEARCH, MATH = "agentgym/SearchQA-v0", "agentgym/MathTool-v0"
VERIFY = {"verifier": "qa_em", "prediction": "Lima", "task": {"golden_answers": ["Lima"]}}


def honest_round(client: httpx.Client) -> dict[str, float]:
    times = {}
    start = time.perf_counter()
    assert client.post("/v1/verify", json=VERIFY).status_code == 200
    times["verify"] = time.perf_counter() - start
    start = time.perf_counter()
    created = client.post("/v1/sessions", json={"env_id": SEARCH})
    assert created.status_code == 201, created.text
    times["create"] = time.perf_counter() - start
    sid = created.json()["session_id"]
    start = time.perf_counter()
    step = client.post(f"/v1/sessions/{sid}/step", json={"action": "<search>capital of Peru</search>"})
    assert step.status_code == 200, step.text
    times["step"] = time.perf_counter() - start
    client.delete(f"/v1/sessions/{sid}")
    return times


def measure(client: httpx.Client, rounds: int) -> dict[str, dict[str, float]]:
    honest_round(client)  # warm: the first session loads the corpus
    runs = [honest_round(client) for _ in range(rounds)]
    out = {}
    for name in ("verify", "create", "step"):
        values = sorted(r[name] for r in runs)
        out[name] = {"p50_s": statistics.median(values), "p99_s": values[min(len(values) - 1,
                                                                               int(0.99 * len(values)))]}
    return out


def flood(url: str, stop: threading.Event) -> None:
    """Posing as many: verifications with a new token and forwarded address each, without pause."""
    def verifier(k: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            i = 0
            while not stop.is_set():
                i += 1
                client.post("/v1/verify", json=VERIFY, headers={"Authorization": f"Bearer made-up-{k}-{i}",
                                                                "X-Forwarded-For": f"10.{k}.{i % 250}.1"})

    def holder() -> None:
        with httpx.Client(base_url=url, timeout=120) as client:
            created = client.post("/v1/sessions", json={"env_id": MATH, "kwargs": {"max_turns": 1000}})
            if created.status_code != 201:
                return
            sid = created.json()["session_id"]
            while not stop.is_set():
                client.post(f"/v1/sessions/{sid}/step",
                            json={"action": "<code>import time\ntime.sleep(9)\nprint(1)</code>"})

    workers = [threading.Thread(target=verifier, args=(k,), daemon=True) for k in range(8)]
    workers += [threading.Thread(target=holder, daemon=True) for _ in range(16)]
    for w in workers:
        w.start()
    stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    issued = "honest-client-token-0123"
    with serving(SEARCH, MATH, "--client-token", f"honest={issued}") as (url, _), \
            httpx.Client(base_url=url, timeout=120, headers={"Authorization": f"Bearer {issued}"}) as me:
        alone = measure(me, args.rounds)
        stop = threading.Event()
        thread = threading.Thread(target=flood, args=(url, stop), daemon=True)
        thread.start()
        time.sleep(12)  # the holders' first 9 s steps are running, the verify flood is on
        loaded = measure(me, args.rounds)
        stop.set()
    rows = []
    print(f"{'request':<8} {'alone p50':>10} {'alone p99':>10} {'flood p50':>10} {'flood p99':>10} {'p99 x':>7}")
    for name in ("verify", "create", "step"):
        a, b = alone[name], loaded[name]
        ratio = b["p99_s"] / a["p99_s"]
        print(f"{name:<8} {a['p50_s'] * 1000:>9.1f}ms {a['p99_s'] * 1000:>9.1f}ms {b['p50_s'] * 1000:>9.1f}ms "
              f"{b['p99_s'] * 1000:>9.1f}ms {ratio:>7.2f}")
        rows.append({"request": name, "alone": a, "flood": b, "p99_ratio": ratio})
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
