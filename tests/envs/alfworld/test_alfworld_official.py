"""ALFWorld's own data layout (json_2.1.1): generated games written as alfworld-download lays them out."""

import json
from pathlib import Path

import pytest
from helpers.gates import requires_alfworld

import agentgym

pytestmark = requires_alfworld


@pytest.fixture(scope="module")
def official_dir(tmp_path_factory):
    from agentgym.envs.alfworld.games import read_bundled, write_official_layout

    games = read_bundled()
    picked = [g.record for g in games if g.split == "valid_unseen"][:2] + \
             [g.record for g in games if g.split == "valid_seen"][:1] + [g.record for g in games if g.split == "train"][:1]
    root = tmp_path_factory.mktemp("alfworld_data")
    write_official_layout(picked, root)
    # alfworld's loader skips these; so must we
    movable = root / "json_2.1.1" / "train" / "pick_and_place_with_movable_recep-Apple-Bowl-Fridge-1" / "trial_x"
    movable.mkdir(parents=True)
    (movable / "traj_data.json").write_text("{}")
    (movable / "game.tw-pddl").write_text("{}")
    return root, picked


def test_official_layout_is_loaded_and_played(official_dir):
    root, picked = official_dir
    env = agentgym.make("agentgym/ALFWorld-v0", data_dir=str(root), split="valid_unseen").unwrapped
    assert env.tasks.splits() == ["train", "valid_seen", "valid_unseen"]
    assert len(env.games) == len(picked)
    assert not any("movable" in gid for gid in env.games)
    for index in range(2):
        _, info = env.reset(options={"index": index})
        game = env.games[info["task_id"]]
        assert game.path.endswith("game.tw-pddl") and info["task_id"].startswith("valid_unseen/")
        traj = Path(game.path).with_name("traj_data.json")
        assert json.loads(traj.read_text())["task_type"] == info["task_type"]
        while True:
            _, reward, terminated, truncated, info = env.step(env.oracle_action())
            if terminated or truncated:
                break
        assert reward == 1.0


def test_alfworld_data_env_var_and_data_dir_root_forms(official_dir, monkeypatch):
    root, picked = official_dir
    monkeypatch.setenv("ALFWORLD_DATA", str(root))
    env = agentgym.make("agentgym/ALFWorld-v0", split="valid_seen").unwrapped
    assert len(env.games) == len(picked)
    inner = agentgym.make("agentgym/ALFWorld-v0", data_dir=str(root / "json_2.1.1"), split="train").unwrapped
    assert sorted(inner.games) == sorted(env.games)
    bundled = agentgym.make("agentgym/ALFWorld-v0", data_dir="bundled").unwrapped
    assert len(bundled.games) >= 300


def test_unsolvable_or_broken_game_files_fail_clearly(official_dir, tmp_path):
    from agentgym.envs.alfworld.games import collect_official_games, write_official_layout
    from agentgym.errors import DataError

    _, picked = official_dir
    [path] = write_official_layout(picked[:1], tmp_path)
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "solvable": False}))
    [game] = collect_official_games(tmp_path)
    with pytest.raises(DataError, match="unsolvable"):
        game.game_data()
    path.write_text("not json")
    with pytest.raises(DataError, match="Cannot read"):
        game.game_data()


def test_upstream_alfredtwenv_plays_the_same_layout(official_dir):
    """alfworld's own AlfredTWEnv accepts the written files and wins with the stored walkthrough."""
    from alfworld.agents.environment.alfred_tw_env import AlfredTWEnv

    root, _ = official_dir
    split_dir = str(root / "json_2.1.1" / "valid_unseen")
    config = {"env": {"goal_desc_human_anns_prob": 0, "task_types": [1, 2, 3, 4, 5, 6],
                      "domain_randomization": False, "expert_type": "handcoded"},
              "dataset": {"data_path": split_dir, "eval_id_data_path": split_dir, "eval_ood_data_path": split_dir,
                          "num_train_games": -1, "num_eval_games": -1},
              "general": {"training_method": "dagger"}, "dagger": {"training": {"max_nb_steps_per_episode": 50}}}
    tw = AlfredTWEnv(config, train_eval="eval_out_of_distribution")
    assert tw.num_games == 2
    env = tw.init_env(batch_size=1)
    try:
        _, infos = env.reset()
        game = json.loads(Path(infos["extra.gamefile"][0]).read_text())
        for command in game["walkthrough"]:
            _, _, _, infos = env.step([command])
        assert infos["won"][0]
    finally:
        env.close()
