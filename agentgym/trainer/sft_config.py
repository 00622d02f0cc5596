"""What a supervised fine-tuning run is: the frozen ``SFTConfig``, its checks (``agentgym sft``).

Built like ``TrainConfig`` (``agentgym.trainer.config``): each field carries its help, the ``agentgym sft`` flags
are generated from the fields, ``--config`` reads a YAML file of them (``load_config(path,
config_type=SFTConfig)``), and ``__post_init__`` is the one place a config is checked. The fields that mean the
same as ``agentgym train``'s have its names and defaults, except ``observation_style`` (see its help).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from agentgym.core.registry import check_kwargs
from agentgym.errors import ConfigError
from agentgym.lm.rollout import ObservationStyle
from agentgym.trainer.config import LR_SCHEDULER_HELP, LRScheduler, Precision, _doc

__all__ = ["SFTConfig"]


@dataclass(frozen=True)
class SFTConfig:
    """An SFT run on an ``agentgym data sft`` dataset; a YAML file and command-line flags fill it (flags win)."""

    data: str | None = field(default=None, metadata=_doc(
        "The dataset directory `agentgym data sft` wrote; its chat rows are tokenized for the model and masked "
        "as `agentgym train` masks an episode (required).", metavar="DIR"))
    model: str = field(default="smollm2", metadata=_doc(
        "smollm2, a local HF model folder, or hf:<id> in the local cache."))
    output_dir: str = field(default="runs/sft", metadata=_doc(
        "Run directory: metrics, checkpoints, the final model."))
    learning_rate: float = field(default=1e-5, metadata=_doc("Adam learning rate."))
    lr_scheduler: LRScheduler = field(default="linear", metadata=_doc(LR_SCHEDULER_HELP))
    epochs: float = field(default=1.0, metadata=_doc("Passes over the dataset (unless steps is set)."))
    steps: int | None = field(default=None, metadata=_doc(
        "Optimizer steps; set, it wins over epochs [default: epochs over the dataset]."))
    batch: int = field(default=8, metadata=_doc("Episodes per optimizer step."))
    micro_batch: int | None = field(default=None, metadata=_doc(
        "Episodes per forward/backward pass; gradient accumulation covers the rest of the step's batch. It sets "
        "the memory peak (a pass holds its episodes' logits over the whole vocabulary) [default: 2, 1 for an odd "
        "batch]."))
    max_length: int = field(default=2048, metadata=_doc(
        "Longest episode in tokens (prompt, turns and observations); longer ones are left out and counted."))
    observation_style: ObservationStyle = field(default="chat", metadata=_doc(
        "chat: an observation comes back as a message of its own (a tool message after function calls), as "
        "`agentgym eval` plays a local model and the recipes train; append: it continues the model's turn "
        "(Search-R1). Give `agentgym train` the same style when it continues from this model."))
    system_prompt: str | None = field(default=None, metadata=_doc(
        "A system message before every task prompt [default: the dataset's own, when its rows have one]."))
    lora: bool = field(default=False, metadata=_doc("Train LoRA adapters (PEFT); final/ holds the merged model."))
    lora_r: int = field(default=16, metadata=_doc("LoRA rank."))
    lora_alpha: int = field(default=32, metadata=_doc("LoRA alpha."))
    seed: int = field(default=0, metadata=_doc("Seed of the data order and initialisation of LoRA."))
    save_steps: int = field(default=50, metadata=_doc("Checkpoint every N steps."))
    save_total_limit: int = field(default=2, metadata=_doc("Checkpoints kept (older ones are deleted)."))
    resume: bool = field(default=False, metadata=_doc("Continue from the last checkpoint in output_dir."))
    threads: int = field(default=1, metadata=_doc(
        "torch threads for training (1 is best when several processes share the cores)."))
    gradient_checkpointing: bool = field(default=False, metadata=_doc(
        "Recompute activations in backward: less memory, ~30% more time (off: small models on CPU)."))
    precision: Precision = field(default="auto", metadata=_doc(
        "bfloat16: training under bf16 autocast (the weights and optimizer stay fp32); auto picks it where the "
        "CPU or GPU computes bf16 natively (agentgym.lm.precision), else float32."))

    def __post_init__(self) -> None:
        check_kwargs(type(self), {f.name: getattr(self, f.name) for f in dataclasses.fields(self)},
                     owner="SFTConfig")
        if not self.data:
            raise ConfigError("data: name the dataset directory that `agentgym data sft RESULTS... --out DIR` wrote "
                              "(--data DIR).")
        for name in ("batch", "micro_batch", "steps", "max_length", "save_steps", "threads"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be >= 1, got {value!r}.")
        if self.epochs <= 0:
            raise ConfigError(f"epochs must be > 0, got {self.epochs!r}.")
        if self.learning_rate <= 0:
            raise ConfigError(f"learning_rate must be > 0, got {self.learning_rate!r}.")
        if self.batch % self.micro:
            raise ConfigError(f"micro_batch ({self.micro}) must divide batch ({self.batch}).")

    @property
    def micro(self) -> int:
        """Episodes per forward/backward pass: ``micro_batch``, else 2 (1 for an odd batch)."""
        return self.micro_batch or (2 if self.batch % 2 == 0 else 1)
