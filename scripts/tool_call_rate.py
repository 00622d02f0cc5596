"""How often a model calls its tools before any training: a recipe's rollouts, played by the trainer's own code.

Plays ``--tasks`` tasks of a split ``--samples`` times each (a GRPO group per
task) with ``play_episodes`` and ``ChatGlue``, exactly as ``agentgym train``
would with the recipe's env kwargs, system prompt, observation style, turn and
token budgets and temperature, and prints one JSON line: the tool-call rate
(share of episodes with at least one call), success, success with a tool call,
and how many groups have rewards that differ (the groups GRPO learns from).

    OMP_NUM_THREADS=1 python scripts/tool_call_rate.py --config docs/training/mathtool-tooluse.yaml
    OMP_NUM_THREADS=1 python scripts/tool_call_rate.py --config docs/training/mathtool-tooluse.yaml \\
        --split test --tasks 100 --samples 1 --temperature 0          # the greedy held-out base rate
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="A training recipe (YAML of TrainConfig fields).")
    parser.add_argument("--split", default="train")
    parser.add_argument("--tasks", type=int, default=8, help="The split's first N tasks.")
    parser.add_argument("--samples", type=int, default=8, help="Episodes per task (a GRPO group).")
    parser.add_argument("--temperature", type=float, default=None, help="[default: the recipe's]; 0 is greedy.")
    parser.add_argument("--system-prompt-file", type=Path, default=None,
                        help="Read the system prompt from this file instead of the recipe.")
    parser.add_argument("--no-system-prompt", action="store_true", help="Play without the recipe's system prompt.")
    parser.add_argument("--action-format", default=None, help="Override the recipe's env action_format.")
    parser.add_argument("--episodes-out", type=Path, default=None, help="Write each episode's turns here (JSONL).")
    args = parser.parse_args(argv)

    import torch

    from agentgym.lm.local import load_for_training, resolve_model
    from agentgym.trainer.config import load_config
    from agentgym.trainer.grpo import play_recipe

    config = load_config(args.config)
    if args.action_format:
        config = dataclasses.replace(config, env_kwargs={**config.env_kwargs, "action_format": args.action_format})
    system = None if args.no_system_prompt else config.system_prompt
    if args.system_prompt_file is not None:
        system = args.system_prompt_file.read_text(encoding="utf-8")
    temperature = config.temperature if args.temperature is None else args.temperature
    torch.set_num_threads(1)
    model, tokenizer = load_for_training(resolve_model(config.model))
    model.eval()
    start = time.perf_counter()
    episodes = play_recipe(config, model, tokenizer, split=args.split, tasks=args.tasks, samples=args.samples,
                           temperature=temperature, system_prompt=system)
    seconds = time.perf_counter() - start
    n = len(episodes)
    groups = [episodes[i:i + args.samples] for i in range(0, n, args.samples)]
    called = [e for e in episodes if e.tool_calls]
    report = {"episodes": n, "split": args.split, "temperature": temperature,
              "format": config.env_kwargs.get("action_format"), "system_prompt": system is not None,
              "tool_call_rate": len(called) / n, "tool_calls_per_episode": sum(e.tool_calls for e in episodes) / n,
              "success": sum(e.success for e in episodes) / n, "success_with_tool": sum(e.success for e in called) / n,
              "groups_with_signal": sum(len({e.reward for e in g}) > 1 for g in groups), "groups": len(groups),
              "seconds": round(seconds, 1)}
    print(json.dumps(report))
    if args.episodes_out is not None:
        with args.episodes_out.open("w", encoding="utf-8") as f:
            for e in episodes:
                f.write(json.dumps({"task": e.task_id, "reward": e.reward, "tool_calls": e.tool_calls,
                                    "turns": e.model_texts, "observations": e.observations}) + "\n")
    return report


if __name__ == "__main__":
    main()
