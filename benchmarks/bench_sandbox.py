"""Isolated executions per second, per sandbox backend, against a bare ``python -c`` floor.

    python benchmarks/bench_sandbox.py [--calls 100] [--docker-image IMAGE] [--no-docker] [--json out.json]

Two programs: a trivial ``print(1)`` and ``import numpy``. Rows:

- floor: ``subprocess.run([sys.executable, "-c", prog])``, no isolation (the baseline);
- bwrap warm: one sandbox, calls forked from its warm supervisor (the default path);
- bwrap warm, preloaded: the supervisor imported numpy and sympy once (MathTool's default);
- bwrap cold: a fresh bubblewrap sandbox (namespaces + supervisor) per call;
- docker warm / docker cold: the same with a container (cold = one container per call,
  the way container sandboxes are usually driven);
- local warm: the unisolated backend, for the cost of isolation itself.

Every call really runs the program and its output is checked.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import warnings

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from harness import Measurement, measure, report  # noqa: E402

from agentgym.sandbox import Limits, make_sandbox  # noqa: E402

PROGRAMS = {"trivial": ("print(1)", "1"), "numpy import": ("import numpy; print(numpy.ones(3).sum())", "3.0")}


def _check(stdout: str, expected: str, where: str) -> None:
    if stdout.strip() != expected:
        raise SystemExit(f"{where}: expected {expected!r}, got {stdout!r}")


def floor(code: str, expected: str, n: int) -> int:
    for _ in range(n):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        _check(out, expected, "floor")
    return n


def warm(backend: str, code: str, expected: str, n: int, **kwargs: object) -> Measurement:
    with make_sandbox(backend, limits=Limits(timeout_s=30), **kwargs) as sb:
        sb.run("pass")  # start the supervisor outside the timing

        def calls() -> int:
            for _ in range(n):
                _check(sb.run(code).stdout, expected, f"{backend} warm")
            return n

        return measure(f"{backend} warm", calls)


def cold(backend: str, code: str, expected: str, n: int, **kwargs: object) -> int:
    for _ in range(n):
        with make_sandbox(backend, limits=Limits(timeout_s=30), **kwargs) as sb:
            _check(sb.run(code).stdout, expected, f"{backend} cold")
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--cold-calls", type=int, default=20)
    parser.add_argument("--docker-image", default=os.environ.get("AGENTGYM_SANDBOX_IMAGE"))
    parser.add_argument("--no-docker", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)  # the local backend's warning, once per sandbox
    n, nc = args.calls, args.cold_calls
    for label, (code, expected) in PROGRAMS.items():
        print(f"\n== {label}: {code}")
        rows = [measure("floor: bare python -c (baseline)", lambda: floor(code, expected, nc))]
        row = warm("bwrap", code, expected, n)
        rows.append(Measurement("bwrap warm (default)", row.ops, row.rate_per_s, row.best_rate_per_s, row.repeats))
        row = warm("bwrap", code, expected, n, preload=("numpy", "sympy"))
        rows.append(Measurement("bwrap warm, numpy+sympy preloaded (MathTool)", row.ops, row.rate_per_s,
                                row.best_rate_per_s, row.repeats))
        rows.append(measure("bwrap cold (new sandbox per call)", lambda: cold("bwrap", code, expected, nc)))
        if not args.no_docker:
            docker_kwargs = {"image": args.docker_image} if args.docker_image else {}
            row = warm("docker", code, expected, n, **docker_kwargs)
            rows.append(Measurement("docker warm", row.ops, row.rate_per_s, row.best_rate_per_s, row.repeats))
            rows.append(measure("docker cold (new container per call)",
                                lambda: cold("docker", code, expected, max(3, nc // 4), **docker_kwargs),
                                repeats=1))
        row = warm("local", code, expected, n, allow_unsafe=True)
        rows.append(Measurement("local warm (no isolation)", row.ops, row.rate_per_s, row.best_rate_per_s,
                                row.repeats))
        report(rows, baseline=rows[0].name,
               json_path=args.json.replace(".json", f"-{label.split()[0]}.json") if args.json else None)


if __name__ == "__main__":
    main()
