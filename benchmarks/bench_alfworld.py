"""ALFWorld throughput: our env against upstream ``AlfredTWEnv``, on the same games, in the same run.

    python benchmarks/bench_alfworld.py [--games 12] [--json out.json]

The first ``--games`` bundled valid_unseen games are written in ALFWorld's own layout
(json_2.1.1/valid_unseen/<task>/<trial>/game.tw-pddl + traj_data.json); upstream
``AlfredTWEnv`` (textworld.gym, batch 1, as alfworld's scripts build it) and
``agentgym/ALFWorld-v0`` with ``data_dir=`` that directory both replay every game's
walkthrough. Baseline: upstream env steps/s. Also printed: load, reset and step latency.
The issue's target: ours >= 5x upstream steps/s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from harness import measure, report

import agentgym
from agentgym.envs.alfworld.games import read_bundled, write_official_layout


def upstream_env(data_dir: str, max_steps: int):
    """alfworld's AlfredTWEnv over ``data_dir``'s valid_unseen games, with the config keys it reads."""
    from alfworld.agents.environment.alfred_tw_env import AlfredTWEnv

    from agentgym.envs.alfworld.engine import shipped_logic_files  # noqa: F401 - fails early if not installed

    split_dir = os.path.join(data_dir, "json_2.1.1", "valid_unseen")
    config = {"env": {"goal_desc_human_anns_prob": 0, "task_types": [1, 2, 3, 4, 5, 6],
                      "domain_randomization": False, "expert_type": "handcoded"},
              "dataset": {"data_path": split_dir, "eval_id_data_path": split_dir, "eval_ood_data_path": split_dir,
                          "num_train_games": -1, "num_eval_games": -1},
              "general": {"training_method": "dagger"},
              "dagger": {"training": {"max_nb_steps_per_episode": max_steps}}}
    return AlfredTWEnv(config, train_eval="eval_out_of_distribution").init_env(batch_size=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=12)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    records = [g.record for g in read_bundled() if g.split == "valid_unseen"][: args.games]
    plans = {r["id"]: r["walkthrough"] for r in records}
    tmp = tempfile.mkdtemp(prefix="alfworld-bench-")
    paths = write_official_layout(records, tmp)
    plan_of_file = {str(p): r["walkthrough"] for p, r in zip(paths, records)}

    start = time.perf_counter()
    upstream = upstream_env(tmp, 50)
    _, up_infos = upstream.reset()
    up_load = time.perf_counter() - start
    start = time.perf_counter()
    ours = agentgym.make("agentgym/ALFWorld-v0", data_dir=tmp, split="valid_unseen").unwrapped
    ids = [t.id for t in ours.tasks.tasks("valid_unseen")]
    ours.reset(options={"task_id": ids[0]})
    our_load = time.perf_counter() - start
    lat = {"upstream reset": [], "ours reset": [], "upstream step": [], "ours step": []}

    def upstream_episodes() -> int:
        nonlocal up_infos
        steps = 0
        for _ in records:
            t = time.perf_counter()
            _, up_infos = upstream.reset()
            lat["upstream reset"].append(time.perf_counter() - t)
            for command in plan_of_file[up_infos["extra.gamefile"][0]]:
                t = time.perf_counter()
                _, _, _, up_infos = upstream.step([command])
                lat["upstream step"].append(time.perf_counter() - t)
                steps += 1
            if not up_infos["won"][0]:
                raise SystemExit(f"upstream did not win {up_infos['extra.gamefile'][0]}")
        return steps

    def our_episodes() -> int:
        steps = 0
        for task_id in ids:
            t = time.perf_counter()
            ours.reset(options={"task_id": task_id})
            lat["ours reset"].append(time.perf_counter() - t)
            for command in plan_of_file[ours.games[task_id].path]:
                t = time.perf_counter()
                _, reward, terminated, _, _ = ours.step(command)
                lat["ours step"].append(time.perf_counter() - t)
                steps += 1
            if reward != 1.0 or not terminated:
                raise SystemExit(f"ours did not win {task_id}")
        return steps

    rows = [measure("upstream AlfredTWEnv (env steps/s, baseline)", upstream_episodes, repeats=2),
            measure("agentgym/ALFWorld-v0 (env steps/s)", our_episodes, repeats=3)]
    report(rows, baseline=rows[0].name, json_path=args.json)
    print(f"\n{'latency':<24} {'upstream':>12} {'ours':>12}")
    print(f"{'load + first reset':<24} {up_load * 1e3:>10.0f}ms {our_load * 1e3:>10.0f}ms")
    for what in ("reset", "step"):
        up, us = statistics.median(lat[f"upstream {what}"]), statistics.median(lat[f"ours {what}"])
        print(f"{what + ' (median)':<24} {up * 1e3:>10.1f}ms {us * 1e3:>10.1f}ms")
    print(f"\n{len(records)} games, {sum(len(p) for p in plans.values())} walkthrough steps per pass")
    upstream.close()


if __name__ == "__main__":
    main()
