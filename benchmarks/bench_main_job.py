"""Wall-clock of the main job: `agentgym eval` on its defaults, from an empty results file, model load included.

    python benchmarks/bench_main_job.py [--json out.json] [--baseline-episodes 4] [--serial-env-baseline]
        [-- extra eval args]

Runs the installed `agentgym` command in a fresh directory exactly as the README
types it, watches the results file as episodes land, and prints the total
(target: <= 300 s on 2 cores) and when each suite entry finished, with its split: generation (the
batched turns' wall time, from each episode's ``generate_s``: the longest-lived episode of a batch saw all
of that batch's turns) and env (reset, steps and verification, the sum of the episodes' ``env_s``; a turn's
env calls run at the same time, one a core, so where several wait at once the entry's wall time holds less than
this sum: ``AGENTGYM_ENV_THREADS=1`` makes them one after another), the rest being model loading, env making and
the gaps between. With
``--baseline-episodes N`` it then times, in the same run, N episodes of every entry
played one at a time (``--batch-size 1``, the path before batching) against the
same N batched, and prints the ratio: the speed-up batching buys on this machine. With
``--serial-env-baseline`` it then runs the same command again with ``AGENTGYM_ENV_THREADS=1`` (each turn's env
calls one after another, as before they ran at the same time) and prints both times, their ratio, and whether
every episode's transcript and reward are the same in both runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

TARGET_S = 300.0  # issue 34: at most 300 s on a quiet 2-core machine
BATCH = 32  # agentgym eval's default --batch-size: the lockstep batches whose generation time episodes share


def _entry(line: str) -> str | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record.get("entry") or record.get("env_id")


SPLIT: dict[str, dict[str, float]] = {}  # entry -> {"env_s": sum, "batch <k>": generation wall}


def _split(line: str) -> None:
    try:
        record = json.loads(line)
    except ValueError:
        return
    entry = record.get("entry") or record.get("env_id")
    if not entry or record.get("env_s") is None:
        return
    row = SPLIT.setdefault(entry, {"env_s": 0.0})
    row["env_s"] += float(record["env_s"])
    batch = f"batch {int(record.get('episode') or 0) // BATCH}"
    row[batch] = max(row.get(batch, 0.0), float(record.get("generate_s") or 0.0))


def _outcomes(workdir: Path) -> dict[str, tuple[object, object]]:
    """Each episode's (transcript, reward) in the results files of ``workdir``, by its key."""
    out: dict[str, tuple[object, object]] = {}
    for path in sorted(workdir.glob("results/*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            out[record["key"]] = (record.get("transcript"), record.get("reward"))
    return out


def timed_eval(args: list[str], workdir: Path,
               env: dict[str, str] | None = None) -> tuple[float, dict[str, float], Counter[str], int]:
    """Run `agentgym eval ARGS` in ``workdir``; (seconds, entry -> seconds when its last episode landed, counts, rc)."""
    SPLIT.clear()
    seen: Counter[str] = Counter()
    last: dict[str, float] = {}
    offsets: dict[Path, int] = {}  # bytes of each results file already read: only new lines are read each poll
    # the command's output goes to a file, not a pipe nobody drains while it runs (a full pipe would stall it)
    with open(workdir / "eval.log", "w+") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(["agentgym", "eval", *args], cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {})})
        while True:
            finished = proc.poll() is not None
            for path in sorted(workdir.glob("results/*.jsonl")):
                with open(path, "rb") as f:
                    f.seek(offsets.get(path, 0))
                    chunk = f.read()
                complete = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written is read next time
                offsets[path] = offsets.get(path, 0) + len(complete)
                for line in complete.decode().splitlines():
                    entry = _entry(line)
                    _split(line)
                    if entry:
                        seen[entry] += 1
                        last[entry] = time.perf_counter() - start
            if finished:
                break
            time.sleep(0.5)
        total = time.perf_counter() - start
        if proc.returncode not in (0, 1):
            log.seek(0)
            sys.stderr.write(log.read()[-4000:])
    return total, last, seen, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--baseline-episodes", type=int, default=0,
                        help="time N episodes per entry unbatched vs batched (0: skip)")
    parser.add_argument("--serial-env-baseline", action="store_true",
                        help="run again with each turn's env calls one after another (AGENTGYM_ENV_THREADS=1)")
    parser.add_argument("extra", nargs="*", help="more `agentgym eval` arguments (after --)")
    ns = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-main-job-") as tmp:
        total, last, seen, rc = timed_eval(ns.extra, Path(tmp))
        outcomes = _outcomes(Path(tmp))
    print(f"agentgym eval {' '.join(ns.extra)}".rstrip() + f": {total:.0f} s (target <= {TARGET_S:.0f} s), exit {rc}")
    previous = 0.0
    entries: dict[str, dict[str, float]] = {}
    for entry, at in sorted(last.items(), key=lambda item: item[1]):
        split = SPLIT.get(entry, {})
        generate = sum(v for k, v in split.items() if k.startswith("batch "))
        env = split.get("env_s", 0.0)
        print(f"  {entry:<40} {seen[entry]:>4} episodes  done at {at:6.0f} s  ({at - previous:5.0f} s: generation "
              f"{generate:5.0f} s, env {env:5.0f} s)")
        entries[entry] = {"episodes": seen[entry], "done_at_s": round(at, 1), "seconds": round(at - previous, 1),
                          "generate_s": round(generate, 1), "env_s": round(env, 1)}
        previous = at
    figures: dict[str, object] = {"main_job_s": round(total, 1), "target_s": TARGET_S, "exit": rc,
                                  "entries": entries}
    if ns.baseline_episodes:
        n = str(ns.baseline_episodes)
        runs = {}
        for name, batch in (("unbatched", "1"), ("batched", "32")):
            with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
                seconds, _, counted, _ = timed_eval([*ns.extra, "--episodes", n, "--batch-size", batch], Path(tmp))
            runs[name] = seconds
            print(f"  {name:<10} {sum(counted.values()):>4} episodes ({n} per entry): {seconds:.0f} s")
        ratio = runs["unbatched"] / runs["batched"]
        print(f"  batched is {ratio:.2f}x faster than one episode at a time on the same episodes")
        figures["baseline"] = {**runs, "episodes_per_entry": ns.baseline_episodes, "speedup": round(ratio, 2)}
    if ns.serial_env_baseline:
        with tempfile.TemporaryDirectory(prefix="bench-serial-env-") as tmp:
            serial, _, _, _ = timed_eval(ns.extra, Path(tmp), env={"AGENTGYM_ENV_THREADS": "1"})
            before = _outcomes(Path(tmp))
        same = sum(before.get(key) == outcome for key, outcome in outcomes.items())
        print(f"  env calls one after another: {serial:.0f} s; at the same time: {total:.0f} s "
              f"({serial / total:.2f}x); the same transcript and reward in {same} of {len(outcomes)} episodes")
        figures["serial_env_baseline"] = {"serial_s": round(serial, 1), "concurrent_s": round(total, 1),
                                          "speedup": round(serial / total, 2), "same_outcome": same,
                                          "episodes": len(outcomes)}
    if ns.json:
        ns.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
