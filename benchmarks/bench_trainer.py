"""Seconds per GRPO step: our multi-turn path against plain TRL single-turn GRPO and TRL's own multi-turn
environment mode (``environment_factory`` with agentgym's adapter), in the same run.

    OMP_NUM_THREADS=1 python benchmarks/bench_trainer.py [--steps 3] [--group-size 4] [--groups 2]
                                                         [--tokens 256] [--model smollm2] [--json out.json]

Both trainers get the same model (fresh copies of the default SmolLM2-135M, fp32), the
same batch (groups x group size), the same token budget per sequence (our
``max_completion_tokens`` = TRL's ``max_completion_length``), the same sampling and
the same GRPO loss settings (gradient checkpointing off in both: TRL's default turns
it on, which also turns off the KV cache in its generation). TRL's own path generates one completion per prompt with
``model.generate``; ours plays SearchQA episodes turn by turn (batched generation
per turn, env steps, observation tokens) and hands TRL the ids and the mask; TRL's environment mode plays the same
env through ``agentgym.integrations.trl`` (its tool calls as env steps, at most 3 model turns as ours). One
warm-up step each, then the median of ``--steps`` steps; the tokens each step
processed are printed beside the times, since they decide them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import torch
from transformers import TrainerCallback

ENV = "agentgym/SearchQA-v0"


class StepTimer(TrainerCallback):
    def __init__(self) -> None:
        self.times: list[float] = []
        self.tokens: list[float] = []
        self._start = 0.0

    def on_step_begin(self, args, state, control, **kwargs):  # noqa: ANN001 - transformers' signature
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
        self.times.append(time.perf_counter() - self._start)

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
        if logs and "completions/mean_length" in logs:
            self.tokens.append(float(logs["completions/mean_length"]))


def timed(trainer, rollouts=None) -> StepTimer:  # noqa: ANN001 - any TRL trainer
    """Train ``trainer`` timing each step (``rollouts``, agentgym's rollout function, is closed after)."""
    timer = StepTimer()
    trainer.add_callback(timer)
    try:
        trainer.train()
    finally:
        if rollouts is not None:
            rollouts.close()
    return timer


def timing_row(name: str, timer: StepTimer) -> dict[str, Any]:
    """A table row: the median step after the first (which warms up) and the mean model tokens per sequence."""
    steps = timer.times[1:]
    return {"name": name, "median_step_s": statistics.median(steps), "steps_s": steps,
            "mean_model_tokens": statistics.mean(timer.tokens[1:]) if timer.tokens[1:] else None}


def _model(path: str):
    from agentgym.lm.local import load_for_training

    return load_for_training(path)


def ours(path: str, args: argparse.Namespace, out: Path) -> StepTimer:
    from agentgym.trainer.grpo import TrainConfig, build_trainer

    model, tokenizer = _model(path)
    config = TrainConfig(env=[ENV], output_dir=str(out / "ours"), group_size=args.group_size,
                         groups_per_step=args.groups, steps=args.steps + 1, max_turns=3, max_turn_tokens=64,
                         max_completion_tokens=args.tokens, learning_rate=1e-6, save_steps=10_000, tasks=64)
    trainer, rollouts = build_trainer(config, model=model, tokenizer=tokenizer)
    return timed(trainer, rollouts)


def _trl_config(args: argparse.Namespace, out: Path, **extra: Any) -> Any:
    """TRL's config for both TRL rows: the batch, budget, sampling and loss settings ``ours`` uses."""
    from trl import GRPOConfig

    from agentgym.trainer.grpo import uses_bf16

    return GRPOConfig(output_dir=str(out), per_device_train_batch_size=args.group_size * args.groups,
                      gradient_accumulation_steps=1, num_generations=args.group_size, learning_rate=1e-6,
                      max_steps=args.steps + 1, logging_steps=1, save_steps=10_000, report_to="none",
                      use_cpu=True, disable_tqdm=True, temperature=1.0, top_p=1.0, top_k=0,
                      max_completion_length=args.tokens, loss_type="dapo", beta=0.0,
                      gradient_checkpointing=False,  # as ours: with it TRL generates without a KV cache
                      bf16=uses_bf16("auto"),  # as ours (TRL defaults to bf16, emulated where the CPU lacks it)
                      **extra)


def plain_trl(path: str, args: argparse.Namespace, out: Path) -> StepTimer:
    import gymnasium as gym
    from datasets import Dataset
    from trl import GRPOTrainer

    import agentgym  # noqa: F401

    model, tokenizer = _model(path)
    env = gym.make(ENV, split="train")
    prompts = []
    for i in range(64):
        observation, _ = env.reset(options={"index": i})
        prompts.append([{"role": "user", "content": observation}])
    env.close()
    config = _trl_config(args, out / "trl")

    def zero(completions, **_):  # noqa: ANN001 - the step's cost, not its reward, is measured
        return [0.0] * len(completions)

    trainer = GRPOTrainer(model=model, reward_funcs=[zero], args=config, processing_class=tokenizer,
                          train_dataset=Dataset.from_list([{"prompt": p} for p in prompts]))
    return timed(trainer)


def trl_environment_mode(path: str, args: argparse.Namespace, out: Path) -> StepTimer:
    """TRL's own multi-turn loop (``environment_factory``) on the same env, model, batch and budget."""
    from datasets import Dataset
    from trl import GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    from agentgym.integrations.trl import dataset, environment_factory, reward

    model, tokenizer = _model(path)
    tokenizer.chat_template = qwen2_5_chat_template  # ChatML like SmolLM2's own, plus tool calls
    config = _trl_config(args, out / "trl-env", max_tool_calling_iterations=2)  # ours: max_turns=3
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=config, processing_class=tokenizer,
                          train_dataset=Dataset.from_list(dataset(ENV, split="train", count=64)),
                          environment_factory=environment_factory(ENV))
    return timed(trainer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from agentgym.lm.local import resolve_model

    path = resolve_model(args.model)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, run in (("plain TRL single-turn GRPO", plain_trl), ("agentgym multi-turn GRPO", ours),
                          ("TRL environment_factory multi-turn", trl_environment_mode)):
            rows.append(timing_row(name, run(path, args, Path(tmp))))
    base = rows[0]["median_step_s"]
    batch = args.group_size * args.groups
    print(f"{'GRPO step, batch ' + str(batch) + ', ' + str(args.tokens) + ' tokens':<40}"
          f" {'median s':>9} {'x TRL':>7} {'model tokens/seq':>17} {'model tokens/s':>15}")
    for row in rows:
        row["x_trl"] = row["median_step_s"] / base
        tokens = row["mean_model_tokens"]
        # generated tokens trained on per second of step: fair when the two paths generate different lengths
        row["model_tokens_per_s"] = None if tokens is None else tokens * batch / row["median_step_s"]
        shown = ("-", "-") if tokens is None else (f"{tokens:.0f}", f"{row['model_tokens_per_s']:.1f}")
        print(f"{row['name']:<40} {row['median_step_s']:>9.1f} {row['x_trl']:>7.2f} {shown[0]:>17} {shown[1]:>15}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
