"""EpisodeSpec: the settings an adapter reads from a trainer's config and dataset row."""

import doctest

import numpy as np
import pytest

from agentgym.errors import ConfigError
from agentgym.integrations import episode
from agentgym.integrations.episode import EpisodeSpec

SEARCH = "agentgym/SearchQA-v0"


def test_doctests():
    assert doctest.testmod(episode).failed == 0


def test_later_layers_win_and_none_is_unset():
    spec = EpisodeSpec.merge({"env_id": SEARCH, "base_url": "http://a", "env_kwargs": {"max_turns": 3}},
                             {"base_url": None, "task_id": "test_4",
                              "env_kwargs": {"max_turns": None, "split": "test"}})  # a Parquet row: None-filled
    assert (spec.base_url, spec.task_id, dict(spec.env_kwargs)) == ("http://a", "test_4", {"split": "test"})
    assert dict(spec.with_env_default("max_turns", 6).env_kwargs) == {"split": "test", "max_turns": 6}
    assert spec.with_env_default("split", "train") is spec


def test_numpy_integers_from_a_batch_are_plain_ints():
    spec = EpisodeSpec.merge({"env_id": SEARCH, "index": np.int64(2), "seed": np.int32(5)})
    assert (spec.index, spec.seed) == (2, 5) and type(spec.index) is int


@pytest.mark.parametrize("settings, message", [
    ({"env_id": SEARCH}, "same task"),
    ({"index": 1}, "No env_id"),
    ({"env_id": SEARCH, "index": 1, "max_turns": 3}, "Unknown agentgym setting 'max_turns'"),
    ({"env_id": SEARCH, "index": 1, "env_kwargs": "max_turns=3"}, "env_kwargs must be a mapping"),
])
def test_bad_settings_say_how_to_fix_them(settings, message):
    with pytest.raises(ConfigError, match=message):
        EpisodeSpec.merge(settings)


def test_reset_starts_the_named_task():
    spec = EpisodeSpec.merge({"env_id": SEARCH, "task_id": "test_7"})
    env = spec.open()
    _, info = spec.reset(env)
    assert info["task_id"] == "test_7"
    env.close()
