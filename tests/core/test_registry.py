"""Registration with Gymnasium, did-you-mean errors and lazy imports."""

import subprocess
import sys

import gymnasium as gym
import pytest

import agentgym
from agentgym.envs import ENVS
from agentgym.errors import EnvNotFound


def test_every_env_is_registered_with_a_string_entry_point():
    for info in ENVS:
        assert info.id in gym.registry and info.id in agentgym.env_ids()
        assert gym.registry[info.id].entry_point == "agentgym.core.registry:create_env"
        assert isinstance(info.entry_point, str) and ":" in info.entry_point


def test_unknown_id_did_you_mean():
    with pytest.raises(EnvNotFound, match="Did you mean 'agentgym/SearchQA-v0'"):
        agentgym.make("agentgym/SearchQa-v0")
    with pytest.raises(EnvNotFound, match="agentgym list"):
        agentgym.make("zzz")


def test_import_is_light():
    code = ("import sys, agentgym; heavy = [m for m in ('bm25s', 'tantivy', 'torch', 'pyserini', "
            "'sentence_transformers', 'httpx', 'fastapi', 'agentgym.envs.search.env') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_exported_members():
    assert agentgym.__all__ == sorted(agentgym.__all__)
    assert set(agentgym.__all__) == {"AgentEnv", "AsyncRemoteEnv", "RemoteEnv", "Score", "Task", "TaskSource", "Tool", "ToolCall",
                                     "__version__", "check_env", "env_ids", "make"}
    for name in agentgym.__all__:
        assert hasattr(agentgym, name)
