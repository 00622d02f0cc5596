"""agentgym/ALFWorld-v0: API, actions, oracle and random baselines on the bundled games."""

import random

import pytest
from helpers.gates import requires_alfworld

import agentgym
from agentgym.verifiers import GameEnd

pytestmark = requires_alfworld


@pytest.fixture(scope="module")
def env():
    env = agentgym.make("agentgym/ALFWorld-v0").unwrapped
    yield env
    env.close()


def test_check_env_passes():
    env = agentgym.make("agentgym/ALFWorld-v0")
    report = agentgym.check_env(env, n_tasks=3)
    assert len(report["oracle_solved"]) == 3 and report["split"] == "valid_unseen"


def test_reset_shows_the_room_and_the_task(env):
    obs, info = env.reset(seed=3)
    assert "-= Welcome to TextWorld, ALFRED! =-" in obs
    assert "Your task is to: " + env.games[info["task_id"]].task_desc.rstrip(".") in obs
    assert info["admissible_commands"] and all(isinstance(c, str) for c in info["admissible_commands"])
    assert "look" in info["admissible_commands"] and "inventory" in info["admissible_commands"]
    assert info["won"] is False and info["task_type"] == env.task.gold["task_type"]


def test_invalid_command_is_nothing_happens_and_counts_a_turn(env):
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("take unicorn 1 from sofa 9")
    assert obs == "Nothing happens." and reward == 0.0 and not terminated and not truncated
    assert info["action_error"] is None and info["turn"] == 1
    obs, _, _, _, info = env.step("dance with the fridge")
    assert obs.startswith("Nothing happens.") and "not a command" in info["action_error"]
    obs, _, _, _, info = env.step("")
    assert info["action_error"] and "No command" in obs


def test_raw_command_variants_are_understood(env):
    env.reset(seed=1)
    go = next(c for c in env.player.admissible_commands() if c.startswith("go to"))
    for text in (go, f"  {go.upper()}.  ", f"Thought: I should move.\nAction: {go}", f"> {go}"):
        env.reset(seed=1)
        obs, *_ , info = env.step(text)
        assert obs.startswith("You arrive at"), text
        assert info["action_error"] is None


@pytest.mark.parametrize("fmt", ["tags", "hermes", "dict"])
def test_tool_call_formats_solve_a_game(fmt):
    env = agentgym.make("agentgym/ALFWorld-v0", action_format=fmt).unwrapped
    obs, info = env.reset(options={"index": 2})
    assert info["tools"][0]["function"]["name"] == "action"
    if fmt == "tags":
        assert "<action>" in obs
    reward, terminated = 0.0, False
    while not terminated:
        action = env.oracle_action()
        obs, reward, terminated, truncated, info = env.step(action)
        assert info["action_error"] is None and not truncated
    assert reward == 1.0 and info["verification"]["correct"]
    obs, *_ = env.reset(options={"index": 2})
    call = {"name": "action", "arguments": {"command": "look"}}
    obs, reward, terminated, _, info = env.step(call)
    assert obs and info["action_error"] is None


def test_answer_tag_cannot_claim_a_win():
    env = agentgym.make("agentgym/ALFWorld-v0", action_format="tags").unwrapped
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("<answer>won</answer>")
    assert terminated and reward == 0.0 and not info["verification"]["correct"]
    assert env.episode_outcome() is None and info["answer"] == "won"  # the text, not a game's end
    assert info["verification"]["details"] == {"won": False, "moves": 0, "task_type": env.task.gold["task_type"]}


def test_max_turns_truncates_with_zero_reward():
    env = agentgym.make("agentgym/ALFWorld-v0", max_turns=3).unwrapped
    env.reset(seed=0)
    for turn in range(3):
        _, reward, terminated, truncated, info = env.step("look")
    assert truncated and not terminated and reward == 0.0 and info["turn"] == 3
    # verify scored the game as it stood: not won, after the moves made
    assert info["verification"]["details"]["won"] is False and info["verification"]["details"]["moves"] == 3
    assert info["answer"] is None and env.episode_outcome() is None


def test_a_won_game_is_its_outcome(env):
    env.reset(options={"index": 0})
    while True:
        _, reward, terminated, truncated, info = env.step(env.oracle_action())
        if terminated or truncated:
            break
    assert terminated and reward == 1.0 and info["answer"] == "won"
    assert env.episode_outcome() == GameEnd(won=True, moves=info["verification"]["details"]["moves"])


def test_oracle_replans_after_the_agent_leaves_the_walkthrough(env):
    env.reset(options={"index": 5})
    first = env.oracle_action()
    detour = next(c for c in env.player.admissible_commands() if c.startswith("go to") and c != first)
    env.step(detour)
    for _ in range(30):
        *_, terminated, truncated, info = env.step(env.oracle_action())
        if terminated or truncated:
            break
    assert info["verification"]["reward"] == 1.0


def _success(env, policy, split="valid_unseen"):
    wins = []
    for i in range(len(env.tasks.tasks(split))):
        _, info = env.reset(seed=i, options={"split": split, "index": i})
        while True:
            _, reward, terminated, truncated, info = env.step(policy(info))
            if terminated or truncated:
                wins.append(reward == 1.0)
                break
    return sum(wins) / len(wins)


def test_oracle_solves_valid_unseen_and_random_does_not(env):
    oracle = _success(env, lambda info: env.oracle_action())
    rng = random.Random(0)
    rand = _success(env, lambda info: rng.choice(info["admissible_commands"]))
    assert oracle >= 0.95
    assert rand < 0.1


def test_task_types_filter_and_bad_config():
    from agentgym.errors import ConfigError, DataError

    env = agentgym.make("agentgym/ALFWorld-v0", task_types=["look_at_obj_in_light"]).unwrapped
    assert {g.task_type for g in env.games.values()} == {"look_at_obj_in_light"}
    with pytest.raises(ConfigError, match="pick_and_place_simple"):
        agentgym.make("agentgym/ALFWorld-v0", task_types=["juggling"])
    with pytest.raises(ConfigError, match="valid_unseen"):
        agentgym.make("agentgym/ALFWorld-v0", split="test")
    with pytest.raises(DataError, match="json_2.1.1"):
        agentgym.make("agentgym/ALFWorld-v0", data_dir="/nonexistent/alfworld")
