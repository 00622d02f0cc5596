"""Run policies on envs: one episode, or many with a summary."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym

from agentgym.core.env import AgentEnv
from agentgym.core.registry import make
from agentgym.errors import ConfigError
from agentgym.eval.policies import Policy, make_policy

__all__ = ["EpisodeResult", "evaluate", "run_episode", "summarize"]


@dataclass
class EpisodeResult:
    """One finished episode, ready to be written as a JSON line."""

    env_id: str
    task_id: str
    split: str
    seed: int
    policy: str
    reward: float
    correct: bool
    turns: int
    tool_calls: int
    action_errors: int
    truncated: bool
    verification: dict[str, Any]
    wall_s: float
    transcript: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_episode(env: gym.Env, policy: Policy, *, seed: int, options: dict[str, Any] | None = None,
                env_id: str = "") -> EpisodeResult:
    """Play one episode of ``env`` with ``policy`` to its end."""
    start = time.perf_counter()
    inner = env.unwrapped
    if not isinstance(inner, AgentEnv):
        raise ConfigError(f"run_episode needs an agentgym env, got {type(inner).__name__}.")
    observation, info = env.reset(seed=seed, options=options)
    policy.reset(inner, observation, info)
    transcript = [{"role": "user", "content": observation}]
    tool_calls = action_errors = 0
    while True:
        action = policy.act(observation, info)
        observation, reward, terminated, truncated, info = env.step(action)
        transcript.append({"role": "assistant", "content": action if isinstance(action, str) else str(action)})
        if observation:
            transcript.append({"role": "tool", "content": observation})
        tool_calls += len(info.get("tool_calls", []))
        action_errors += info.get("action_error") is not None
        if terminated or truncated:
            break
    verification = info.get("verification", {})
    return EpisodeResult(env_id=env_id or (env.spec.id if env.spec else type(inner).__name__),
                         task_id=info["task_id"], split=info["split"], seed=seed, policy=policy.name,
                         reward=float(reward), correct=bool(verification.get("correct", False)),
                         turns=info["turn"], tool_calls=tool_calls, action_errors=action_errors,
                         truncated=bool(truncated), verification=verification,
                         wall_s=round(time.perf_counter() - start, 4), transcript=transcript)


def summarize(results: list[EpisodeResult]) -> dict[str, float | int]:
    n = len(results)
    return {"episodes": n,
            "mean_reward": sum(r.reward for r in results) / n if n else 0.0,
            "success_rate": sum(r.correct for r in results) / n if n else 0.0,
            "mean_turns": sum(r.turns for r in results) / n if n else 0.0}


def evaluate(env_id: str, policy: str | Policy, *, episodes: int, split: str | None = None, seed: int = 0,
             env_kwargs: dict[str, Any] | None = None,
             on_episode: Callable[[EpisodeResult], None] | None = None) -> list[EpisodeResult]:
    """Run ``episodes`` episodes: episode ``i`` plays task ``i`` of the split (cycling), seed ``seed + i``."""
    if episodes < 1:
        raise ConfigError(f"episodes must be >= 1, got {episodes}.")
    env = make(env_id, **(env_kwargs or {}))
    try:
        inner = env.unwrapped
        split = split or inner.split
        n_tasks = len(inner.tasks.tasks(split))
        player = make_policy(policy, seed=seed) if isinstance(policy, str) else policy
        results = []
        for i in range(episodes):
            result = run_episode(env, player, seed=seed + i, options={"split": split, "index": i % n_tasks},
                                 env_id=env_id)
            results.append(result)
            if on_episode:
                on_episode(result)
        return results
    finally:
        env.close()
