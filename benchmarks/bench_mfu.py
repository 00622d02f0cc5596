"""This CPU's matmul peak, and how much of it the default model's generation and training reach (MFU).

    OMP_NUM_THREADS=1 python benchmarks/bench_mfu.py [--threads 1] [--dtypes float32 bfloat16] [--trainer]
                                                    [--batch 8] [--prompt 512] [--decode 32] [--json out.json]

1. **Peak**: the median FLOP/s of square matmuls (1024, 2048) and of the model's own shapes (a batch of tokens
   times its MLP and vocabulary projections) in each dtype: the best of them is the peak the rest is measured
   against, in the same run and the same thread count.
2. **Phases of the model** (SmolLM2-135M-Instruct, the default, in each dtype): prefill (one forward pass over
   ``batch`` prompts of ``prompt`` tokens, no gradient), decode (``decode`` greedy tokens for each of
   ``decode_batch`` rows with the KV cache: transformers' ``generate``, and ``decode_agentgym``, the decoding
   loop ``agentgym eval`` and the trainer's rollouts use), and a training step's forward + backward
   (the loss over every token, as TRL's GRPO loss). FLOPs are counted the usual way: 2 per weight per token
   forward (the tied vocabulary projection included, the embedding lookup not), plus attention's
   ``4 x layers x hidden x context`` per token (causal: the mean context), and backward twice forward.
3. ``--trainer``: the GRPO trainer's own steps (``build_trainer``, TRL's loss, SearchQA episodes): the training
   part of a step (its time less its rollouts') against the fp32 peak, and the share of padding in its batches.

MFU = achieved FLOP/s / the peak of the same dtype; ``x fp32 peak`` says how the dtype compares with the fp32
peak (bf16 on a CPU without native bf16 instructions converts to fp32 and can be slower). State ``lscpu``'s model
name and flags with any figure: they decide the peaks.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def _median_seconds(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm-up: oneDNN picks its kernels on the first call
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def matmul_peak(dtype: torch.dtype, shapes: list[tuple[int, int, int]], repeats: int = 5) -> dict[str, float]:
    """FLOP/s of ``[m, k] @ [k, n]`` for each shape (2mnk FLOPs)."""
    out = {}
    for m, k, n in shapes:
        a, b = torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)
        seconds = _median_seconds(lambda: torch.matmul(a, b), repeats)
        out[f"{m}x{k}x{n}"] = 2 * m * n * k / seconds
    return out


def model_flops_per_token(config: Any, context: float) -> float:
    """Forward FLOPs of one token at a mean attention context of ``context`` tokens."""
    d, layers, vocab = config.hidden_size, config.num_hidden_layers, config.vocab_size
    kv = config.num_key_value_heads * (d // config.num_attention_heads)
    per_layer = d * d * 2 + d * kv * 2 + 3 * d * config.intermediate_size  # q, o; k, v; gate, up, down
    return 2 * (layers * per_layer + d * vocab) + 4 * layers * d * context


def phases(model: Any, batch: int, prompt: int, decode: int, repeats: int,
           decode_batch: int | None = None, tokenizer: Any = None) -> dict[str, dict[str, float]]:
    config = model.config
    ids = torch.randint(100, config.vocab_size - 100, (batch, prompt))
    mask = torch.ones_like(ids)
    rows = decode_batch or batch
    decode_ids = torch.randint(100, config.vocab_size - 100, (rows, prompt))
    out: dict[str, dict[str, float]] = {}

    def prefill() -> None:
        with torch.no_grad():
            model(input_ids=ids, attention_mask=mask, use_cache=False)

    seconds = _median_seconds(prefill, repeats)
    out["prefill"] = {"tokens_per_s": batch * prompt / seconds,
                      "flops": batch * prompt * model_flops_per_token(config, prompt / 2) / seconds}

    def generate(new: int) -> Callable[[], None]:
        def run() -> None:
            with torch.no_grad():
                model.generate(input_ids=decode_ids, attention_mask=torch.ones_like(decode_ids), max_new_tokens=new,
                               min_new_tokens=new, do_sample=False, pad_token_id=0)
        return run

    # the decode part alone: generating `decode` tokens less generating 1 (the prefill and the first token)
    seconds = max(_median_seconds(generate(decode + 1), max(1, repeats // 2))
                  - _median_seconds(generate(1), max(1, repeats // 2)), 1e-9)
    out["decode"] = {"tokens_per_s": rows * decode / seconds, "batch": rows,
                     "flops": rows * decode * model_flops_per_token(config, prompt + decode / 2) / seconds}

    if tokenizer is not None:  # the eval's and the rollouts' own decoding loop, on the same rows
        from agentgym.lm.generation import TransformersGenerator

        ours = TransformersGenerator(model, tokenizer, temperature=0.0)
        contexts = decode_ids.tolist()
        made: dict[int, int] = {}

        def play(new: int) -> Callable[[], None]:
            def run() -> None:
                turns = ours.generate(contexts, stops=[()] * rows, max_new_tokens=new, seed=0)
                made[new] = sum(len(t.ids) for t in turns)
            return run

        seconds = max(_median_seconds(play(decode + 1), max(1, repeats // 2))
                      - _median_seconds(play(1), max(1, repeats // 2)), 1e-9)
        tokens = made[decode + 1] - made[1]
        out["decode_agentgym"] = {"tokens_per_s": tokens / seconds, "batch": rows,
                                  "flops": tokens * model_flops_per_token(config, prompt + decode / 2) / seconds}

    def train_step() -> None:
        logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1).float(), ids[:, 1:].flatten())
        loss.backward()
        model.zero_grad(set_to_none=True)

    model.train()
    seconds = _median_seconds(train_step, repeats)
    model.eval()
    out["forward_backward"] = {"tokens_per_s": batch * prompt / seconds,
                               "flops": 3 * batch * prompt * model_flops_per_token(config, prompt / 2) / seconds}
    return out


def trainer_phase(path: str, threads: int, steps: int = 3, group_size: int = 4, groups: int = 2) -> dict[str, float]:
    """The real GRPO trainer (``build_trainer``, TRL's loss) on SearchQA with the default model: the time of each
    step minus its rollouts is the training part; its FLOPs are 3x the forward FLOPs of the sequences it trained
    on, counted on their real tokens (``mfu``) and on the padded batch TRL computes on (``padded_share``: the
    share of that work spent on padding). The first step warms up and is left out."""
    import tempfile

    from transformers import TrainerCallback

    from agentgym.lm.local import load_for_training
    from agentgym.trainer.grpo import TrainConfig, build_trainer

    model, tokenizer = load_for_training(path)
    config = model.config
    train_s: list[float] = []
    flops: list[float] = []
    padded: list[float] = []

    class Timer(TrainerCallback):
        start = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            Timer.start = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            train_s.append(time.perf_counter() - Timer.start - rollout_s[-1])

    rollout_s: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        run = TrainConfig(env=["agentgym/SearchQA-v0"], output_dir=tmp, group_size=group_size,
                          groups_per_step=groups, steps=steps, max_turns=3, max_turn_tokens=48,
                          max_completion_tokens=1024, learning_rate=1e-6, save_steps=10_000, tasks=64,
                          threads=threads, observation_style="chat")
        trainer, rollouts = build_trainer(run, model=model, tokenizer=tokenizer)
        original = trainer.rollout_func

        def timed(prompts: list[Any], trainer_: Any) -> dict[str, Any]:
            start = time.perf_counter()
            out = original(prompts, trainer_)
            rollout_s.append(time.perf_counter() - start)
            lengths = [len(p) + len(c) for p, c in zip(out["prompt_ids"], out["completion_ids"])]
            flops.append(sum(3 * n * model_flops_per_token(config, n / 2) for n in lengths))
            micro = run.micro_batch or run.group_size
            width = [max(len(p) for p in out["prompt_ids"][i:i + micro]) + max(
                len(c) for c in out["completion_ids"][i:i + micro]) for i in range(0, len(lengths), micro)]
            padded.append(1 - sum(lengths) / sum(w * micro for w in width))
            return out

        trainer.rollout_func = timed
        trainer.add_callback(Timer())
        try:
            trainer.train()
        finally:
            rollouts.close()
    seconds = sum(train_s[1:])
    return {"flops": sum(flops[1:]) / seconds, "padded_share": statistics.mean(padded[1:]),
            "train_s_per_step": seconds / len(train_s[1:]), "rollout_s_per_step": statistics.mean(rollout_s[1:])}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=list(DTYPES))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--prompt", type=int, default=512, help="Tokens a row (prefill and training).")
    parser.add_argument("--decode", type=int, default=32, help="Greedy tokens a row after the prompt.")
    parser.add_argument("--decode-batch", type=int, default=32,
                        help="Rows decoded at once (agentgym eval's default --batch-size).")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--trainer", action="store_true",
                        help="Also time the GRPO trainer's own steps on SearchQA (fp32) and report their MFU.")
    parser.add_argument("--json", help="Write the figures here too.")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from agentgym.lm.local import load_for_training, resolve_model

    path = resolve_model(args.model)
    report: dict[str, Any] = {"cpu": _cpu(), "threads": args.threads, "torch": torch.__version__,
                              "batch": args.batch, "prompt": args.prompt, "decode": args.decode,
                              "decode_batch": args.decode_batch, "dtypes": {}}
    fp32_peak = None
    for name in args.dtypes:
        dtype = DTYPES[name]
        model, tokenizer = load_for_training(path, dtype=dtype)
        model.eval()
        c = model.config
        shapes = [(1024, 1024, 1024), (2048, 2048, 2048), (args.batch * args.prompt, c.hidden_size,
                                                          c.intermediate_size),
                  (args.batch * args.prompt, c.hidden_size, c.vocab_size)]
        peaks = matmul_peak(dtype, shapes)
        peak = max(peaks.values())
        fp32_peak = peak if name == "float32" else fp32_peak
        measured = phases(model, args.batch, args.prompt, args.decode, args.repeats, args.decode_batch, tokenizer)
        for row in measured.values():
            row["mfu"] = row["flops"] / peak
            if fp32_peak:
                row["x_fp32_peak"] = row["flops"] / fp32_peak
        report["dtypes"][name] = {"matmul": peaks, "peak": peak, "phases": measured}
        del model
    if args.trainer:  # fp32: the trainer's dtype
        row = trainer_phase(path, args.threads)
        peak = report["dtypes"].get("float32", {}).get("peak") or max(
            matmul_peak(torch.float32, [(2048, 2048, 2048)]).values())
        row["mfu"] = row["flops"] / peak
        report["trainer"] = row
    _print(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return report


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                flags = Path("/proc/cpuinfo").read_text()
                native = [f for f in ("avx512f", "avx512_bf16", "amx_bf16") if f" {f}" in flags]
                return f"{line.split(':', 1)[1].strip()} ({', '.join(native) or 'no avx512'})"
    except OSError:
        pass
    return platform.processor() or "unknown"


def _print(report: dict[str, Any]) -> None:
    print(f"CPU: {report['cpu']}; {report['threads']} thread(s); torch {report['torch']}; batch {report['batch']} "
          f"x {report['prompt']} tokens; {report['decode']} tokens decoded a row, {report['decode_batch']} rows")
    for name, d in report["dtypes"].items():
        shapes = ", ".join(f"{k} {v / 1e9:.1f}" for k, v in d["matmul"].items())
        print(f"{name}: matmul GFLOP/s {shapes}; peak {d['peak'] / 1e9:.1f}")
        for phase, row in d["phases"].items():
            extra = f"  x fp32 peak {row['x_fp32_peak']:.2f}" if "x_fp32_peak" in row else ""
            print(f"  {phase:<17} {row['tokens_per_s']:>9.1f} tokens/s  {row['flops'] / 1e9:>7.1f} GFLOP/s"
                  f"  MFU {row['mfu']:.0%}{extra}")
    if "trainer" in report:
        t = report["trainer"]
        print(f"GRPO trainer (SearchQA, fp32): {t['train_s_per_step']:.1f} s training + {t['rollout_s_per_step']:.1f}"
              f" s rollouts a step; training {t['flops'] / 1e9:.1f} GFLOP/s on real tokens, MFU {t['mfu']:.0%}; "
              f"{t['padded_share']:.0%} of the batch TRL computes on is padding")


if __name__ == "__main__":
    main()
