"""Generate the bundled ALFWorld games: agentgym/data/alfworld/games.jsonl.gz.

    python scripts/make_alfworld_data.py [--workers 2] [--base-seed 0]

Seeded and deterministic (alfworld==0.4.2, textworld==1.7.0, fast-downward-textworld 20.6.4): the same
versions and seed give the same bytes. Every game is solved by Fast Downward at generation time; its plan
is stored as the game's walkthrough.
"""

from __future__ import annotations

import argparse
import collections
import time

from agentgym.envs.alfworld.games import BUNDLED_PATH, DEFAULT_SIZES, generate_games, write_bundled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--base-seed", type=int, default=0)
    parser.add_argument("--out", default=str(BUNDLED_PATH))
    args = parser.parse_args()
    start = time.perf_counter()
    records = generate_games(DEFAULT_SIZES, base_seed=args.base_seed, workers=args.workers)
    path = write_bundled(records, args.out)
    counts = collections.Counter((r["split"], r["task_type"]) for r in records)
    for key, n in sorted(counts.items()):
        print(f"{key[0]:<13} {key[1]:<32} {n}")
    print(f"{len(records)} games -> {path} ({path.stat().st_size / 1e6:.2f} MB) in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
