"""``check_env``: Gymnasium's env checker plus agentgym's own contract checks."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
from gymnasium.utils.env_checker import check_env as gym_check_env

from agentgym.core.env import AgentEnv
from agentgym.errors import EnvCheckFailed, ResetNeeded

__all__ = ["check_env"]


def _fail(check: str, message: str) -> EnvCheckFailed:
    return EnvCheckFailed(f"check_env: {check}: {message}")


def _oracle_episode(env: AgentEnv, *, seed: int, options: dict[str, Any]) -> list[tuple[str, float, bool, bool]]:
    obs, _ = env.reset(seed=seed, options=options)
    steps = [(obs, 0.0, False, False)]
    while True:
        obs, reward, terminated, truncated, info = env.step(env.oracle_action())
        steps.append((obs, float(reward), terminated, truncated))
        if info.get("action_error"):
            raise _fail("oracle", f"the oracle's action was rejected: {info['action_error']}")
        if terminated or truncated:
            return steps


def check_env(env: gym.Env, *, n_tasks: int = 3, seed: int = 0, skip_gym_checker: bool = False) -> dict[str, Any]:
    """Check an agentgym env; raise ``EnvCheckFailed`` naming the first broken check.

    Runs Gymnasium's ``check_env``, then: reset/step determinism for a seed, the
    oracle solves ``n_tasks`` sampled tasks with reward 1, an empty answer scores 0,
    a malformed action is an observation (not an exception), and step after the
    end raises ``ResetNeeded``. Returns a small report.
    """
    inner = env.unwrapped
    if not isinstance(inner, AgentEnv):
        raise _fail("type", f"expected an AgentEnv, got {type(inner).__name__}")
    if not skip_gym_checker:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gym_check_env(inner, skip_render_check=True, skip_close_check=True)
    split = inner.split
    n = min(n_tasks, len(inner.tasks.tasks(split)))
    solved = []
    for i in range(n):
        first = _oracle_episode(inner, seed=seed + i, options={"split": split, "index": i})
        task_id = inner.task.id
        second = _oracle_episode(inner, seed=seed + i, options={"split": split, "index": i})
        if first != second:
            raise _fail("determinism", f"two oracle episodes of task {task_id!r} with seed {seed + i} differ")
        if first[-1][1] < 1.0:
            raise _fail("oracle", f"the oracle scored {first[-1][1]} on task {task_id!r}; expected 1.0")
        solved.append(task_id)
    _check_reset_determinism(inner, seed)
    _check_empty_answer(inner, seed)
    _check_malformed_action(inner, seed)
    return {"oracle_solved": solved, "split": split}


def _check_reset_determinism(env: AgentEnv, seed: int) -> None:
    first = env.reset(seed=seed)
    second = env.reset(seed=seed)
    if first[0] != second[0] or first[1]["task_id"] != second[1]["task_id"]:
        raise _fail("determinism", f"reset(seed={seed}) gave different tasks")


def _check_empty_answer(env: AgentEnv, seed: int) -> None:
    env.reset(seed=seed)
    if not env.action_format.has_answer:
        # no answer action (WebShop ends by buying): giving up means running out of turns, which scores 0
        return _check_no_outcome_scores_zero(env)
    _, reward, terminated, _, info = env.step(env.action_format.render_answer(""))
    if not terminated:
        raise _fail("empty answer", "an empty final answer did not end the episode")
    if reward != 0.0 or info["verification"]["correct"]:
        raise _fail("empty answer", f"an empty answer scored {reward}; expected 0")


def _check_no_outcome_scores_zero(env: AgentEnv) -> None:
    for _ in range(env.max_turns):
        _, reward, terminated, truncated, info = env.step("")
        if terminated or truncated:
            break
    if not truncated or reward != 0.0 or info["verification"]["correct"]:
        raise _fail("empty answer", f"an episode without an outcome ended with truncated={truncated}, reward={reward}")


def _check_malformed_action(env: AgentEnv, seed: int) -> None:
    env.reset(seed=seed)
    obs, reward, terminated, _, info = env.step("<<<not an action>>> {\"name\": ")
    if not info.get("action_error") or not isinstance(obs, str) or not obs:
        raise _fail("malformed action", "a malformed action did not come back as an observation with action_error")
    if reward != 0.0 or terminated:
        raise _fail("malformed action", "a malformed action ended the episode or was rewarded")
    for _ in range(env.max_turns):
        if env.step("<<<not an action>>>")[3]:
            break
    else:
        raise _fail("max_turns", f"malformed actions were not truncated after max_turns={env.max_turns}")
    try:
        env.step("<answer>x</answer>")
    except ResetNeeded:
        return
    raise _fail("episode end", "step() after the episode ended did not raise ResetNeeded")
