"""In-process SearchQA throughput: reset+step episodes per second, against raw retrieval; what scoring a step costs.

    python benchmarks/bench_searchqa.py [--episodes 500] [--rounds 7] [--fresh 3] [--settle-s 5] [--json out.json]

Baseline: the retriever's own ``search`` for the same queries, so the ratio is the
env's overhead (parsing, rendering, verification) on top of retrieval.

Scored against unscored: reset + ``step("hello")`` (a malformed action: the turn ends
unscored) against reset + ``step("<answer>x</answer>")`` (the episode ends and is
verified in process), interleaved episode by episode so that both meet the same
load on a shared machine; per round the median episode time of each, and the
ratio is the median of the rounds' ratios.

First scored step (``--fresh N``, N times each, 0 to skip): in a fresh process, the
first reset + scored step of a new env against the second; and of a fresh
``agentgym serve``, the first scored step of a new session against the second, and
the first ``POST /v1/verify`` that needs a verifier worker (a symbolic math answer:
sympy's) against the second: as soon as /healthz answers, and ``--settle-s`` later;
the baseline, in the same run, is the same app without its workers pre-warmed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from harness import measure, report  # noqa: E402

import agentgym  # noqa: E402

ENV_ID = "agentgym/SearchQA-v0"
ROOT = Path(__file__).resolve().parents[1]
# A fresh process: the first reset + scored step of a new env, then the second; seconds each, as JSON.
_FRESH_ENV = """
import json, time
import agentgym
env = agentgym.make("agentgym/SearchQA-v0")
times = []
for i in range(2):
    start = time.perf_counter()
    env.reset(seed=i)
    env.step("<answer>x</answer>")
    times.append(time.perf_counter() - start)
print(json.dumps(times))
"""
# The baseline of the fresh-server timings: the same app without its verifier workers pre-warmed (port in argv).
_UNWARMED_SERVER = """
import sys
import uvicorn
from agentgym.server import create_app
from agentgym.server.connections import uvicorn_config
port = int(sys.argv[sys.argv.index("--port") + 1])
app = create_app(["agentgym/SearchQA-v0"], prewarm_verifiers=False)
uvicorn.Server(uvicorn_config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)).run()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7, help="rounds of the scored/unscored comparison")
    parser.add_argument("--fresh", type=int, default=3, help="fresh processes for the first-step timings (0: none)")
    parser.add_argument("--settle-s", type=float, default=5.0,
                        help="seconds a fresh server runs before its first request, in the settled cases")
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
    scored = scored_against_unscored(env, n, args.rounds)
    fresh = first_scored_steps(args.fresh, args.settle_s) if args.fresh else {}
    if args.json:
        payload = json.loads(Path(args.json).read_text())
        Path(args.json).write_text(json.dumps({"rows": payload, "scored": scored, "fresh": fresh}, indent=2) + "\n")


def scored_against_unscored(env: agentgym.AgentEnv, n: int, rounds: int) -> dict[str, float]:
    """reset + step("hello") against reset + step("<answer>x</answer>"), interleaved episode by episode (the order
    alternating) so that both meet the same load: per round, the median of each's episode times; the ratio is the
    median of the rounds' ratios."""
    clock = time.perf_counter_ns

    def episode(i: int, action: str) -> int:
        start = clock()
        env.reset(seed=i, options={"index": i})
        env.step(action)
        return clock() - start

    def round_of(episodes: int) -> tuple[float, float]:
        unscored, scored = [], []
        for i in range(episodes):
            k = i % n
            if i % 2:
                unscored.append(episode(k, "hello"))
                scored.append(episode(k, "<answer>x</answer>"))
            else:
                scored.append(episode(k, "<answer>x</answer>"))
                unscored.append(episode(k, "hello"))
        return statistics.median(unscored) / 1e3, statistics.median(scored) / 1e3

    round_of(n)  # warm-up: caches, the gold answers' normal forms
    results = [round_of(3 * n) for _ in range(rounds)]
    ratios = [s / u for u, s in results]
    result = {"unscored_us": statistics.median(u for u, _ in results),
              "scored_us": statistics.median(s for _, s in results),
              "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)}
    print(f"\nreset + step, {rounds} rounds of {3 * n} each, interleaved: unscored ('hello') "
          f"{result['unscored_us']:.1f} us, scored ('<answer>x</answer>') {result['scored_us']:.1f} us (medians); "
          f"scored / unscored {result['ratio']:.3f} (rounds {result['ratio_min']:.3f}-{result['ratio_max']:.3f})")
    return result


def first_scored_steps(times: int, settle_s: float) -> dict[str, list[float]]:
    """Seconds of the first and the second scored step, of a fresh env and of fresh servers (see the docstring)."""
    results: dict[str, list[float]] = {}

    def add(prefix: str, values: dict[str, float]) -> None:
        for key, value in values.items():
            results.setdefault(f"{prefix}{key}", []).append(value)

    for _ in range(times):
        done = subprocess.run([sys.executable, "-c", _FRESH_ENV], capture_output=True, text=True, check=True,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
        first, second = json.loads(done.stdout.strip().splitlines()[-1])
        add("env ", {"first_s": first, "second_s": second})
        add("serve ", _fresh_server(["-m", "agentgym.cli", "serve", ENV_ID], settle_s=0.0))
        add(f"serve, after {settle_s:g} s ", _fresh_server(["-m", "agentgym.cli", "serve", ENV_ID], settle_s=settle_s))
        add(f"no pre-warm, after {settle_s:g} s ", _fresh_server(["-c", _UNWARMED_SERVER], settle_s=settle_s))
    print(f"\nfirst scored step, median of {times} fresh processes (seconds):")
    for key, values in results.items():
        print(f"  {key:<44} {statistics.median(values):8.4f}  (all: {', '.join(f'{v:.4f}' for v in values)})")
    return results


def _fresh_server(args: list[str], *, settle_s: float) -> dict[str, float]:
    """A fresh server: ``settle_s`` after /healthz first answers, a session's first and second scored step, then
    the first and the second ``/v1/verify`` that need a verifier worker."""
    import httpx

    sys.path.insert(0, str(ROOT / "tests"))
    from helpers.server_process import free_port

    port = free_port()
    server = subprocess.Popen([sys.executable, *args, "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
            deadline = time.monotonic() + 120
            while not _answers(client):
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"{args} did not start")
                time.sleep(0.02)
            time.sleep(settle_s)
            sid = client.post("/v1/sessions", json={"env_id": ENV_ID}).json()["session_id"]
            result = {}
            for name in ("step_first_s", "step_second_s"):
                start = time.perf_counter()
                client.post(f"/v1/sessions/{sid}/reset", json={})
                step = client.post(f"/v1/sessions/{sid}/step", json={"action": "<answer>x</answer>"}).json()
                result[name] = time.perf_counter() - start
                assert "verification" in step["info"], step
            math = {"verifier": "math", "prediction": r"\sqrt{8}", "task": {"answer": r"2\sqrt{2}"}}
            for name in ("verify_first_s", "verify_second_s"):
                start = time.perf_counter()
                assert client.post("/v1/verify", json=math).json()["correct"] is True
                result[name] = time.perf_counter() - start
            return result
    finally:
        server.terminate()
        server.wait(timeout=30)


def _answers(client: object) -> bool:
    import httpx

    try:
        return client.get("/healthz").status_code == 200  # type: ignore[attr-defined]
    except httpx.TransportError:
        return False


if __name__ == "__main__":
    main()
