"""Steps per hour: asynchronous GRPO (``--max-staleness 1``) against the synchronous loop, the same recipe, in one run.

    OMP_NUM_THREADS=1 python benchmarks/bench_async.py [--steps 4] [--rounds 1] [--sync-threads 2]
                                                       [--async-threads 1] [--rollout-threads 1]
                                                       [--tool-latency 0] [--json out.json]

Both sides train docs/training/mathtool-tooluse.yaml (MathTool's tool-use recipe: SmolLM2-135M, fresh weights each
run, 2 groups x 8 rollouts a step, 2 turns of at most 48 tokens, temperature 0.5, dapo) for ``--steps`` steps. The
synchronous side plays each step's rollouts, then updates (at ``--sync-threads`` torch threads: the recipe's 2 is its
best on 2 cores); the asynchronous side's worker plays the next step's groups while the learner trains
(``--async-threads`` torch threads for the learner, ``--rollout-threads`` for the worker). Rounds are interleaved A B B A (sync, async, async, sync, ...).
``--tool-latency S`` makes every tool call answer S seconds later (a wrapper env, as a remote tool would).

A step's rate counts the steps after the first (the first is a cold start on both sides: the asynchronous worker
has nothing queued yet), from the first step's end to the last's. Beside each rate: episodes trained and played,
model turns, tokens generated and trained per step, from each run's metrics.jsonl, so the two sides are seen to do
the same work.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import gymnasium as gym
import yaml
from transformers import TrainerCallback

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "docs" / "training" / "mathtool-tooluse.yaml"
SLOW = "agentgym-bench/SlowMathTool-v0"


class SlowTools(gym.Wrapper):
    """MathTool whose tool calls answer ``latency`` seconds later."""

    def __init__(self, env: gym.Env, latency: float) -> None:
        super().__init__(env)
        self.latency = latency

    def step(self, action: Any) -> Any:
        out = self.env.step(action)
        if out[4].get("tool_calls"):
            time.sleep(self.latency)
        return out


def slow_mathtool(latency: float = 1.0, **kwargs: Any) -> gym.Env:
    return SlowTools(gym.make("agentgym/MathTool-v0", **kwargs), latency)


class StepEnds(TrainerCallback):
    def __init__(self) -> None:
        self.ends: list[float] = []

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001 - transformers' signature
        self.ends.append(time.perf_counter())


def run(args: argparse.Namespace, out: Path, *, staleness: int) -> dict[str, Any]:
    from agentgym.lm.local import load_for_training, resolve_model
    from agentgym.trainer.grpo import TrainConfig, build_trainer

    recipe = yaml.safe_load(RECIPE.read_text())
    env, kwargs = recipe["env"], dict(recipe["env_kwargs"])
    if args.tool_latency:
        if SLOW not in gym.registry:
            gym.register(SLOW, entry_point=slow_mathtool)
        env, kwargs = [SLOW], {**kwargs, "latency": args.tool_latency}
    config = TrainConfig(
        env=env, env_kwargs=kwargs, split="train", system_prompt=recipe["system_prompt"],
        observation_style=recipe["observation_style"], group_size=recipe["group_size"],
        groups_per_step=recipe["groups_per_step"], steps=args.steps, max_turns=recipe["max_turns"],
        max_turn_tokens=recipe["max_turn_tokens"], max_completion_tokens=recipe["max_completion_tokens"],
        temperature=recipe["temperature"], loss_type=recipe["loss_type"], learning_rate=recipe["learning_rate"],
        seed=0, save_steps=10_000, output_dir=str(out), max_staleness=staleness,
        threads=args.async_threads if staleness else args.sync_threads, rollout_threads=args.rollout_threads)
    model, tokenizer = load_for_training(resolve_model("smollm2"))
    trainer, rollouts = build_trainer(config, model=model, tokenizer=tokenizer)
    ends = StepEnds()
    trainer.add_callback(ends)
    start = time.perf_counter()
    try:
        trainer.train()
    finally:
        rollouts.close()
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if "warning" not in r]
    episodes = config.batch
    later = ends.ends[-1] - ends.ends[0]
    side = {
        "max_staleness": staleness, "threads": config.threads,
        "rollout_threads": (config.rollout_threads or config.threads) if staleness else config.threads, "steps": len(rows),
        "steps_per_hour": 3600 * (len(ends.ends) - 1) / later if later > 0 else None,
        "steps_per_hour_with_first": 3600 * len(ends.ends) / (ends.ends[-1] - start),
        "episodes_trained_per_step": episodes,
        "model_turns_per_step": statistics.mean(r["turns"] * episodes for r in rows),
        "tokens_generated_per_step": statistics.mean(r["tokens_model"] for r in rows),
        "tokens_trained_per_step": statistics.mean(r["tokens_model"] + r["tokens_masked"] for r in rows),
        "tool_calls_per_step": statistics.mean(r["tool_calls"] * episodes for r in rows),
    }
    if staleness:
        summary = json.loads((out / "pipeline.json").read_text())
        side["groups_played_not_trained"] = summary["groups_left_queued"] + summary["groups_left_in_flight"]
        side["staleness_mean"] = statistics.mean(r["staleness_mean"] for r in rows)
        side["learner_idle_s_per_step"] = statistics.mean(r["learner_idle_s"] for r in rows[1:] or rows)
        side["dropped_stale"] = sum(r["dropped_stale"] for r in rows)
    return side


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1, help="A B B A rounds (each runs both sides twice)")
    parser.add_argument("--sync-threads", type=int, default=2)
    parser.add_argument("--async-threads", type=int, default=1, help="the asynchronous learner's torch threads")
    parser.add_argument("--rollout-threads", type=int, default=1, help="the asynchronous rollout worker's")
    parser.add_argument("--tool-latency", type=float, default=0.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    cpu = next((line.split(":", 1)[1].strip() for line in cpu.splitlines() if line.startswith("Model name")),
               platform.processor())
    sides: dict[str, list[dict[str, Any]]] = {"sync": [], "async": []}
    with tempfile.TemporaryDirectory() as tmp:
        k = 0
        for _ in range(args.rounds):
            for name in ("sync", "async", "async", "sync"):
                k += 1
                row = run(args, Path(tmp) / f"{k}-{name}", staleness=1 if name == "async" else 0)
                sides[name].append(row)
                print(f"round {k}: {name:<5} {row['steps_per_hour']:7.1f} steps/h after the first "
                      f"({row['steps_per_hour_with_first']:.1f} with it); per step "
                      f"{row['model_turns_per_step']:.1f} turns, {row['tokens_generated_per_step']:.0f} generated, "
                      f"{row['tokens_trained_per_step']:.0f} trained tokens", flush=True)
    rates = {name: [r["steps_per_hour"] for r in rows] for name, rows in sides.items()}
    ratios = [a / s for a, s in zip(rates["async"], rates["sync"])]
    result = {"cpu": cpu, "cores": os.cpu_count(), "tool_latency_s": args.tool_latency, "steps": args.steps,
              "rounds": "ABBA x " + str(args.rounds), "sides": sides,
              "median_steps_per_hour": {name: statistics.median(v) for name, v in rates.items()},
              "ratio_async_to_sync": statistics.median(ratios), "ratios": ratios}
    print(f"async / sync: {result['ratio_async_to_sync']:.2f}x steps per hour (pairs {', '.join(f'{r:.2f}' for r in ratios)}) "
          f"on {cpu}, {os.cpu_count()} cores, tool latency {args.tool_latency} s")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
