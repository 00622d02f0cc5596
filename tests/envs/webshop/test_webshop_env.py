"""agentgym/WebShop-v0: WebShop's pages, actions, observations, reward and data loading."""

from __future__ import annotations

import json

import pytest
from helpers.original_data import write_original_data

import agentgym
from agentgym.envs.webshop import WebShopEnv
from agentgym.envs.webshop.catalog import load_catalog, parse_pricing
from agentgym.errors import ConfigError, DataError
from agentgym.policies import RandomPolicy
from agentgym.verifiers import Purchase


@pytest.fixture(scope="module")
def original_dir(tmp_path_factory):
    return write_original_data(tmp_path_factory.mktemp("webshop"))


@pytest.fixture()
def env(original_dir):
    return WebShopEnv(data_dir=original_dir)


def ski_goal(env):
    return next(t for t in env.tasks.tasks("test") if t.gold["asin"] == "B00SKI0001")


def play(env, actions):
    out = None
    for action in actions:
        out = env.step(action)
    return out


def test_original_files_load_as_webshop_does(original_dir):
    catalog = load_catalog(original_dir)
    assert sorted(catalog.products) == ["B00LIP0003", "B00SKI0001", "B00SKI0002"]
    ski = catalog.products["B00SKI0001"]
    assert ski.options == {"color": ("black", "navy blue"), "size": ("medium", "large")}
    assert ski.attributes == ("waterproof", "machine wash", "insulated")
    assert catalog.products["B00SKI0002"].price_tag == "$30.00 to $38.00"
    assert catalog.products["B00SKI0002"].rating == "N.A."
    # the instruction without attributes is dropped, as in WebShop; the others get a budget above the price
    assert len(catalog.goals) == 2
    for goal in catalog.goals:
        product = catalog.products[goal.asin]
        assert goal.price_upper > product.price and goal.split == "test"
        assert goal.instruction_text.endswith(f", and price lower than {goal.price_upper:.2f} dollars")
        assert not goal.instruction_text.split(", and price")[0].endswith(".")


def test_pricing_forms():
    assert parse_pricing("$12.99") == (12.99,)
    assert parse_pricing("$1,010.00 - $1,200.50") == (1010.0, 1200.5)
    assert parse_pricing(None) == (100.0,)
    assert parse_pricing(7) == (7.0,)


def test_bad_data_dirs_say_what_is_missing(tmp_path):
    with pytest.raises(ConfigError, match="not a directory"):
        load_catalog(tmp_path / "nope")
    with pytest.raises(DataError, match="items_shuffle"):
        load_catalog(tmp_path)
    (tmp_path / "items_shuffle.json").write_text(json.dumps([{"asin": "B1", "name": "x"}]))
    with pytest.raises(DataError, match="no goals"):
        load_catalog(tmp_path)


def test_pages_and_observations_follow_webshop(env):
    task = ski_goal(env)
    obs, info = env.reset(options={"task_id": task.id})
    assert obs.endswith(f"WebShop [SEP] Instruction: [SEP] {task.prompt} [SEP] Search")
    assert info["available_actions"] == {"has_search_bar": True, "clickables": ["search"]}
    obs, reward, terminated, truncated, info = env.step("search[men's ski pants waterproof]")
    assert obs.startswith(f"Instruction: [SEP] {task.prompt} [SEP] Back to Search [SEP] Page 1 (Total results: ")
    assert "B00SKI0001 [SEP] Northpeak Men's Waterproof Ski Pants Insulated Snow Trousers [SEP] $45.99" in obs
    clickables = info["available_actions"]["clickables"]
    assert clickables[0] == "back to search" and "b00ski0001" in clickables and "< prev" not in clickables
    obs, *_, info = env.step("Thought: the first one fits.\nAction: click[B00SKI0001]")
    assert ("Back to Search [SEP] < Prev [SEP] color [SEP] black [SEP] navy blue [SEP] size [SEP] medium "
            "[SEP] large [SEP] Northpeak") in obs
    assert obs.endswith("Price: $45.99 [SEP] Rating: 4.4 [SEP] Description [SEP] Features [SEP] Reviews [SEP] Buy Now")
    assert info["available_actions"]["clickables"] == [
        "back to search", "< prev", "black", "navy blue", "medium", "large", "description", "features", "reviews",
        "buy now"]
    obs, *_ = env.step("click[Features]")
    assert obs.endswith("< Prev [SEP] Waterproof shell [SEP] Machine wash cold")
    obs, *_ = env.step("click[< Prev]")
    obs, *_ = env.step("click[Reviews]")
    assert obs.endswith("Warm [SEP] 5 [SEP] Kept me dry all day.")
    env.step("click[< prev]")
    obs, *_ = env.step("click[Description]")
    assert obs.endswith("< Prev [SEP] Insulated snow pants for skiing and snowboarding.")
    env.step("click[< Prev]")
    obs, *_, info = env.step("click[Black]")
    assert info["selected_options"] == {"color": "black"}
    obs, reward, terminated, truncated, info = env.step("click[large]")
    assert info["selected_options"] == {"color": "black", "size": "large"}
    assert not terminated and reward == 0.0
    obs, reward, terminated, truncated, info = env.step("click[Buy Now]")
    assert terminated and not truncated and reward == 1.0
    assert obs.startswith("Thank you for shopping with us! [SEP] Purchased [SEP] B00SKI0001")
    assert json.loads(info["answer"])["options"] == {"color": "black", "size": "large"}
    assert info["verification"]["correct"]
    bought = env.episode_outcome()  # what the shop recorded, typed; info carries its JSON text as before
    assert isinstance(bought, Purchase) and bought.asin == "B00SKI0001" and bought.options == json.loads(
        info["answer"])["options"] and info["answer"] == bought.as_answer()


def test_wrong_product_and_options_score_partially(env):
    task = ski_goal(env)
    env.reset(options={"task_id": task.id})
    # the softshell pants: same query (type 1.0), waterproof missing, black missing, large ok, price ok -> 2/4
    *_, reward, terminated, _, info = play(env, ["search[ski pants]", "click[B00SKI0002]", "click[large]",
                                                "click[Buy Now]"])
    assert terminated and reward == pytest.approx(0.5)
    assert info["verification"]["details"]["attributes_matched"] == []


def test_invalid_actions_are_observations(env):
    task = ski_goal(env)
    env.reset(options={"task_id": task.id})
    obs, reward, terminated, _, info = env.step("I would like to buy pants")
    assert info["action_error"] and "search[" in obs and not terminated and reward == 0.0
    obs, *_, info = env.step("click[Buy Now]")
    assert "not clickable" in obs and "Available: search[...]" in obs and obs.endswith("Search")
    obs, *_ = env.step("click[Search]")
    assert "write search[your query]" in obs
    obs, *_ = env.step("search[   ]")
    assert "query is empty" in obs
    env.step("search[ski pants]")
    obs, *_, info = env.step("search[lipstick]")
    assert "only available on the search page" in obs and info["page"] == "results"
    obs, *_ = env.step("click[B99NOTHERE]")
    assert "not clickable" in obs and "back to search" in obs
    obs, *_, info = env.step("click[Back to Search]")
    assert info["page"] == "search"


def test_pagination(original_dir, monkeypatch):
    env = WebShopEnv(data_dir=original_dir)
    env.reset(options={"index": 0})
    shop = env.shop
    monkeypatch.setattr("agentgym.envs.webshop.shop.PAGE_SIZE", 2)
    env.step("search[pants lipstick]")
    assert len(shop.results) == 3
    obs, *_, info = env.step("click[Next >]")
    assert "Page 2 (Total results: 3) [SEP] < Prev [SEP] B" in obs and "next >" not in info["available_actions"][
        "clickables"]
    obs, *_ = env.step("click[< Prev]")
    assert "Page 1 (Total results: 3) [SEP] Next >" in obs


def test_running_out_of_turns_scores_zero(original_dir):
    env = WebShopEnv(data_dir=original_dir, max_turns=2)
    env.reset(options={"index": 0})
    env.step("search[lipstick]")
    _, reward, terminated, truncated, info = env.step("click[B00LIP0003]")
    assert truncated and not terminated and reward == 0.0
    assert info["verification"]["details"]["reason"] == "nothing was bought"


@pytest.mark.parametrize("action_format", ["tags", "hermes"])
def test_tool_formats(original_dir, action_format):
    env = WebShopEnv(data_dir=original_dir, action_format=action_format)
    env.reset(options={"index": 0})
    assert [t["function"]["name"] for t in env.reset()[1]["tools"]] == ["click", "search"]
    done, reward = False, 0.0
    while not done:
        _, reward, terminated, truncated, info = env.step(env.oracle_action())
        assert info["action_error"] is None
        done = terminated or truncated
    assert terminated and reward == 1.0


def test_dict_actions_work_in_any_format(env):
    env.reset(options={"index": 0})
    *_, info = env.step({"name": "search", "arguments": {"query": "lipstick"}})
    assert info["action_error"] is None and info["page"] == "results"
    *_, info = env.step({"name": "click", "arguments": {"element": "Back to Search"}})
    assert info["page"] == "search"


def test_tags_answer_gives_up_with_zero(original_dir):
    env = WebShopEnv(data_dir=original_dir, action_format="tags")
    env.reset(options={"index": 0})
    _, reward, terminated, _, _ = env.step("<answer>done</answer>")
    assert terminated and reward == 0.0


@pytest.mark.parametrize("action_format", ["tags", "hermes", "dict"])
def test_a_made_up_purchase_in_an_answer_scores_zero(original_dir, action_format):
    env = WebShopEnv(data_dir=original_dir, action_format=action_format)
    env.reset(options={"index": 0})
    gold = env.task.gold
    fake = json.dumps({"asin": gold["asin"], "product": {**gold, "bullet_points": [], "description": ""},
                       "options": {str(i): o for i, o in enumerate(gold["goal_options"])}, "price": 1.0})
    _, reward, terminated, _, info = env.step(env.action_format.render_answer(fake))
    assert terminated and reward == 0.0 and info["verification"]["details"]["reason"] == "nothing was bought"
    assert env.episode_outcome() is None  # the text is kept in info, but it is not an outcome of the shop
    assert json.loads(info["answer"]) == json.loads(fake)


def test_goal_options_are_normalised_like_product_options(tmp_path):
    from helpers.original_data import ATTRIBUTES, PRODUCTS

    products = [dict(PRODUCTS[2], customization_options={"Color": [{"value": "Red/Black", "image": None}]})]
    (tmp_path / "items_shuffle.json").write_text(json.dumps(products))
    (tmp_path / "items_ins_v2.json").write_text(json.dumps(ATTRIBUTES))
    (tmp_path / "items_human_ins.json").write_text(json.dumps({"B00LIP0003": [{
        "instruction": "a long lasting lipstick in red/black", "instruction_attributes": ["long lasting"],
        "instruction_options": ["Red/Black"]}]}))
    env = WebShopEnv(data_dir=tmp_path)
    assert env.catalog.goals[0].goal_options == ("red | black",)
    assert agentgym.check_env(env, n_tasks=1)["oracle_solved"]


def test_check_env_on_user_data(original_dir):
    report = agentgym.check_env(WebShopEnv(data_dir=original_dir), n_tasks=2)
    assert len(report["oracle_solved"]) == 2


def test_bundled_oracle_and_random_on_test_split():
    env = WebShopEnv()
    tasks = env.tasks.tasks("test")
    assert len(tasks) >= 200 and len(env.catalog.products) >= 1000
    rewards = []
    for i in range(len(tasks)):
        env.reset(options={"index": i})
        done = False
        while not done:
            _, reward, terminated, truncated, info = env.step(env.oracle_action())
            assert info["action_error"] is None, info["action_error"]
            done = terminated or truncated
        rewards.append(reward)
    assert sum(rewards) / len(rewards) >= 0.95

    policy, random_rewards = RandomPolicy(seed=0), []
    for i in range(100):
        obs, info = env.reset(options={"index": i})
        policy.reset(env, obs, info)
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
            done = terminated or truncated
        random_rewards.append(reward)
    assert sum(random_rewards) / len(random_rewards) < 0.2


def test_registered_and_made_by_gym():
    env = agentgym.make("agentgym/WebShop-v0")
    obs, info = env.reset(seed=3)
    assert "WebShop [SEP] Instruction: [SEP]" in obs and info["split"] == "test"
    env.close()
