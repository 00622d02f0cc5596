"""``conformance``: the API checks every env passes, in process, over HTTP or on a Ray pool
(``agentgym.testing.conformance_episode``, as an assertion)."""

from __future__ import annotations

import gymnasium as gym

from agentgym.testing import conformance_episode


def conformance(env: gym.Env, env_id: str, *, seed: int) -> list[tuple]:
    """API checks every env must pass, local or remote; returns the trajectory for comparison.

    Actions come from a separate local env's oracle, stepped in lockstep.
    """
    return conformance_episode(env, env_id, seed=seed)
