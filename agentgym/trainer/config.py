"""What a training run is: the frozen ``TrainConfig``, its checks, and loading it from YAML.

Each field carries its help text (``field(metadata={"help": ...})``); the
``agentgym train`` flags are generated from the fields (``agentgym.trainer.flags``),
so a field is reachable from a YAML file and from a flag alike, and documented
once. Choices are ``Literal`` types, checked with every other field's type in
``__post_init__``: the one place a config is validated, whether it came from
YAML, flags or Python. A config is never changed in place: derive one with
``dataclasses.replace``.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentgym.core.registry import check_kwargs
from agentgym.errors import ConfigError
from agentgym.lm.rollout import ObservationStyle

__all__ = ["LOSS_TYPES", "Backend", "LossType", "TrainConfig", "VLLMMode", "load_config"]

LossType = Literal["grpo", "dr_grpo", "dapo", "bnpo", "gspo"]
Backend = Literal["transformers", "vllm"]
VLLMMode = Literal["colocate", "server"]
Precision = Literal["auto", "float32", "bfloat16"]
LRScheduler = Literal["linear", "constant", "cosine"]
LR_SCHEDULER_HELP = ("How the learning rate moves over the run: linear (decays to 0 at the last step), constant, "
                     "or cosine.")
LOSS_TYPES: tuple[str, ...] = typing.get_args(LossType)


def _doc(text: str, *, flags: tuple[str, ...] = (), metavar: str | None = None) -> dict[str, Any]:
    """A field's metadata: ``text`` is its help (in ``agentgym train --help`` too); ``flags`` are extra flag names
    beside ``--field-name``, ``metavar`` what the flag's value is called."""
    return {"help": text, "flags": flags, "metavar": metavar}


@dataclass(frozen=True)
class TrainConfig:
    """Everything a run needs; a YAML file and command-line flags fill it (flags win)."""

    env: list[str] = field(default_factory=lambda: ["agentgym/SearchQA-v0"],
                           metadata=_doc("Env ids to train on (their tasks are mixed).", metavar="ENV_ID"))
    remote: str | None = field(default=None, metadata=_doc(
        "Where the envs run instead of in process: the base URL of an `agentgym serve` (over HTTP), or "
        "ray://ADDRESS for sessions on Ray actors across a Ray cluster (HOST:PORT, auto, or local)."))
    imports: list[str] = field(default_factory=list, metadata=_doc(
        "A module, or a Python file, that registers envs of your own (agentgym.register), imported first (repeatable); "
        "installed packages' envs need none.", flags=("--import",), metavar="MODULE_OR_FILE"))
    env_kwargs: dict[str, Any] = field(default_factory=dict, metadata=_doc(
        "Keyword arguments of every env (e.g. action_format=hermes).", flags=("--kwarg", "-k")))
    split: str = field(default="train", metadata=_doc("Task split to train on."))
    tasks: int | None = field(default=None, metadata=_doc(
        "How many tasks of the split to train on (the first N) [default: all for local envs, 256 for remote ones]."))
    task_filter: dict[str, Any] = field(default_factory=dict, metadata=_doc(
        "Keep the tasks whose meta has these values (local envs), e.g. type=single-hop; a list (JSON) keeps any "
        "of its values: type='[\"bridge\", \"comparison\"]'."))
    difficulty: str | None = field(default=None, metadata=_doc(
        "Only the tasks of this level on the env's difficulty card of the split (local envs): easy, medium, hard, "
        "or a pass-rate range LO-HI (agentgym difficulty ENV --split train makes the card).", metavar="LEVEL"))
    difficulty_card: str | None = field(default=None, metadata=_doc(
        "The card --difficulty reads: a file, or a directory of ENV.json cards [default: the bundled cards].",
        metavar="PATH"))
    stratify_by: str | None = field(default=None, metadata=_doc(
        "A task meta key (e.g. type): each step's tasks take its values in turn (two a step over two types: one "
        "of each), and dynamic sampling replaces a group without signal by a group of the same value, so no type "
        "drops out of the gradient (local envs).", metavar="META_KEY"))
    model: str = field(default="smollm2", metadata=_doc(
        "smollm2, a local HF model folder, or hf:<id> in the local cache."))
    output_dir: str = field(default="runs/grpo", metadata=_doc(
        "Run directory: metrics, samples, checkpoints, the final model."))
    group_size: int = field(default=8, metadata=_doc("Rollouts per task (the GRPO group; at least 2)."))
    groups_per_step: int = field(default=2, metadata=_doc("Tasks per optimizer step."))
    micro_batch: int | None = field(default=None, metadata=_doc(
        "Sequences per forward/backward pass; gradient accumulation covers the rest of the step's batch "
        "[default: group_size]."))
    dynamic_sampling: int = field(default=0, metadata=_doc(
        "DAPO's dynamic sampling: a group whose rewards are all equal has no learning signal, so up to N more "
        "groups of other tasks are played per step to take the place of such groups (0: off). The step's "
        "success, turns and tool calls count every episode played; resampled_groups counts the extra ones."))
    curriculum: bool = field(default=False, metadata=_doc(
        "Draw each step's tasks from easy / normal / hard pools kept by each task's last group reward (mostly "
        "normal: see curriculum_*); checkpointed with the run. The built-in loop, synchronous (max_staleness 0)."))
    curriculum_easy_at: float = field(default=1.0, metadata=_doc(
        "A task whose last group's mean reward is at least this is easy."))
    curriculum_hard_at: float = field(default=0.0, metadata=_doc(
        "A task whose last group's mean reward is at most this is hard."))
    curriculum_easy_share: float = field(default=0.1, metadata=_doc(
        "The chance a group is drawn from the easy pool."))
    curriculum_hard_share: float = field(default=0.1, metadata=_doc(
        "The chance a group is drawn from the hard pool (the rest: the normal pool)."))
    learning_rate: float = field(default=1e-6, metadata=_doc("Adam learning rate."))
    lr_scheduler: LRScheduler = field(default="linear", metadata=_doc(LR_SCHEDULER_HELP))
    steps: int = field(default=50, metadata=_doc("Optimizer steps."))
    max_turns: int | None = field(default=None, metadata=_doc("Env turns per episode [default: the env's]."))
    max_turn_tokens: int = field(default=128, metadata=_doc("Most tokens per model turn."))
    max_completion_tokens: int = field(default=1024, metadata=_doc(
        "Most tokens per episode, model and observations together; an episode that outgrows it ends with reward 0."))
    loss_type: LossType = field(default="dapo", metadata=_doc(
        "TRL's GRPO loss; gspo is dapo's with sequence-level importance sampling."))
    beta: float = field(default=0.0, metadata=_doc("KL coefficient to a reference model (0: none)."))
    epsilon: float = field(default=0.2, metadata=_doc("Clipping range of the policy ratio."))
    temperature: float = field(default=1.0, metadata=_doc("Sampling temperature of the rollouts."))
    top_p: float = field(default=1.0, metadata=_doc("Nucleus sampling mass of the rollouts."))
    observation_style: ObservationStyle = field(default="append", metadata=_doc(
        "append: an observation continues the model's turn (Search-R1); chat: it comes back as a message of its "
        "own (a tool message after function calls), as the eval sends it."))
    system_prompt: str | None = field(default=None, metadata=_doc("A system message before every task prompt."))
    mask_observations: bool = field(default=True, metadata=_doc(
        "Keep observation tokens (and the chat glue around them) out of the loss. Off exists only for the masking "
        "ablation (docs/training/README.md): the env's text is then trained on as if the model had written it, "
        "and the trainer warns."))
    lora: bool = field(default=False, metadata=_doc("Train LoRA adapters (PEFT); final/ holds the merged model."))
    lora_r: int = field(default=16, metadata=_doc("LoRA rank."))
    lora_alpha: int = field(default=32, metadata=_doc("LoRA alpha."))
    seed: int = field(default=0, metadata=_doc("Seed of sampling and task order."))
    save_steps: int = field(default=25, metadata=_doc("Checkpoint every N steps."))
    save_total_limit: int = field(default=2, metadata=_doc("Checkpoints kept (older ones are deleted)."))
    resume: bool = field(default=False, metadata=_doc("Continue from the last checkpoint in output_dir."))
    threads: int = field(default=1, metadata=_doc(
        "torch threads for generation and training (1 is best when several processes share the cores)."))
    gradient_checkpointing: bool = field(default=False, metadata=_doc(
        "Recompute activations in backward: less memory, ~30% more time (off: small models on CPU)."))
    precision: Precision = field(default="auto", metadata=_doc(
        "bfloat16: rollouts and training under bf16 autocast (the weights and optimizer stay fp32); auto picks it "
        "where the CPU or GPU computes bf16 natively (agentgym.lm.precision), else float32."))
    collapse_window: int = field(default=5, metadata=_doc(
        "Warn when reward std and entropy both collapse for this many steps (RAGEN's echo trap)."))
    log_samples: int = field(default=4, metadata=_doc(
        "Episodes per step written to samples.jsonl (the model's turns, reward, success)."))
    backend: Backend = field(default="transformers", metadata=_doc(
        "Who plays the model's turns: transformers (CPU or GPU) or vllm (a CUDA GPU; extra vllm)."))
    vllm_mode: VLLMMode = field(default="colocate", metadata=_doc(
        "vLLM beside the trainer on the same GPU (colocate) or a separate `trl vllm-serve` process (server)."))
    vllm_server_url: str | None = field(default=None, metadata=_doc(
        "The `trl vllm-serve` URL for server mode [default: TRL's, http://localhost:8000]."))
    vllm_gpu_memory_utilization: float = field(default=0.3, metadata=_doc(
        "Share of GPU memory vLLM may take in colocate mode."))

    max_staleness: int = field(default=0, metadata=_doc(
        "Asynchronous GRPO: a rollout worker plays on with the newest weights while the learner trains, and the "
        "learner trains only groups sampled by a policy at most K optimizer steps older than the one it updates; a "
        "staler group, queued or in flight, is dropped and counted, never trained (0: rollouts and updates take "
        "turns; docs/training.md).", metavar="K"))
    importance_cap: float = field(default=2.0, metadata=_doc(
        "With max_staleness > 0 the loss's old log-probabilities are the sampler's, and the importance ratio "
        "pi_theta / pi_sampler is truncated at this cap where the advantage is negative (TRL's two-sided delta); "
        "above 1 + epsilon."))
    rollout_threads: int = field(default=0, metadata=_doc(
        "torch threads of rollout generation: each asynchronous rollout worker's (max_staleness > 0), or the "
        "synchronous loop's between updates (1 where other work shares the cores); 0: the same as threads."))
    rollout_workers: int = field(default=0, metadata=_doc(
        "Asynchronous rollout workers as Ray actors spread over the cluster at --ray, each with its own policy copy "
        "and envs (0: one worker, a thread of the training process). Needs max_staleness > 0 and the ray extra.",
        metavar="N"))
    ray: str | None = field(default=None, metadata=_doc(
        "The Ray cluster of the rollout workers: HOST:PORT (what `ray start --head` prints), auto, or local (start "
        "one here) [default: local].", metavar="ADDRESS"))

    agent: str | None = field(default=None, metadata=_doc(
        "Train your own agent in its own loop: a function FILE.py:FUNCTION or module:FUNCTION taking a task "
        "(prompt, base_url, model, tools, call_tool), as `agentgym eval --agent` runs it; its model calls go "
        "through a gateway serving the policy being trained, and GRPO trains on the tokens it sampled "
        "(docs/training.md).", metavar="FILE_OR_MODULE:FUNCTION"))
    agent_cmd: str | None = field(default=None, metadata=_doc(
        "Your agent as a program (prompt on stdin, OPENAI_BASE_URL and AGENTGYM_* in its environment, answer on "
        "stdout), in place of --agent.", metavar="CMD"))
    agent_timeout: float = field(default=600.0, metadata=_doc("An agent's wall-time limit per rollout, in seconds."))
    agent_retries: int = field(default=1, metadata=_doc(
        "Times a rollout whose agent failed (raised, timed out) is played again before it is left out of its "
        "group (never trained as reward 0)."))

    def __post_init__(self) -> None:
        # frozen: the one normalisation happens here, before the checks
        object.__setattr__(self, "env", [self.env] if isinstance(self.env, str) else self.env)
        check_kwargs(type(self), {f.name: getattr(self, f.name) for f in dataclasses.fields(self)},
                     owner="TrainConfig")
        if not self.env:
            raise ConfigError("env: name at least one env id, e.g. agentgym/SearchQA-v0.")
        if self.stratify_by is not None and self.remote:
            raise ConfigError("stratify_by reads each task's meta, which needs the env in process; drop remote= or "
                              "stratify_by.")
        if self.vllm_server_url and (self.backend != "vllm" or self.vllm_mode != "server"):
            raise ConfigError("vllm_server_url is for backend='vllm' with vllm_mode='server'; set both, or drop the "
                              "URL.")
        if self.difficulty is not None:
            from agentgym.core.difficulty import parse_difficulty

            parse_difficulty(self.difficulty)  # a bad level fails here, before the model loads
        elif self.difficulty_card is not None:
            raise ConfigError("difficulty_card is read only with difficulty (the level to select).")
        self._check_agent()
        self._check_async()
        self._check_curriculum()
        if self.dynamic_sampling < 0:
            raise ConfigError(f"dynamic_sampling must be >= 0 (extra groups a step may play), got "
                              f"{self.dynamic_sampling!r}.")
        for name in ("group_size", "groups_per_step", "steps", "max_turn_tokens", "max_completion_tokens",
                     "micro_batch"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be >= 1, got {value!r}.")
        if self.group_size < 2:
            raise ConfigError("group_size must be >= 2: GRPO's advantage compares rollouts of the same task.")
        micro = self.micro_batch or self.group_size
        if self.batch % micro:
            raise ConfigError(f"micro_batch ({micro}) must divide the step's batch (group_size x groups_per_step = "
                              f"{self.batch}).")

    @property
    def batch(self) -> int:
        return self.group_size * self.groups_per_step

    def _check_async(self) -> None:
        """What an asynchronous run (max_staleness > 0) needs."""
        if self.max_staleness < 0:
            raise ConfigError(f"max_staleness must be >= 0 (0: synchronous), got {self.max_staleness!r}.")
        if self.importance_cap <= 1 + self.epsilon:
            raise ConfigError(f"importance_cap ({self.importance_cap!r}) must be above 1 + epsilon "
                              f"({1 + self.epsilon!r}), or it would clip every ratio the clip keeps.")
        if self.rollout_workers < 0:
            raise ConfigError(f"rollout_workers must be >= 0 (0: a thread of the training process), got "
                              f"{self.rollout_workers!r}.")
        if self.ray is not None and not self.rollout_workers:
            raise ConfigError("--ray names the cluster of the rollout workers: pass --rollout-workers N too.")
        if not self.max_staleness:
            if self.rollout_workers:
                raise ConfigError("rollout_workers play asynchronously: pass --max-staleness K (K >= 1) with them.")
            return
        if self.backend != "transformers":
            raise ConfigError("max_staleness > 0 plays on the transformers backend (its worker copies the policy in "
                              "memory); with backend='vllm' use max_staleness 0.")
        if (self.agent is not None or self.agent_cmd is not None) and self.rollout_workers:
            raise ConfigError("train --agent plays asynchronously on a thread of the training process (its gateway's "
                              "policy copy); rollout_workers (Ray) play the built-in loop: drop --rollout-workers.")

    def _check_curriculum(self) -> None:
        names = ("curriculum_easy_at", "curriculum_hard_at", "curriculum_easy_share", "curriculum_hard_share")
        values = [getattr(self, n) for n in names]
        if not all(0.0 <= v <= 1.0 for v in values):
            raise ConfigError(f"{', '.join(names)} must each be in [0, 1]; got {values}.")
        if self.curriculum_hard_at >= self.curriculum_easy_at:
            raise ConfigError(f"curriculum_hard_at ({self.curriculum_hard_at}) must be below curriculum_easy_at "
                              f"({self.curriculum_easy_at}).")
        if self.curriculum_easy_share + self.curriculum_hard_share > 1.0:
            raise ConfigError("curriculum_easy_share + curriculum_hard_share must be at most 1 (the rest is the "
                              "normal pool's).")
        if not self.curriculum:
            return
        if self.max_staleness or self.agent is not None or self.agent_cmd is not None:
            raise ConfigError("curriculum draws each step's tasks in the synchronous built-in loop: drop "
                              "max_staleness or --agent, or the curriculum.")
        if self.stratify_by is not None or self.remote:
            raise ConfigError("curriculum picks each step's tasks itself, from the env in process: drop stratify_by "
                              "and remote=, or the curriculum.")

    def _check_agent(self) -> None:
        """What a run with --agent cannot take: its agent writes its own messages and plays the env in process."""
        if self.agent is None and self.agent_cmd is None:
            return
        if self.agent is not None and self.agent_cmd is not None:
            raise ConfigError("Give one agent: --agent FILE_OR_MODULE:FUNCTION or --agent-cmd \"CMD\", not both.")
        if self.system_prompt is not None:
            raise ConfigError("system_prompt is for the built-in loop; an agent (--agent) writes its own messages: "
                              "put the system prompt in your agent.")
        if self.remote:
            raise ConfigError("train --agent plays the envs in process (the agent's tools are its env session); "
                              "drop remote=.")
        if self.agent_timeout <= 0 or self.agent_retries < 0:
            raise ConfigError(f"agent_timeout must be > 0 and agent_retries >= 0; got {self.agent_timeout!r} and "
                              f"{self.agent_retries!r}.")


def load_config(path: str | Path | None = None, *, config_type: type[Any] = TrainConfig, **overrides: Any) -> Any:
    """A ``TrainConfig`` (or another ``config_type``: ``SFTConfig``) from a YAML file (optional) with
    ``overrides`` (``None`` values are ignored)."""
    values: dict[str, Any] = {}
    if path is not None:
        import yaml

        try:
            loaded = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"Cannot read the training config {path}: {e}") from e
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path} must be a YAML mapping of {config_type.__name__} fields.")
        values.update(_yaml_floats(loaded, config_type))
    values.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in dataclasses.fields(config_type)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"Unknown training option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}.")
    return config_type(**values)


def _yaml_floats(values: dict[str, Any], config_type: type[Any] = TrainConfig) -> dict[str, Any]:
    """YAML 1.1 reads ``1e-6`` (no dot) as text: such a value of a float field is the number it spells."""
    hints = typing.get_type_hints(config_type)
    out = dict(values)
    for name, value in values.items():
        if hints.get(name) is float and isinstance(value, str):
            try:
                out[name] = float(value)
            except ValueError:
                pass  # left as text: the type check says what is wrong
    return out
