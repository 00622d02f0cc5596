"""``check_env``: Gymnasium's env checker plus agentgym's own contract checks."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
from gymnasium.utils.env_checker import check_env as gym_check_env

from agentgym.core.env import AgentEnv
from agentgym.core.formats import ActionFormat
from agentgym.errors import EnvCheckFailed, ResetNeeded

__all__ = ["check_env"]


def _fail(check: str, message: str) -> EnvCheckFailed:
    return EnvCheckFailed(f"check_env: {check}: {message}")


def _oracle_episode(env: gym.Env, local: AgentEnv, *, seed: int,
                    options: dict[str, Any]) -> list[tuple[str, float, bool, bool]]:
    """The oracle's episode on ``env``; its actions come from ``local``, stepped in lockstep when ``env`` is
    remote (its privileged task data is this machine's, so the two must agree turn by turn)."""
    obs, _ = env.reset(seed=seed, options=options)
    if env is not local:
        _check_same(local.reset(seed=seed, options=options)[0], obs, 0)
    steps = [(obs, 0.0, False, False)]
    while True:
        action = local.oracle_action()
        obs, reward, terminated, truncated, info = env.step(action)
        if env is not local:
            _check_same(local.step(action)[0], obs, info.get("turn", 0))
        steps.append((obs, float(reward), terminated, truncated))
        if info.get("action_error"):
            raise _fail("oracle", f"the oracle's action was rejected on task {info.get('task_id')!r}: "
                                  f"{info['action_error']}")
        if terminated or truncated:
            return steps


def _check_same(local: str, remote: str, turn: int) -> None:
    if local != remote:
        raise _fail("oracle", f"the remote env and its local twin diverged at turn {turn}: the server's data or "
                              "version differs from this machine's")


#: tasks the oracle must solve unless told otherwise: every task of the split up to this many (the scaffold's tests
#: check as many; a check of 3 passed envs whose 4th task the oracle could not solve)
DEFAULT_ORACLE_TASKS = 100


def check_env(env: gym.Env, *, n_tasks: int | None = None, seed: int = 0,
              skip_gym_checker: bool = False) -> dict[str, Any]:
    """Check an agentgym env, in process or a ``RemoteEnv``; raise ``EnvCheckFailed`` naming the first broken check.

    Runs Gymnasium's ``check_env``, then: reset/step determinism for a seed, the
    oracle solves ``n_tasks`` sampled tasks (default: the env class's ``check_tasks``, else every task of the split
    up to 100) with reward 1, an empty
    answer scores 0,
    a malformed action is an observation (not an exception), and step after the
    end raises ``ResetNeeded``. A ``RemoteEnv`` is checked through its server: the
    oracle's actions come from a local env made with the same id and kwargs and
    stepped in lockstep (as ``agentgym eval --remote`` plays privileged policies),
    so the server must serve the data this machine has. Returns a small report.
    """
    inner = env.unwrapped
    local = _local_twin(inner)
    try:
        if not skip_gym_checker:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                gym_check_env(inner, skip_render_check=True, skip_close_check=True)
        if n_tasks is None:
            n_tasks = type(local).check_tasks or DEFAULT_ORACLE_TASKS
        return _check(inner, local, n_tasks=n_tasks, seed=seed)
    finally:
        if local is not inner:
            local.close()


def _local_twin(inner: gym.Env) -> AgentEnv:
    """The env whose task data and action format the checks read: ``inner``, or a remote env's local shadow."""
    if isinstance(inner, AgentEnv):
        return inner
    from agentgym.client.remote import RemoteEnv

    if not isinstance(inner, RemoteEnv):
        raise _fail("type", f"expected an AgentEnv or a RemoteEnv, got {type(inner).__name__}")
    from agentgym.core.registry import make

    return make(inner.env_id, **inner.env_kwargs).unwrapped


def _check(env: gym.Env, local: AgentEnv, *, n_tasks: int, seed: int) -> dict[str, Any]:
    split = local.split
    n = min(n_tasks, len(local.tasks.tasks(split)))
    solved = []
    for i in range(n):
        options = {"split": split, "index": i}
        first, task_id, reward = _oracle_run(env, local, seed=seed + i, options=options)
        if _oracle_run(env, local, seed=seed + i, options=options)[0] != first:
            raise _fail("determinism", f"two oracle episodes of task {task_id!r} with seed {seed + i} differ")
        if reward < 1.0:
            raise _fail("oracle", f"the oracle scored {reward} on task {task_id!r}; expected 1.0")
        solved.append(task_id)
    _check_reset_determinism(env, seed)
    _check_empty_answer(env, local.action_format, seed)
    _check_malformed_action(env, seed)
    return {"oracle_solved": solved, "split": split}


def _oracle_run(env: gym.Env, local: AgentEnv, *, seed: int,
                options: dict[str, Any]) -> tuple[list[Any], str, float]:
    """One oracle episode: its steps (comparable across runs), its task id and its reward."""
    try:
        steps = _oracle_episode(env, local, seed=seed, options=options)
    except (EnvCheckFailed, ResetNeeded):
        raise
    except Exception as e:  # the env failed (a remote one: its server), not the oracle
        raise _fail("oracle", f"the oracle's episode (seed {seed}, {options}) failed: "
                              f"{type(e).__name__}: {e}") from e
    return steps, local.task.id, steps[-1][1]


def _check_reset_determinism(env: gym.Env, seed: int) -> None:
    first = env.reset(seed=seed)
    second = env.reset(seed=seed)
    if first[0] != second[0] or first[1]["task_id"] != second[1]["task_id"]:
        raise _fail("determinism", f"reset(seed={seed}) gave different tasks")


def _check_empty_answer(env: gym.Env, action_format: ActionFormat, seed: int) -> None:
    _, info = env.reset(seed=seed)
    if not action_format.has_answer:
        # no answer action (WebShop ends by buying): giving up means running out of turns, which scores 0
        return _check_no_outcome_scores_zero(env, info["max_turns"])
    _, reward, terminated, _, info = env.step(action_format.render_answer(""))
    if not terminated:
        raise _fail("empty answer", "an empty final answer did not end the episode")
    if reward != 0.0 or info["verification"]["correct"]:
        raise _fail("empty answer", f"an empty answer scored {reward}; expected 0")


def _check_no_outcome_scores_zero(env: gym.Env, max_turns: int) -> None:
    for _ in range(max_turns):
        _, reward, terminated, truncated, info = env.step("")
        if terminated or truncated:
            break
    if not truncated or reward != 0.0 or info["verification"]["correct"]:
        raise _fail("empty answer", f"an episode without an outcome ended with truncated={truncated}, reward={reward}")


def _check_malformed_action(env: gym.Env, seed: int) -> None:
    max_turns = env.reset(seed=seed)[1]["max_turns"]
    obs, reward, terminated, _, info = env.step("<<<not an action>>> {\"name\": ")
    if not info.get("action_error") or not isinstance(obs, str) or not obs:
        raise _fail("malformed action", "a malformed action did not come back as an observation with action_error")
    if reward != 0.0 or terminated:
        raise _fail("malformed action", "a malformed action ended the episode or was rewarded")
    for _ in range(max_turns):
        if env.step("<<<not an action>>>")[3]:
            break
    else:
        raise _fail("max_turns", f"malformed actions were not truncated after max_turns={max_turns}")
    try:
        env.step("<answer>x</answer>")
    except ResetNeeded:
        return
    raise _fail("episode end", "step() after the episode ended did not raise ResetNeeded")
