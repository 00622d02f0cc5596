"""Seconds per GRPO step: ``train --agent`` (a plain openai-client agent, every model call through the gateway)
against the built-in loop's ``train``, on the same task and sizes, in the same run.

    OMP_NUM_THREADS=1 python benchmarks/bench_train_agent.py [--steps 3] [--group-size 8] [--groups 2]
                                                              [--threads 2] [--json out.json]

Both runs: MathTool's tool-use task (products of two 4-digit numbers), the default SmolLM2-135M (fresh weights
each), the same batch (groups x group size), env turns (3), tokens per model turn (48) and per episode (512),
temperature 0.5, loss (dapo) and learning rate. The built-in loop plays docs/training/mathtool-tooluse.yaml's
prompt (tags format, one worked example); the agent is examples/agents/openai_loop.py:tooluse_agent (tool calls,
one worked call as history). One warm-up step each, then the median of ``--steps`` steps; the tokens each step
trained on are printed beside the times, since the two loops' episodes differ in length.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import yaml
from bench_trainer import StepTimer, timed, timing_row

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "docs" / "training" / "mathtool-tooluse.yaml"
AGENT = f"{ROOT / 'examples' / 'agents' / 'openai_loop.py'}:tooluse_agent"


def run(args: argparse.Namespace, out: Path, *, agent: bool) -> StepTimer:
    from agentgym.lm.local import load_for_training, resolve_model
    from agentgym.trainer.grpo import TrainConfig, build_trainer

    recipe = yaml.safe_load(RECIPE.read_text())
    kwargs = {k: v for k, v in recipe["env_kwargs"].items() if not (agent and k == "action_format")}
    shared = {"env": recipe["env"], "env_kwargs": kwargs, "split": "train", "group_size": args.group_size,
              "groups_per_step": args.groups, "steps": args.steps + 1, "max_turns": 3, "max_turn_tokens": 48,
              "max_completion_tokens": 512, "temperature": 0.5, "loss_type": "dapo", "learning_rate": 1e-5,
              "save_steps": 10_000, "threads": args.threads, "output_dir": str(out / ("agent" if agent else "loop"))}
    config = TrainConfig(**shared, **({"agent": AGENT} if agent else {
        "system_prompt": recipe["system_prompt"], "observation_style": recipe["observation_style"]}))
    model, tokenizer = load_for_training(resolve_model("smollm2"))
    trainer, rollouts = build_trainer(config, model=model, tokenizer=tokenizer)
    return timed(trainer, rollouts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, agent in (("built-in loop (train)", False), ("agent through the gateway (train --agent)", True)):
            rows.append(timing_row(name, run(args, Path(tmp), agent=agent)))
    base = rows[0]["median_step_s"]
    print(f"{'GRPO step, batch ' + str(args.group_size * args.groups):<44} {'median s':>9} {'x loop':>7} "
          f"{'model tokens/seq':>17}")
    for row in rows:
        row["x_loop"] = row["median_step_s"] / base
        tokens = "-" if row["mean_model_tokens"] is None else f"{row['mean_model_tokens']:.0f}"
        print(f"{row['name']:<44} {row['median_step_s']:>9.1f} {row['x_loop']:>7.2f} {tokens:>17}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
