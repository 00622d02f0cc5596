"""Registration with Gymnasium, did-you-mean errors and lazy imports."""

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import gymnasium as gym
import pytest
import yaml

import agentgym
from agentgym.core.registry import DEFAULT_CLIENT_KWARGS, check_env_kwargs, check_kwargs, client_kwargs, env_kwarg_names
from agentgym.envs import ENVS
from agentgym.errors import ConfigError, EnvNotFound
from agentgym.eval.suites import SUITES


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
    assert set(agentgym.__all__) == {"AgentEnv", "AsyncRemoteEnv", "JudgeError", "JudgeRubric", "Part", "RemoteEnv",
                                     "Rubric", "Score", "SingleTurnEnv", "Task", "TaskSource", "Tool", "ToolCall",
                                     "ToolEnv", "__version__", "check_env", "env_ids", "make", "register", "tool"}
    for name in agentgym.__all__:
        assert hasattr(agentgym, name)


def test_bad_kwargs_fail_at_make_naming_the_kwarg_and_what_it_takes():
    with pytest.raises(ConfigError, match=r"^agentgym/SearchQA-v0: topk must be int, got 3\.5 \(float\)\.$"):
        gym.make("agentgym/SearchQA-v0", topk=3.5)
    with pytest.raises(ConfigError, match=r"topk must be int, got '3' \(str\)\. Pass it unquoted: topk=3\.$"):
        agentgym.make("agentgym/SearchQA-v0", topk="3")
    with pytest.raises(ConfigError, match=r"unknown keyword argument 'top_k'\. Did you mean 'topk'\? Accepted: .*, "
                                          r"topk, verifier_budget_s\.$"):
        gym.make("agentgym/SearchQA-v0", top_k=3)
    with pytest.raises(ConfigError, match=r"reward_metric must be one of 'em', 'f1', 'cover_em', got 'EM'"):
        gym.make("agentgym/SearchQA-v0", reward_metric="EM")


def takes(*, count: int = 1, flag: bool = False, ratio: float = 0.5, name: str | None = None,
          mode: Literal["a", "b"] | None = None, path: str | Path | None = None, files: Mapping[str, str] | None = None,
          names: Sequence[str] = (), size: tuple[int, int] | Mapping[str, int] = (1, 2), both: int | str = 0,
          anything=None):
    """A signature with every kind of annotation the kwarg check reads."""


@pytest.mark.parametrize("kwargs", [
    {"count": 3}, {"flag": True}, {"ratio": 1}, {"ratio": 0.25}, {"name": None}, {"name": "x"}, {"mode": "b"},
    {"mode": None}, {"path": "/tmp"}, {"path": Path("/tmp")}, {"files": {"a": "b"}}, {"names": ["a"]},
    {"names": ("a",)}, {"size": [3, 4]}, {"size": {"w": 1}}, {"both": "x"}, {"both": 2}, {"anything": object()},
])
def test_kwarg_check_accepts(kwargs):
    check_kwargs(takes, kwargs, owner="takes")


@pytest.mark.parametrize("kwargs, message", [
    ({"count": True}, "count must be int, got True (bool)."),
    ({"count": 1.0}, "count must be int, got 1.0 (float)."),
    ({"count": "2"}, "count must be int, got '2' (str). Pass it unquoted: count=2."),
    ({"flag": 1}, "flag must be bool, got 1 (int)."),
    ({"flag": "true"}, "flag must be bool, got 'true' (str). Pass it unquoted: flag=true."),
    ({"ratio": True}, "ratio must be float, got True (bool)."),
    ({"name": 3}, "name must be str | None, got 3 (int)."),
    ({"mode": "c"}, "mode must be one of 'a', 'b', None, got 'c' (str)."),
    ({"path": 3}, "path must be str | Path | None, got 3 (int)."),
    ({"files": ["a"]}, "files must be Mapping[str, str] | None, got ['a'] (list)."),
    ({"names": 3}, "names must be Sequence[str], got 3 (int)."),
    ({"size": "3x4"}, "size must be tuple[int, int] | Mapping[str, int], got '3x4' (str)."),
    ({"both": None}, "both must be int | str, got None (NoneType)."),
    ({"cuont": 1}, "unknown keyword argument 'cuont'. Did you mean 'count'? Accepted: anything, both, count, "),
    ({"x": 1, "nmae": 2}, "unknown keyword arguments 'nmae' (did you mean 'name'?), 'x'. Accepted: "),
])
def test_kwarg_check_rejects_with_one_clear_line(kwargs, message):
    with pytest.raises(ConfigError) as error:
        check_kwargs(takes, kwargs, owner="takes")
    assert str(error.value).startswith(f"takes: {message}") and "\n" not in str(error.value)


def test_every_env_takes_the_kwargs_of_the_suites_and_the_training_recipes():
    configs = [(e.env_id, dict(e.env_kwargs)) for suite in SUITES.values() for e in suite.entries]
    sft_recipes = 0
    for recipe in sorted((Path(__file__).parents[2] / "docs" / "training").glob("*.yaml")):
        config = yaml.safe_load(recipe.read_text())
        if "env" not in config:  # a cold-start recipe of `agentgym sft`: trains on a dataset, plays no env
            from agentgym.trainer.config import load_config
            from agentgym.trainer.sft_config import SFTConfig

            assert load_config(recipe, config_type=SFTConfig).data, recipe
            sft_recipes += 1
            continue
        configs += [(env_id, config.get("env_kwargs") or {}) for env_id in config["env"]]
    assert sft_recipes == 1
    configs += [(info.id, {}) for info in ENVS]
    for env_id, kwargs in configs:
        check_env_kwargs(env_id, kwargs)
    assert len(configs) > len(ENVS)


def test_every_env_lets_clients_set_the_default_client_kwargs_and_only_what_it_takes():
    for info in ENVS:
        assert set(DEFAULT_CLIENT_KWARGS) <= set(info.client_kwargs) <= set(env_kwarg_names(info.id)), info.id
        assert list(info.client_kwargs) == sorted(info.client_kwargs)
    assert client_kwargs("topk", "split") == (*DEFAULT_CLIENT_KWARGS, "topk")
