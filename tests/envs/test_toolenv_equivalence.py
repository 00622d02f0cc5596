"""SearchQA-v0 and MathTool-v0 are built on the public ``ToolEnv`` and answer exactly as they did before (issue 30).

The fixture holds, per env and registered action format, 100 seeded episodes recorded
by ``scripts/record_env_transcripts.py`` from the envs as they were on ``AgentEnv``:
the oracle's actions, seeded tool calls, malformed and dict actions, empty, wrong and
near-miss answers, episodes that run out of turns. Replaying their actions must give
the same observations, rewards, terminated, truncated and infos, every key of them:
nothing in these infos is volatile (no timings; sandbox outputs of the scripted
one-line programs are deterministic). Re-record only for a deliberate change, which
also bumps the env ids' version.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from helpers.gates import requires_envs

import agentgym
from agentgym import ToolEnv
from agentgym.envs.code.mathtool import MathToolEnv
from agentgym.envs.search import SearchQAEnv

FIXTURE = Path(__file__).parent / "fixtures" / "searchqa_mathtool_transcripts.jsonl.gz"
FORMATS = ("tags", "hermes", "json", "plain", "dict")
EPISODES = 100


def _load() -> dict[tuple[str, str], list[dict[str, Any]]]:
    by_case: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as fh:
        for line in fh:
            episode = json.loads(line)
            by_case[episode["env_id"], episode["format"]].append(episode)
    return by_case


TRANSCRIPTS = _load()


def _as_json(value: Any) -> Any:
    """``value`` as the fixture holds it (JSON: tuples read back as lists)."""
    return json.loads(json.dumps(value, ensure_ascii=False))


def test_both_envs_are_tool_envs():
    assert issubclass(SearchQAEnv, ToolEnv)
    assert issubclass(MathToolEnv, ToolEnv)
    for env_id in ("agentgym/SearchQA-v0", "agentgym/MathTool-v0"):
        env = agentgym.make(env_id)
        assert isinstance(env.unwrapped, ToolEnv)
        env.close()


def test_the_fixture_covers_every_env_format_and_episode_kind():
    assert sorted(TRANSCRIPTS) == sorted((e, f) for e in ("agentgym/MathTool-v0", "agentgym/SearchQA-v0")
                                         for f in FORMATS)
    for case, episodes in TRANSCRIPTS.items():
        assert [e["seed"] for e in episodes] == list(range(EPISODES)), case
        steps = [s for e in episodes for s in e["steps"]]
        assert any(s["info"]["action_error"] for s in steps), case
        assert any(s["info"]["tool_outputs"] for s in steps), case
        assert any(s["truncated"] for s in steps), case
        assert {s["reward"] for s in steps if s["terminated"]} >= {0.0, 1.0}, case


@pytest.mark.parametrize(("env_id", "fmt"), [
    *(pytest.param("agentgym/SearchQA-v0", f, marks=requires_envs(["agentgym/SearchQA-v0"])) for f in FORMATS),
    # MathTool's episodes run their programs in the sandbox again (about 65 one-line runs per format, seconds)
    *(pytest.param("agentgym/MathTool-v0", f, marks=requires_envs(["agentgym/MathTool-v0"])) for f in FORMATS),
])
def test_replayed_episodes_are_identical(env_id, fmt):
    envs: dict[str, Any] = {}
    try:
        for episode in TRANSCRIPTS[env_id, fmt]:
            key = json.dumps(episode["kwargs"], sort_keys=True)
            if key not in envs:
                envs[key] = agentgym.make(env_id, action_format=fmt, **episode["kwargs"]).unwrapped
            env = envs[key]
            where = f"{env_id} {fmt} seed {episode['seed']} ({episode['plan']}, kwargs {episode['kwargs']})"
            observation, info = env.reset(seed=episode["seed"], options=episode["options"])
            assert _as_json({"observation": observation, "info": info}) == episode["reset"], f"{where}: reset"
            for turn, recorded in enumerate(episode["steps"], 1):
                observation, reward, terminated, truncated, info = env.step(recorded["action"])
                replayed = _as_json({"action": recorded["action"], "observation": observation, "reward": reward,
                                     "terminated": terminated, "truncated": truncated, "info": info})
                assert replayed == recorded, f"{where}: turn {turn}"
            assert terminated or truncated, f"{where}: the episode should have ended"
    finally:
        for env in envs.values():
            env.close()
