"""WebShop's reward against hand-computed cases: exact, partial, wrong type, empty, adversarial."""

from __future__ import annotations

import json

import pytest

from agentgym.verifiers import get_verifier
from agentgym.verifiers.webshop import Purchase, title_nouns, type_reward, verify_purchase, verify_webshop

GOAL = {
    "asin": "B00SKI0001", "query": "men's ski pants",
    "name": "Northpeak Men's Waterproof Ski Pants Insulated Snow Trousers",
    "product_category": "Clothing, Shoes & Jewelry › Men › Clothing › Active › Active Pants",
    "attributes": ["waterproof", "machine wash"], "goal_options": ["black", "large"], "price_upper": 50.0,
}
TARGET = {
    "asin": "B00SKI0001", "query": "men's ski pants", "name": GOAL["name"],
    "product_category": GOAL["product_category"], "attributes": ["waterproof", "machine wash", "insulated"],
    "bullet_points": ["Waterproof shell"], "description": "Insulated snow pants.",
}


def record(product=TARGET, options=None, price=45.99):
    """A purchase record, as the shop writes it and the wire carries it."""
    return {"product": product, "options": {"color": "black", "size": "large"} if options is None else options,
            "price": price}


def buy(product=TARGET, options=None, price=45.99):
    return Purchase.from_record(record(product, options, price))


def test_exact_purchase_scores_one():
    score = verify_purchase(buy(), GOAL)
    assert score.reward == 1.0 and score.correct
    assert score.details["attributes_matched"] == ["waterproof", "machine wash"]
    assert score.details["options_matched"] == ["black", "large"]


def test_wrong_option_loses_its_share():
    # attributes 2/2, options 1/2, price 1 -> (2 + 1 + 1) / (2 + 2 + 1) = 0.8
    score = verify_purchase(buy(options={"color": "navy blue", "size": "large"}), GOAL)
    assert score.reward == pytest.approx(0.8) and not score.correct


def test_no_option_chosen():
    # (2 + 0 + 1) / 5 = 0.6
    assert verify_purchase(buy(options={}), GOAL).reward == pytest.approx(0.6)


def test_over_budget():
    # (2 + 2 + 0) / 5 = 0.8
    score = verify_purchase(buy(price=50.01), GOAL)
    assert score.reward == pytest.approx(0.8) and score.details["r_price"] is False
    assert verify_purchase(buy(price=50.0), GOAL).reward == 1.0  # the budget is inclusive


def test_attribute_found_in_text_only():
    product = {**TARGET, "attributes": [], "bullet_points": ["Machine wash cold"], "description": "Waterproof."}
    assert verify_purchase(buy(product=product), GOAL).reward == 1.0


def test_fuzzy_attribute_and_colour_normalisation():
    product = {**TARGET, "attributes": ["water-proof", "machine washable"]}
    score = verify_purchase(buy(product=product, options={"color": "Jet Black Matte", "size": "Large"}), GOAL)
    assert score.details["attributes_matched"] == ["waterproof", "machine wash"]
    assert score.details["options_matched"] == ["black", "large"]


def test_same_type_other_product_gets_partial_credit():
    other = {"asin": "B00SKI0002", "query": "men's ski pants", "name": "Alpenlow Men's Ski Pants Softshell Trousers",
             "product_category": GOAL["product_category"], "attributes": ["windproof", "machine wash"],
             "bullet_points": [], "description": ""}
    # type: query matches -> 1.0; attributes 1/2; options 1/2 (black not offered); price ok -> 3/5
    score = verify_purchase(buy(product=other, options={"color": "gray", "size": "large"}, price=30.0), GOAL)
    assert score.details["r_type"] == 1.0
    assert score.reward == pytest.approx(0.6)


def test_wrong_type_scores_zero():
    lipstick = {"asin": "B00LIP0003", "query": "lipstick", "name": "Rouge Atelier Matte Lipstick",
                "product_category": "Beauty & Personal Care › Makeup › Lips › Lipstick",
                "attributes": ["waterproof"], "bullet_points": [], "description": ""}
    score = verify_purchase(buy(product=lipstick, options={"color": "black"}), GOAL)
    assert score.details["title_score"] == 0.0 and score.details["r_type"] == 0.0
    assert score.reward == 0.0 and not score.correct


def test_type_factor_steps():
    goal = {"query": "a", "name": "Alpha Beta Gamma Delta Epsilon Zeta Eta Theta Iota Kappa Lambda",
            "product_category": "X › Y"}
    # 1 of 11 title nouns (~0.09 < 0.1), different query and category -> 0.1
    assert type_reward({"query": "b", "name": "Alpha", "product_category": "Z"}, goal)["r_type"] == 0.1
    # 2 of 11 (~0.18): no match of any kind -> 0.5
    assert type_reward({"query": "b", "name": "Alpha Beta", "product_category": "Z"}, goal)["r_type"] == 0.5
    # same query rescues a weak title overlap
    assert type_reward({"query": "a", "name": "Alpha Beta", "product_category": "Z"}, goal)["r_type"] == 1.0
    # two shared category levels rescue it too
    assert type_reward({"query": "b", "name": "Alpha Beta", "product_category": "X › Y › W"}, goal)["r_type"] == 1.0
    # 3 of 11 (> 0.2) is a type match on its own
    assert type_reward({"query": "b", "name": "Alpha Beta Gamma", "product_category": "Z"}, goal)["r_type"] == 1.0


def test_title_nouns_drop_stopwords_numbers_and_units():
    assert title_nouns("The 2 Pack of 16 oz Shampoo for Dry Hair") == {"shampoo", "dry", "hair"}


def test_empty_purchase_scores_zero():
    for purchase in (None, Purchase(product={}), Purchase(product=None)):
        score = verify_purchase(purchase, GOAL)
        assert score.reward == 0.0 and not score.correct and score.details["reason"] == "nothing was bought"


def test_a_purchase_record_still_works_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match=r"pass Purchase.from_record\(record\)"):
        old = verify_purchase(record(), GOAL)
    assert old == verify_purchase(buy(), GOAL) and old.reward == 1.0
    with pytest.warns(DeprecationWarning):
        assert verify_purchase({}, GOAL).details["reason"] == "nothing was bought"


def test_a_purchase_round_trips_through_its_wire_text():
    purchase = Purchase.from_record({**record(), "asin": "B00SKI0001"})
    assert json.loads(purchase.as_answer()) == {**record(), "asin": "B00SKI0001"}
    assert Purchase.from_record(json.loads(purchase.as_answer())) == purchase
    assert verify_webshop(purchase.as_answer(), GOAL) == verify_webshop(purchase, GOAL) == verify_purchase(purchase, GOAL)


@pytest.mark.parametrize("purchase", [Purchase(product="a title"), Purchase(product=TARGET, options=["black"]),
                                      Purchase(product=TARGET, price="cheap"), "a purchase, trust me"])
def test_malformed_purchases_score_zero_with_a_reason(purchase):
    score = verify_purchase(purchase, GOAL)
    assert score.reward == 0.0 and not score.correct and score.details["reason"]


def test_no_budget_and_no_options():
    goal = {**GOAL, "goal_options": [], "price_upper": 0}
    # (2 + 0 + 1) / (2 + 0 + 1)
    assert verify_purchase(buy(options={}, price=999.0), goal).reward == 1.0


def test_goal_options_as_dict():
    goal = {**GOAL, "goal_options": {"color": "black", "size": "large"}}
    assert verify_purchase(buy(), goal).reward == 1.0


@pytest.mark.parametrize("prediction", ["", "not json", "[1, 2]", "42", None])
def test_malformed_predictions_score_zero(prediction):
    score = verify_webshop(prediction, GOAL)
    assert score.reward == 0.0 and not score.correct


def test_adversarial_option_stuffing_does_not_help():
    # choosing one option per type is what the shop allows; a record stuffed with every value is not a
    # purchase the env can produce, but the reward still only counts each goal option once
    options = {f"k{i}": v for i, v in enumerate(["black", "black", "large", "large", "x"])}
    assert verify_purchase(buy(options=options), GOAL).reward == 1.0
    assert verify_purchase(buy(options={"color": "blackish large"}), GOAL).reward < 1.0


def test_by_name_over_json():
    verify = get_verifier("webshop")
    assert verify(json.dumps(record()), GOAL).reward == 1.0
    assert verify(json.dumps(record()), {"goal": GOAL}).reward == 1.0
    assert verify(record(), GOAL).reward == 1.0  # a JSON object, as a client may send it
