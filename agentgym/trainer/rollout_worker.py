"""The rollout workers of asynchronous GRPO: where a batch of groups is played, with which copy of the policy.

``ThreadWorker``: a thread of the training process with its own copy of the policy (``rollout_workers: 0``).
``RayWorker``: a Ray actor (``RolloutActor``) on a node of a Ray cluster, with its own copy of the policy, its own
envs and its own torch threads (``rollout_workers: N``, ``ray: ADDRESS``). The pipeline (``agentgym.trainer.pipeline``)
decides which batch each worker plays and when; a worker only plays it, with the weights of the version it is
handed, and stops at the end of a turn when the batch is cancelled (past the staleness bound, or the run closing).

Weights reach a thread worker in memory (the learner's copies become its parameters) and a Ray worker through Ray's
object store (one ``ray.put`` of the trainable parameters per optimizer step, fetched by each actor when it starts its
next batch). A Ray worker that dies (its process killed, its node lost) raises ``WorkerLost``: the pipeline plays its
batch again elsewhere and goes on with the workers left.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from agentgym.lm.rollout import Episode, TaskSpec, TransformersGenerator

__all__ = ["Cancelled", "RayWorker", "RolloutActor", "ThreadWorker", "WorkerLost", "ray_connect"]

logger = logging.getLogger("agentgym.trainer")
START_TIMEOUT_S = 300.0  # for a Ray worker to be placed, import agentgym and load its policy copy


class Cancelled(Exception):
    """A batch of groups the worker stopped playing: ``reason`` is ``stale`` (past the bound) or ``closed``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class WorkerLost(Exception):
    """A rollout worker died mid-batch: its batch's rollouts are lost (and played again by another worker)."""


def _no_grad_copy(model: Any) -> Any:
    model = copy.deepcopy(model).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def _cancel_check(state: Callable[[], tuple[bool, int]], version: int, k: int) -> Callable[[int], None]:
    """The ``on_turn`` hook of a batch sampled by ``version``: stops it once the run closes or the learner is more
    than ``k`` steps ahead (``state`` gives (closed, the learner's step))."""

    def check(_turn: int) -> None:
        closed, step = state()
        if closed:
            raise Cancelled("closed")
        if step - version > k:
            raise Cancelled("stale")

    return check


class ThreadWorker:
    """The worker as a thread of the training process, playing with the learner's ``rollouts`` (its envs)."""

    where = "a thread of the training process"
    busy: int | None = None  # the first group of the batch in flight

    def __init__(self, pipeline: Any, model: Any) -> None:
        self.pipeline = pipeline
        self.model = _no_grad_copy(model)
        self.version = pipeline.base_step
        self.generator: Any = None

    def setup(self) -> None:
        import torch

        config = self.pipeline.config
        # the worker's own setting: torch's OpenMP thread count is per calling thread, the learner keeps its own
        torch.set_num_threads(max(1, config.rollout_threads or config.threads))
        self.generator = TransformersGenerator(self.model, self.pipeline.rollouts.tokenizer,
                                               temperature=config.temperature, top_p=config.top_p, logprobs=True)
        serve = getattr(self.pipeline.rollouts, "_serve", None)
        if serve is not None:  # train --agent: the agents' gateway serves the worker's policy copy
            serve(self.generator)

    def play(self, first: int, specs: Sequence[TaskSpec], version: int, weights: dict[str, Any]) -> list[Episode]:
        import torch

        if version > self.version:
            params = dict(self.model.named_parameters())
            for name, tensor in weights.items():
                params[name].data = tensor  # the learner's copy becomes the worker's: no second copy
            self.version = version
        pipeline = self.pipeline
        # the batch's sampling seed: the synchronous loop's for the step that plays these tasks
        pipeline.rollouts.calls = first // pipeline.per_batch
        with torch.no_grad():
            return pipeline.rollouts._play(specs, self.generator,
                                           on_turn=_cancel_check(pipeline.learner_state, version, pipeline.k))

    def notify(self, step: int, closed: bool) -> None:
        """Nothing to send: the thread reads the learner's step itself."""

    def stop(self) -> None:
        """Nothing to stop: the thread ends with the pipeline."""


def ray_connect(address: str) -> tuple[Any, bool]:
    """Ray, connected to the cluster at ``address`` (``HOST:PORT``, ``auto``, or ``local`` to start one here);
    whether this call started the connection (and so should end it)."""
    from agentgym.errors import ConfigError, DependencyNotInstalled

    try:
        import ray
    except ImportError as e:
        raise DependencyNotInstalled("Ray", "pip install 'agentgym-suite[ray]'") from e
    if ray.is_initialized():
        return ray, False
    try:
        ray.init(address=None if address == "local" else address, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    except ConnectionError as e:
        raise ConfigError(f"Cannot reach a Ray cluster at {address!r} ({e}). Start one with `ray start --head` (its "
                          "address is printed), or pass local.") from e
    return ray, True


class RolloutActor:
    """The Ray actor of a ``RayWorker``: its own policy copy, envs and torch threads, on one node of the cluster."""

    def __init__(self, config: Any, tokenizer: Any, model: Any, rollouts_class: type) -> None:
        import torch

        from agentgym.trainer.stats import RolloutStats

        if config.imports:
            from agentgym.core.plugins import import_envs

            import_envs(config.imports)
        torch.set_num_threads(max(1, config.rollout_threads or config.threads))
        self.config = config
        self.model = _no_grad_copy(model)
        self.version = -1
        self.rollouts = rollouts_class(config, tokenizer, RolloutStats())  # the built-in loop's (grpo._Rollouts)
        self.generator = TransformersGenerator(self.model, tokenizer, temperature=config.temperature,
                                               top_p=config.top_p, logprobs=True)
        self.lock = threading.Lock()
        self.closed = False
        self.step = 0

    def where(self) -> tuple[int, str]:
        """This actor's process id and Ray node id."""
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()

    def set_step(self, step: int, closed: bool = False) -> None:
        """The learner's optimizer step (and whether the run is closing): a batch in flight checks it every turn."""
        with self.lock:
            self.step = max(self.step, step)
            self.closed = self.closed or closed

    def _state(self) -> tuple[bool, int]:
        with self.lock:
            return self.closed, self.step

    def play(self, first: int, specs: Sequence[TaskSpec], version: int, weights: Any) -> Any:
        """The batch's episodes, or ``("cancelled", reason)``. ``weights``: the trainable parameters of ``version``
        (numpy arrays; None when this actor already holds them)."""
        import torch

        if weights is not None and version > self.version:
            params = dict(self.model.named_parameters())
            with torch.no_grad():
                for name, array in weights.items():
                    params[name].copy_(torch.from_numpy(array))  # cast to the parameter's type
            self.version = version
        self.set_step(version)
        self.rollouts.calls = first // self.config.groups_per_step  # the synchronous loop's seed for this step
        try:
            with torch.no_grad():
                return self.rollouts._play(specs, self.generator,
                                           on_turn=_cancel_check(self._state, version, self.config.max_staleness))
        except Cancelled as e:
            return ("cancelled", e.reason)

    def close(self) -> None:
        self.rollouts.close()


class RayWorker:
    """A ``RolloutActor`` on the cluster, driven from the training process."""

    busy: int | None = None  # the first group of the batch in flight

    def __init__(self, pipeline: Any, actor: Any, index: int) -> None:
        self.pipeline = pipeline
        self.actor = actor
        self.index = index
        self.version = -1
        self.pid: int | None = None
        self.node = ""
        self.where = f"Ray rollout worker {index}"

    def setup(self) -> None:
        from agentgym.errors import RolloutError

        ray = self.pipeline.ray
        try:
            self.pid, self.node = ray.get(self.actor.where.remote(), timeout=START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError as e:
            raise RolloutError(f"Ray rollout worker {self.index} did not start in {START_TIMEOUT_S:.0f} s: each takes "
                               "one CPU of a node (ray status shows what is free); pass fewer --rollout-workers.") from e
        self.where = f"Ray rollout worker {self.index} (pid {self.pid}, node {self.node})"

    def play(self, first: int, specs: Sequence[TaskSpec], version: int, weights: dict[str, Any]) -> list[Episode]:
        ray = self.pipeline.ray
        ref = self.pipeline.weights_ref(version, weights) if version > self.version else None
        try:
            out = ray.get(self.actor.play.remote(first, list(specs), version, ref))
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as e:
            raise WorkerLost(f"{self.where} died: {type(e).__name__}") from e
        self.version = max(self.version, version)
        if isinstance(out, tuple) and out and out[0] == "cancelled":
            raise Cancelled(out[1])
        return out

    def notify(self, step: int, closed: bool) -> None:
        self.actor.set_step.remote(step, closed)

    def stop(self) -> None:
        ray = self.pipeline.ray
        try:
            ray.get(self.actor.close.remote(), timeout=30)
        except Exception as e:  # noqa: BLE001 - a dead actor has nothing left to close
            logger.debug("%s: not closed (%s)", self.where, type(e).__name__)
        ray.kill(self.actor)


def start_ray_workers(pipeline: Any, model: Any) -> list[RayWorker]:
    """``config.rollout_workers`` actors spread over the cluster's nodes, each with a copy of ``model``."""
    import torch

    config = pipeline.config
    ray = pipeline.ray
    from accelerate.utils import extract_model_from_parallel

    # the copy without accelerate's mixed-precision forward (bf16 autocast where the CPU has it), which cannot be
    # pickled; unwrapping it from the copy leaves the trained model's own forward as it is
    cpu_model = extract_model_from_parallel(copy.deepcopy(model), keep_fp32_wrapper=False).to(torch.device("cpu"))
    model_ref = ray.put(cpu_model)
    del cpu_model
    actor_class = ray.remote(num_cpus=1, max_concurrency=2, scheduling_strategy="SPREAD")(RolloutActor)
    base = type(pipeline.rollouts).__mro__[1]  # the class the pipeline's rollouts extend: grpo._Rollouts
    actors = [actor_class.remote(config, pipeline.rollouts.tokenizer, model_ref, base)
              for _ in range(config.rollout_workers)]
    return [RayWorker(pipeline, actor, k) for k, actor in enumerate(actors)]
