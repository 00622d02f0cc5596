"""Multi-turn GRPO on TRL: our rollouts and observation mask, TRL's policy-gradient machinery.

``GRPOTrainer`` gets a ``rollout_func`` that plays agentgym envs (in process, or
over HTTP through ``RemoteEnv``) with the model being trained and returns, per
episode, the prompt ids, the completion ids and an ``env_mask`` (1 = tokens the
model generated, 0 = observation tokens and template glue); TRL multiplies that
mask into its loss mask (ratio, clipping, KL and the loss normalisers). The
reward is the env's verifier score, handed to TRL as the ``env_reward`` column.
TRL is pinned (``rollout_func`` is experimental there) and the mask's effect is
tested at gradient level (``tests/trainer``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError, DependencyNotInstalled
from agentgym.lm.rollout import ChatGlue, Episode, Generator, TaskSpec, TransformersGenerator, play_episodes

__all__ = ["LOSS_TYPES", "RolloutStats", "TrainConfig", "build_trainer", "env_reward", "load_config", "save_final",
           "task_specs", "train"]

TRAIN_INSTALL = "pip install 'agentgym-suite[train]' torch==2.13.0"
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "gspo")


@dataclass
class TrainConfig:
    """Everything a run needs; a YAML file and command-line flags fill it (flags win)."""

    env: list[str] = field(default_factory=lambda: ["agentgym/SearchQA-v0"])
    #: base URL of ``agentgym serve``: play the envs over HTTP instead of in process
    remote: str | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    split: str = "train"
    #: how many tasks of the split to train on (default: all for local envs, 256 for remote ones)
    tasks: int | None = None
    #: keep tasks whose ``meta`` has these values (local envs), e.g. {"type": "single-hop"}
    task_filter: dict[str, Any] = field(default_factory=dict)
    model: str = "smollm2"
    output_dir: str = "runs/grpo"
    group_size: int = 8
    groups_per_step: int = 2
    #: sequences per forward/backward pass (gradient accumulation covers the rest of the step's batch)
    micro_batch: int | None = None
    learning_rate: float = 1e-6
    steps: int = 50
    max_turns: int | None = None
    max_turn_tokens: int = 128
    max_completion_tokens: int = 1024
    #: grpo, dr_grpo, dapo, bnpo, or gspo (sequence-level importance sampling)
    loss_type: str = "dapo"
    beta: float = 0.0
    epsilon: float = 0.2
    temperature: float = 1.0
    top_p: float = 1.0
    observation_style: str = "append"
    system_prompt: str | None = None
    lora: bool = False
    lora_r: int = 16
    lora_alpha: int = 32
    seed: int = 0
    save_steps: int = 25
    save_total_limit: int = 2
    resume: bool = False
    #: torch threads for generation and training (1 is best when several processes share the cores)
    threads: int = 1
    #: recompute activations in backward: less memory, ~30% more time (off: small models on CPU)
    gradient_checkpointing: bool = False
    #: warn when reward std and entropy both collapse for this many steps (RAGEN's echo trap)
    collapse_window: int = 5
    #: episodes per step written to ``samples.jsonl`` (the model's turns, reward, success)
    log_samples: int = 4
    #: who plays the model's turns: transformers (CPU or GPU, the default) or vllm (a CUDA GPU; extra ``vllm``)
    backend: str = "transformers"
    #: vLLM beside the trainer on the same GPU (colocate) or a separate ``trl vllm-serve`` process (server)
    vllm_mode: str = "colocate"
    #: the ``trl vllm-serve`` URL for server mode (default: TRL's, http://localhost:8000)
    vllm_server_url: str | None = None
    #: share of GPU memory vLLM may take in colocate mode
    vllm_gpu_memory_utilization: float = 0.3

    def __post_init__(self) -> None:
        if isinstance(self.env, str):
            self.env = [self.env]
        if not self.env:
            raise ConfigError("env: name at least one env id, e.g. agentgym/SearchQA-v0.")
        if self.loss_type not in LOSS_TYPES:
            raise ConfigError(f"loss_type must be one of {', '.join(LOSS_TYPES)}, got {self.loss_type!r}.")
        if self.backend not in ("transformers", "vllm"):
            raise ConfigError(f"backend must be 'transformers' or 'vllm', got {self.backend!r}.")
        if self.vllm_mode not in ("colocate", "server"):
            raise ConfigError(f"vllm_mode must be 'colocate' or 'server', got {self.vllm_mode!r}.")
        if self.vllm_server_url and (self.backend != "vllm" or self.vllm_mode != "server"):
            raise ConfigError("vllm_server_url is for backend='vllm' with vllm_mode='server'; set both, or drop the "
                              "URL.")
        if self.observation_style not in ("append", "chat"):
            raise ConfigError(f"observation_style must be 'append' or 'chat', got {self.observation_style!r}.")
        for name in ("group_size", "groups_per_step", "steps", "max_turn_tokens", "max_completion_tokens"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)!r}.")
        if self.group_size < 2:
            raise ConfigError("group_size must be >= 2: GRPO's advantage compares rollouts of the same task.")
        batch = self.group_size * self.groups_per_step
        micro = self.micro_batch or self.group_size
        if batch % micro:
            raise ConfigError(f"micro_batch ({micro}) must divide the step's batch (group_size x groups_per_step = "
                              f"{batch}).")

    @property
    def batch(self) -> int:
        return self.group_size * self.groups_per_step


def load_config(path: str | Path | None = None, **overrides: Any) -> TrainConfig:
    """A ``TrainConfig`` from a YAML file (optional) with ``overrides`` (``None`` values are ignored)."""
    values: dict[str, Any] = {}
    if path is not None:
        import yaml

        try:
            loaded = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"Cannot read the training config {path}: {e}") from e
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path} must be a YAML mapping of TrainConfig fields.")
        values.update(loaded)
    values.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"Unknown training option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}.")
    return TrainConfig(**values)


def _env_kwargs(config: TrainConfig) -> dict[str, Any]:
    kwargs = dict(config.env_kwargs)
    if config.max_turns is not None:
        kwargs["max_turns"] = config.max_turns
    return kwargs


def _make_env(config: TrainConfig, env_id: str) -> Any:
    if config.remote:
        from agentgym.client import RemoteEnv

        return RemoteEnv(env_id, config.remote, env_kwargs=_env_kwargs(config))
    import gymnasium as gym

    import agentgym  # noqa: F401 - registers the ids

    return gym.make(env_id, **_env_kwargs(config))


def task_specs(config: TrainConfig) -> list[TaskSpec]:
    """The training tasks: each env's split (filtered by ``task_filter``), at most ``tasks`` per env."""
    specs: list[TaskSpec] = []
    for env_id in config.env:
        if config.remote:
            if config.task_filter:
                raise ConfigError("task_filter needs the env in process; with remote=, pick tasks with tasks=N.")
            specs += [TaskSpec(env_id, split=config.split, index=i) for i in range(config.tasks or 256)]
            continue
        env = _make_env(config, env_id)
        try:
            tasks = env.unwrapped.tasks.tasks(config.split)
        finally:
            env.close()
        chosen = [t for t in tasks if all(t.meta.get(k) == v for k, v in config.task_filter.items())]
        if not chosen:
            raise ConfigError(f"No {env_id} tasks in split {config.split!r} match task_filter {config.task_filter}.")
        specs += [TaskSpec(env_id, task_id=t.id) for t in chosen[: config.tasks or len(chosen)]]
    return specs


def env_reward(prompts: Sequence[Any], completions: Sequence[Any], env_reward: Sequence[float],
               **_: Any) -> list[float]:
    """TRL reward function: the env's verifier score that the rollout recorded (never a parse of the text)."""
    return [float(r) for r in env_reward]


@dataclass
class RolloutStats:
    """What the rollouts of the current step did; the logging callback reads and clears it."""

    episodes: list[Episode] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> dict[str, float]:
        eps = self.episodes
        if not eps:
            return {}
        n = len(eps)
        return {"success": sum(e.success for e in eps) / n, "turns": sum(e.turns for e in eps) / n,
                "tool_calls": sum(e.tool_calls for e in eps) / n,
                "format_errors": sum(e.format_errors for e in eps) / n,
                "over_budget": sum(e.over_budget for e in eps) / n,
                "verifier_over_budget": sum(e.verifier_over_budget for e in eps) / n, "env_reward": sum(e.reward for e in eps) / n,
                "tokens_model": float(sum(e.tokens_model for e in eps)),
                "tokens_masked": float(sum(e.tokens_masked for e in eps)), "rollout_time_s": self.seconds}


class _Rollouts:
    """The ``rollout_func``: one episode per prompt TRL hands over (its sampler repeats each task group_size times)."""

    def __init__(self, config: TrainConfig, tokenizer: Any, stats: RolloutStats) -> None:
        self.config = config
        self.glue = ChatGlue(tokenizer, style=config.observation_style,  # type: ignore[arg-type]
                             system_prompt=config.system_prompt)
        self.tokenizer = tokenizer
        self.stats = stats
        self.envs: dict[str, list[Any]] = {}
        self.calls = 0

    def _envs(self, specs: Sequence[TaskSpec]) -> list[Any]:
        out, used = [], {}
        for spec in specs:
            pool = self.envs.setdefault(spec.env, [])
            k = used.get(spec.env, 0)
            if k == len(pool):
                pool.append(_make_env(self.config, spec.env))
            out.append(pool[k])
            used[spec.env] = k + 1
        return out

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        specs = [TaskSpec(**json.loads(p)) for p in prompts]
        generator: Generator
        if self.config.backend == "vllm":
            from agentgym.trainer.vllm_backend import VLLMGenerator

            generator = VLLMGenerator.from_trainer(trainer, self.tokenizer, temperature=self.config.temperature,
                                                   top_p=self.config.top_p)
        else:
            model = trainer.accelerator.unwrap_model(trainer.model)
            generator = TransformersGenerator(model, self.tokenizer, temperature=self.config.temperature,
                                              top_p=self.config.top_p)
        start = time.perf_counter()
        episodes = play_episodes(self._envs(specs), specs, generator, self.glue,
                                 max_turn_tokens=self.config.max_turn_tokens,
                                 max_completion_tokens=self.config.max_completion_tokens,
                                 seed=self.config.seed * 1_000_003 + self.calls)
        self.calls += 1
        self.stats.episodes += episodes
        self.stats.seconds += time.perf_counter() - start
        return {"prompt_ids": [e.prompt_ids for e in episodes],
                "completion_ids": [e.completion_ids or [self.tokenizer.eos_token_id] for e in episodes],
                "env_mask": [e.mask or [0] for e in episodes], "logprobs": _logprobs(episodes),
                "env_reward": [e.reward for e in episodes]}

    def close(self) -> None:
        for pool in self.envs.values():
            for env in pool:
                env.close()
        self.envs.clear()


def _logprobs(episodes: Sequence[Episode]) -> list[list[float]] | None:
    """The sampler's per-token log-probabilities when every episode has them (vLLM), else None."""
    if not episodes or any(e.logprobs is None or len(e.logprobs) != len(e.completion_ids) for e in episodes):
        return None
    return [list(e.logprobs) or [0.0] for e in episodes]  # type: ignore[arg-type]


def _callback_class() -> type:
    from transformers import TrainerCallback

    class MetricsLog(TrainerCallback):
        """One JSONL row per step (TRL's metrics + the rollouts'), a console line, the echo-trap warning."""

        def __init__(self, config: TrainConfig, stats: RolloutStats, console: Any) -> None:
            self.config = config
            self.stats = stats
            self.console = console
            self.path = Path(config.output_dir) / "metrics.jsonl"
            self.step_start = time.perf_counter()
            self.history: list[tuple[float, float, float]] = []
            self.warned = False

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.step_start = time.perf_counter()

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
            logs = dict(logs or {})
            if "loss" not in logs and "reward" not in logs:
                return  # the end-of-training summary
            rollout = self.stats.summary()
            self._write_samples(state.global_step)
            self.stats.episodes.clear()
            self.stats.seconds = 0.0
            row = {"step": state.global_step, "reward_mean": logs.get("reward"), "reward_std": logs.get("reward_std"),
                   "entropy": logs.get("entropy"), "kl": logs.get("kl"),
                   "clip_ratio": logs.get("clip_ratio/region_mean"), "loss": logs.get("loss"),
                   "learning_rate": logs.get("learning_rate"), "grad_norm": logs.get("grad_norm"),
                   "step_time_s": time.perf_counter() - self.step_start, **rollout,
                   "trl": {k: v for k, v in logs.items() if isinstance(v, (int, float))}}
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            self._collapse_check(row)
            if self.console is not None:
                self.console.print(
                    f"step {row['step']:>4}/{self.config.steps}  reward {_fmt(row['reward_mean'])} "
                    f"± {_fmt(row['reward_std'])}  success {_fmt(row.get('success'))}  entropy {_fmt(row['entropy'])}"
                    f"  turns {_fmt(row.get('turns'))}  tokens {int(row.get('tokens_model', 0))}/"
                    f"{int(row.get('tokens_masked', 0))} masked  {row['step_time_s']:.1f} s", highlight=False)

        def _write_samples(self, step: int) -> None:
            """``samples.jsonl``: the step's first ``log_samples`` episodes, their turns as the env read them."""
            keep = self.stats.episodes[: self.config.log_samples]
            if not keep:
                return
            with (Path(self.config.output_dir) / "samples.jsonl").open("a", encoding="utf-8") as f:
                for e in keep:
                    f.write(json.dumps({"step": step, "task": e.task_id, "reward": e.reward, "success": e.success,
                                        "turns": e.model_texts}) + "\n")

        def _collapse_check(self, row: dict[str, Any]) -> None:
            std, entropy = row.get("reward_std"), row.get("entropy")
            if std is None or entropy is None:
                return
            self.history.append((float(std), float(entropy), float(row.get("reward_mean") or 0.0)))
            window = self.config.collapse_window
            if self.warned or len(self.history) < window + 1:
                return
            first_entropy = self.history[0][1]
            recent = self.history[-window:]
            # every rollout solving its task also leaves no variance: that is success, not the trap
            solved = all(mean >= 1.0 - 1e-6 for _, _, mean in recent)
            collapsed = all(s < 1e-6 and e < 0.5 * first_entropy for s, e, _ in recent)
            if collapsed and not solved:
                self.warned = True
                message = (f"Reward variance and entropy have collapsed together for {window} steps (entropy "
                           f"{recent[-1][1]:.3f}, started at {first_entropy:.3f}; reward std 0): RAGEN's 'echo trap'. "
                           "The policy repeats itself and GRPO gets no signal; lower the learning rate, raise the "
                           "temperature, or stop here.")
                import logging
                import warnings

                warnings.warn(message, RuntimeWarning, stacklevel=2)
                logging.getLogger("agentgym.trainer").warning(message)
                with self.path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps({"step": row["step"], "warning": "echo_trap", "message": message}) + "\n")

    return MetricsLog


def _fmt(value: Any) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def _require() -> None:
    try:
        import transformers  # noqa: F401
        import trl  # noqa: F401
    except ImportError as e:
        raise DependencyNotInstalled("The trainer (TRL + transformers)", TRAIN_INSTALL) from e


def build_trainer(config: TrainConfig, *, model: Any = None, tokenizer: Any = None, console: Any = None,
                  specs: Sequence[TaskSpec] | None = None) -> tuple[Any, _Rollouts]:
    """A ready ``GRPOTrainer`` and its rollout function (close it when done)."""
    _require()
    vllm_args = _vllm_args(config)  # before loading anything: a GPU-only setting fails fast
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(max(1, config.threads))
    if model is None or tokenizer is None:
        from agentgym.lm.local import load_for_training, resolve_model

        model, tokenizer = load_for_training(resolve_model(config.model))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    specs = list(specs if specs is not None else task_specs(config))
    random.Random(config.seed).shuffle(specs)
    dataset = Dataset.from_list([{"prompt": json.dumps(dataclasses.asdict(s))} for s in specs])
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "train_config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2) + "\n")
    micro = config.micro_batch or config.group_size
    accumulation = config.batch // micro
    report_to = ["tensorboard"] if _has("tensorboard") else "none"
    args = GRPOConfig(
        output_dir=str(out), per_device_train_batch_size=micro, gradient_accumulation_steps=accumulation,
        steps_per_generation=accumulation, num_generations=config.group_size, learning_rate=config.learning_rate,
        max_steps=config.steps, logging_steps=1, save_steps=config.save_steps, save_total_limit=config.save_total_limit,
        seed=config.seed, beta=config.beta, epsilon=config.epsilon, temperature=config.temperature,
        top_p=config.top_p, top_k=0, loss_type="dapo" if config.loss_type == "gspo" else config.loss_type,
        importance_sampling_level="sequence" if config.loss_type == "gspo" else "token",
        max_completion_length=config.max_completion_tokens, report_to=report_to, use_cpu=not torch.cuda.is_available(),
        bf16=False, fp16=False, disable_tqdm=True, dataloader_num_workers=0, shuffle_dataset=True,
        save_only_model=False, gradient_checkpointing=config.gradient_checkpointing, **vllm_args,
    )
    peft_config = None
    if config.lora:
        try:
            from peft import LoraConfig
        except ImportError as e:
            raise DependencyNotInstalled("LoRA (peft)", "pip install peft") from e
        peft_config = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, task_type="CAUSAL_LM",
                                 target_modules="all-linear")
    stats = RolloutStats()
    rollouts = _Rollouts(config, tokenizer, stats)
    trainer = GRPOTrainer(model=model, reward_funcs=[env_reward], args=args, train_dataset=dataset,
                          processing_class=tokenizer, rollout_func=rollouts, peft_config=peft_config,
                          callbacks=[_callback_class()(config, stats, console)])
    return trainer, rollouts


def _vllm_args(config: TrainConfig) -> dict[str, Any]:
    """GRPOConfig's vLLM settings: TRL builds the engine and syncs its weights; our rollouts only sample from it."""
    if config.backend != "vllm":
        return {}
    import torch

    if not _has("vllm"):
        from agentgym.trainer.vllm_backend import VLLM_INSTALL

        raise DependencyNotInstalled("backend='vllm'", VLLM_INSTALL)
    if not torch.cuda.is_available():
        raise ConfigError("backend='vllm' needs a CUDA GPU and none is visible; use backend='transformers' on CPU.")
    args: dict[str, Any] = {"use_vllm": True, "vllm_mode": config.vllm_mode,
                            "vllm_gpu_memory_utilization": config.vllm_gpu_memory_utilization}
    if config.vllm_mode == "server" and config.vllm_server_url:
        args["vllm_server_base_url"] = config.vllm_server_url
    return args


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _last_checkpoint(output_dir: Path) -> str | None:
    checkpoints = sorted(output_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    return str(checkpoints[-1]) if checkpoints else None


def train(config: TrainConfig, *, console: Any = None) -> Path:
    """Run GRPO; returns the directory of the final model (``output_dir/final``)."""
    trainer, rollouts = build_trainer(config, console=console)
    out = Path(config.output_dir)
    resume = _last_checkpoint(out) if config.resume else None
    if config.resume and resume is None and console is not None:
        console.print(f"No checkpoint in {out} to resume from; starting fresh.")
    try:
        trainer.train(resume_from_checkpoint=resume)
    finally:
        rollouts.close()
    return save_final(trainer, out / "final")


def save_final(trainer: Any, final: Path) -> Path:
    """The trained model and tokenizer as a plain transformers folder; LoRA adapters are merged in first,
    so ``agentgym eval --policy hf:<final>`` loads it like any model."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    if hasattr(model, "merge_and_unload"):  # a PEFT model
        model = model.merge_and_unload()
    model.save_pretrained(str(final))
    trainer.processing_class.save_pretrained(str(final))
    return final
