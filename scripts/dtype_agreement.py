"""Greedy agreement of a local model in bf16 with itself in fp32, on the core suite's first episodes.

    OMP_NUM_THREADS=1 python scripts/dtype_agreement.py [--policy smollm2] [--episodes 5] [--env ENV_ID]... [--out DIR]

Plays the same episodes (the core suite's first ``--episodes`` of each entry, greedy, the eval's defaults)
with ``--dtype float32`` and ``--dtype bfloat16`` through ``agentgym eval``'s own code, then compares them
episode by episode: the whole transcript identical (every model turn the same text), the first model turn
identical, the same reward, and the suite's score in each. Prints one JSON object (``--json`` writes it too),
with each run's wall time: on a CPU without native bf16 the bf16 run is emulated, so its time says nothing of a
CPU with it, while its numbers are bf16's.
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import time
from pathlib import Path
from typing import Any


def _turns(record: dict[str, Any]) -> list[str]:
    return [str(m.get("content") or "") + json.dumps(m.get("tool_calls") or [])
            for m in record.get("transcript") or [] if m.get("role") == "assistant"]


def compare(fp32: list[dict[str, Any]], bf16: list[dict[str, Any]], *,
            labels: tuple[str, str] = ("fp32", "bf16")) -> dict[str, Any]:
    """Per entry and overall: episodes, identical transcripts, identical first turns, equal rewards, and each
    run's correct episodes (``correct_<label>``; ``labels`` name the two runs)."""
    correct_a, correct_b = (f"correct_{label}" for label in labels)
    def ident(r: dict[str, Any]) -> tuple[str, int, int]:
        return (str(r.get("entry") or r["env_id"]), int(r["episode"]), int(r.get("sample") or 0))

    other = {ident(r): r for r in bf16}
    rows: dict[str, dict[str, int]] = {}
    for a in fp32:
        b = other.get(ident(a))
        if b is None:
            continue
        row = rows.setdefault(ident(a)[0], dict.fromkeys(
            ("episodes", "same_transcript", "same_first_turn", "same_reward", correct_a, correct_b), 0))
        ta, tb = _turns(a), _turns(b)
        row["episodes"] += 1
        row["same_transcript"] += ta == tb
        row["same_first_turn"] += ta[:1] == tb[:1]
        row["same_reward"] += a["reward"] == b["reward"]
        row[correct_a] += bool(a["correct"])
        row[correct_b] += bool(b["correct"])
    total = {k: sum(r[k] for r in rows.values()) for k in next(iter(rows.values()), {})}
    return {"entries": rows, "total": total}


def parser_for(description: str) -> argparse.ArgumentParser:
    """The options both agreement scripts take: what to play, and where the runs and the report go."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--policy", default="smollm2")
    parser.add_argument("--suite", default="core")
    parser.add_argument("--env", action="append", default=[], metavar="ENV_ID",
                        help="Play these envs (their test split) instead of the suite (repeatable).")
    parser.add_argument("--episodes", type=int, default=5, help="The first N episodes of each suite entry.")
    parser.add_argument("--out", help="Keep both runs' results files here [default: a temporary directory].")
    parser.add_argument("--json", help="Write the report here too.")
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parser_for(__doc__.splitlines()[0]).parse_args(argv)

    from agentgym.lm.precision import native_bf16

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        records, seconds = play(args, {dtype: {"dtype": dtype} for dtype in ("float32", "bfloat16")}, out)
        report = {"policy": args.policy, "suite": args.suite if not args.env else args.env,
                  "episodes_per_entry": args.episodes,
                  "native_bf16": native_bf16(), "wall_s": seconds, **compare(records["float32"], records["bfloat16"])}
    return emit(report, args.json)


def play(args: argparse.Namespace, runs: dict[str, dict[str, Any]], out: Path) -> tuple[dict, dict]:
    """Each run (name -> ``EvalRequest`` settings over ``args``' policy, suite, envs and episodes) through
    ``agentgym eval``'s own code into ``out/<name>.jsonl``: the records and wall seconds of each."""
    from rich.console import Console

    from agentgym.eval.command import EvalRequest, run_eval
    from agentgym.eval.results import load_results

    out.mkdir(parents=True, exist_ok=True)
    records, seconds = {}, {}
    for name, settings in runs.items():
        request = EvalRequest(policy=args.policy, suite=args.suite, envs=tuple(args.env), episodes=args.episodes,
                              results=out / f"{name}.jsonl", **settings)
        start = time.perf_counter()
        outcome = run_eval(request, Console(file=io.StringIO()))
        seconds[name] = round(time.perf_counter() - start, 1)
        if outcome.errors or outcome.unplayed:
            raise SystemExit(f"The {name} run did not finish: {outcome.errors} errored, "
                             f"{outcome.unplayed} unplayed ({request.results}).")
        records[name] = list(load_results(request.results))
    return records, seconds


def emit(report: dict[str, Any], json_path: str | None) -> dict[str, Any]:
    """Print the report, and write it to ``json_path`` too."""
    print(json.dumps(report, indent=1))
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=2) + "\n")
    return report

if __name__ == "__main__":
    main()
