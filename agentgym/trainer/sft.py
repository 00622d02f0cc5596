"""Supervised fine-tuning on agentgym trajectories (``agentgym sft``): TRL's ``SFTTrainer`` on the episodes of an
``agentgym data sft`` dataset, the cold start before GRPO.

Each episode is tokenized and masked exactly as ``agentgym train`` builds a GRPO episode
(:mod:`agentgym.lm.replay` plays it back through the trainer's rollout code): the loss covers the model's own
tokens only, never the prompt, an observation or the chat template's glue around it. The rows go to TRL as
``input_ids`` and ``labels`` (-100 on every masked token), which its SFTTrainer uses as they are. The run
directory is ``agentgym train``'s: ``train_config.json`` (this run's ``SFTConfig``; ``--config`` reads it back),
``metrics.jsonl`` (one row per optimizer step; ``agentgym plot`` draws it), ``train.log``, ``checkpoint-N/``
(``--resume``) and ``final/``, which ``agentgym eval --policy hf:DIR/final`` and ``agentgym train --model
DIR/final`` load.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError, DataError
from agentgym.trainer.callbacks import MetricsLog, _fmt
from agentgym.trainer.sft_config import SFTConfig
from agentgym.trainer.stats import RolloutStats

__all__ = ["SFTConfig", "SFTData", "SFTMetricsLog", "build_sft_trainer", "load_sft_data", "read_chat", "sft"]

logger = logging.getLogger("agentgym.trainer")


@dataclass(frozen=True)
class SFTData:
    """The training sequences (``input_ids``, ``labels``) and what was left out."""

    rows: list[dict[str, list[int]]]
    episodes: int
    too_long: int

    @property
    def tokens(self) -> int:
        return sum(len(r["input_ids"]) for r in self.rows)

    @property
    def trained_tokens(self) -> int:
        return sum(sum(label != -100 for label in r["labels"]) for r in self.rows)

    def describe(self) -> str:
        share = self.trained_tokens / self.tokens if self.tokens else 0.0
        longer = f" ({self.too_long} longer than max_length left out)" if self.too_long else ""
        return (f"{len(self.rows)} of {self.episodes} episodes{longer}, {self.tokens:,} tokens, "
                f"{self.trained_tokens:,} of them the model's ({share:.0%}; the rest masked)")


def read_chat(config: SFTConfig) -> Any:
    """The chat rows of ``config.data`` (a ``datasets.Dataset``), read before any model loads."""
    import datasets
    from datasets.utils import logging as datasets_logging

    path = Path(str(config.data))
    if not path.is_dir():
        raise ConfigError(f"data: {path} is not a directory; make one with `agentgym data sft RESULTS... --out "
                          f"{path}`.")
    bars = datasets_logging.is_progress_bar_enabled()
    datasets_logging.disable_progress_bar()  # its bars would interleave with the run's own lines
    try:
        chat = datasets.load_dataset(str(path), split="train")
    except Exception as e:  # datasets raises many kinds for a directory it cannot read
        raise DataError(f"Cannot load {path} as a dataset ({type(e).__name__}: {e}); make one with "
                        f"`agentgym data sft RESULTS... --out {path}`.") from e
    finally:
        if bars:
            datasets_logging.enable_progress_bar()
    if "messages" not in chat.column_names:
        raise DataError(f"{path} has no 'messages' column (it has {', '.join(chat.column_names)}): train on the "
                        "chat rows `agentgym data sft` writes.")
    if not len(chat):
        raise DataError(f"Nothing to train on: {path} has no rows.")
    return chat


def load_sft_data(config: SFTConfig, tokenizer: Any, chat: Any = None) -> SFTData:
    """The chat rows (``chat``, else read from ``config.data``) as training sequences for ``tokenizer``, masked as
    the GRPO trainer masks its episodes; episodes longer than ``max_length`` are left out."""
    from agentgym.lm.replay import Replay

    chat = read_chat(config) if chat is None else chat
    replay = Replay(tokenizer, style=config.observation_style, system_prompt=config.system_prompt)
    rows, too_long = [], 0
    for row in chat:
        # a chat dataset from elsewhere has no format: structured actions, so every turn ends with end-of-turn
        tokens = replay.tokens(row["messages"], action_format=row.get("format") or "dict",
                               tools=json.loads(row.get("tools") or "[]"))
        if len(tokens["input_ids"]) > config.max_length:
            too_long += 1
            continue
        rows.append({"input_ids": tokens["input_ids"], "labels": tokens["labels"]})
    if not rows:
        raise DataError(f"Nothing to train on in {config.data}: all {too_long} episodes are longer than max_length "
                        f"({config.max_length} tokens); raise --max-length.")
    return SFTData(rows=rows, episodes=len(chat), too_long=too_long)


class SFTMetricsLog(MetricsLog):
    """``agentgym train``'s logging callback for SFT steps: a ``metrics.jsonl`` row (loss, token accuracy,
    entropy, learning rate, gradient norm, step time, TRL's numbers) and a console line per step."""

    def __init__(self, config: SFTConfig, console: Any) -> None:
        super().__init__(config, RolloutStats(), console)  # type: ignore[arg-type]

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Nothing to warn about: SFT never trains on observation tokens."""

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
        logs = dict(logs or {})
        if "loss" not in logs:
            return  # the end-of-training summary
        logger.info("step %d TRL metrics: %s", state.global_step, json.dumps(logs))
        row = {"step": state.global_step, "loss": logs.get("loss"), "token_accuracy": logs.get("mean_token_accuracy"),
               "entropy": logs.get("entropy"), "learning_rate": logs.get("learning_rate"),
               "grad_norm": logs.get("grad_norm"), "epoch": logs.get("epoch"), "num_tokens": logs.get("num_tokens"),
               "step_time_s": time.perf_counter() - self.step_start,
               "trl": {k: v for k, v in logs.items() if isinstance(v, (int, float))}}
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        if self.console is not None:
            self.console.print(f"step {row['step']:>4}/{state.max_steps}  loss {_fmt(row['loss'])}  token accuracy "
                               f"{_fmt(row['token_accuracy'])}  entropy {_fmt(row['entropy'])}  lr "
                               f"{row['learning_rate'] or 0:.2e}  {row['step_time_s']:.1f} s", highlight=False)


def build_sft_trainer(config: SFTConfig, *, model: Any = None, tokenizer: Any = None,
                      console: Any = None) -> tuple[Any, SFTData]:
    """A ready TRL ``SFTTrainer`` on ``config.data`` and the sequences it trains on."""
    from agentgym.trainer.grpo import _has, _require, lora_config, uses_bf16

    _require()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from datasets import Dataset
    from transformers import PrinterCallback
    from trl import SFTConfig as TRLSFTConfig
    from trl import SFTTrainer

    torch.set_num_threads(max(1, config.threads))
    chat = read_chat(config)  # a wrong --data fails before the model loads
    if model is None or tokenizer is None:
        from agentgym.lm.local import load_for_training, resolve_model

        model, tokenizer = load_for_training(resolve_model(config.model))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    data = load_sft_data(config, tokenizer, chat)
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "train_config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2) + "\n")
    micro = config.micro
    args = TRLSFTConfig(
        output_dir=str(out), per_device_train_batch_size=micro, gradient_accumulation_steps=config.batch // micro,
        learning_rate=config.learning_rate, lr_scheduler_type=config.lr_scheduler, num_train_epochs=config.epochs,
        max_steps=config.steps or -1,
        logging_steps=1, save_steps=config.save_steps, save_total_limit=config.save_total_limit, seed=config.seed,
        report_to=["tensorboard"] if _has("tensorboard") else "none", use_cpu=not torch.cuda.is_available(),
        bf16=uses_bf16(config.precision), fp16=False, disable_tqdm=True, dataloader_num_workers=0, max_length=None,
        packing=False,
        save_only_model=False, activation_checkpointing=config.gradient_checkpointing,
    )
    peft_config = lora_config(config)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(data.rows),
                         processing_class=tokenizer, peft_config=peft_config,
                         callbacks=[SFTMetricsLog(config, console)])
    trainer.remove_callback(PrinterCallback)  # its raw dicts: the callback writes them to the log instead
    return trainer, data


def sft(config: SFTConfig, *, console: Any = None, model: Any = None, tokenizer: Any = None) -> Path:
    """Run SFT; returns the directory of the final model (``output_dir/final``).

    ``console`` (a rich ``Console``) gets a line per step; ``output_dir/train.log`` gets the rest. ``model`` and
    ``tokenizer`` replace ``config.model``'s (tests pass a tiny one)."""
    from agentgym.trainer import grpo

    grpo._require()
    out = Path(config.output_dir)
    with grpo._train_log(out / "train.log"):
        trainer, data = build_sft_trainer(config, model=model, tokenizer=tokenizer, console=console)
        if console is not None:
            console.print(f"sft {config.model} on {config.data}: {data.describe()} -> {config.output_dir}",
                          highlight=False)
        resume = grpo._last_checkpoint(out) if config.resume else None
        if config.resume and resume is None and console is not None:
            console.print(f"No checkpoint in {out} to resume from; starting fresh.")
        if resume is not None:
            dropped = grpo.drop_logged_after(out, grpo._checkpoint_step(resume))
            if dropped and console is not None:
                console.print(f"Resuming from {resume}: dropped {dropped} log rows of the steps after it "
                              "(they are trained again).")
        trainer.train(resume_from_checkpoint=resume)
        final = grpo.save_final(trainer, out / "final")
    grpo.write_model_card(final, start_model=config.model, method="SFT", run=out)
    return final
