"""Multi-turn GRPO on TRL: our rollouts and observation mask, TRL's policy-gradient machinery.

``GRPOTrainer`` gets a ``rollout_func`` that plays agentgym envs (in process, or
over HTTP through ``RemoteEnv``) with the model being trained and returns, per
episode, the prompt ids, the completion ids and an ``env_mask`` (1 = tokens the
model generated, 0 = observation tokens and template glue); TRL multiplies that
mask into its loss mask (ratio, clipping, KL and the loss normalisers). The
reward is the env's verifier score, handed to TRL as the ``env_reward`` column.
An episode that failed (an env or grader raised: ``play_episodes``' boundary)
trains nothing: its reward is None, which TRL leaves out of its group's
baseline (advantage 0), its mask is all 0, its env is replaced, and the step's
metrics count it (``rollout_errors``). TRL is pinned (``rollout_func`` is
experimental there) and the mask's effect is tested at gradient level
(``tests/trainer``). ``mask_observations=False`` puts every completion token in
the loss: it exists only for the masking ablation, and the logging callback
warns when it is off. The console gets one line per step; TRL's raw metrics and
checkpoint saves go to ``output_dir/train.log``, and transformers' progress bars
are off while ``train`` runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError, DependencyNotInstalled, EnvNotFound, RolloutError
from agentgym.lm.rollout import ChatGlue, Episode, Generator, TaskSpec, TransformersGenerator
from agentgym.lm.workers import EnvPool, ModelWorker
from agentgym.trainer.config import LOSS_TYPES, TrainConfig, load_config
from agentgym.trainer.curriculum import Curriculum
from agentgym.trainer.groups import has_signal
from agentgym.trainer.judging import defer_group_judges, judge_groups
from agentgym.trainer.stats import RolloutStats
from agentgym.verifiers.budget import prewarm_workers

__all__ = ["LOSS_TYPES", "RolloutStats", "TrainConfig", "build_trainer", "check_envs", "env_reward", "load_config",
           "save_final", "stratified_order", "task_specs", "task_strata", "train", "write_model_card"]

TRAIN_INSTALL = "pip install 'agentgym-suite[train]' torch==2.13.0"
logger = logging.getLogger("agentgym.trainer")


def _env_kwargs(config: TrainConfig) -> dict[str, Any]:
    kwargs = dict(config.env_kwargs)
    if config.max_turns is not None:
        kwargs["max_turns"] = config.max_turns
    return kwargs


def _make_env(config: TrainConfig, env_id: str) -> Any:
    """The env in process, on an ``agentgym serve`` (``remote`` a URL), or on a Ray pool (``ray://ADDRESS``)."""
    import gymnasium as gym

    import agentgym  # noqa: F401 - registers the ids

    # a "vf:TASKSET" id is registered when first named; gym.make would read "module:name" as a module to import
    spec = gym.registry[_registered(env_id)] if ":" in env_id else env_id
    return gym.make(spec, **_env_kwargs(config), **({"remote": config.remote} if config.remote else {}))


def _registered(env_id: str) -> str:
    """``env_id``, registered first if it names a verifiers environment (``vf:TASKSET``)."""
    from agentgym.core.registry import VERIFIERS_PREFIX, env_info

    if env_id.startswith(VERIFIERS_PREFIX):
        env_info(env_id)
    return env_id


def check_envs(config: TrainConfig) -> None:
    """Raise ``EnvNotFound`` (with a did-you-mean) for an env id nobody registered, or ``ConfigError`` for env
    kwargs an env does not take: what would otherwise fail only after the model has loaded."""
    import gymnasium as gym

    from agentgym.core.registry import check_env_kwargs, env_ids

    ids = [_registered(env_id) for env_id in config.env]
    known = env_ids()  # the agentgym package registered the bundled and installed ids when it was imported
    for env_id in ids:
        if env_id not in gym.registry:  # an id registered with gymnasium alone trains too
            raise EnvNotFound(env_id, known)
        if env_id in known:
            check_env_kwargs(env_id, _env_kwargs(config))


def play_recipe(config: TrainConfig, model: Any, tokenizer: Any, *, split: str, tasks: int, samples: int = 1,
                temperature: float | None = None, system_prompt: str | None = None) -> list[Episode]:
    """Play the first ``tasks`` tasks of ``split`` of the recipe's first env ``samples`` times each (a GRPO group
    per task, in order), as ``agentgym train`` plays them: its env kwargs, observation style, turn and token
    budgets, with ``system_prompt`` (pass ``config.system_prompt`` for the recipe's) at ``temperature`` (the
    recipe's when None; 0 is greedy). For the scripts that measure a recipe's rollouts."""
    import torch

    env_id = config.env[0]
    envs = [_make_env(config, env_id) for _ in range(tasks * samples)]
    try:
        ids = [t.id for t in envs[0].unwrapped.tasks.tasks(split)][:tasks]
        specs = [TaskSpec(env_id, task_id=i) for i in ids for _ in range(samples)]
        glue = ChatGlue(tokenizer, style=config.observation_style, system_prompt=system_prompt)
        generator = TransformersGenerator(model, tokenizer, top_p=config.top_p,
                                          temperature=config.temperature if temperature is None else temperature)
        worker = ModelWorker(glue, max_turn_tokens=config.max_turn_tokens,
                             max_completion_tokens=config.max_completion_tokens)
        with torch.no_grad():
            return worker.play(envs[:len(specs)], specs, generator, seed=config.seed)
    finally:
        for env in envs:
            env.close()


def _matches(meta: dict[str, Any], task_filter: dict[str, Any]) -> bool:
    """Whether a task's meta has each filtered value (a list: any of its values)."""
    return all(meta.get(k) in v if isinstance(v, list) else meta.get(k) == v for k, v in task_filter.items())


def _split_tasks(config: TrainConfig, env_id: str, *, why: str) -> Sequence[Any]:
    """The tasks of ``config.split`` in ``env_id``'s own task list (``why``: the option that needs them)."""
    env = _make_env(config, env_id)
    try:
        catalog = getattr(env.unwrapped, "tasks", None)
        if catalog is None:
            raise ConfigError(f"{env_id} has no task list (env.unwrapped.tasks) to read {why} from.")
        return catalog.tasks(config.split)
    finally:
        env.close()


def task_specs(config: TrainConfig) -> list[TaskSpec]:
    """The training tasks: each env's split (filtered by ``task_filter``), at most ``tasks`` per env."""
    specs: list[TaskSpec] = []
    for env_id in config.env:
        if config.remote:
            if config.task_filter or config.difficulty:
                raise ConfigError("task_filter and difficulty need the env in process; with remote=, pick tasks with "
                                  "tasks=N.")
            specs += [TaskSpec(env_id, split=config.split, index=i) for i in range(config.tasks or 256)]
            continue
        tasks = _split_tasks(config, env_id, why="the training tasks")
        chosen = [t for t in tasks if _matches(t.meta, config.task_filter)]
        if not chosen:
            hint = "" if not any(isinstance(v, str) and v.startswith("[") for v in config.task_filter.values()) else (
                " A list of values is JSON: --task-filter 'type=[\"bridge\", \"comparison\"]'.")
            raise ConfigError(f"No {env_id} tasks in split {config.split!r} match task_filter "
                              f"{config.task_filter}.{hint}")
        if config.difficulty is not None:
            from agentgym.core.difficulty import select_tasks

            level = set(select_tasks(env_id, config.difficulty, tasks, config.split, card=config.difficulty_card))
            chosen = [t for t in chosen if t.id in level]
            if not chosen:
                raise ConfigError(f"No {env_id} task of difficulty {config.difficulty} matches task_filter "
                                  f"{config.task_filter}.")
        specs += [TaskSpec(env_id, task_id=t.id) for t in chosen[: config.tasks or len(chosen)]]
    return specs


def task_strata(config: TrainConfig, specs: Sequence[TaskSpec]) -> dict[TaskSpec, Any]:
    """Each training task's value of the meta key ``config.stratify_by`` (nothing when it is unset)."""
    if not config.stratify_by:
        return {}
    strata: dict[TaskSpec, Any] = {}
    keys: set[str] = set()  # every meta key seen, for the error below
    for env_id in dict.fromkeys(spec.env for spec in specs):
        meta = {t.id: t.meta for t in _split_tasks(config, env_id, why="the stratify_by values")}
        keys.update(k for m in meta.values() for k in m)
        for spec in specs:
            if spec.env == env_id:
                strata[spec] = meta.get(spec.task_id, {}).get(config.stratify_by)
    if set(strata.values()) == {None}:
        raise ConfigError(f"stratify_by={config.stratify_by!r}: no training task's meta has that key; the meta "
                          f"keys are {', '.join(sorted(keys)) or 'none'}.")
    return strata


def stratified_order(specs: Sequence[TaskSpec], strata: dict[TaskSpec, Any], seed: int) -> list[TaskSpec]:
    """The tasks in turns of their strata's values (A, B, A, B, ...), each stratum in a seeded shuffle; a smaller
    stratum starts over, reshuffled, until the largest has been taken once. TRL then reads it in order, so a step
    of ``groups_per_step`` tasks holds each value in turn."""
    by_value: dict[Any, list[TaskSpec]] = {}
    for spec in specs:
        by_value.setdefault(strata.get(spec), []).append(spec)
    rng = random.Random(seed)
    pools = [list(by_value[value]) for value in sorted(by_value, key=str)]
    order: list[TaskSpec] = []
    for k in range(max(len(pool) for pool in pools)):
        for pool in pools:
            if k % len(pool) == 0:
                rng.shuffle(pool)
            order.append(pool[k % len(pool)])
    return order


def env_reward(prompts: Sequence[Any], completions: Sequence[Any], env_reward: Sequence[float | None],
               **_: Any) -> list[float | None]:
    """TRL reward function: the env's verifier score that the rollout recorded (never a parse of the text).

    ``None`` for a failed episode: TRL leaves it out of its group's baseline and gives it no advantage.
    """
    return [None if r is None else float(r) for r in env_reward]


class _Rollouts:
    """The ``rollout_func``: one episode per prompt TRL hands over (its sampler repeats each task group_size times)."""

    def __init__(self, config: TrainConfig, tokenizer: Any, stats: RolloutStats,
                 specs: Sequence[TaskSpec] = (), strata: dict[TaskSpec, Any] | None = None) -> None:
        self.config = config
        self.specs = list(specs)  # the tasks dynamic sampling draws its extra groups from
        self.strata = dict(strata or {})  # stratify_by: a replacement comes from the flat group's stratum
        self.bf16 = uses_bf16(config.precision)  # rollouts under the same autocast as the training
        self.draw = random.Random(config.seed + 7_919)
        self.glue = ChatGlue(tokenizer, style=config.observation_style, system_prompt=config.system_prompt)
        self.tokenizer = tokenizer
        self.stats = stats
        self.pool = EnvPool(lambda env_id: _make_env(self.config, env_id))
        # the synchronous loop generates between updates at rollout_threads (the asynchronous worker sets its own)
        self.worker = ModelWorker(self.glue, max_turn_tokens=config.max_turn_tokens,
                                  max_completion_tokens=config.max_completion_tokens,
                                  threads=config.rollout_threads if config.max_staleness == 0 else 0,
                                  bf16=self.bf16 and config.backend != "vllm")
        self.calls = 0
        self.curriculum: Curriculum | None = None
        self._curriculum_read = False  # the resumed run's checkpoint state, read at the first step
        if config.curriculum:
            self.curriculum = Curriculum(self.specs, seed=config.seed, easy_at=config.curriculum_easy_at,
                                         hard_at=config.curriculum_hard_at, easy_share=config.curriculum_easy_share,
                                         hard_share=config.curriculum_hard_share)

    @property
    def envs(self) -> dict[str, list[Any]]:
        """The envs of each env id, reused step after step (``self.pool``'s)."""
        return self.pool.pools

    def _envs(self, specs: Sequence[TaskSpec]) -> list[Any]:
        return self.pool.take([spec.env for spec in specs])

    def _generator(self, trainer: Any) -> Generator:
        if self.config.backend == "vllm":
            from agentgym.lm.vllm import VLLMGenerator

            return VLLMGenerator.from_trainer(trainer, self.tokenizer, temperature=self.config.temperature,
                                              top_p=self.config.top_p)
        model = trainer.accelerator.unwrap_model(trainer.model)
        return TransformersGenerator(model, self.tokenizer, temperature=self.config.temperature,
                                     top_p=self.config.top_p)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        specs = [TaskSpec(**json.loads(p)) for p in prompts]
        if self.curriculum is not None:  # the step's tasks are the curriculum's: a group of each, in TRL's slots
            if not self._curriculum_read:
                self.curriculum.resume(trainer.args.output_dir, trainer.state.global_step)
                self._curriculum_read = True
            size = self.config.group_size
            specs = [spec for spec in self.curriculum.draw(len(specs) // size) for _ in range(size)]
        generator = self._generator(trainer)
        episodes = self._play(specs, generator)
        self._learn(episodes)
        if self.config.dynamic_sampling:
            episodes = self._resample(episodes, generator)
        if self.curriculum is not None:
            self.stats.extra.update(self.curriculum.metrics())
        return self._outputs(episodes)

    def _learn(self, episodes: Sequence[Episode]) -> None:
        """Every group played moves its task to the pool its rewards say (with a curriculum)."""
        if self.curriculum is not None:
            self.curriculum.update(episodes, self.config.group_size)

    def _play(self, specs: Sequence[TaskSpec], generator: Generator,
              on_turn: Callable[[int], None] | None = None) -> list[Episode]:
        """The episodes of ``specs``, played by the rollout worker (``agentgym.lm.workers.ModelWorker``)."""
        envs = self._envs(specs)
        start = time.perf_counter()
        with defer_group_judges(envs):  # a judge in group mode scores each group once it is played
            episodes = self.worker.play(envs, specs, generator, seed=self.config.seed * 1_000_003 + self.calls,
                                        on_turn=on_turn)
        judge_groups(episodes, envs, self.config.group_size)
        self.calls += 1
        self._record(episodes, time.perf_counter() - start)
        self._replace_failed(envs, episodes)
        return episodes

    def _record(self, episodes: Sequence[Episode], seconds: float) -> None:
        """Count a played batch in the step's stats (the asynchronous pipeline counts the groups it trains instead)."""
        self.stats.episodes += episodes
        self.stats.seconds += seconds

    def _resample(self, episodes: list[Episode], generator: Generator) -> list[Episode]:
        """DAPO's dynamic sampling: each group whose rewards are all equal (its advantages, and so its gradient,
        are 0) is replaced by a group of another task that has a signal, playing at most ``dynamic_sampling``
        extra groups this step; a group still without signal when they are spent stays. TRL reads groups by
        position (``group_size`` consecutive rollouts), so a replacement takes its place whole."""
        size, budget = self.config.group_size, self.config.dynamic_sampling
        groups = [episodes[i:i + size] for i in range(0, len(episodes), size)]
        if any(len({e.spec for e in group}) != 1 for group in groups):  # not TRL's grouping: leave the step as is
            logger.warning("dynamic_sampling: the step's rollouts are not in groups of one task; not resampled.")
            return episodes
        while budget and (flat := [i for i, group in enumerate(groups) if not has_signal(group)]):
            taken = {group[0].spec for group in groups}
            slots = flat[:budget]
            pools = [self._pool(groups[i][0].spec, taken) for i in slots]
            if not all(pools):  # built without a task list: nothing to draw from
                break
            draws = [self.draw.choice(pool) for pool in pools]
            budget -= len(draws)
            self.stats.resampled_groups += len(draws)
            played = self._play([spec for spec in draws for _ in range(size)], generator)
            self._learn(played)
            fresh = [played[i:i + size] for i in range(0, len(played), size)]
            if self.strata:  # each replacement stands in for the group of its own stratum
                for i, group in zip(slots, fresh):
                    if has_signal(group):
                        groups[i] = group
            else:
                for i, group in zip(flat, [g for g in fresh if has_signal(g)]):
                    groups[i] = group
        return [e for group in groups for e in group]

    def _pool(self, spec: TaskSpec, taken: set[TaskSpec]) -> list[TaskSpec]:
        """The tasks a replacement of ``spec``'s group is drawn from: any not in the step (all, if none is
        left), and with ``stratify_by`` only those of ``spec``'s stratum."""
        pool = [s for s in self.specs if s not in taken] or self.specs
        if self.curriculum is not None:  # a replacement comes from the tasks that still teach: the normal pool
            normal = set(self.curriculum.pools()["normal"])
            return [s for s in pool if s in normal] or pool
        if not self.strata:
            return pool
        value = self.strata.get(spec)
        return ([s for s in pool if self.strata.get(s) == value]
                or [s for s in self.specs if self.strata.get(s) == value] or pool)

    def _outputs(self, episodes: Sequence[Episode]) -> dict[str, Any]:
        """TRL's columns. A failed episode trains nothing: its tokens are masked out and its reward is None."""
        eos = self.tokenizer.eos_token_id
        completions = [e.completion_ids or [eos] for e in episodes]
        masks = [self._loss_mask(e, len(c)) for e, c in zip(episodes, completions)]
        self.stats.loss_masks += masks
        return {"prompt_ids": [e.prompt_ids or self.glue.prompt_ids("") for e in episodes],  # reset failed: empty
                "completion_ids": completions, "env_mask": masks,
                "logprobs": _logprobs(episodes, mask_observations=self.config.mask_observations),
                "env_reward": [None if e.failed else e.reward for e in episodes]}

    def _loss_mask(self, episode: Episode, length: int) -> list[int]:
        """1 where a completion token counts in the loss: the model's own tokens, or every token of the episode
        with ``mask_observations`` off (the ablation); none of a failed episode's."""
        if episode.failed or not episode.completion_ids:  # nothing played: the stand-in end token trains nothing
            return [0] * length
        return episode.mask if self.config.mask_observations else [1] * length

    def _replace_failed(self, envs: Sequence[Any], episodes: Sequence[Episode]) -> None:
        """Close the env of each failed episode (its state is unknown) so the next step makes a fresh one; a step
        in which every episode failed has nothing to learn from and stops the run."""
        failed = [(env, e) for env, e in zip(envs, episodes) if e.failed]
        for env, episode in failed:
            logger.warning("An episode of %s failed (reward 0, left out of its group's baseline): %s",
                           episode.spec.key, episode.error)
            self.pool.drop(episode.spec.env, env)
        if failed and len(failed) == len(episodes):
            raise RolloutError(f"Every episode of this step failed ({len(failed)}), e.g. {failed[0][1].error}. "
                               "Check the env on its own (agentgym eval --policy oracle --env ...).")

    def close(self) -> None:
        self.pool.close()


def _logprobs(episodes: Sequence[Episode], *, mask_observations: bool = True) -> list[list[float]] | None:
    """The sampler's per-token log-probabilities when every episode has them (vLLM), else None.

    The sampler never scored an observation token (0.0 stands in); with observation masking off such a token
    is in the loss, so it gets NaN, which TRL's vLLM importance-sampling correction reads as "unknown" (ratio 1).
    """
    if not episodes or any(e.logprobs is None or len(e.logprobs) != len(e.completion_ids) for e in episodes):
        return None
    if mask_observations:
        return [list(e.logprobs) or [0.0] for e in episodes]  # type: ignore[arg-type]
    return [[p if m else math.nan for p, m in zip(e.logprobs, e.mask)] or [0.0]  # type: ignore[arg-type]
            for e in episodes]


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
    from transformers import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    from agentgym.trainer.callbacks import MetricsLog

    torch.set_num_threads(max(1, config.threads))
    check_envs(config)  # an id or kwarg typo, or a task_filter matching nothing, fails before the model loads
    specs = list(specs if specs is not None else task_specs(config))
    strata = task_strata(config, specs)  # a stratify_by key no task has fails before the model loads too
    if model is None or tokenizer is None:
        from agentgym.lm.local import load_for_training, resolve_model

        model, tokenizer = load_for_training(resolve_model(config.model))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if strata:  # the order is the strata's turns: TRL must read it as it is
        order = stratified_order(specs, strata, config.seed)
    else:
        random.Random(config.seed).shuffle(specs)
        order = specs
    dataset = Dataset.from_list([{"prompt": json.dumps(dataclasses.asdict(s))} for s in order])
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "train_config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2) + "\n")
    micro = config.micro_batch or config.group_size
    accumulation = config.batch // micro
    report_to = ["tensorboard"] if _has("tensorboard") else "none"
    args = GRPOConfig(
        output_dir=str(out), per_device_train_batch_size=micro, gradient_accumulation_steps=accumulation,
        steps_per_generation=accumulation, num_generations=config.group_size, learning_rate=config.learning_rate,
        lr_scheduler_type=config.lr_scheduler,
        max_steps=config.steps, logging_steps=1, save_steps=config.save_steps, save_total_limit=config.save_total_limit,
        seed=config.seed, beta=config.beta, epsilon=config.epsilon, temperature=config.temperature,
        top_p=config.top_p, top_k=0, loss_type="dapo" if config.loss_type == "gspo" else config.loss_type,
        importance_sampling_level="sequence" if config.loss_type == "gspo" else "token",
        max_completion_length=config.max_completion_tokens, report_to=report_to, use_cpu=not torch.cuda.is_available(),
        bf16=uses_bf16(config.precision), fp16=False, disable_tqdm=True, dataloader_num_workers=0,
        shuffle_dataset=not strata,
        save_only_model=False, gradient_checkpointing=config.gradient_checkpointing,
        delta=config.importance_cap if config.max_staleness else None, **vllm_args,
    )
    peft_config = lora_config(config)
    stats = RolloutStats()
    trainer_class, rollouts_class = GRPOTrainer, _Rollouts
    if config.agent is not None or config.agent_cmd is not None:  # the user's agent plays, through a gateway
        from agentgym.trainer.agent import agent_rollouts, agent_trainer_class

        trainer_class, rollouts_class = agent_trainer_class(), agent_rollouts(_Rollouts)
    callbacks: list[Any] = []
    if config.max_staleness:  # a rollout worker plays on while the learner trains
        from agentgym.trainer.pipeline import async_trainer_class, pipeline_callback, pipeline_rollouts

        if config.rollout_workers and not _has("ray"):  # before the run, not when the first step starts them
            raise DependencyNotInstalled("Ray (--rollout-workers)", "pip install 'agentgym-suite[ray]'")
        agent = rollouts_class is not _Rollouts
        trainer_class = async_trainer_class(agent=agent)
        rollouts = pipeline_rollouts(rollouts_class)(config, tokenizer, stats, specs, strata, order=order,
                                                     shuffle=not strata)  # as TRL's sampler reads the order
        callbacks.append(pipeline_callback(rollouts))
    else:
        rollouts = rollouts_class(config, tokenizer, stats, specs, strata)
    if rollouts.curriculum is not None:
        callbacks.append(_curriculum_callback(rollouts.curriculum))
    # the pipeline's callback first: the weights are published (and its metrics set) before the step is logged
    trainer = trainer_class(model=model, reward_funcs=[env_reward], args=args, train_dataset=dataset,
                          processing_class=tokenizer, rollout_func=rollouts, peft_config=peft_config,
                          callbacks=[*callbacks, MetricsLog(config, stats, console)])
    trainer.remove_callback(PrinterCallback)  # its raw dicts: MetricsLog writes them to the log instead
    return trainer, rollouts


def _curriculum_callback(curriculum: Curriculum) -> Any:
    """Writes the curriculum's pools and random state into every checkpoint."""
    from transformers import TrainerCallback

    class CurriculumCallback(TrainerCallback):  # type: ignore[misc, valid-type]
        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir():
                curriculum.save(folder)

    return CurriculumCallback()


def _vllm_args(config: TrainConfig) -> dict[str, Any]:
    """GRPOConfig's vLLM settings: TRL builds the engine and syncs its weights; our rollouts only sample from it."""
    if config.backend != "vllm":
        return {}
    import torch

    if not _has("vllm"):
        from agentgym.lm.vllm import VLLM_INSTALL

        raise DependencyNotInstalled("backend='vllm'", VLLM_INSTALL)
    if not torch.cuda.is_available():
        raise ConfigError("backend='vllm' needs a CUDA GPU and none is visible; use backend='transformers' on CPU.")
    args: dict[str, Any] = {"use_vllm": True, "vllm_mode": config.vllm_mode,
                            "vllm_gpu_memory_utilization": config.vllm_gpu_memory_utilization}
    if config.vllm_mode == "server" and config.vllm_server_url:
        args["vllm_server_base_url"] = config.vllm_server_url
    return args


def uses_bf16(precision: str) -> bool:
    """Whether a run of ``precision`` (auto, float32, bfloat16) trains under bf16 autocast on this machine."""
    import torch

    from agentgym.lm.precision import resolve_dtype

    return resolve_dtype(precision, "cuda" if torch.cuda.is_available() else "cpu") == "bfloat16"


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _checkpoint_step(path: str | Path) -> int:
    return int(Path(path).name.split("-")[-1])


def _last_checkpoint(output_dir: Path) -> str | None:
    checkpoints = sorted(output_dir.glob("checkpoint-*"), key=_checkpoint_step)
    return str(checkpoints[-1]) if checkpoints else None


def drop_logged_after(output_dir: Path, step: int) -> int:
    """Remove the rows of ``metrics.jsonl`` and ``samples.jsonl`` logged after ``step``: a run that stopped
    between checkpoints trains those steps again on resume, and each step must appear once. Returns how many
    rows were dropped."""
    dropped = 0
    for name in ("metrics.jsonl", "samples.jsonl"):
        path = output_dir / name
        if not path.is_file():
            continue
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        kept = []
        for line in lines:
            try:
                row_step = json.loads(line).get("step", 0)
            except (ValueError, AttributeError):
                row_step = None  # a line cut short by the stop: dropped too
            if isinstance(row_step, int) and row_step <= step:
                kept.append(line if line.endswith("\n") else line + "\n")
        dropped += len(lines) - len(kept)
        if len(kept) != len(lines):
            tmp = path.with_suffix(".jsonl.tmp")
            tmp.write_text("".join(kept), encoding="utf-8")
            tmp.replace(path)
    return dropped


def train(config: TrainConfig, *, console: Any = None, model: Any = None, tokenizer: Any = None) -> Path:
    """Run GRPO; returns the directory of the final model (``output_dir/final``).

    ``console`` (a rich ``Console``) gets a line per step; ``output_dir/train.log`` gets the rest. ``model`` and
    ``tokenizer`` replace ``config.model``'s (tests pass a tiny one)."""
    _require()
    check_envs(config)
    if config.agent is not None or config.agent_cmd is not None:  # a bad agent fails before the model loads
        from agentgym.gateway.agents import AgentSpec, load_agent

        if config.agent is not None:
            load_agent(config.agent)
        else:
            AgentSpec(command=config.agent_cmd)
    prewarm_workers(local=not config.remote)  # in-process envs: their verifier workers start while the model loads
    if console is not None:
        console.print(f"training {config.model} on {', '.join(config.env)}"
                      f"{' at ' + config.remote if config.remote else ''}: {config.steps} steps x "
                      f"{config.groups_per_step} tasks x {config.group_size} rollouts, loss {config.loss_type} -> "
                      f"{config.output_dir}", highlight=False)
    out = Path(config.output_dir)
    with _train_log(out / "train.log"):
        return _train(config, console, model, tokenizer)


@contextlib.contextmanager
def _train_log(path: Path) -> Iterator[None]:
    """The trainer's, TRL's and transformers' log records into ``path`` (appended, so a resumed run's log
    continues), and no transformers progress bars (checkpoint shards) on the console meanwhile."""
    from transformers.utils import logging as hf_logging

    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    # a handler here would silence logging's last-resort stderr output of warnings: give them one of their own
    warnings_out = logging.StreamHandler() if not logging.getLogger().handlers else None
    if warnings_out is not None:
        warnings_out.setLevel(logging.WARNING)
    attached = [(logging.getLogger(name), h) for name in ("agentgym", "trl") for h in (handler, warnings_out) if h]
    attached.append((logging.getLogger("transformers"), handler))  # it has its own stderr handler
    trainer_level = logger.level
    bars = hf_logging.is_progress_bar_enabled()
    for each, h in attached:
        each.addHandler(h)
    logger.setLevel(logging.INFO)  # the per-step TRL metrics are INFO records: the file's, not the console's
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars:
            hf_logging.enable_progress_bar()
        logger.setLevel(trainer_level)
        for each, h in attached:
            each.removeHandler(h)
        handler.close()


def _train(config: TrainConfig, console: Any, model: Any, tokenizer: Any) -> Path:
    trainer, rollouts = build_trainer(config, model=model, tokenizer=tokenizer, console=console)
    out = Path(config.output_dir)
    resume = _last_checkpoint(out) if config.resume else None
    if config.resume and resume is None and console is not None:
        console.print(f"No checkpoint in {out} to resume from; starting fresh.")
    if resume is not None:
        dropped = drop_logged_after(out, _checkpoint_step(resume))
        if dropped and console is not None:
            console.print(f"Resuming from {resume}: dropped {dropped} log rows of the steps after it "
                          "(they are trained again).")
    try:
        trainer.train(resume_from_checkpoint=resume)
    finally:
        rollouts.close()
    final = save_final(trainer, out / "final")
    write_model_card(final, start_model=config.model, method="GRPO", run=out)
    return final


def lora_config(config: Any) -> Any:
    """PEFT's LoRA config of a run's ``lora``/``lora_r``/``lora_alpha`` fields (GRPO's and SFT's), or None."""
    if not config.lora:
        return None
    try:
        from peft import LoraConfig
    except ImportError as e:
        raise DependencyNotInstalled("LoRA (peft)", "pip install peft") from e
    return LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, task_type="CAUSAL_LM",
                      target_modules="all-linear")


def save_final(trainer: Any, final: Path) -> Path:
    """The trained model and tokenizer as a plain transformers folder; LoRA adapters are merged in first,
    so ``agentgym eval --policy hf:<final>`` loads it like any model."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    if hasattr(model, "merge_and_unload"):  # a PEFT model
        model = model.merge_and_unload()
    model.save_pretrained(str(final))
    trainer.processing_class.save_pretrained(str(final))
    return final


def write_model_card(final: Path, *, start_model: str, method: str, run: Path) -> None:
    """``final/agentgym_model.json``: the name ``agentgym eval`` gives this model by default (the base model's
    name, quantisation included, and how it was trained; never the folder's path)."""
    from agentgym.lm.naming import MODEL_CARD, trained_model_card

    card = trained_model_card(start_model, method=method, run=run)
    (Path(final) / MODEL_CARD).write_text(json.dumps(card, indent=2) + "\n")
