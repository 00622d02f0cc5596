"""Greedy agreement of a local model played in batches with itself played one episode at a time.

    OMP_NUM_THREADS=1 python scripts/batch_agreement.py [--policy smollm2] [--episodes 5] [--batch-size 32]
        [--env ENV_ID]... [--out DIR] [--json FILE]

Plays the same episodes (the core suite's first ``--episodes`` of each entry, greedy, fp32, the eval's
defaults otherwise) with ``--batch-size 1`` and with ``--batch-size N`` through ``agentgym eval``'s own code,
then compares them episode by episode as ``scripts/dtype_agreement.py`` does: the whole transcript identical,
the first model turn identical, the same reward, and each run's score. The report names this machine's CPU and
kernel path (``agentgym.lm.compute``): the agreement is a property of the CPU, not of the model alone.
"""

from __future__ import annotations

import runpy
import tempfile
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> dict[str, Any]:
    shared = runpy.run_path(str(Path(__file__).with_name("dtype_agreement.py")))
    parser = shared["parser_for"](__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32, help="The batched run's batch size.")
    args = parser.parse_args(argv)
    if args.batch_size < 2:
        parser.error("--batch-size must be at least 2: it is compared with a batch of one")

    from agentgym.lm.compute import cpu_model, kernel_path

    with tempfile.TemporaryDirectory() as tmp:
        sizes = {f"batch{size}": {"dtype": "float32", "batch_size": size} for size in (1, args.batch_size)}
        records, seconds = shared["play"](args, sizes, Path(args.out or tmp))
        first, second = sizes
        report = {"policy": args.policy, "suite": args.suite if not args.env else args.env,
                  "episodes_per_entry": args.episodes, "cpu": " ".join(cpu_model()), "kernel": kernel_path(),
                  "wall_s": seconds, **shared["compare"](records[first], records[second], labels=(first, second))}
    return shared["emit"](report, args.json)


if __name__ == "__main__":
    main()
