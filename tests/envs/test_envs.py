"""The env checker over every registered id (Gymnasium's tests/envs/test_envs.py, for agentgym)."""

import pytest
from conftest import env_params

import agentgym
from agentgym.envs import ENVS


@pytest.mark.parametrize("env_id", env_params(info.id for info in ENVS))
def test_check_env(env_id):
    env = agentgym.make(env_id)
    try:
        report = agentgym.check_env(env, n_tasks=5)
    finally:
        env.close()
    assert len(report["oracle_solved"]) == 5
