"""Where the CPU of one reset or step request goes in ``agentgym serve``, part by part, against floor+env.

    python benchmarks/bench_hot_path.py [--pairs 3000] [--cpu 0] [--json out.json]

In one process on one CPU (``--cpu``), three ASGI apps are called directly, without
sockets: the agentgym app, floor+env (``floor_env_app.py``: the same SearchQA env
called inline in bare Starlette handlers) and the floor (``floor_app.py``, fixed
JSON). What uvicorn, httptools and the kernel add to a request is the same for
all three; ``bench_server.py`` measures it (a server's CPU per request over a
socket, less its app's here).

Each app serves one SearchQA session, reset then step (a search), ``--pairs``
times, and so do two references: the agentgym app without its hand-off of env
code to a worker thread (env code called on the loop instead, which the server
never does) and the env alone. All run one pair in turn, in a new random order
each time, so that all meet the same background load; each pair is timed on the
process's CPU clock (every thread counted). A difference between two of them is
the median of their pairs' differences, pair by pair (adjacent in time, so that a
change of load between pairs cancels): the hand-off's cost is the app's less that
variant's. The other parts of the hot path are too small to
tell apart that way on a shared machine (their differences drown in +-15 us of
noise), so they are timed alone, in loops: route match, token and size check,
body validation, session lookup + lock, orjson encoding of the answer, the
metrics; and the hand-off of an empty job (``EnvThreads.run`` against
``asyncio.to_thread``), with its context switches.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import random
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ENV_ID = "agentgym/SearchQA-v0"
ON_LOOP = "agentgym, env code on the loop (no thread hop)"
EARLIER = "agentgym, the hand-off of --before"
STEP = {"action": "<search>capital of Peru</search>"}
RESET = {"seed": 0}


def _scope(path: str) -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(), "query_string": b"",
            "headers": [(b"host", b"bench"), (b"content-type", b"application/json"), (b"content-length", b"48")],
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000), "scheme": "http", "http_version": "1.1",
            "root_path": "", "asgi": {"version": "3.0"}}


async def call(app: Any, path: str, body: bytes) -> bytes:
    """One POST through an ASGI app, as uvicorn hands it over; the answer's body."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(_scope(path), receive, send)
    if sent[0]["status"] not in (200, 201):
        raise RuntimeError(f"{path}: {sent[0]['status']} {sent[-1]['body'][:200]!r}")
    return sent[-1]["body"]


def loop_us(fn: Callable[[], Any], n: int = 20_000) -> float:
    """CPU us one call of ``fn`` takes, median of 5 loops of ``n``."""
    times = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(n):
            fn()
        times.append((time.process_time() - start) / n * 1e6)
    return statistics.median(times)


async def hops_us(runs: dict[str, Callable[[Callable[[], None]], Awaitable[Any]]], n: int = 10_000
                  ) -> dict[str, dict[str, float]]:
    """Per hand-off of an empty job, for each way of running it (taken in turn, in a new random order each time):
    the median CPU us, and the context switches (voluntary + involuntary), on average."""
    job = lambda: None
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    switches = dict.fromkeys(runs, 0)
    order, shuffle = list(runs.items()), random.Random(1).shuffle
    for _ in range(n):
        shuffle(order)
        for name, run in order:
            before, start = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
            await run(job)
            cpu[name].append(time.process_time() - start)
            after = resource.getrusage(resource.RUSAGE_SELF)
            switches[name] += after.ru_nvcsw + after.ru_nivcsw - before.ru_nvcsw - before.ru_nivcsw
    return {name: {"cpu_us": statistics.median(cpu[name]) * 1e6, "context_switches": switches[name] / n}
            for name in runs}


def _threads_from(directory: Path) -> Any:
    """``EnvThreads`` as the agentgym package in ``directory`` has it (a copy of an earlier commit)."""
    spec = importlib.util.spec_from_file_location("_earlier_threads", directory / "agentgym/server/threads.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EnvThreads


async def profile(pairs: int, before: Path | None = None) -> dict[str, Any]:
    import floor_app
    import floor_env_app
    import orjson

    from agentgym.server import create_app
    from agentgym.server.threads import EnvThreads

    app = create_app([ENV_ID])
    async with app.router.lifespan_context(app):
        create = orjson.dumps({"env_id": ENV_ID, "seed": 0, "kwargs": {"max_turns": 1_000_000}})
        sid = orjson.loads(await call(app, "/v1/sessions", create))["session_id"]
        fsid = orjson.loads(await call(floor_env_app.app, "/v1/sessions", create))["session_id"]
        env = floor_env_app.ENVS[fsid]
        step, reset = orjson.dumps(STEP), orjson.dumps(RESET)
        threads = app.state.store.threads

        async def on_loop(fn: Callable[[], Any]) -> Any:
            return fn()

        earlier = _threads_from(before)(threads.size) if before else None

        def agentgym(hop: bool, earlier_hop: bool = False) -> Callable[[], Awaitable[None]]:
            async def pair() -> None:
                if not hop:
                    threads.run = on_loop  # shadows the method on this one instance
                elif earlier_hop:
                    threads.run = earlier.run
                try:
                    await call(app, f"/v1/sessions/{sid}/reset", reset)
                    await call(app, f"/v1/sessions/{sid}/step", step)
                finally:
                    vars(threads).pop("run", None)
            return pair

        async def floor_env() -> None:
            await call(floor_env_app.app, f"/v1/sessions/{fsid}/reset", reset)
            await call(floor_env_app.app, f"/v1/sessions/{fsid}/step", step)

        async def floor() -> None:
            await call(floor_app.app, "/reset", reset)
            await call(floor_app.app, "/step", step)

        async def env_alone() -> None:
            env.reset(seed=0)
            env.step(STEP["action"])

        variants: dict[str, Callable[[], Awaitable[None]]] = {
            "agentgym": agentgym(hop=True), ON_LOOP: agentgym(hop=False),
            **({EARLIER: agentgym(hop=True, earlier_hop=True)} if earlier else {}),
            "floor+env": floor_env, "floor (fixed JSON)": floor, "env alone (reset + step)": env_alone}
        times = await _in_turn(variants, pairs)
        parts = await _parts_us(app, sid, dict(zip(("observation", "info"), env.reset(seed=0))))
        pool = EnvThreads(2)
        runs = {"EnvThreads.run (the server's)": pool.run, "asyncio.to_thread": asyncio.to_thread,
                **({"EnvThreads.run of --before": earlier.run} if earlier else {})}
        hops = await hops_us(runs)
        pool.shutdown()
        if earlier is not None:
            earlier.shutdown()
    env = times["env alone (reset + step)"]
    return {"requests": {name: {"median_us": statistics.median(t), "mean_us": statistics.fmean(t),
                                "over_env_us": statistics.median(a - b for a, b in zip(t, env))}
                         for name, t in times.items()},
            "hop_us": statistics.median(a - b for a, b in zip(times["agentgym"], times[ON_LOOP])),
            **({"hop_before_us": statistics.median(a - b for a, b in zip(times[EARLIER], times[ON_LOOP]))}
               if EARLIER in times else {}),
            "parts_us": parts, "empty_hop": hops}


async def _in_turn(variants: dict[str, Callable[[], Awaitable[None]]], pairs: int) -> dict[str, list[float]]:
    """CPU us per request of each variant's pairs, the variants taken in turn in a new random order each time."""
    for pair in variants.values():  # warm up
        for _ in range(20):
            await pair()
    times: dict[str, list[float]] = {name: [] for name in variants}
    order, shuffle = list(variants.items()), random.Random(0).shuffle
    for _ in range(pairs):
        shuffle(order)  # no variant always follows the same one
        for name, pair in order:
            start = time.process_time()
            await pair()
            times[name].append((time.process_time() - start) / 2 * 1e6)  # a pair is two requests
    return times


async def _parts_us(app: Any, sid: str, reset_answer: dict[str, Any]) -> dict[str, float]:
    """The hot path's small parts, each timed alone in a loop (CPU us per request)."""
    import orjson

    from agentgym.server import app as server_app
    from agentgym.server import protocol as p

    store, policy = app.state.store, app.state.policy
    session = store.get(sid)
    step, reset, step_answer = orjson.dumps(STEP), orjson.dumps(RESET), session.last_step[1]
    path = f"/v1/sessions/{sid}/step"
    scope = _scope(path)

    def validate() -> None:
        p.StepRequest.model_validate_json(step)
        p.ResetRequest.model_validate_json(reset)

    def encode() -> None:
        orjson.dumps(step_answer)
        orjson.dumps(reset_answer)

    lookups = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(20_000):
            store.get(sid)
            async with session.lock:
                store.get(sid)
                session.last_used = time.monotonic()
        lookups.append((time.process_time() - start) / 20_000 * 1e6)
    return {"route match (plain-ASGI hot path)": loop_us(lambda: server_app._HOT_PATH.fullmatch(path)),
            "token and size check": loop_us(lambda: policy.deny(scope)),
            "body validation (pydantic, step and reset)": loop_us(validate) / 2,
            "session lookup + lock": statistics.median(lookups),
            "orjson encoding of the answer": loop_us(encode) / 2,
            "metrics (counter + histogram)": loop_us(lambda: policy.observe("/v1/sessions/{session_id}/step", 200,
                                                                            time.perf_counter()))}


def report(result: dict[str, Any]) -> None:
    print(f"{'per request, in process (CPU)':<50} {'median us':>10} {'mean us':>10} {'over env':>10}")
    for name, r in result["requests"].items():
        print(f"{name:<50} {r['median_us']:>10.1f} {r['mean_us']:>10.1f} {r['over_env_us']:>10.1f}")
    requests = result["requests"]
    env, hop, parts = requests["env alone (reset + step)"]["median_us"], result["hop_us"], result["parts_us"]
    over_env = requests["agentgym"]["over_env_us"]
    print(f"\n{'where the CPU of an agentgym request goes':<50} {'us':>10}")
    rows = [("env code (reset or step)", env), ("hand-off to an env thread and back", hop),
            *([("  the same, with the hand-off of --before", result["hop_before_us"])] if "hop_before_us" in result
              else []), *parts.items(),
            ("the rest (ASGI messages, awaits, objects)", over_env - hop - sum(parts.values()))]
    for name, us in rows:
        print(f"{name:<50} {us:>10.1f}")
    print(f"agentgym over the env alone: {over_env:.1f} us a request; floor+env over the env alone (Starlette: "
          f"routing, middleware, Request, Response): {requests['floor+env']['over_env_us']:.1f} us")
    for name, measured in result["empty_hop"].items():
        print(f"{'hand-off of an empty job, ' + name:<50} {measured['cpu_us']:>10.1f}  "
              f"({measured['context_switches']:.1f} context switches)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3000, help="reset + step pairs per variant.")
    parser.add_argument("--cpu", type=int, default=0, help="The one CPU this process runs on (-1: any).")
    parser.add_argument("--json", default=None)
    parser.add_argument("--before", metavar="DIR", type=Path, default=None,
                        help="Also time the agentgym app with the env-thread hand-off (agentgym/server/threads.py) of "
                             "the package in DIR, e.g. `git archive HEAD~1 agentgym | tar -x -C DIR`.")
    args = parser.parse_args()
    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    import uvloop

    result = uvloop.run(profile(args.pairs, args.before))
    result["conditions"] = {"load_average": os.getloadavg(), "cpu": args.cpu, "pairs": args.pairs}
    report(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
