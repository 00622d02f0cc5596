"""Asynchronous GRPO (``max_staleness`` K > 0): rollout workers play on while the learner trains.

A worker (``agentgym.trainer.rollout_worker``) is a thread of the training process with its own copy of the policy
(``rollout_workers: 0``, the default), or one of N Ray actors across a cluster (``rollout_workers: N``, ``ray``). Each
plays ``groups_per_step`` groups at a time (batched generation, as the synchronous loop plays a step), each with the
newest weights the learner has published, and the pipeline queues each finished group with the version of the
weights that sampled it (the learner's optimizer steps when they were published). The learner takes the groups it
needs for a step from the queue, oldest first. A Ray worker that dies loses only its batch in flight: the pipeline
counts it (``rollouts_lost``, ``rollout_workers_lost``), plays the batch again on a worker left, and the learner goes
on.

The staleness bound: the learner at step s trains only groups sampled by version v >= s - K. The worker starts a
batch only while the groups started so far fit in the K + 1 steps ahead of the learner (plus one for every group
dropped), so in the steady state it is never more than K steps ahead; a group that would be staler anyway (the
learner took dropped groups' places, a batch ran long) is dropped where it is: in the queue when the learner reaches
it, or in flight at the end of the worker's next turn (a typed ``Cancelled``, never a reward-0 sample). Dropped
groups are counted in every step's metrics and replaced by fresh ones.

Off-policy correction: the loss's old log-probabilities are the sampler's recorded ones (the worker records each
sampled token's log-probability), so TRL's ratio is pi_theta / pi_sampler, clipped as GRPO clips it, and truncated at
``importance_cap`` (TRL's two-sided ``delta``) where the advantage is negative.

Groups: keyed by their index in the task order (``g<index>``), every member the same task and seed, advantages by
``agentgym.trainer.groups.group_advantages`` (a failed member out of the baseline; an all-failed group dropped; with
``dynamic_sampling``, a group with no signal is dropped while another group is already queued, so the learner never
waits for its replacement).

Weights reach the worker after every optimizer step in memory (a copy of the trainable parameters, no disk). A
checkpoint records the worker's position in the task order: a resumed run plays on from the first group not trained,
so no group is trained twice; groups queued or in flight at a stop are counted in ``pipeline.json``.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.errors import RolloutError
from agentgym.lm.rollout import Episode, TaskSpec
from agentgym.trainer.config import TrainConfig
from agentgym.trainer.groups import check_group, group_advantages, has_signal
from agentgym.trainer.rollout_worker import Cancelled, ThreadWorker, WorkerLost, ray_connect, start_ray_workers

__all__ = ["Cancelled", "Group", "Pipeline", "async_trainer_class", "pipeline_callback", "pipeline_rollouts"]

logger = logging.getLogger("agentgym.trainer")
STATE_FILE = "agentgym_async.json"


@dataclass
class Group:
    """One GRPO group as the worker played it: its index in the task order, its members, the weights' version."""

    index: int
    episodes: list[Episode]
    version: int
    #: the group's share of its batch's wall time
    seconds: float = 0.0

    @property
    def id(self) -> str:
        return f"g{self.index}"

    @property
    def failed(self) -> bool:
        return all(e.failed for e in self.episodes)


@dataclass
class _Counts:
    """What the pipeline did since the learner last looked (``step``) and in all (``total``)."""

    step: collections.Counter[str] = field(default_factory=collections.Counter)
    total: collections.Counter[str] = field(default_factory=collections.Counter)

    def add(self, key: str, value: float = 1) -> None:
        self.step[key] += value
        self.total[key] += value


class Pipeline:
    """The queue between the worker and the learner, the bound on staleness, the weights and the counts."""

    def __init__(self, config: TrainConfig, rollouts: Any, order: Sequence[TaskSpec], *, shuffle: bool = True) -> None:
        if not order:
            raise RolloutError("No training tasks to play.")
        self.config = config
        self.rollouts = rollouts
        self.order = list(order)
        #: each pass over the tasks as TRL's sampler hands them to the synchronous loop (``spec``)
        self.shuffle = shuffle
        self.passes: list[list[TaskSpec]] = []
        self._permutations: Any = None
        self._passes_lock = threading.Lock()  # Ray workers' driver threads ask for their batches at once
        self.k = config.max_staleness
        self.per_batch = config.groups_per_step
        self.cond = threading.Condition()
        self.queue: collections.deque[Group] = collections.deque()
        self.step = 0  # the learner's optimizer steps: the version of its weights
        self.base_step = 0
        self.cursor = 0  # the next group (index in the task order) the worker starts
        self.trained_through = 0  # one past the last group the learner took
        self.trained: list[int] = []  # the groups trained, in order (pipeline.json)
        self.started = 0
        self.dropped = 0  # groups dropped since the start: each frees a place for a fresh one
        self.in_flight = 0
        self.counts = _Counts()
        self.error: BaseException | None = None
        self.closed = False
        self.weights: tuple[int, dict[str, Any]] | None = None
        self.workers: list[Any] = []
        self.threads: list[threading.Thread] = []
        self.live = 0  # workers not lost
        self.retry: collections.deque[int] = collections.deque()  # batches a lost worker had in flight
        self.ray: Any = None
        self.ray_started = False
        self.refs: dict[int, Any] = {}  # version -> the weights in Ray's object store
        self.refs_lock = threading.Lock()
        self.last_take = time.perf_counter()

    @property
    def started_workers(self) -> bool:
        return bool(self.threads)

    # the learner's side -------------------------------------------------------------------------------------------

    def start(self, model: Any, step: int, cursor: int) -> None:
        """Copy the learner's policy for the workers and start them, at optimizer step ``step`` and group
        ``cursor``."""
        self.step = self.base_step = step
        self.cursor = self.trained_through = cursor
        self.weights = (step, {})
        if self.config.rollout_workers:
            self.ray, self.ray_started = ray_connect(self.config.ray or "local")
            self.workers = start_ray_workers(self, model)
        else:
            self.workers = [ThreadWorker(self, model)]
        self.live = len(self.workers)
        self.threads = [threading.Thread(target=self._run, args=(worker,), name=f"agentgym-rollout-worker-{k}",
                                         daemon=True) for k, worker in enumerate(self.workers)]
        for thread in self.threads:
            thread.start()

    def learner_state(self) -> tuple[bool, int]:
        """Whether the run is closing, and the learner's optimizer step (what a batch in flight checks)."""
        with self.cond:
            return self.closed, self.step

    def weights_ref(self, version: int, weights: dict[str, Any]) -> Any:
        """``weights``, the trainable parameters of ``version``, in Ray's object store (put once, shared by every
        Ray worker; as fp32 arrays, which each actor casts back to its parameters' type)."""
        with self.refs_lock:
            if version not in self.refs:
                self.refs = {version: self.ray.put({name: t.detach().cpu().float().numpy()
                                                    for name, t in weights.items()})}
            return self.refs[version]

    def take(self, n: int) -> list[Group]:
        """The ``n`` groups of the learner's next step, oldest first, past the bound and failed ones dropped;
        blocks while the worker plays (the wait is ``learner_idle_s``)."""
        start = time.perf_counter()
        budget = self.config.dynamic_sampling
        taken: list[Group] = []
        with self.cond:
            while len(taken) < n:
                while not self.queue:
                    self._raise_if_failed()
                    self.cond.wait(timeout=1.0)
                group = self.queue.popleft()
                self.trained_through = max(self.trained_through, group.index + 1)
                if self.step - group.version > self.k:
                    self._drop("dropped_stale_queued", 1)
                elif group.failed:
                    self._drop("dropped_failed", 1)
                elif budget and not has_signal(group.episodes) and self.queue:
                    budget -= 1
                    self._drop("dropped_no_signal", 1)
                else:
                    taken.append(group)
                    self.trained.append(group.index)
            waited = time.perf_counter() - start
            self.counts.add("learner_idle_s", waited)
            stats = self._step_metrics(taken)
        self.last_take = time.perf_counter()
        self.rollouts.stats.extra.update(stats)
        return taken

    def publish(self, model: Any, step: int) -> None:
        """The learner's weights after optimizer step ``step``, for the worker's next batch (a copy in memory)."""
        weights = {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}
        busy = time.perf_counter() - self.last_take
        trained = sum(sum(m) for m in self.rollouts.stats.loss_masks)
        with self.cond:
            self.weights = (step, weights)
            self.step = step
            self.cond.notify_all()
        for worker in self.workers:
            worker.notify(step, False)
        self.rollouts.stats.extra["learner_tokens_per_s"] = trained / busy if busy > 0 else 0.0

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps: the first group of the task order not yet trained, and the totals."""
        with self.cond:
            return {"next_group": self.trained_through, "totals": dict(self.counts.total)}

    def close(self) -> dict[str, Any]:
        """Stop the worker (its batch in flight is cancelled at its next turn); the totals, with the groups left
        queued or in flight (never trained, counted here)."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        for worker in self.workers:
            worker.notify(self.step, True)
        for thread in self.threads:
            thread.join(timeout=600)
        for worker in self.workers:
            worker.stop()
        if self.ray_started:
            self.ray.shutdown()
        with self.cond:
            summary = {"groups_left_queued": len(self.queue), "groups_left_in_flight": self.in_flight,
                       "next_group": self.trained_through, "trained_groups": list(self.trained),
                       "rollout_workers": [w.where for w in self.workers], **dict(self.counts.total)}
            self.queue.clear()
        return summary

    def _raise_if_failed(self) -> None:
        if self.error is not None:
            raise RolloutError(f"The rollout worker stopped: {self.error}") from self.error
        if self.closed:
            raise RolloutError("The rollout pipeline is closed.")

    def _drop(self, what: str, groups: int) -> None:
        self.counts.add(what, groups)
        self.dropped += groups
        self.cond.notify_all()

    def _step_metrics(self, taken: Sequence[Group]) -> dict[str, float]:
        staleness = [self.step - g.version for g in taken]
        step = self.counts.step
        out = {"staleness_mean": sum(staleness) / len(staleness) if staleness else 0.0,
               "staleness_max": float(max(staleness, default=0)),
               "groups_in_flight": float(self.in_flight), "groups_queued": float(len(self.queue)),
               "dropped_stale": float(step["dropped_stale_queued"] + step["dropped_stale_in_flight"]),
               "dropped_stale_queued": float(step["dropped_stale_queued"]),
               "dropped_stale_in_flight": float(step["dropped_stale_in_flight"]),
               "dropped_failed": float(step["dropped_failed"]), "dropped_no_signal": float(step["dropped_no_signal"]),
               "learner_idle_s": float(step["learner_idle_s"]), "rollout_idle_s": float(step["rollout_idle_s"]),
               "rollout_tokens_per_s": (step["rollout_tokens"] / step["rollout_busy_s"]
                                        if step["rollout_busy_s"] else 0.0),
               "rollouts_lost": float(step["rollouts_lost"]),
               "rollout_workers_lost": float(step["rollout_workers_lost"])}
        self.counts.step.clear()
        return out

    # the worker's side --------------------------------------------------------------------------------------------

    def spec(self, index: int) -> TaskSpec:
        """Group ``index``'s task, in the order TRL's sampler (``RepeatSampler``) hands the tasks to the synchronous
        loop: each pass a permutation of the task order drawn from one generator seeded with the run's seed (the
        order as it is when it is not shuffled: a stratified run's), a pass's incomplete last step left out. So the
        two loops play the same tasks step for step, and with the same sampling seeds the same first step."""
        per_pass = len(self.order) // self.per_batch * self.per_batch or len(self.order)
        epoch, k = divmod(index, per_pass)
        with self._passes_lock:  # the passes drawn in order, whichever thread asks first
            while len(self.passes) <= epoch:
                self.passes.append(self._next_pass()[:per_pass])
            return self.passes[epoch][k]

    def _next_pass(self) -> list[TaskSpec]:
        if not self.shuffle:
            return list(self.order)
        import torch

        if self._permutations is None:
            self._permutations = torch.Generator()
            self._permutations.manual_seed(self.config.seed)
        return [self.order[i] for i in torch.randperm(len(self.order), generator=self._permutations).tolist()]

    def _may_start(self) -> bool:
        ahead = (self.step - self.base_step + self.k + 1) * self.per_batch + self.dropped
        return self.started + self.per_batch <= ahead

    def _reserve(self) -> int:
        """The first group of the next batch (a lost worker's batch first), counted as started and in flight."""
        if self.retry:
            first = self.retry.popleft()
        else:
            first = self.cursor
            self.cursor += self.per_batch
        self.started += self.per_batch
        self.in_flight += self.per_batch
        return first

    def _run(self, worker: Any) -> None:
        try:
            worker.setup()
            while True:
                waited = time.perf_counter()
                with self.cond:
                    while not self.closed and not self._may_start():
                        self.cond.wait(timeout=1.0)
                    if self.closed:
                        return
                    self.counts.add("rollout_idle_s", time.perf_counter() - waited)
                    first = self._reserve()
                    version, weights = self.weights  # type: ignore[misc]
                if not self._play(worker, first, version, weights):
                    return
        except BaseException as e:  # handed to the learner, which raises it
            logger.exception("The rollout worker failed (%s)", worker.where)
            with self.cond:
                self.error = e
                self.cond.notify_all()

    def _play(self, worker: Any, first: int, version: int, weights: dict[str, Any]) -> bool:
        """Play one batch on ``worker`` and queue its groups; False once the worker is lost."""
        size = self.config.group_size
        specs = [self.spec(first + k) for k in range(self.per_batch) for _ in range(size)]
        start = time.perf_counter()
        worker.busy = first
        try:
            episodes = worker.play(first, specs, version, weights)
        except Cancelled as e:
            with self.cond:
                self.in_flight -= self.per_batch
                if e.reason == "stale":
                    self._drop("dropped_stale_in_flight", self.per_batch)
            return True
        except WorkerLost as e:
            logger.warning("%s; its batch in flight (groups %d-%d) is played again.", e, first,
                           first + self.per_batch - 1)
            with self.cond:
                self.in_flight -= self.per_batch
                self.started -= self.per_batch
                self.retry.append(first)
                self.live -= 1
                self.counts.add("rollouts_lost", len(specs))
                self.counts.add("rollout_workers_lost")
                if not self.live:
                    self.error = RolloutError(f"Every rollout worker was lost; the last: {e}")
                self.cond.notify_all()
            return False
        finally:
            worker.busy = None
        seconds = time.perf_counter() - start
        groups = [Group(first + k, episodes[k * size:(k + 1) * size], version, seconds / self.per_batch)
                  for k in range(self.per_batch)]
        for group in groups:
            check_group(group.episodes)
        with self.cond:
            self.queue.extend(groups)
            self.in_flight -= self.per_batch
            self.counts.add("rollout_tokens", sum(e.tokens_model for e in episodes))
            self.counts.add("rollout_busy_s", seconds)
            self.cond.notify_all()
        return True


def pipeline_rollouts(base: type) -> type:
    """The built-in ``_Rollouts`` as the ``rollout_func`` of an asynchronous run: the learner's override takes a
    step's groups from the pipeline and hands TRL their columns through it."""

    class PipelineRollouts(base):  # type: ignore[misc, valid-type]
        def __init__(self, config: TrainConfig, tokenizer: Any, stats: Any, specs: Sequence[TaskSpec] = (),
                     strata: dict[TaskSpec, Any] | None = None, order: Sequence[TaskSpec] = (),
                     shuffle: bool = True) -> None:
            super().__init__(config, tokenizer, stats, specs, strata)
            self.pipeline = Pipeline(config, self, order or specs, shuffle=shuffle)
            self.pending: dict[str, Any] | None = None

        def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
            if self.pending is None:
                raise RolloutError("The asynchronous trainer hands TRL the step's groups; this rollout function is "
                                   "not called on its own.")
            out, self.pending = self.pending, None
            return out

        def _record(self, episodes: Sequence[Episode], seconds: float) -> None:
            """Played episodes are counted when they are trained (``take``), not when they are played."""

        def close(self) -> None:
            summary = self.pipeline.close() if self.pipeline.started_workers else {}
            super().close()
            if summary:
                path = Path(self.config.output_dir) / "pipeline.json"
                path.write_text(json.dumps(summary, indent=2) + "\n")
                logger.info("The rollout pipeline stopped: %s", json.dumps(summary))

    return PipelineRollouts


def _resume_cursor(output_dir: str, step: int) -> int:
    """The first group not trained when checkpoint ``step`` was saved (0 for a fresh run)."""
    path = Path(output_dir) / f"checkpoint-{step}" / STATE_FILE
    if step == 0 or not path.is_file():
        return 0
    return int(json.loads(path.read_text())["next_group"])


def _take(trainer: Any, inputs: list[dict[str, Any]]) -> list[Group]:
    """The groups of the trainer's step from the pipeline (its workers started on the first step), counted in the
    step's stats."""
    rollouts = trainer.rollout_func
    pipeline = rollouts.pipeline
    if not pipeline.started_workers:
        step = trainer.state.global_step
        pipeline.start(trainer.accelerator.unwrap_model(trainer.model), step,
                       _resume_cursor(trainer.args.output_dir, step))
    groups = pipeline.take(len(inputs) // trainer.num_generations)
    rollouts.stats.episodes += [e for g in groups for e in g.episodes]
    rollouts.stats.seconds += sum(g.seconds for g in groups)
    return groups


def async_trainer_class(agent: bool = False) -> type:
    """TRL's ``GRPOTrainer`` (``agent``: ``train --agent``'s) whose generation step takes finished groups from the
    pipeline: their recorded log-probabilities as the old policy's, advantages per group id (``group_advantages``)."""
    import torch
    from trl import GRPOTrainer

    if agent:
        from agentgym.trainer.agent import agent_trainer_class

        class AsyncAgentGRPOTrainer(agent_trainer_class()):  # type: ignore[misc]
            def _episodes(self, inputs: list[dict[str, Any]]) -> list[Any]:
                groups = _take(self, inputs)
                self._group_ids = [g.id for g in groups for _ in g.episodes]
                return [e for g in groups for e in g.episodes]

            def _advantages(self, rewards: list[float | None], size: int) -> list[float]:
                return group_advantages(rewards, self._group_ids, str(self.scale_rewards))

        return AsyncAgentGRPOTrainer

    class AsyncGRPOTrainer(GRPOTrainer):  # type: ignore[misc, valid-type]
        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
            rollouts = self.rollout_func
            groups = _take(self, inputs)
            episodes = [e for g in groups for e in g.episodes]
            rollouts.pending = rollouts._outputs(episodes)
            out = super()._generate_and_score_completions(
                [{"prompt": json.dumps(dataclasses.asdict(e.spec))} for e in episodes])
            ids = [g.id for g in groups for _ in g.episodes]
            rewards = [None if e.failed else e.reward for e in episodes]
            device = out["completion_ids"].device
            out["advantages"] = torch.tensor(group_advantages(rewards, ids, str(self.scale_rewards)),
                                             dtype=torch.float32, device=device)
            width = out["completion_ids"].shape[1]
            out["old_per_token_logps"] = torch.tensor(
                [((e.logprobs or []) + [0.0] * width)[:width] for e in episodes], dtype=torch.float32, device=device)
            return out

    return AsyncGRPOTrainer


def pipeline_callback(rollouts: Any) -> Any:
    """The trainer callback that publishes the weights after every optimizer step and saves the pipeline's
    position with every checkpoint."""
    from transformers import TrainerCallback

    class PipelineCallback(TrainerCallback):  # type: ignore[misc, valid-type]
        def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
            if rollouts.pipeline.started_workers and model is not None:
                rollouts.pipeline.publish(model, state.global_step)

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir():
                (folder / STATE_FILE).write_text(json.dumps(rollouts.pipeline.state(), indent=2) + "\n")

    return PipelineCallback()
