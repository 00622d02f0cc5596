"""``agentgym train --agent``: GRPO on the tokens the user's own agent sampled through the gateway.

Each step plays ``groups_per_step`` tasks x ``group_size`` rollouts of the agent (a function or a command, as
``agentgym eval --agent`` runs it), every model call through an in-process gateway serving the policy being
trained. The env's verifier scores each rollout; the gateway's record gives its samples (one per leaf of the
rollout's call tree: ``token_ids``, ``loss_mask`` 1 exactly on sampled ids, the sampler's ``logprobs``), and
those are what TRL trains on: the loss only where ``loss_mask`` is 1, the recorded log-probabilities as the old
policy's (the ratio and its clip), every branch of a rollout a row with the rollout's advantage.

Before each loss the ids TRL will feed are checked against the recorded ids (``token_mismatches``, which must be 0:
anything else stops the run); ``reencoded_tokens`` counts the prompt tokens of branched calls (earlier turns the
agent sent back as text, encoded again). A rollout whose agent failed is played again (``agent_retries`` times),
then left out of its group's baseline like any failed episode (``agent_errors``): never trained as reward 0. A
sample longer than ``max_completion_tokens`` is cut there and scores 0, as the built-in loop's over-budget episode.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentgym.errors import RolloutError
from agentgym.lm.rollout import Episode, Generator, TaskSpec
from agentgym.lm.workers import AgentEpisode, AgentWorker, Row, episode_from_run, leaf_rows
from agentgym.trainer.config import TrainConfig
from agentgym.trainer.judging import defer_group_judges, judge_groups

__all__ = ["AgentEpisode", "AgentRollouts", "advantages", "agent_rollouts", "agent_trainer_class", "episode_from_run",
           "expand", "leaf_rows"]

logger = logging.getLogger("agentgym.trainer")


class AgentRollouts:
    """The ``rollout_func`` of ``train --agent``: each step's rollouts played by the user's agent through a gateway
    in this process that serves the policy being trained (a fresh generator each step: new weights, no stale
    cache). Mixed into the built-in ``_Rollouts`` by :func:`agent_rollouts`."""

    config: TrainConfig
    tokenizer: Any
    stats: Any
    envs: dict[str, list[Any]]

    def _agent_setup(self) -> None:
        from agentgym.gateway.agents import AgentSpec, load_agent

        self.agent = AgentSpec(target=self.config.agent, command=self.config.agent_cmd)
        self.fn = load_agent(self.agent.target) if self.agent.target is not None else None
        self.gateway: Any = None
        self.server: Any = None
        self.agent_worker: AgentWorker | None = None  # the rollout worker, once the gateway it plays through runs
        self.pending: dict[str, Any] | None = None
        self.played: list[AgentEpisode] = []

    def _generator(self, trainer: Any) -> Generator:
        generator: Any = super()._generator(trainer)  # type: ignore[misc]
        if hasattr(generator, "logprobs"):
            generator.logprobs = True
        self._serve(generator)
        return generator

    def _serve(self, generator: Generator) -> None:
        """The gateway the agents call, serving ``generator`` (started on first use, its generator swapped after)."""
        from agentgym.gateway.engine import Engine
        from agentgym.gateway.server import GatewayServer
        from agentgym.gateway.service import Gateway

        if self.gateway is None:
            engine = Engine(generator, context=self._autocast)
            self.gateway = Gateway(model_name=self.config.model, engine=engine, default_max_tokens=self.config.
                                   max_turn_tokens, sampling={"temperature": self.config.temperature,
                                                              "top_p": self.config.top_p,
                                                              "max_tokens": self.config.max_turn_tokens})
            self.server = GatewayServer(self.gateway).start()
            self.agent_worker = AgentWorker(self.agent, self.fn, gateway=self.gateway, base_url=self.server.url,
                                            has_mcp=self.server.has_mcp, timeout_s=self.config.agent_timeout)
        else:
            self.gateway.engine.generator = generator

    def _autocast(self) -> Any:
        import contextlib

        import torch

        if not (self.bf16 and self.config.backend != "vllm"):  # type: ignore[attr-defined]
            return contextlib.nullcontext()
        return torch.autocast("cuda" if torch.cuda.is_available() else "cpu", dtype=torch.bfloat16)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        if self.pending is not None:  # the trainer's override played the step already (rows expanded)
            out, self.pending = self.pending, None
            return out
        return super().__call__(prompts, trainer)  # type: ignore[misc]

    def _play(self, specs: Sequence[TaskSpec], generator: Generator,
              on_turn: Callable[[int], None] | None = None) -> list[Episode]:
        """The rollouts of ``specs``, each agent in a thread of its own. ``on_turn`` (the asynchronous pipeline's
        staleness check) is called once the batch is played: an agent's loop is its own, so a batch past the bound
        is dropped when it ends, not mid-play."""
        envs = self._envs(specs)  # type: ignore[attr-defined]
        start = time.perf_counter()
        seed0 = self.config.seed * 1_000_003 + self.calls  # type: ignore[attr-defined]
        with defer_group_judges(envs):  # a judge in group mode scores each group once it is played
            episodes = self.agent_worker.play(envs, specs, seed=seed0,  # type: ignore[union-attr]
                                              limit=self.config.max_completion_tokens,
                                              env_kwargs=self.config.env_kwargs, retries=self.config.agent_retries,
                                              tag=f"s{self.calls}-")  # type: ignore[attr-defined]
        played: list[Episode] = list(episodes)
        judge_groups(played, envs, self.config.group_size)
        self.calls += 1  # type: ignore[attr-defined]
        self._record(played, time.perf_counter() - start)  # type: ignore[attr-defined]
        self._replace_failed(envs, played)  # type: ignore[attr-defined]
        if on_turn is not None:
            on_turn(0)
        return played

    def step(self, prompts: list[Any], trainer: Any) -> list[AgentEpisode]:
        """Play the step (dynamic sampling included) and keep TRL's columns, one row per sample, for the
        ``rollout_func`` call that follows; returns the step's rollouts, one per prompt."""
        import json

        specs = [TaskSpec(**json.loads(p)) for p in prompts]
        generator = self._generator(trainer)
        episodes = self._play(specs, generator)
        if self.config.dynamic_sampling:
            episodes = self._resample(episodes, generator)  # type: ignore[attr-defined]
        return episodes  # type: ignore[return-value]

    def close(self) -> None:
        super().close()  # type: ignore[misc]
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self.gateway is not None:
            self.gateway.close()
            self.gateway = None


def agent_rollouts(base: type) -> type:
    """``_Rollouts`` with the agent's playing mixed in (the built-in class stays the agent-free one)."""

    class _AgentRollouts(AgentRollouts, base):  # type: ignore[misc, valid-type]
        def __init__(self, config: TrainConfig, *args: Any, **kwargs: Any) -> None:
            # the agent's tools are the env's dict actions, whatever the recipe's text format
            config = dataclasses.replace(config, env_kwargs={**config.env_kwargs, "action_format": "dict"})
            base.__init__(self, config, *args, **kwargs)
            self._agent_setup()

    return _AgentRollouts


@dataclass
class StepRows:
    """A step's rows for TRL: which rollout each row is of (None: padding) and the columns."""

    rollout_of: list[int | None]
    rows: list[Row | None]


def expand(episodes: Sequence[AgentEpisode], multiple: int) -> StepRows:
    """One row per sample of each rollout (a failed rollout: one empty row), padded with empty rows to a multiple
    of ``multiple`` (TRL splits the batch into equal accumulation steps and groups rewards by group size)."""
    rollout_of: list[int | None] = []
    rows: list[Row | None] = []
    for i, episode in enumerate(episodes):
        kept = episode.rows if not episode.failed and episode.rows else [None]
        rollout_of += [i] * len(kept)
        rows += kept
    while len(rows) % multiple:
        rollout_of.append(None)
        rows.append(None)
    return StepRows(rollout_of, rows)


def advantages(rewards: Sequence[float | None], group_size: int, scale: str) -> list[float]:
    """Each rollout's advantage, as TRL computes it for one row per rollout: ``group_size`` consecutive rollouts are
    a group (``agentgym.trainer.groups.group_advantages``: the reward minus its group's mean, over the group's or
    the batch's std (+1e-4), or unscaled; failed rollouts (None) are out of the baseline and get 0)."""
    from agentgym.trainer.groups import group_advantages

    return group_advantages(rewards, [i // group_size for i in range(len(rewards))], scale)


def agent_trainer_class() -> type:
    """TRL's ``GRPOTrainer`` whose generation step plays the agent's rollouts and trains on their samples: rows
    expanded to one per sample, each with its rollout's advantage and its recorded log-probabilities as the old
    policy's, and the fidelity check before the loss."""
    import math

    import torch
    from trl import GRPOTrainer

    class AgentGRPOTrainer(GRPOTrainer):  # type: ignore[misc, valid-type]
        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
            rollouts = self.rollout_func
            if self.use_vllm and self.state.global_step != self._last_loaded_step:  # new weights before playing
                self.vllm_generation.sync_weights()
                self._last_loaded_step = self.state.global_step
            episodes = self._episodes(inputs)
            if len(episodes) != len(inputs):
                raise RolloutError(f"The agent step played {len(episodes)} rollouts for {len(inputs)} prompts.")
            size = self.num_generations
            multiple = math.lcm(size, self.args.steps_per_generation)
            plan = expand(episodes, multiple)
            eos = rollouts.tokenizer.eos_token_id
            empty = Row(prompt_ids=[eos], completion_ids=[eos], mask=[0], logprobs=[0.0], recorded=[])
            rows = [row or empty for row in plan.rows]
            rollouts.stats.loss_masks += [r.mask for r in plan.rows if r is not None]  # padding is not a sample
            rollouts.pending = {
                "prompt_ids": [r.prompt_ids or [eos] for r in rows], "completion_ids": [r.completion_ids or [eos]
                                                                                        for r in rows],
                "env_mask": [r.mask or [0] for r in rows], "logprobs": [r.logprobs or [0.0] for r in rows],
                "env_reward": [None if k is None or episodes[k].failed else episodes[k].reward
                               for k in plan.rollout_of]}
            expanded = [inputs[k if k is not None else 0] for k in plan.rollout_of]
            out = super()._generate_and_score_completions(expanded)
            rewards = [None if e.failed else e.reward for e in episodes]
            per_rollout = self._advantages(rewards, size)
            device = out["completion_ids"].device
            out["advantages"] = torch.tensor([0.0 if k is None else per_rollout[k] for k in plan.rollout_of],
                                             dtype=torch.float32, device=device)
            width = out["completion_ids"].shape[1]
            out["old_per_token_logps"] = torch.tensor(
                [(r.logprobs + [0.0] * width)[:width] for r in rows], dtype=torch.float32, device=device)
            self._check_fidelity(out, plan, rows, episodes)
            return out

        def _episodes(self, inputs: list[dict[str, Any]]) -> list[AgentEpisode]:
            """The step's rollouts, one per prompt: played now (the asynchronous trainer takes them from its queue)."""
            return self.rollout_func.step([x["prompt"] for x in inputs], self)

        def _advantages(self, rewards: list[float | None], size: int) -> list[float]:
            """Each rollout's advantage: ``size`` consecutive rollouts are a group."""
            return advantages(rewards, size, str(self.scale_rewards))

        def _check_fidelity(self, out: dict[str, Any], plan: StepRows, rows: list[Row],
                            episodes: Sequence[AgentEpisode]) -> None:
            mismatches = 0
            for i, row in enumerate(rows):
                if plan.rows[i] is None:
                    continue
                fed = [*out["prompt_ids"][i][out["prompt_mask"][i].bool()].tolist(),
                       *out["completion_ids"][i][: len(row.completion_ids)].tolist()]
                mismatches += sum(a != b for a, b in zip(fed, row.recorded)) + abs(len(fed) - len(row.recorded))
            stats = self.rollout_func.stats
            stats.extra["token_mismatches"] = stats.extra.get("token_mismatches", 0.0) + mismatches
            stats.extra["samples"] = stats.extra.get("samples", 0.0) + sum(r is not None for r in plan.rows)
            if mismatches:
                raise RolloutError(f"{mismatches} token ids TRL would train on differ from the ids the gateway "
                                   "recorded; refusing to train on tokens the policy did not sample.")

    return AgentGRPOTrainer

