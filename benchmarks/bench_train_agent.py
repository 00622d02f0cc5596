"""A GRPO step of ``train --agent`` (a plain openai-client agent, every model call through the gateway) against the
built-in loop's ``train``, as the same work: both trainers live in one process and take their steps in turn,
A B B A rounds, and each step is reported per 1k trained tokens and per model call beside its calls and tokens.

    OMP_NUM_THREADS=1 python benchmarks/bench_train_agent.py [--rounds 2] [--group-size 4] [--groups 2]
                                                              [--threads 1] [--rollout-threads 1] [--json out.json]

Both sides: MathTool's tool-use task (products of two 4-digit numbers), the default SmolLM2-135M (fresh weights
each), the same batch (groups x group size), turn limit (3), tokens per model turn (48) and per episode (512),
temperature 0.5, loss (dapo), learning rate and torch threads (learner and rollouts). The built-in loop plays
docs/training/mathtool-tooluse.yaml's prompt (tags format, one worked example); the agent is
examples/agents/openai_loop.py:tooluse_agent (tool calls, one worked call as history). Their episodes differ in
length and prompt (the model writes what it writes; the agent's history is longer), so the comparable figures are
per unit: the update's seconds per 1k tokens its forward passes took in (TRL's ``num_tokens``: prompts and
completions), rollout seconds per model call, and the step per 1k trained tokens; each side's episodes, calls and
tokens are printed beside them. One warm-up step
each (A then B), then ``--rounds`` rounds of A B B A; medians over the rounds' steps, with their range.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import yaml
from transformers import TrainerCallback

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "docs" / "training" / "mathtool-tooluse.yaml"
AGENT = f"{ROOT / 'examples' / 'agents' / 'openai_loop.py'}:tooluse_agent"
SIDES = ("loop", "agent")


class Turns:
    """The order the two trainers' steps run in: each waits for its turn at a step's start and passes the turn on at
    its end, so one side's step never overlaps the other's."""

    def __init__(self, order: list[str]) -> None:
        self.order, self.at, self.cv = order, 0, threading.Condition()

    def wait(self, side: str) -> None:
        with self.cv:
            self.cv.wait_for(lambda: self.at >= len(self.order) or self.order[self.at] == side)

    def pass_on(self) -> None:
        with self.cv:
            self.at += 1
            self.cv.notify_all()


class Gate(TrainerCallback):
    def __init__(self, side: str, turns: Turns) -> None:
        self.side, self.turns, self.seconds, self._start = side, turns, [], 0.0

    def on_step_begin(self, args, state, control, **kwargs):  # noqa: ANN001 - transformers' signature
        self.turns.wait(self.side)
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
        self.seconds.append(time.perf_counter() - self._start)
        self.turns.pass_on()


def build(args: argparse.Namespace, out: Path, side: str) -> tuple[Any, Any]:
    from agentgym.lm.local import load_for_training, resolve_model
    from agentgym.trainer.grpo import TrainConfig, build_trainer

    recipe = yaml.safe_load(RECIPE.read_text())
    agent = side == "agent"
    kwargs = {k: v for k, v in recipe["env_kwargs"].items() if not (agent and k == "action_format")}
    shared = {"env": recipe["env"], "env_kwargs": kwargs, "split": "train", "group_size": args.group_size,
              "groups_per_step": args.groups, "steps": 1 + 2 * args.rounds, "max_turns": 3, "max_turn_tokens": 48,
              "max_completion_tokens": 512, "temperature": 0.5, "loss_type": "dapo", "learning_rate": 1e-5,
              "save_steps": 10_000, "threads": args.threads, "rollout_threads": args.rollout_threads,
              "output_dir": str(out / side)}
    config = TrainConfig(**shared, **({"agent": AGENT} if agent else {
        "system_prompt": recipe["system_prompt"], "observation_style": recipe["observation_style"]}))
    model, tokenizer = load_for_training(resolve_model("smollm2"))
    return build_trainer(config, model=model, tokenizer=tokenizer)


def per_step(out: Path, side: str, seconds: list[float], episodes: int) -> list[dict[str, Any]]:
    """Each step's time (the gate's), calls, tokens and rollout seconds, from the run's metrics.jsonl."""
    rows = [json.loads(line) for line in (out / side / "metrics.jsonl").read_text().splitlines() if line.strip()]
    steps, seen = [], 0.0
    for row, step_s in zip(rows, seconds):
        calls_per_episode = row.get("agent_calls") if side == "agent" else row.get("turns")
        calls = round((calls_per_episode or 0) * episodes)
        tokens = row.get("tokens_model") or 0.0
        # TRL's num_tokens counts every token its forward passes took in (prompts and completions), cumulatively
        total = row.get("trl", {}).get("num_tokens", 0.0)
        processed, seen = total - seen, total
        update_s = step_s - row["rollout_time_s"]
        steps.append({"step_s": step_s, "rollout_s": row["rollout_time_s"], "update_s": update_s,
                      "episodes": episodes, "model_calls": calls, "trained_tokens": tokens,
                      "processed_tokens": processed,
                      "s_per_1k_trained_tokens": step_s / (tokens / 1000) if tokens else None,
                      "update_s_per_1k_processed_tokens": update_s / (processed / 1000) if processed else None,
                      "rollout_s_per_call": row["rollout_time_s"] / calls if calls else None})
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="A B B A rounds after one warm-up step each")
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="the learner's torch threads, both sides")
    parser.add_argument("--rollout-threads", type=int, default=1, help="generation's torch threads, both sides")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    order = ["loop", "agent"] + ["loop", "agent", "agent", "loop"] * args.rounds
    turns = Turns(order)
    episodes = args.group_size * args.groups
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        built = {side: build(args, out, side) for side in SIDES}
        gates = {side: Gate(side, turns) for side in SIDES}
        errors: list[BaseException] = []

        def train(side: str) -> None:
            trainer, rollouts = built[side]
            trainer.add_callback(gates[side])
            try:
                trainer.train()
            except BaseException as e:  # noqa: BLE001 - reported below; the other side must not wait forever
                errors.append(e)
                turns.order = [s for s in turns.order[:turns.at]]  # end the turns
                turns.pass_on()
            finally:
                rollouts.close()

        threads = [threading.Thread(target=train, args=(side,), name=side) for side in SIDES]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        report = {"rounds": args.rounds, "order": order, "episodes_per_step": episodes,
                  "threads": args.threads, "rollout_threads": args.rollout_threads, "sides": {}}
        for side in SIDES:
            steps = per_step(out, side, gates[side].seconds, episodes)
            measured = steps[1:]  # after the warm-up
            summary = {}
            for key in ("step_s", "rollout_s", "update_s", "model_calls", "trained_tokens", "processed_tokens",
                        "s_per_1k_trained_tokens", "update_s_per_1k_processed_tokens", "rollout_s_per_call"):
                values = [s[key] for s in measured if s[key] is not None]
                summary[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)} \
                    if values else None
            report["sides"][side] = {"steps": steps, "summary": summary}
    name = {"loop": "built-in loop (train)", "agent": "agent via gateway (train --agent)"}
    print(f"{episodes} episodes a step; {args.rounds} A B B A rounds after a warm-up; medians [min, max]")
    columns = [("step s", "step_s", ".0f"), ("calls", "model_calls", ".0f"), ("trained", "trained_tokens", ".0f"),
               ("processed", "processed_tokens", ".0f"), ("s/1k trained", "s_per_1k_trained_tokens", ".1f"),
               ("update s/1k processed", "update_s_per_1k_processed_tokens", ".2f"),
               ("rollout s/call", "rollout_s_per_call", ".2f")]
    print(f"{'side':<34} " + " ".join(f"{title:>22}" for title, _, _ in columns))
    for side in SIDES:
        s = report["sides"][side]["summary"]

        def cell(key: str, fmt: str) -> str:
            v = s[key]
            return "-" if v is None else f"{v['median']:{fmt}} [{v['min']:{fmt}},{v['max']:{fmt}}]"

        print(f"{name[side]:<34} " + " ".join(f"{cell(key, fmt):>22}" for _, key, fmt in columns))
    ratio = {key: report["sides"]["agent"]["summary"][key]["median"] / report["sides"]["loop"]["summary"][key]["median"]
             for key in ("step_s", "s_per_1k_trained_tokens", "update_s_per_1k_processed_tokens",
                         "rollout_s_per_call")
             if report["sides"]["agent"]["summary"][key] and report["sides"]["loop"]["summary"][key]}
    report["agent_over_loop"] = ratio
    print("agent / loop: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratio.items()))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
