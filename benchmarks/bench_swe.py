"""SWEBench-v0 latency per backend: reset to first observation, and a full gold-patch grading.

    python benchmarks/bench_swe.py [--backends bwrap,docker] [--instances 10] [--json out.json]
                                   [--official DIR]

``--official DIR`` also times SWE-bench 5.x rows (``DIR/*.jsonl`` with ``image`` and
``eval_script``) in their own instance images, which must be on the engine: a fresh
container per reset and per grading, against a bare create/start/remove of the same
image through the Docker SDK.

Baselines, timed in the same run on the host without isolation: writing and committing the
same repository with git (for reset), and that plus applying both patches and running the
same pytest command (for grading). Grading is timed on both paths (isolated, the default for the bundled
instances, and ``grading="in-process"``), and their ratio in the same run. The docker backend needs a running engine and
``$AGENTGYM_SANDBOX_IMAGE`` (an image with python3, git and pytest). The issue's target:
reset under 2 s with bwrap.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from agentgym.envs.swe.env import SWEBenchEnv
from agentgym.envs.swe.grader import test_files
from agentgym.envs.swe.repo import GIT_ENV, commit_message, materialize


def host_grading(instance: dict, files: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        materialize(files, Path(tmp), commit_message(instance))
        env = {**os.environ, **GIT_ENV, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        for patch in (instance["patch"], instance["test_patch"]):
            subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=tmp, env=env, check=True)
        subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "--tb=no", "-q",
                        *test_files(instance["test_patch"])], cwd=tmp, env=env, capture_output=True, check=False)


def timed(fn, n: int) -> list[float]:
    out = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - start)
    return out


def row(name: str, seconds: list[float], base: float | None) -> dict:
    median = statistics.median(seconds)
    p90 = sorted(seconds)[int(0.9 * (len(seconds) - 1))]
    ratio = f"{median / base:.2f}" if base else "-"
    print(f"{name:<46} {median * 1000:>9.0f} {p90 * 1000:>9.0f} {ratio:>10}")
    return {"name": name, "median_s": median, "p90_s": p90, "x_baseline": median / base if base else None}


def official(data: str, n: int) -> list[dict]:
    import docker

    env = SWEBenchEnv(data_dir=data, backend="docker")
    tasks = env.tasks.tasks("test")
    client = docker.from_env()

    def bare_container(i: int) -> None:
        container = client.containers.create(tasks[i % len(tasks)].gold["image"], ["true"], network_mode="none")
        container.start()
        container.wait()
        container.remove(force=True)

    base = statistics.median(timed(bare_container, n))
    rows = [row("baseline: bare container of the instance image", [base], None),
            row("official image: reset to first observation", timed(
                lambda i: env.reset(options={"index": i % len(tasks)}), n), base),
            row("official image: gold-patch grading (fresh container)", timed(
                lambda i: env.grade(tasks[i % len(tasks)], tasks[i % len(tasks)].gold["patch"]), n), base)]
    env.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="bwrap")
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--json", default=None)
    parser.add_argument("--official", default=None, help="a directory of SWE-bench 5.x rows whose images are here")
    args = parser.parse_args()
    probe = SWEBenchEnv()
    tasks = probe.tasks.tasks("test")[: args.instances]
    n = len(tasks)

    def host_reset(i: int) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            materialize(probe.repos[tasks[i].id], Path(tmp), commit_message(tasks[i].gold))

    print(f"{'SWEBench-v0, ' + str(n) + ' instances':<46} {'median ms':>9} {'p90 ms':>9} {'x baseline':>10}")
    reset_base = statistics.median(timed(host_reset, n))
    grade_base = statistics.median(timed(lambda i: host_grading(tasks[i].gold, probe.repos[tasks[i].id]), n))
    rows = [row("baseline: host git checkout (no isolation)", [reset_base], None),
            row("baseline: host checkout + patches + pytest", [grade_base], None)]
    probe.close()
    for backend in args.backends.split(","):
        env = SWEBenchEnv(backend=backend)  # type: ignore[arg-type]
        env.reset(options={"index": 0})  # the sandbox starts once per env, not per episode
        rows.append(row(f"{backend}: reset to first observation", timed(
            lambda i, env=env: env.reset(options={"index": i}), n), reset_base))
        isolated = timed(lambda i, env=env: env.grade(tasks[i], tasks[i].gold["patch"]), n)
        rows.append(row(f"{backend}: gold-patch grading, isolated (checkout + tests)", isolated, grade_base))
        in_process = SWEBenchEnv(backend=backend, grading="in-process")  # type: ignore[arg-type]
        timed_in = timed(lambda i: in_process.grade(tasks[i], tasks[i].gold["patch"]), n)
        in_process.close()
        rows.append(row(f"{backend}: gold-patch grading, in-process", timed_in, grade_base))
        rows.append(row(f"{backend}: isolated grading / in-process (x)", isolated,
                        statistics.median(timed_in)))
        cold = []
        for i in range(min(n, 3)):
            start = time.perf_counter()
            fresh = SWEBenchEnv(backend=backend)  # type: ignore[arg-type]
            fresh.reset(options={"index": i})
            cold.append(time.perf_counter() - start)
            fresh.close()
        rows.append(row(f"{backend}: first reset of a new env (sandbox start)", cold, reset_base))
        env.close()
    if args.official:
        rows += official(args.official, n)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
