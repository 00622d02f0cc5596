"""The seeded game generator and the bundled default set."""

import collections
import gzip

import pytest
from helpers.gates import requires_alfworld

pytestmark = requires_alfworld


@pytest.fixture(scope="module")
def bundled():
    from agentgym.envs.alfworld.games import read_bundled

    return read_bundled()


def test_default_set_covers_all_task_types_and_rooms(bundled):
    from agentgym.envs.alfworld.gen import TASK_TYPES, room_of

    assert len(bundled) >= 300
    by_split = collections.Counter(g.split for g in bundled)
    assert set(by_split) == {"train", "valid_seen", "valid_unseen"}
    for split in by_split:
        assert {g.task_type for g in bundled if g.split == split} == set(TASK_TYPES)
    assert {room_of(g.record["floor_plan"]) for g in bundled} == {"kitchen", "livingroom", "bedroom", "bathroom"}
    assert len({g.id for g in bundled}) == len(bundled)


def test_valid_unseen_uses_only_floor_plans_never_trained_on(bundled):
    from agentgym.envs.alfworld.gen import floor_plans

    plans = {split: {g.record["floor_plan"] for g in bundled if g.split == split}
             for split in ("train", "valid_seen", "valid_unseen")}
    assert not plans["valid_unseen"] & set(floor_plans("train"))
    assert plans["valid_seen"] <= set(floor_plans("train")) and plans["train"] <= set(floor_plans("train"))
    assert set(floor_plans("valid_unseen")) == {1, 2, 3, 4, 5, 6, 201, 202, 203, 204, 205, 206, 301, 302, 303,
                                               304, 305, 306, 401, 402, 403, 404, 405, 406}


def test_every_game_has_a_planner_walkthrough_and_task_text(bundled):
    for game in bundled:
        record = game.record
        assert record["walkthrough"], game.id
        assert record["task_desc"].endswith(".") and record["pddl_params"]["object_target"].lower() in \
            record["task_desc"]
        assert "(:goal" in record["problem"] and "(:domain alfred)" in record["problem"]


def test_regenerating_games_reproduces_the_bundled_bytes(bundled):
    from agentgym.envs.alfworld.games import build_game, record_bytes

    shipped = {g.id: g.record for g in bundled}
    for split, index in [("valid_unseen", i) for i in range(6)] + [("train", 7)]:
        record = build_game(split, index)
        assert record_bytes(record) == record_bytes(shipped[record["id"]])


def test_writing_the_set_again_gives_the_same_file(bundled, tmp_path):
    from agentgym.envs.alfworld.games import BUNDLED_PATH, write_bundled

    out = write_bundled([g.record for g in bundled], tmp_path / "games.jsonl.gz")
    assert out.read_bytes() == BUNDLED_PATH.read_bytes()
    assert gzip.decompress(out.read_bytes()).count(b"\n") == len(bundled)


def test_same_seed_same_problem_different_seed_different_problem():
    from agentgym.envs.alfworld.gen import make_spec

    specs = [make_spec(seed, "train", 0, "pick_and_place_simple") for seed in (11, 11, 12, 13)]
    assert specs[0] == specs[1]
    assert len({s.problem for s in specs if s is not None}) >= 2


def test_unknown_split_is_a_clear_error():
    from agentgym.envs.alfworld.games import generate_games
    from agentgym.errors import ConfigError

    with pytest.raises(ConfigError, match="valid_unseen"):
        generate_games({"test": 1})
