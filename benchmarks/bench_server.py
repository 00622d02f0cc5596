"""Server throughput and latency against two references measured in the same run: the raw-HTTP floor and floor+env.

    python benchmarks/bench_server.py [--seconds 5] [--rounds 3] [--server-cpus 0] [--client-cpus 1]
                                      [--before DIR] [--json out.json] [--processes 2] [--ray]

Four servers, each a uvicorn process with the same settings (uvloop + httptools, which the server
extra installs), driven by the same client code: the floor (``floor_app.py``, a bare Starlette
handler returning fixed JSON), the floor on plain asyncio + h11 (as uvicorn serves without the
extra), floor+env (``floor_env_app.py``, a bare Starlette app calling the same SearchQA env inline
in its handlers: what serving this env costs at least) and ``agentgym serve``. The servers run on
``--server-cpus`` and the client on ``--client-cpus`` (default CPU 0 and CPU 1 where there are two),
so that the client does not take the servers' core; the loads run in ``--rounds`` interleaved rounds
(each round every server, in an order that alternates), so that every ratio is of adjacent
measurements under the same background load, and each ratio reported is the median of the rounds'.
``--before DIR`` adds a fifth server to the rounds: ``agentgym serve`` from the package in DIR (a copy of
an earlier commit's), so that a change is measured against the code before it under the same load.

Loads: reset+step round trips with 1 and 32 concurrent clients (the floor gets the same requests on
its fixed handler), with p50/p99 latency; env steps/s of batch step over 256 SearchQA sessions
(agentgym and floor+env), with the p50/p99 of one batch request; and, for agentgym alone, whole
batched episodes (reset + 3 steps, 256 sessions) with the resets batched (POST /v1/reset) and one by
one, in env calls/s. With every row, the server's CPU time per request (per env step for batches),
read from /proc for the server's process tree.

With ``--processes N`` it also serves with ``agentgym serve --processes N`` and compares it with a
one-process server, both on ``--scaling-cpus`` (default: every CPU), reset+step at 64 clients and
batch step over 256 sessions, in alternating rounds, with the server processes' CPU time per request.
Each client keeps a connection of its own, as each ``RemoteEnv`` does; the clients are lean (prebuilt
HTTP/1.1 requests, ~20 us of CPU a request, against ~200 us for the server) so that on a small machine
the server processes, not the client beside them, get the cores.

With ``--ray`` it compares ``agentgym serve --ray local`` (sessions on Ray host actors, one per CPU,
on a Ray cluster the server starts on this machine) with the one-process server the same way: what
the hop to a host actor costs where both run on the same cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from helpers.server_process import free_port

ENV_ID = "agentgym/SearchQA-v0"
_UVICORN = ["--log-level", "warning", "--no-access-log"]
# name: (the server's command line after ``python``, its directory, whether it is a fixed-JSON floor)
SERVERS = {
    "floor": (["-m", "uvicorn", "floor_app:app", *_UVICORN], HERE, True),
    # the floor as plain uvicorn serves it (asyncio + h11): the stack the server extra installed when issue 18 set
    # its 0.95x target
    "floor asyncio+h11": (["-m", "uvicorn", "floor_app:app", "--loop", "asyncio", "--http", "h11", *_UVICORN],
                          HERE, True),
    "floor+env": (["-m", "uvicorn", "floor_env_app:app", *_UVICORN], HERE, False),
    "agentgym": (["-m", "agentgym.cli", "serve", ENV_ID, "--max-sessions", "4096"], HERE.parent, False),
}
FLOORS = {name for name, (_, _, floor) in SERVERS.items() if floor}  # the others serve sessions and batch step


def start(args: list[str], cwd: Path, cpus: set[int], env: dict[str, str] | None = None
          ) -> tuple[subprocess.Popen, str]:
    """A server process (``python *args --port P``) on ``cpus``, once it answers /healthz."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, *args, "--port", str(port)], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})
    os.sched_setaffinity(proc.pid, cpus)  # before the interpreter is up: its threads and processes inherit it
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            httpx.get(f"{url}/healthz", timeout=1)
            return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"{args} did not start")


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a server has used: its process and every live descendant (with --processes N
    the server processes; the verifier workers, idle here), from /proc/<pid>/stat."""
    stats: dict[int, tuple[int, int]] = {}  # pid -> (parent pid, clock ticks used)
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                fields = Path(entry.path, "stat").read_text().rpartition(")")[2].split()
            except OSError:  # exited meanwhile
                continue
            stats[int(entry.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, (ppid, _) in stats.items() if ppid == parent and child not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(stats[member][1] for member in tree if member in stats) / os.sysconf("SC_CLK_TCK")


async def open_session(http: aiohttp.ClientSession, url: str, floor: bool, i: int) -> tuple[str, str]:
    if floor:
        return "/reset", "/step"
    async with http.post(f"{url}/v1/sessions", json={"env_id": ENV_ID, "seed": i,
                                                     "kwargs": {"max_turns": 1_000_000}}) as response:
        sid = (await response.json())["session_id"]
    return f"/v1/sessions/{sid}/reset", f"/v1/sessions/{sid}/step"


async def client_loop(http: aiohttp.ClientSession, url: str, paths: tuple[str, str], until: float,
                      latencies: list[float], i: int) -> None:
    body = {"action": "<search>capital of Peru</search>"}
    reset_path, step_path = paths
    while time.perf_counter() < until:
        for path, payload in ((reset_path, {"seed": i}), (step_path, body)):
            start = time.perf_counter()
            async with http.post(url + path, json=payload) as response:
                await response.read()
                if response.status != 200:
                    raise RuntimeError(f"{path}: {response.status}")
            latencies.append(time.perf_counter() - start)


async def round_trips(url: str, floor: bool, clients: int, seconds: float, pid: int) -> dict[str, float]:
    """Reset+step requests/s of ``clients`` clients, p50/p99 latency of a request, and the server's (process
    ``pid``'s tree's) CPU us per request."""
    # aiohttp, not httpx: httpx's async pool, not the server, was the limit at 32 connections here
    latencies: list[float] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=clients)) as http:
        paths = [await open_session(http, url, floor, i) for i in range(clients)]  # not timed
        start, cpu = time.perf_counter(), tree_cpu_s(pid)
        await asyncio.gather(*(client_loop(http, url, paths[i], start + seconds, latencies, i) for i in range(clients)))
        elapsed, cpu_us = time.perf_counter() - start, 1e6 * (tree_cpu_s(pid) - cpu) / len(latencies)
    latencies.sort()
    return {"rt_per_s": len(latencies) / elapsed, "p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))], "cpu_us": cpu_us}


def wait_for_processes(url: str, processes: int) -> None:
    """Until every process answers: before that the kernel gives all connections to those that do."""
    for _ in range(600):
        health = httpx.get(f"{url}/healthz", timeout=5).json()
        if health["status"] == "ok" and len(health["processes"]) == processes:
            return
        time.sleep(0.1)
    raise RuntimeError(f"the {processes} processes did not all start")


class LeanClient:
    """One HTTP/1.1 keep-alive connection sending prebuilt requests: a client that costs a few tens of us a
    request, so that on a small machine the server processes, not the client beside them, use the cores."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, url: str) -> LeanClient:
        host, port = url.removeprefix("http://").split(":")
        return cls(*await asyncio.open_connection(host, int(port)))

    @staticmethod
    def request(path: str, payload: dict) -> bytes:
        body = json.dumps(payload).encode()
        return (f"POST {path} HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\n\r\n").encode() + body

    async def send(self, request: bytes) -> bytes:
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = head[9:12]
        length = int(head.lower().split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
        body = await self.reader.readexactly(length)
        if status not in (b"200", b"201"):
            raise RuntimeError(f"{status.decode()}: {body[:200]!r}")
        return body


async def lean_round_trips(url: str, clients: int, seconds: float) -> float:
    """Reset+step round trips/s of ``clients`` clients, each on a connection of its own (as a RemoteEnv)."""
    connections = [await LeanClient.connect(url) for _ in range(clients)]
    requests = []
    for i, connection in enumerate(connections):  # each session made on its client's connection
        created = await connection.send(LeanClient.request("/v1/sessions", {
            "env_id": ENV_ID, "seed": i, "kwargs": {"max_turns": 1_000_000}}))
        sid = json.loads(created)["session_id"]
        action = {"action": "<search>capital of Peru</search>"}
        requests.append((LeanClient.request(f"/v1/sessions/{sid}/reset", {"seed": i}),
                         LeanClient.request(f"/v1/sessions/{sid}/step", action)))
    done = 0

    async def loop(connection: LeanClient, pair: tuple[bytes, bytes], until: float) -> None:
        nonlocal done
        while time.perf_counter() < until:
            for request in pair:
                await connection.send(request)
                done += 1

    start = time.perf_counter()
    await asyncio.gather(*(loop(c, requests[i], start + seconds) for i, c in enumerate(connections)))
    rate = done / (time.perf_counter() - start)
    for connection in connections:
        connection.writer.close()
    return rate


def compare_processes(one: tuple[int, str], many: tuple[int, str], seconds: float, rounds: int
                      ) -> dict[str, dict[str, list[float]]]:
    """Reset+step round trips/s at 64 clients, and batch step env steps/s over 256 sessions (made by one batch
    create, which spreads them over the processes), on one process and on several (``(pid, url)`` each), in
    alternating rounds (adjacent in time, so that each round's ratio is of the same background load, on a shared
    machine); with the CPU ms the server's processes spend per request and per batch env step."""
    keys = ("reset+step 64 clients", "batch step 256 sessions", "server CPU ms per request",
            "server CPU ms per batch env step")
    rates: dict[str, dict[str, list[float]]] = {key: {"one": [], "many": []} for key in keys}
    for _ in range(rounds):
        for key, (pid, url) in (("one", one), ("many", many)):
            before, start = tree_cpu_s(pid), time.perf_counter()
            rate = asyncio.run(lean_round_trips(url, 64, seconds))
            trips = rate * (time.perf_counter() - start)  # near enough: the sessions' creation is a sliver
            rates["server CPU ms per request"][key].append(1000 * (tree_cpu_s(pid) - before) / trips)
            rates["reset+step 64 clients"][key].append(rate)
            batch = batch_steps(url, 256, seconds, pid)
            rates["batch step 256 sessions"][key].append(batch["steps_per_s"])
            rates["server CPU ms per batch env step"][key].append(batch["cpu_us"] / 1000)
    return rates


QUESTIONS = ["capital of Peru", "currency of Norway", "population of Lima", "Economy of Chile"]


def _open(http: httpx.Client, sessions: int) -> list[str]:
    body = {"sessions": [{"env_id": ENV_ID, "seed": i, "kwargs": {"max_turns": 1_000_000}} for i in range(sessions)]}
    return [r["session_id"] for r in http.post("/v1/create", json=body).json()["results"]]


def _step_all(http: httpx.Client, ids: list[str]) -> int:
    body = {"steps": [{"session_id": sid, "action": f"<search>{QUESTIONS[i % 4]} {i}</search>"}
                      for i, sid in enumerate(ids)]}
    results = http.post("/v1/step", json=body).json()["results"]
    if any(r.get("error") for r in results):
        raise RuntimeError(results[0])
    return len(results)


def batch_steps(url: str, sessions: int, seconds: float, pid: int) -> dict[str, float]:
    """Env steps/s of batch step over ``sessions`` sessions, the p50/p99 of a batch request, and the server's
    (process ``pid``'s tree's) CPU us per env step."""
    with httpx.Client(base_url=url, timeout=120) as http:
        ids = _open(http, sessions)
        steps, latencies, start, cpu = 0, [], time.perf_counter(), tree_cpu_s(pid)
        while time.perf_counter() - start < seconds:
            t = time.perf_counter()
            steps += _step_all(http, ids)
            latencies.append(time.perf_counter() - t)
        rate, cpu_us = steps / (time.perf_counter() - start), 1e6 * (tree_cpu_s(pid) - cpu) / steps
        for sid in ids:
            http.delete(f"/v1/sessions/{sid}")
    latencies.sort()
    return {"steps_per_s": rate, "p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))], "cpu_us": cpu_us}


def batch_episodes(url: str, sessions: int, seconds: float, batch_reset: bool) -> float:
    """Env calls/s (resets and steps) of whole episodes, reset + 3 steps, all sessions in lockstep."""
    with httpx.Client(base_url=url, timeout=120) as http:
        ids = _open(http, sessions)
        calls, start, episode = 0, time.perf_counter(), 0
        while time.perf_counter() - start < seconds:
            episode += 1
            if batch_reset:
                body = {"resets": [{"session_id": sid, "seed": episode * sessions + i} for i, sid in enumerate(ids)]}
                results = http.post("/v1/reset", json=body).json()["results"]
                if any(r.get("error") for r in results):
                    raise RuntimeError(results[0])
            else:
                for i, sid in enumerate(ids):
                    http.post(f"/v1/sessions/{sid}/reset", json={"seed": episode * sessions + i}).raise_for_status()
            calls += len(ids)
            for _ in range(3):
                calls += _step_all(http, ids)
        rate = calls / (time.perf_counter() - start)
        for sid in ids:
            http.delete(f"/v1/sessions/{sid}")
    return rate


LOADS = ("reset+step, 1 client", "reset+step, 32 clients", "batch step, 256 sessions")


def run_rounds(servers: dict[str, tuple[subprocess.Popen, str]], seconds: float, rounds: int
               ) -> dict[str, dict[str, list[dict[str, float]]]]:
    """Every load on every server, ``rounds`` times, each round's servers adjacent in time (in an order that
    alternates from round to round): load -> server -> one result a round."""
    results: dict[str, dict[str, list[dict[str, float]]]] = {load: {} for load in LOADS}
    for i in range(rounds):
        order = list(servers) if i % 2 == 0 else list(reversed(servers))
        for load in LOADS:
            for name in order:
                proc, url = servers[name]
                if load.startswith("batch"):
                    if name in FLOORS:
                        continue
                    outcome = batch_steps(url, 256, seconds, proc.pid)
                    outcome = {"rate": outcome.pop("steps_per_s"), **outcome}
                else:
                    clients = 1 if "1 client" in load else 32
                    outcome = asyncio.run(round_trips(url, name in FLOORS, clients, seconds, proc.pid))
                    outcome = {"rate": outcome.pop("rt_per_s"), **outcome}
                results[load].setdefault(name, []).append(outcome)
    return results


def _cpus(text: str) -> set[int]:
    """``0``, ``0,2``, ``0-3`` or ``all`` as CPU numbers."""
    if text == "all":
        return set(os.sched_getaffinity(0))
    cpus: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def _cpu_list(cpus: set[int]) -> str:
    return f"CPU{'s' if len(cpus) > 1 else ''} {','.join(map(str, sorted(cpus)))}"


def cpu_model() -> str:
    """The CPU's model name, as ``lscpu`` shows it (from /proc/cpuinfo)."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return "unknown CPU"


def _median_ratio(values: list[dict[str, float]], bases: list[dict[str, float]]) -> str:
    ratios = sorted(v["rate"] / b["rate"] for v, b in zip(values, bases))
    spread = f" ({ratios[0]:.2f}-{ratios[-1]:.2f})" if len(ratios) > 1 else ""
    return f"{statistics.median(ratios):.2f}{spread}"


def print_rows(results: dict[str, dict[str, list[dict[str, float]]]]) -> None:
    print(f"{'load':<26} {'server':<18} {'per s':>8} {'p50 ms':>8} {'p99 ms':>8} {'CPU us':>8}  "
          f"{'x floor (rounds)':<18} {'x floor+env (rounds)':<20}")
    for load, by_server in results.items():
        for name, outcomes in by_server.items():
            floor = by_server.get("floor") if not load.startswith("batch") else None
            row = [f"{statistics.median(o[key] for o in outcomes):>8.{2 if 'ms' in key else 0}f}"
                   for key in ("rate", "p50_ms", "p99_ms", "cpu_us")]
            print(f"{load:<26} {name:<18} {' '.join(row)}  {_median_ratio(outcomes, floor) if floor else '':<18} "
                  f"{_median_ratio(outcomes, by_server['floor+env']):<20}")
    print("per s: requests (round trips: a reset or a step each) or env steps; p50/p99: of one request; CPU us: the server's CPU "
          "time per request or env step; medians of the rounds, ratios the medians of the rounds' ratios")


def print_compared(compared: dict[str, dict[str, dict[str, list[float]]]], rounds: int, cpus: str) -> None:
    for mode, by_load in compared.items():
        for load, rates in by_load.items():
            for key, name in (("one", "one process"), ("many", mode)):
                unit = "env steps/s" if "batch step" in load else "" if "CPU" in load else "requests/s"
                print(f"{f'{load}, {name}':<54} {statistics.median(rates[key]):>10.{3 if 'CPU' in load else 0}f} "
                      f"{unit} median of {rounds} rounds")
            if "CPU" not in load:
                ratios = [many / one for one, many in zip(rates["one"], rates["many"])]
                print(f"{f'  {mode} / one process':<54} {statistics.median(ratios):>10.2f}x median of the rounds' "
                      f"ratios ({', '.join(f'{r:.2f}' for r in ratios)}); {cpus}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="Length of one measurement.")
    parser.add_argument("--rounds", type=int, default=3, help="Interleaved rounds of every comparison.")
    two = len(os.sched_getaffinity(0)) >= 2
    parser.add_argument("--server-cpus", default="0" if two else "all",
                        help="CPUs of the four servers compared (0, 0-1, 0,2 or all) [default: 0 where there are "
                             "two CPUs or more].")
    parser.add_argument("--client-cpus", default="1" if two else "all",
                        help="CPUs of the benchmark's clients [default: 1 where there are two CPUs or more].")
    parser.add_argument("--scaling-cpus", default="all",
                        help="CPUs of the servers of the --processes and --ray comparisons [default: all].")
    parser.add_argument("--json", default=None)
    parser.add_argument("--workers", type=int, default=None,
                        help="agentgym serve --workers (env threads; default: the server's).")
    parser.add_argument("--processes", type=int, default=1,
                        help="Also compare agentgym serve --processes N with one process (reset+step at 64 "
                             "clients, batch step over 256 sessions).")
    parser.add_argument("--ray", action="store_true",
                        help="Also compare agentgym serve --ray local with one process (the same loads).")
    parser.add_argument("--skip-episodes", action="store_true", help="Leave out the batched-episode rows.")
    parser.add_argument("--before", metavar="DIR", default=None,
                        help="Also serve agentgym from the package in DIR (on PYTHONPATH; e.g. `git archive HEAD~1 "
                             "agentgym | tar -x -C DIR`) in the same rounds: before and after a change, under the same "
                             "load.")
    args = parser.parse_args()
    server_cpus, client_cpus, scaling_cpus = _cpus(args.server_cpus), _cpus(args.client_cpus), _cpus(args.scaling_cpus)
    os.sched_setaffinity(0, client_cpus)  # the clients; each server gets its own CPUs as it starts
    workers = ["--workers", str(args.workers)] if args.workers else []
    conditions = {"cpu": cpu_model(), "cpus": os.cpu_count(), "load_average_start": os.getloadavg(),
                  "server_cpus": sorted(server_cpus), "client_cpus": sorted(client_cpus),
                  "scaling_cpus": sorted(scaling_cpus), "seconds": args.seconds, "rounds": args.rounds}
    servers: dict[str, tuple[subprocess.Popen, str]] = {}
    episodes: dict[str, float] = {}
    compared: dict[str, dict[str, dict[str, list[float]]]] = {}
    try:
        for name, (command, cwd, _) in SERVERS.items():
            servers[name] = start([*command, *(workers if name == "agentgym" else [])], cwd, server_cpus)
        if args.before:
            before = Path(args.before).resolve()  # its directory first on sys.path (python -m puts it there)
            servers["agentgym (before)"] = start([*SERVERS["agentgym"][0], *workers], before, server_cpus,
                                                 {"PYTHONPATH": str(before)})
        results = run_rounds(servers, args.seconds, args.rounds)
        if not args.skip_episodes:
            episodes = {mode: batch_episodes(servers["agentgym"][1], 256, args.seconds, mode == "batched")
                        for mode in ("batched", "one by one")}
        serve = ["-m", "agentgym.cli", "serve", ENV_ID, "--max-sessions", "4096", *workers]
        if args.processes > 1 or args.ray:
            servers["one process"] = start(serve, HERE.parent, scaling_cpus)
        if args.processes > 1:
            servers["many"] = start([*serve, "--processes", str(args.processes)], HERE.parent, scaling_cpus)
            wait_for_processes(servers["many"][1], args.processes)
            compared[f"--processes {args.processes}"] = compare_processes(
                *((servers[key][0].pid, servers[key][1]) for key in ("one process", "many")), args.seconds,
                args.rounds)
        if args.ray:
            servers["ray"] = start([*serve, "--ray", "local"], HERE.parent, scaling_cpus, {"RAY_AUTH_MODE": "disabled"})
            compared["--ray local"] = compare_processes(
                *((servers[key][0].pid, servers[key][1]) for key in ("one process", "ray")), args.seconds,
                args.rounds)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait()
    conditions["load_average_end"] = os.getloadavg()
    print(f"{conditions['cpu']}, {conditions['cpus']} CPUs; load average {conditions['load_average_start'][0]:.1f} "
          f"at the start, {conditions['load_average_end'][0]:.1f} at the end; servers on {_cpu_list(server_cpus)}, "
          f"client on {_cpu_list(client_cpus)}; {args.rounds} interleaved rounds of {args.seconds:g} s")
    print_rows(results)
    for mode, rate in episodes.items():
        print(f"agentgym batched episodes (reset + 3 steps, 256 sessions), resets {mode}: {rate:.0f} env calls/s")
    print_compared(compared, args.rounds, f"servers on {_cpu_list(scaling_cpus)}, client on {_cpu_list(client_cpus)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"conditions": conditions, "rows": results,
                                               "batched_episodes_calls_per_s": episodes,
                                               "compared": compared}, indent=2) + "\n")


if __name__ == "__main__":
    main()
