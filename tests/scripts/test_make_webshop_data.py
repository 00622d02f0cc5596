"""The bundled WebShop data: WebShop's schema, counts, goal consistency, and that the seeded script reproduces it."""

import gzip
import hashlib
import itertools
import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "agentgym" / "data" / "webshop"
SCRIPT = ROOT / "scripts" / "make_webshop_data.py"
FILES = ("items_shuffle.json.gz", "items_ins_v2.json", "goals.json")
CATEGORIES = {"beauty", "food", "fashion", "furniture", "electronics"}
PRICE_RANGE = [10.0 * i for i in range(1, 100)]
PRODUCT_KEYS = {"asin", "category", "query", "name", "full_description", "pricing", "images", "product_category",
                "average_rating", "total_reviews", "small_description", "customization_options", "reviews"}
GOAL_KEYS = {"asin", "category", "query", "name", "product_category", "instruction_text", "attributes", "goal_options",
             "price_upper", "weight", "split"}


@pytest.fixture(scope="module")
def data():
    with gzip.open(DATA / "items_shuffle.json.gz", "rt", encoding="utf-8") as fh:
        products = json.load(fh)
    attributes = json.loads((DATA / "items_ins_v2.json").read_text(encoding="utf-8"))
    goals = json.loads((DATA / "goals.json").read_text(encoding="utf-8"))
    return {p["asin"]: p for p in products}, {k: v["attributes"] for k, v in attributes.items()}, goals


def prices(pricing: str) -> list[float]:
    """WebShop's parser: every '$' starts a price."""
    return [float(re.sub(r"[^\d.]", "", p)) for p in pricing.split("$")[1:]]


def option_values(product: dict) -> dict[str, set[str]]:
    return {name: {o["value"].lower() for o in opts} for name, opts in product["customization_options"].items()}


def test_products_have_webshops_schema(data):
    products, attributes, _ = data
    assert len(products) >= 1200 and set(attributes) == set(products)
    assert len({p["name"] for p in products.values()}) == len(products), "titles must be unique"
    assert Counter(p["category"] for p in products.values()).keys() == CATEGORIES
    for asin, p in products.items():
        assert set(p) == PRODUCT_KEYS and re.fullmatch(r"B0[A-Z0-9]{8}", asin)
        assert p["query"] == p["query"].lower() and len(p["product_category"].split(" › ")) >= 3
        assert re.fullmatch(r"\$\d+\.\d\d( - \$\d+\.\d\d)?", p["pricing"]) and max(prices(p["pricing"])) < 980
        assert p["images"] == [] and 3 <= len(p["small_description"]) <= 5 and p["full_description"]
        assert p["average_rating"] is None or 3.0 <= p["average_rating"] <= 5.0
        assert p["total_reviews"] >= len(p["reviews"]) and len(p["reviews"]) <= 3
        assert all(set(r) == {"score", "title", "body"} and 1 <= r["score"] <= 5 for r in p["reviews"])
        options = p["customization_options"]
        assert len(options) <= 3 and all(name == name.lower() for name in options)
        for opts in options.values():
            assert 2 <= len(opts) <= 8 and all(set(o) == {"value", "image"} and "/" not in o["value"] for o in opts)
        assert 2 <= len(attributes[asin]) <= 5 and len(set(attributes[asin])) == len(attributes[asin])
    shares = Counter((" - " in p["pricing"], not p["customization_options"]) for p in products.values())
    assert 0.15 <= (shares[True, False] + shares[True, True]) / len(products) <= 0.35  # range prices
    assert 0.08 <= (shares[False, True] + shares[True, True]) / len(products) <= 0.25  # no options


def test_goal_counts_and_splits(data):
    _, _, goals = data
    assert len(goals) >= 1000 and all(set(g) == GOAL_KEYS for g in goals)
    splits = Counter(g["split"] for g in goals)
    assert set(splits) == {"train", "test"} and splits["test"] >= 200 and 0.15 <= splits["test"] / len(goals) <= 0.25
    for split in ("train", "test"):
        assert {g["category"] for g in goals if g["split"] == split} == CATEGORIES
    split_of = {}
    for g in goals:  # a target product's goals are all in one split
        assert split_of.setdefault(g["asin"], g["split"]) == g["split"]
    assert len({g["instruction_text"] for g in goals}) == len(goals)
    assert sum(bool(g["goal_options"]) for g in goals) > 0.7 * len(goals)


def test_every_goal_is_consistent_with_its_target(data):
    products, attributes, goals = data
    for g in goals:
        p, text = products[g["asin"]], g["instruction_text"]
        assert (g["category"], g["query"], g["name"], g["product_category"]) == (
            p["category"], p["query"], p["name"], p["product_category"])
        assert 1 <= len(g["attributes"]) <= 3 and set(g["attributes"]) <= set(attributes[g["asin"]])
        values, used = option_values(p), set()
        for option in g["goal_options"]:  # each a value of a different option type
            (name,) = [n for n, vs in values.items() if option in vs and n not in used]
            used.add(name)
        assert g["price_upper"] in PRICE_RANGE and g["price_upper"] > max(prices(p["pricing"])) and g["weight"] == 1.0
        assert text == text.lower() and g["query"] in text
        assert all(term in text for term in g["attributes"] + g["goal_options"])
        assert text.endswith(f", and price lower than {g['price_upper']:.2f} dollars")


def test_text_names_no_attribute_the_product_lacks(data):
    """WebShop credits a goal attribute found verbatim in the title, bullets or description."""
    products, attributes, _ = data
    pools = defaultdict(set)
    for asin, p in products.items():
        pools[p["query"]].update(attributes[asin])
    for asin, p in products.items():
        text = " ".join([p["name"], *p["small_description"], p["full_description"]]).lower()
        assert not [a for a in pools[p["query"]] - set(attributes[asin]) if a in text], asin


def test_webshop_reward_targets_score_one_and_distractors_partial(data):
    """With the WebShop verifier: buying a goal's target with its options scores 1; within a type no two
    attributes or option values are fuzzy matches; other products of the type usually earn partial credit."""
    from agentgym.verifiers import webshop  # rapidfuzz: the webshop extra, in dev and in CI
    products, attributes, goals = data

    def purchase(p, wanted):
        chosen = {name: next((v for v in wanted if v in vs), min(vs)) for name, vs in option_values(p).items()}
        record = {"asin": p["asin"], "name": p["name"], "query": p["query"], "product_category": p["product_category"],
                  "attributes": attributes[p["asin"]], "bullet_points": p["small_description"],
                  "description": p["full_description"]}
        return {"product": record, "options": chosen, "price": min(prices(p["pricing"]))}

    by_query = defaultdict(list)
    for p in products.values():
        by_query[p["query"]].append(p)
    for group in by_query.values():
        values = sorted({v for p in group for vs in option_values(p).values() for v in vs})
        assert not [(a, b) for a, b in itertools.combinations(values, 2) if webshop.option_matches([a], [b])]
        pool = sorted({a for p in group for a in attributes[p["asin"]]})
        assert not [(a, b) for a, b in itertools.combinations(pool, 2)
                    if webshop.attribute_matches({"attributes": [a]}, [b])]
    partial = full = 0
    for g in goals:
        assert webshop.verify_purchase(purchase(products[g["asin"]], g["goal_options"]), g).reward == 1.0
        rewards = [webshop.verify_purchase(purchase(p, g["goal_options"]), g).reward
                   for p in by_query[g["query"]] if p["asin"] != g["asin"]]
        partial += any(0 < r < 1 for r in rewards)
        full += max(rewards) == 1.0
    assert partial >= 0.9 * len(goals) and full <= 0.2 * len(goals), (partial, full)


def test_generator_reproduces_the_bundled_files(tmp_path):
    """Regenerating with the default seed gives the committed files byte for byte, whatever the hash seed."""
    for hash_seed in ("0", "123"):
        out = tmp_path / hash_seed
        proc = subprocess.run([sys.executable, str(SCRIPT), "--seed", "0", "--out", str(out)], capture_output=True,
                              text=True, timeout=120, check=False, env={**os.environ, "PYTHONHASHSEED": hash_seed})
        assert proc.returncode == 0, proc.stderr[-2000:]
        stats = json.loads(proc.stdout)
        assert stats["products"] >= 1200 and stats["goals"] >= 1000
        for name in FILES:
            digest = hashlib.sha256((out / name).read_bytes()).hexdigest()
            assert digest == hashlib.sha256((DATA / name).read_bytes()).hexdigest(), (hash_seed, name)


def test_another_seed_gives_other_products(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--seed", "1", "--out", str(tmp_path)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    other = {g["instruction_text"] for g in json.loads((tmp_path / "goals.json").read_text(encoding="utf-8"))}
    bundled = {g["instruction_text"] for g in json.loads((DATA / "goals.json").read_text(encoding="utf-8"))}
    assert len(other & bundled) < len(bundled) // 10
