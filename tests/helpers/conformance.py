"""``conformance``: the API checks every env passes, in process, over HTTP or on a Ray pool."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentgym
from agentgym.errors import RemoteEnvError, ResetNeeded


def conformance(env: gym.Env, env_id: str, *, seed: int) -> list[tuple]:
    """API checks every env must pass, local or remote; returns the trajectory for comparison.

    Actions come from a separate local env's oracle, stepped in lockstep.
    """
    obs, info = env.reset(seed=seed)
    assert isinstance(obs, str) and obs and obs in env.observation_space
    assert {"task_id", "tools", "turn", "action_error", "format"} <= set(info)
    assert env.reset(seed=seed)[0] == obs  # deterministic
    oracle = agentgym.make(env_id).unwrapped
    oracle.reset(seed=seed)
    trajectory = [(obs, info)]
    for action in ["not an action", {"name": "search", "arguments": {"q": 1}}]:
        oracle.step(action)
        bad = env.step(action)
        assert bad[1] == 0.0 and not bad[2] and bad[4]["action_error"]
        trajectory.append(bad)
    while True:
        action = oracle.oracle_action()
        oracle.step(action)
        step = env.step(action)
        trajectory.append(step)
        if step[2] or step[3]:
            break
    assert trajectory[-1][1] == 1.0 and trajectory[-1][4]["verification"]["correct"]
    with pytest.raises((ResetNeeded, RemoteEnvError)):
        env.step("<answer>again</answer>")
    return trajectory
