"""An honest client's service while one host floods the server over 1 to 64 connections or loopback addresses.

    python benchmarks/bench_flood.py [--connections 1 8 64] [--honest-connections 1 8] [--windows 4] [--on-s 2]
                                     [--off-s 1] [--server-args '...'] [--json out.json]

A real ``agentgym serve agentgym/SearchQA-v0`` with its default caps (``--max-client-requests 2``: the requests of
one client the server works on at once; ``--server-args`` changes them) and one issued token (``--client-token
honest=...``). For each connection count and each way of connecting (``one-address``: every connection from
127.0.0.1; ``addresses``: each from its own loopback address, 127.0.0.2, 127.0.0.3, ...), a flooder in a process
of its own posts ``/v1/verify`` (a QA verdict) on every
connection without pause during the "on" windows and stops during the "off" ones. The honest client, on the same
host and known by its issued token, sends requests throughout over ``--honest-connections`` connections, one at a
time on each (a verify, as the flood; ``--honest mixed``: a verify, then a step of a SearchQA session, in turn): over
one connection its latency is what is bounded; over 8 it asks for all it can get, and its share is what is seen.
Reported per setting: the honest client's requests answered, refused, p50 and p99 latency in the "on" windows and
alone (the "off" windows of the same run), its share of all answered in the "on" windows, and the flood's answered
and refused (429: the flood past its own verification limit).

Its fair share: with two clients, one that asks for all it can get (8 connections) may have half of what the
server answers, or what it gets alone if that is less: "fair" when its rate under the flood is at least 90% of that
(10% for noise). Over one connection it asks one request at a time, and what it is owed is a bounded wait: the
bound asked is 0 refused and p99 at most 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from agentgym.testing import serving  # noqa: E402

SEARCH = "agentgym/SearchQA-v0"
ISSUED = "bench-flood-honest-token-0123456789"
VERIFY = {"verifier": "qa_em", "prediction": "Lima", "task": {"golden_answers": ["Lima"]}}

FLOODER = textwrap.dedent("""
    import json, sys, threading, time
    import httpx
    url, connections, mode, start, on_s, off_s, windows = sys.argv[1:8]
    connections, start, on_s, off_s, windows = int(connections), float(start), float(on_s), float(off_s), int(windows)
    period, end = on_s + off_s, float(start) + int(windows) * (on_s + off_s)
    verify = {"verifier": "qa_em", "prediction": "Lima", "task": {"golden_answers": ["Lima"]}}
    counts = {}
    lock = threading.Lock()

    def flood(k):
        address = "127.0.0.1" if mode == "one-address" else f"127.0.{1 + (k + 1) // 250}.{2 + (k + 1) % 250}"
        with httpx.Client(base_url=url, timeout=60, transport=httpx.HTTPTransport(local_address=address)) as client:
            while (now := time.time()) < end:
                if now < start or (now - start) % period >= on_s:
                    time.sleep(0.005)
                    continue
                try:
                    status = client.post("/v1/verify", json=verify).status_code
                except httpx.HTTPError as e:
                    status = type(e).__name__
                with lock:
                    counts[str(status)] = counts.get(str(status), 0) + 1

    threads = [threading.Thread(target=flood, args=(k,)) for k in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps(counts))
""")


def _window_on(t: float, start: float, on_s: float, off_s: float) -> bool:
    return t >= start and (t - start) % (on_s + off_s) < on_s


def honest(client: httpx.Client, end: float, work: str = "verify") -> list[tuple[float, float, int]]:
    """(start time, seconds, status) of each request, one at a time until ``end``: verifications (the flood's own
    request), or ``mixed``: a verify, then a step of a SearchQA session, in turn."""
    created = client.post("/v1/sessions", json={"env_id": SEARCH})
    assert created.status_code == 201, created.text
    sid, k, out = created.json()["session_id"], 0, []
    while time.time() < end:
        k += 1
        t0, p0 = time.time(), time.perf_counter()
        if k % 2 or work == "verify":
            status = client.post("/v1/verify", json=VERIFY).status_code
        elif k % 10 == 0:
            status = client.post(f"/v1/sessions/{sid}/reset", json={}).status_code
        else:
            status = client.post(f"/v1/sessions/{sid}/step", json={"action": "<search>capital of Peru</search>"}
                                 ).status_code
        out.append((t0, time.perf_counter() - p0, status))
    client.delete(f"/v1/sessions/{sid}")
    return out


def _quantiles(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    if not values:
        return {"p50_ms": float("nan"), "p99_ms": float("nan")}
    return {"p50_ms": 1000 * statistics.median(values), "p99_ms": 1000 * values[min(len(values) - 1,
                                                                                     int(0.99 * len(values)))]}


def one_setting(url: str, connections: int, mode: str, honest_connections: int, args: argparse.Namespace) -> dict:
    start = time.time() + 3.0  # the flooder's connections are made meanwhile
    end = start + args.windows * (args.on_s + args.off_s)
    flooder = subprocess.Popen([sys.executable, "-c", FLOODER, url, str(connections), mode, str(start),
                                str(args.on_s), str(args.off_s), str(args.windows)], stdout=subprocess.PIPE,
                               text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    runs: list[tuple[float, float, int]] = []

    def one_connection() -> None:
        with httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {ISSUED}"}) as client:
            runs.extend(r for r in honest(client, end, args.honest) if r[0] >= start)

    threads = [threading.Thread(target=one_connection) for _ in range(honest_connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out, _ = flooder.communicate(timeout=120)
    flood = json.loads(out.strip().splitlines()[-1])
    on = [r for r in runs if _window_on(r[0], start, args.on_s, args.off_s)]
    off = [r for r in runs if not _window_on(r[0], start, args.on_s, args.off_s)]
    on_s, off_s = args.windows * args.on_s, args.windows * args.off_s
    flood_answered = sum(n for status, n in flood.items() if status == "200")
    honest_rate, alone_rate = sum(r[2] == 200 for r in on) / on_s, sum(r[2] == 200 for r in off) / off_s
    total_rate = honest_rate + flood_answered / on_s
    row = {"connections": connections, "mode": mode, "honest_connections": honest_connections,
           "honest_flood": {"answered": sum(r[2] == 200 for r in on), "refused": sum(r[2] != 200 for r in on),
                            "per_s": honest_rate, **_quantiles([r[1] for r in on])},
           "honest_alone": {"answered": sum(r[2] == 200 for r in off), "refused": sum(r[2] != 200 for r in off),
                            "per_s": alone_rate, **_quantiles([r[1] for r in off])},
           "flood": {"statuses": flood, "answered_per_s": flood_answered / on_s}}
    row["honest_share"] = honest_rate / total_rate if total_rate else float("nan")
    # one connection asks one request at a time: what it is owed is a bounded latency (below); a client that asks
    # for all it can get is owed half (10% for noise)
    row["fair_share"] = None if honest_connections == 1 else honest_rate >= 0.9 * min(total_rate / 2, alone_rate)
    row["bound_met"] = row["honest_flood"]["refused"] == 0 and row["honest_flood"]["p99_ms"] <= 50.0
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--modes", nargs="+", default=["one-address", "addresses"])
    parser.add_argument("--windows", type=int, default=4)
    parser.add_argument("--on-s", type=float, default=2.0)
    parser.add_argument("--off-s", type=float, default=1.0)
    parser.add_argument("--honest", choices=["verify", "mixed"], default="verify")
    parser.add_argument("--honest-connections", type=int, nargs="+", default=[1, 8],
                        help="the honest client's connections, each one request at a time (1: its latency; 8: a "
                             "client that asks for as much as it can get, its share)")
    parser.add_argument("--server-args", default="", help="more `agentgym serve` flags, e.g. "
                                                          "'--max-client-requests 2'")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    with serving(SEARCH, "--client-token", f"honest={ISSUED}", *args.server_args.split()) as (url, _):
        with httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {ISSUED}"}) as warm:
            honest(warm, time.time() + 1.0)  # the corpus is loaded, the verifier's first call made
        print(f"{'flood':>5} {'mode':<12} {'honest':>6} {'honest/s':>9} {'alone/s':>8} {'p50 ms':>7} {'p99 ms':>7} "
              f"{'alone p99':>9} {'refused':>7} {'flood/s':>8} {'share':>6} {'flood statuses':<24} fair  bound")
        for connections in args.connections:
            for mode in args.modes:
                for honest_connections in args.honest_connections:
                    row = one_setting(url, connections, mode, honest_connections, args)
                    rows.append(row)
                    h, a = row["honest_flood"], row["honest_alone"]
                    print(f"{connections:>5} {mode:<12} {honest_connections:>6} {h['per_s']:>9.1f} {a['per_s']:>8.1f} "
                          f"{h['p50_ms']:>7.1f} {h['p99_ms']:>7.1f} {a['p99_ms']:>9.1f} {h['refused']:>7} "
                          f"{row['flood']['answered_per_s']:>8.1f} {row['honest_share']:>6.2f} "
                          f"{json.dumps(row['flood']['statuses']):<24} {_fair(row['fair_share']):<5} "
                          f"{'yes' if row['bound_met'] else 'NO'}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu": _cpu(), "cores": os.cpu_count(), "windows": args.windows,
                                               "honest": args.honest, "server_args": args.server_args,
                                               "on_s": args.on_s, "off_s": args.off_s, "rows": rows}, indent=2)
                                   + "\n")


def _fair(fair: bool | None) -> str:
    return "-" if fair is None else "yes" if fair else "NO"


def _cpu() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, StopIteration, subprocess.SubprocessError):
        return platform.processor() or "unknown"


if __name__ == "__main__":
    main()
