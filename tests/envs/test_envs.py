"""The env checker over every registered id (Gymnasium's tests/envs/test_envs.py, for agentgym), and the typed
outcome each env hands its verifier."""

import typing

import pytest
from helpers.gates import env_params

import agentgym
from agentgym.core.env import AgentEnv
from agentgym.core.registry import load_env_class
from agentgym.envs import ENVS
from agentgym.envs.swe.grader import Patch
from agentgym.verifiers import GameEnd, Outcome, Purchase, answer_text

# What the bundled envs' episodes end with, as their verify takes it: the answer's text, or an outcome in the world
OUTCOME_TYPES = {
    "agentgym/SearchQA-v0": str, "agentgym/MathTool-v0": str, "agentgym/PyCode-v0": str,
    "agentgym/WebShop-v0": Purchase, "agentgym/WebShopBrowser-v0": Purchase,
    "agentgym/SWEBench-v0": Patch, "agentgym/ALFWorld-v0": GameEnd,
}


def declared_outcome(env_id: str) -> type:
    """The ``OutcomeT`` of the env's class: ``class SearchQAEnv(AgentEnv[str])``."""
    for cls in load_env_class(env_id).__mro__:
        for base in getattr(cls, "__orig_bases__", ()):
            if typing.get_origin(base) is AgentEnv:
                return typing.get_args(base)[0]
    raise AssertionError(f"{env_id}: its class does not say what its episodes end with (AgentEnv[...])")


@pytest.mark.parametrize("env_id", env_params(info.id for info in ENVS))
def test_check_env(env_id):
    env = agentgym.make(env_id)
    try:
        report = agentgym.check_env(env, n_tasks=5)
    finally:
        env.close()
    assert len(report["oracle_solved"]) == 5


def test_every_env_names_its_outcome_type():
    for info in ENVS:
        declared = declared_outcome(info.id)
        assert declared is str or issubclass(declared, Outcome), info.id
        assert OUTCOME_TYPES.get(info.id, declared) is declared, info.id


@pytest.mark.parametrize("env_id", env_params(info.id for info in ENVS))
def test_episode_outcome_is_typed_and_info_carries_its_text(env_id):
    """After the oracle's episode: ``episode_outcome()`` is the typed value verify scored (verify gives the same
    score again), and ``info["answer"]`` its JSON-serialisable text."""
    env = agentgym.make(env_id).unwrapped
    try:
        env.reset(seed=0)
        assert env.episode_outcome() is None
        while True:
            _, reward, terminated, truncated, info = env.step(env.oracle_action())
            if terminated or truncated:
                break
        outcome = env.episode_outcome()
        assert terminated and reward == 1.0 and type(outcome) is declared_outcome(env_id)
        assert info["answer"] == answer_text(outcome) and isinstance(info["answer"], str)
        assert env.verify(outcome, env.task).as_dict() == info["verification"]
    finally:
        env.close()
