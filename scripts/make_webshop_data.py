"""Generate the bundled WebShop dataset: a synthetic Amazon-style catalogue and shopping goals.

    python scripts/make_webshop_data.py [--seed 0] [--out agentgym/data/webshop]

Writes WebShop's own files (Yao et al., 2022): ``items_shuffle.json.gz`` (products),
``items_ins_v2.json`` (each product's attributes) and ``goals.json`` (resolved goals
with a train/test split). Products come from the hand-written tables in
``scripts/webshop_tables`` (the taxonomy in ``taxonomy/<category>.json``): five
categories of about 20 product types, each with a search query, an Amazon-style
category breadcrumb, a pool of attributes, option types with value pools, a price
range and title / bullet / description material; brands are invented. Every type has
11 to 15 products that share attributes and option values, so a wrong product of
the right type earns partial credit under WebShop's reward. A product's text mentions
none of its type's attributes that it lacks, and within a type no two attributes or
option values are fuzzy matches of each other (the reward's token-set ratio > 85), so
the reward's fuzzy matching agrees with exact matching. Everything is checked before
anything is written; the same seed gives byte-identical files on every machine and
under any ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import random
import re
import string
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

PRICE_RANGE = [10.0 * i for i in range(1, 100)]  # WebShop's budget grid (web_agent_site/engine/goal.py)
PRODUCTS_PER_TYPE = (11, 15)
TEST_SHARE = 0.2  # of target products; all goals of one product land in one split
EXTRA_GOAL_SHARE = 0.2  # products that get a second goal
NO_OPTIONS_SHARE = 0.15
RANGE_PRICE_SHARE = 0.25
FUZZY_THRESHOLD = 85  # WebShop matches attributes and options when token_set_ratio > 85
MIN_PRODUCTS, MIN_GOALS, MIN_TEST_GOALS = 1200, 1000, 200
CATEGORIES = ("beauty", "food", "fashion", "furniture", "electronics")


@dataclass(frozen=True)
class ProductType:
    """One product type of the taxonomy: everything its products are drawn from."""

    query: str  # WebShop's search query, lowercase
    crumb: str  # product_category, levels joined with " › "
    price: tuple[float, float]  # dollars: the range a product's (lowest) price is drawn from
    heads: tuple[str, ...]  # title nouns
    attrs: tuple[str, ...]  # the attribute pool
    options: dict[str, tuple[str, ...]]  # option type -> value pool, lowercase
    extras: tuple[str, ...]  # title endings
    feats: tuple[str, ...]  # bullet points that name no attribute
    uses: tuple[str, ...]  # what it is for, in descriptions and reviews
    mass: bool = False  # "i need olive oil", not "i need a olive oil"
    category: str = ""  # filled in from TAXONOMY


# ================================================================ tables: read from scripts/webshop_tables
TABLES_DIR = Path(__file__).resolve().parent / "webshop_tables"


def read_table(name: str):
    return json.loads((TABLES_DIR / name).read_text(encoding="utf-8"))


def product_type(row: dict) -> ProductType:
    """A taxonomy row of ``taxonomy/<category>.json``: ProductType's fields, pools as lists, ``mass`` if true."""
    return ProductType(row["query"], row["crumb"], tuple(row["price"]), tuple(row["heads"]), tuple(row["attrs"]),
                       {name: tuple(pool) for name, pool in row["options"].items()}, tuple(row["extras"]),
                       tuple(row["feats"]), tuple(row["uses"]), row.get("mass", False))


TAXONOMY = {category: tuple(map(product_type, read_table(f"taxonomy/{category}.json"))) for category in CATEGORIES}
# Where an instruction puts an attribute: before the noun (the default), "for ...", "in a ..." or "with ...".
ATTRIBUTE_KINDS = read_table("attribute_kinds.json")
FOR_ATTRS, IN_ATTRS, WITH_ATTRS = (set(ATTRIBUTE_KINDS[name]) for name in ("for", "in", "with"))
# A bullet point's text for each attribute (the bullet's label names the attribute itself).
CLAUSES: dict[str, str] = read_table("clauses.json")
BRANDS: dict[str, list[str]] = read_table("brands.json")  # category -> invented brand names
# Attributes that contradict each other; a product gets at most one of each group.
EXCLUSIVE = tuple(set(group) for group in read_table("exclusive_attributes.json"))

# ================================================================ text templates
OPENERS = ("i am looking for", "i'm looking for", "i want to buy", "i need", "find me", "i would like",
           "i'm searching for", "get me", "i want", "help me find", "i am shopping for", "search for",
           "show me", "i'd like to buy", "i'm trying to find")
OPTION_PHRASES = {
    "color": ("in {v} color", "in the color {v}", "in {v}"),
    "size": ("in size {v}", "in {v} size", "in a size {v}"),
    "scent": ("in {v} scent", "with a {v} scent"),
    "flavor name": ("in {v} flavor", "with {v} flavor", "in the {v} flavor"),
    "style": ("in {v} style", "in the {v} style", "style {v}"),
    "item package quantity": ("in {a} {v}", "as {a} {v}"),
    "pattern name": ("in {v} pattern", "with a {v} pattern"),
    "material": ("in {v} material", "made of {v}"),
    "capacity": ("with {v} capacity", "in {v} capacity", "in {v}"),
}
LABEL_STYLES = ("{label}: {text}", "{label} - {text}", "【{label}】 {text}", "{label} — {text}")
LABEL_PREFIX = {"a": "", "f": "GREAT FOR ", "i": "PACKED IN A ", "w": "WITH "}
FEATURE_PREFIX = {"a": "", "f": "made for ", "i": "packed in a ", "w": "with "}
INTROS = ("The {brand} {head} {is} made for {use}.", "Meet the {brand} {head}, designed with {use} in mind.",
          "{brand} built {this} {head} for {use}.", "Shopping for {use}? The {brand} {head} {is} a great pick.")
FEATURE_LEADS = ("Key features: {items}.", "Highlights: {items}.", "What customers love: {items}.",
                 "Why choose it: {items}.")
USE_LINES = ("Perfect for {use}.", "A favorite for {use}.", "Ideal for {use} and everyday life.")
CLOSINGS = ("Backed by a 30-day money back guarantee.", "Questions? Our customer service team replies within 24 hours.",
            "Thank you for choosing {brand}.", "Makes a thoughtful gift for family and friends.",
            "Satisfaction guaranteed or your money back.")
REVIEW_TITLES = {5: ("Love it!", "Exactly what I needed", "Highly recommend", "Five stars", "Great buy"),
                 4: ("Pretty good", "Good value for the price", "Works well", "Happy with it"),
                 3: ("It's okay", "Decent, not amazing", "Average", "Mixed feelings"),
                 2: ("Disappointed", "Not as described", "Expected better"),
                 1: ("Waste of money", "Would not buy again", "Returned it")}
REVIEW_BODIES = {
    "good": ("I bought {this} for {use} and {it_is} exactly what I wanted.",
             "Great quality for the price. {brand} did a nice job.",
             "Arrived quickly and looks just like the pictures.", "Second time ordering. Would recommend to friends."),
    "mixed": ("{It_is} fine for {use}, but not as nice as I expected.", "Does the job. Shipping took a while.",
              "Decent for the price, though the quality could be better."),
    "bad": ("Not what I expected, so I returned {it}.", "Did not hold up and I would not buy again.",
            "The pictures look much better than the real thing."),
}
SMALL_WORDS = frozenset({"a", "an", "and", "for", "in", "of", "on", "or", "the", "to", "with"})
ACRONYMS = frozenset({"usb", "hdmi", "ssd", "led", "tv", "rgb", "lcd", "spf", "uv", "hd", "gps", "dpi", "pbt", "etl",
                      "vesa", "usa", "gmo", "usda", "bpa", "msg", "upf", "rfid", "gan", "ps5", "ipx7", "9h", "a2", "c"})
ASIN_CHARS = string.ascii_uppercase + string.digits
# Attributes ending so read as nouns: "a slim design iphone case", never "an iphone case that is slim design".
NOUN_ENDINGS = ("design", "size", "frame", "wood", "relief", "leather", "hair", "alloy", "steel", "glass", "layout",
                "motor", "grain", "fit", "knit", "hd", "video", "heel", "toe", "neck", "sleeve", "leg", "lift", "top")


# ================================================================ helpers
def seed_of(*parts) -> int:
    return int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:8], "little")


def kind(attribute: str) -> str:
    """Where an instruction puts the attribute: a (before the noun), f (for ...), i (in a ...), w (with ...)."""
    if attribute in FOR_ATTRS:
        return "f"
    if attribute in IN_ATTRS:
        return "i"
    return "w" if attribute in WITH_ATTRS else "a"


def titled(phrase: str) -> str:
    """'non gmo' -> 'Non GMO', 'x-large' -> 'X-Large', '30w' -> '30W'; only letter case changes."""
    words = []
    for i, word in enumerate(phrase.split(" ")):
        if word in ACRONYMS:
            words.append(word.upper())
        elif i and word in SMALL_WORDS:
            words.append(word)
        elif word[:1].isdigit():
            words.append(word.upper() if word.endswith(("gb", "tb", "w")) else word)
        else:
            words.append("-".join(part[:1].upper() + part[1:] for part in word.split("-")))
    return " ".join(words)


def sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "!", "?")) else ".")


def join_and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def leaks(text: str, banned: list[str]) -> bool:
    """Does the text name an attribute the product lacks? (WebShop credits attributes found in the text.)"""
    lowered = text.lower()
    return any(b in lowered for b in banned)


def clean(texts: Iterable[str], banned: list[str]) -> list[str]:
    return [t for t in texts if not leaks(t, banned)]


def is_plural(t: ProductType) -> bool:
    return not t.mass and t.query.endswith("s") and not t.query.endswith("ss")


def article(phrase: str) -> str:
    """'a' or 'an' by sound: 'an 8 pack', 'an hdmi cable', 'a usda organic ...'."""
    vowel = phrase[0] in "aeiou8" or phrase.startswith(("11 ", "18 "))
    spelled = phrase.split(" ", 1)[0] in {"hdmi", "rfid", "led", "lcd", "spf", "msg", "upf", "hd"}
    return "an" if (vowel and not phrase.startswith(("us", "uni", "one"))) or spelled else "a"


def with_article(phrase: str, t: ProductType) -> str:
    return phrase if t.mass or is_plural(t) else f"{article(phrase)} {phrase}"


def prices_of(pricing: str) -> list[float]:
    """WebShop's price parser (web_agent_site/engine/engine.py): '$10.99 - $15.99' -> [10.99, 15.99]."""
    return [float(re.sub(r"[^\d.]", "", p)) for p in pricing.split("$")[1:]]


def price_upper(max_price: float, rng: random.Random) -> float:
    """WebShop's budget: the larger of two of the first four grid prices above the product's price."""
    candidates = [p for p in PRICE_RANGE if p > max_price][:4]
    if len(candidates) >= 2:
        return sorted(rng.sample(candidates, 2))[1]
    return candidates[0]


def indel_ratio(a: str, b: str) -> float:
    """rapidfuzz's fuzz.ratio: 100 * 2 * LCS / (len(a) + len(b))."""
    if not a and not b:
        return 100.0
    row = [0] * (len(b) + 1)
    for ch in a:
        prev = 0
        for j, other in enumerate(b):
            prev, row[j + 1] = row[j + 1], prev + 1 if ch == other else max(row[j + 1], row[j])
    return 200.0 * row[-1] / (len(a) + len(b))


def token_set_ratio(a: str, b: str) -> float:
    """thefuzz's token_set_ratio, which WebShop's reward thresholds at 85: lowercased, punctuation as spaces
    ("x-large" has the tokens "x" and "large"), then rapidfuzz's formula."""
    ta, tb = (set(re.sub(r"[^0-9a-z]", " ", s.lower()).split()) for s in (a, b))
    if not ta or not tb:
        return 0.0
    common, only_a, only_b = sorted(ta & tb), sorted(ta - tb), sorted(tb - ta)
    if common and (not only_a or not only_b):
        return 100.0
    sect, left, right = " ".join(common), " ".join(common + only_a), " ".join(common + only_b)
    scores = [indel_ratio(left, right)]
    if sect:
        scores += [indel_ratio(sect, left), indel_ratio(sect, right)]
    return max(scores)


def require(ok: bool, message: str) -> None:
    if not ok:
        raise SystemExit(f"make_webshop_data: {message}")


# ================================================================ products
def draw_attrs(t: ProductType, rng: random.Random) -> list[str]:
    n = rng.randint(2, min(5, len(t.attrs)))
    picked: list[str] = []
    for a in rng.sample(t.attrs, len(t.attrs)):
        if len(picked) < n and not any(a in group and p in group for group in EXCLUSIVE for p in picked):
            picked.append(a)
    return sorted(picked, key=t.attrs.index)


def draw_options(t: ProductType, rng: random.Random) -> dict[str, list[str]]:
    names = list(t.options)
    if rng.random() < NO_OPTIONS_SHARE:
        return {}
    chosen = sorted(rng.sample(names, rng.randint(1, min(3, len(names)))), key=names.index)
    options = {}
    for name in chosen:
        pool = t.options[name]
        options[name] = sorted(rng.sample(pool, rng.randint(2, min(8, len(pool)))), key=pool.index)
    return options


def draw_pricing(t: ProductType, rng: random.Random) -> str:
    low = max(2, round(rng.uniform(*t.price))) - rng.choice((0.01, 0.01, 0.05, 0.51))
    if rng.random() >= RANGE_PRICE_SHARE:
        return f"${low:.2f}"
    high = min(979, round(low * rng.uniform(1.15, 1.7))) - 0.01
    return f"${low:.2f}" if high <= low + 1 else f"${low:.2f} - ${high:.2f}"


def make_title(t: ProductType, rng: random.Random, brand: str, head: str, shown: list[str], banned: list[str]) -> str:
    adjs = [a for a in shown if kind(a) == "a"]
    words = [brand, *(titled(a) for a in rng.sample(adjs, min(len(adjs), rng.randint(0, 2)))), head]
    title = " ".join(words)
    fors, withs = [a for a in shown if kind(a) == "f"], [a for a in shown if kind(a) == "w"]
    if fors and rng.random() < 0.5:
        title += " for " + titled(rng.choice(fors))
    elif withs and rng.random() < 0.4:
        title += " with " + titled(rng.choice(withs))
    extras = clean(t.extras, banned)
    if extras and rng.random() < 0.75:
        title += ", " + rng.choice(extras)
    return title


def make_bullets(t: ProductType, rng: random.Random, shown: list[str], banned: list[str]) -> list[str]:
    style, n = rng.choice(LABEL_STYLES), rng.randint(3, 5)
    own = [style.format(label=LABEL_PREFIX[kind(a)] + a.upper(), text=sentence(CLAUSES[a])) for a in shown]
    own = clean(own, banned)[: n - 1]
    feats = clean(t.feats, banned)
    return own + [sentence(f) for f in rng.sample(feats, min(len(feats), n - len(own)))]


def make_description(t: ProductType, rng: random.Random, brand: str, head: str, shown: list[str],
                     banned: list[str]) -> str:
    first_use, second_use = rng.sample(t.uses, 2)
    items = join_and([FEATURE_PREFIX[kind(a)] + a for a in shown])
    core = re.split(r" (?:for|of|in|with) ", head)[0]  # "Chest of Drawers" is one chest
    plural = core.endswith("s") and not core.endswith("ss")
    words = {"is": "are" if plural else "is", "this": "these" if plural else "this"}
    first = [rng.choice(INTROS).format(brand=brand, head=head, use=first_use, **words),
             rng.choice(FEATURE_LEADS).format(items=items), sentence(rng.choice(t.feats))]
    second = [rng.choice(USE_LINES).format(use=second_use), rng.choice(CLOSINGS).format(brand=brand)]
    return " ".join(clean(first, banned)) + "\n\n" + " ".join(clean(second, banned))


def make_reviews(t: ProductType, rng: random.Random, brand: str, rating: float | None) -> list[dict]:
    if rating is None:
        return []
    plural = is_plural(t)
    words = {"this": "these" if plural else "this", "it": "them" if plural else "it",
             "it_is": "they are" if plural else "it is", "It_is": "They are" if plural else "It is"}
    reviews = []
    for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 3))):
        score = min(5, max(1, round(rating) + rng.choice((-3, -2, -1, -1, 0, 0, 0, 0, 1))))
        band = "good" if score >= 4 else "mixed" if score == 3 else "bad"
        body = rng.choice(REVIEW_BODIES[band]).format(use=rng.choice(t.uses), brand=brand, **words)
        reviews.append({"score": score, "title": rng.choice(REVIEW_TITLES[score]), "body": body})
    return reviews


def make_product(t: ProductType, rng: random.Random, brand: str) -> tuple[dict, list[str]]:
    """One product in WebShop's items_shuffle schema, and its attributes (items_ins_v2)."""
    attrs = draw_attrs(t, rng)
    shown = [a for a in attrs if rng.random() < 0.85] or attrs[:1]  # attributes the text mentions
    banned = [a for a in t.attrs if a not in attrs]
    head = rng.choice(clean(t.heads, banned) or list(t.heads))
    rating = None if rng.random() < 0.08 else max(rng.randint(30, 50), rng.randint(30, 50)) / 10
    reviews = make_reviews(t, rng, brand, rating)
    product = {
        "asin": "",
        "category": t.category,
        "query": t.query,
        "name": make_title(t, rng, brand, head, shown, banned),
        "full_description": make_description(t, rng, brand, head, shown, banned),
        "pricing": draw_pricing(t, rng),
        "images": [],
        "product_category": t.crumb,
        "average_rating": rating,
        "total_reviews": 0 if rating is None else len(reviews) + rng.randint(0, 10 ** rng.randint(1, 4)),
        "small_description": make_bullets(t, rng, shown, banned),
        "customization_options": {name: [{"value": titled(v), "image": None} for v in values]
                                  for name, values in draw_options(t, rng).items()},
        "reviews": reviews,
    }
    return product, attrs


def make_products(t: ProductType, seed: int, asins: set[str], titles: set[str]) -> list[tuple[dict, list[str]]]:
    rng = random.Random(seed_of(seed, "products", t.query))
    brands = BRANDS[t.category]
    made = []
    for _ in range(rng.randint(*PRODUCTS_PER_TYPE)):
        for _attempt in range(50):
            product, attrs = make_product(t, rng, rng.choice(brands))
            if product["name"] not in titles:
                break
        require(product["name"] not in titles, f"{t.query}: no unused title after 50 draws")
        titles.add(product["name"])
        asin = ""
        while not asin or asin in asins:
            asin = "B0" + "".join(rng.choice(ASIN_CHARS) for _ in range(8))
        asins.add(asin)
        product["asin"] = asin
        made.append((product, attrs))
    return made


# ================================================================ goals
def instruction(t: ProductType, attrs: list[str], options: list[tuple[str, str]], upper: float,
                rng: random.Random) -> str:
    """A WebShop-style human instruction naming the type, every attribute and option, and the budget."""
    by_kind = {k: [a for a in attrs if kind(a) == k] for k in "afiw"}
    adjs = by_kind["a"]
    if adjs and rng.random() < 0.3 and not any(a.endswith(NOUN_ENDINGS) for a in adjs):
        phrase = f"{t.query} that {'are' if is_plural(t) else 'is'} {join_and(adjs)}"
    else:
        phrase = " ".join(adjs + [t.query])
    phrase = with_article(phrase, t)
    for k, joint in (("f", " for "), ("i", " in a "), ("w", " with ")):
        if by_kind[k]:
            phrase += joint + join_and(by_kind[k])
    text = f"{rng.choice(OPENERS)} {phrase}"
    if options:
        parts = [rng.choice(OPTION_PHRASES[name]).format(v=value, a=article(value)) for name, value in options]
        text += rng.choice((" ", " ", ", ")) + join_and(parts)
    return f"{text}, and price lower than {upper:.2f} dollars"


def option_values(product: dict) -> set[str]:
    """Every option value of the product, lower-cased as WebShop loads them."""
    return {o["value"].lower() for opts in product["customization_options"].values() for o in opts}


def satisfies(product: dict, attrs: list[str], goal: dict) -> bool:
    """Would buying ``product`` earn the goal's full reward (exact matching; the pools are fuzzy-distinct)?"""
    return (set(goal["attributes"]) <= set(attrs) and set(goal["goal_options"]) <= option_values(product)
            and min(prices_of(product["pricing"])) <= goal["price_upper"])


def make_goal(t: ProductType, target: tuple[dict, list[str]], others: list[tuple[dict, list[str]]],
              rng: random.Random, texts: set[str]) -> dict | None:
    """A goal for ``target`` in WebShop's resolved goal schema; of up to 30 draws, the first that no other
    product of the type fully satisfies, else the first unused one (None when every draw was taken)."""
    product, attrs = target
    options, names = product["customization_options"], list(product["customization_options"])
    fallback = None
    for _attempt in range(30):
        wanted = sorted(rng.sample(attrs, min(len(attrs), rng.choice((1, 2, 2, 3)))), key=attrs.index)
        k = 0 if not names or rng.random() < 0.05 else rng.randint(1, len(names))
        chosen = [(n, rng.choice(options[n])["value"].lower()) for n in sorted(rng.sample(names, k), key=names.index)]
        upper = price_upper(max(prices_of(product["pricing"])), rng)
        text = instruction(t, wanted, chosen, upper, rng)
        if text in texts:
            continue
        goal = {"asin": product["asin"], "category": t.category, "query": t.query, "name": product["name"],
                "product_category": t.crumb, "instruction_text": text, "attributes": wanted,
                "goal_options": [value for _, value in chosen], "price_upper": upper, "weight": 1.0}
        if not any(satisfies(p, a, goal) for p, a in others if p is not product):
            fallback = goal
            break
        fallback = fallback or goal
    if fallback is not None:
        texts.add(fallback["instruction_text"])
    return fallback


def make_goals(t: ProductType, products: list[tuple[dict, list[str]]], seed: int, texts: set[str]) -> list[dict]:
    rng = random.Random(seed_of(seed, "goals", t.query))
    goals = []
    for target in products:
        for _ in range(1 + (rng.random() < EXTRA_GOAL_SHARE)):
            goal = make_goal(t, target, products, rng, texts)
            if goal is not None:
                goals.append(goal)
    return goals


def assign_splits(goals: list[dict], seed: int) -> None:
    """About ``TEST_SHARE`` of the target products go to test, with all their goals."""
    asins = sorted({g["asin"] for g in goals})
    random.Random(seed_of(seed, "split")).shuffle(asins)
    test = set(asins[: round(TEST_SHARE * len(asins))])
    for g in goals:
        g["split"] = "test" if g["asin"] in test else "train"


# ================================================================ checks
def check_taxonomy(types: list[ProductType]) -> None:
    """Pools WebShop's fuzzy matching can tell apart, and text for every attribute."""
    require(len({t.query for t in types}) == len(types), "two product types share a query")
    known = {a for t in types for a in t.attrs}
    require(not (FOR_ATTRS | IN_ATTRS | WITH_ATTRS | set(CLAUSES)) - known, "a kind or text for an unknown attribute")
    require(not (FOR_ATTRS & IN_ATTRS or FOR_ATTRS & WITH_ATTRS or IN_ATTRS & WITH_ATTRS), "an attribute of two kinds")
    for t in types:
        require(6 <= len(t.attrs) <= 12 and len(set(t.attrs)) == len(t.attrs), f"{t.query}: 6 to 12 attributes")
        require(all(a in CLAUSES for a in t.attrs), f"{t.query}: no bullet text for {set(t.attrs) - set(CLAUSES)}")
        require(len(t.crumb.split(" › ")) >= 3 and t.query == t.query.lower(), f"{t.query}: query or breadcrumb")
        require(t.options and set(t.options) <= set(OPTION_PHRASES), f"{t.query}: unknown option type")
        require(t.price[1] < 900 and len(t.uses) >= 2 and len(t.feats) >= 3, f"{t.query}: price, uses or feats")
        values = [v for pool in t.options.values() for v in pool]
        require(len(set(values)) == len(values), f"{t.query}: an option value appears twice")
        require(all(len(pool) >= 2 for pool in t.options.values()), f"{t.query}: an option pool under 2 values")
        require(all(v == v.lower() and "/" not in v for v in values), f"{t.query}: option values lowercase, no '/'")
        for pool, what in ((t.attrs, "attributes"), (values, "option values")):
            for i, a in enumerate(pool):
                for b in pool[i + 1:]:
                    score = token_set_ratio(a, b)
                    require(score <= FUZZY_THRESHOLD, f"{t.query}: {what} {a!r} and {b!r} fuzzy match ({score:.0f})")


def check_product(p: dict, attrs: list[str], t: ProductType) -> None:
    asin = p["asin"]
    require(re.fullmatch(r"B0[A-Z0-9]{8}", asin) is not None, f"bad asin {asin}")
    require(re.fullmatch(r"\$\d+\.\d\d( - \$\d+\.\d\d)?", p["pricing"]) is not None, f"{asin}: pricing")
    require(max(prices_of(p["pricing"])) < PRICE_RANGE[-1], f"{asin}: price beyond WebShop's budget grid")
    require(3 <= len(p["small_description"]) <= 5, f"{asin}: 3 to 5 bullet points")
    require(p["average_rating"] is None or 3.0 <= p["average_rating"] <= 5.0, f"{asin}: rating")
    require(0 <= len(p["reviews"]) <= 3 and p["total_reviews"] >= len(p["reviews"]), f"{asin}: reviews")
    require(2 <= len(attrs) <= 5 and set(attrs) <= set(t.attrs), f"{asin}: attributes")
    options = p["customization_options"]
    require(len(options) <= 3 and all(2 <= len(v) <= 8 for v in options.values()), f"{asin}: options")
    require(len(option_values(p)) == sum(map(len, options.values())), f"{asin}: an option value twice")
    text = " ".join([p["name"], *p["small_description"], p["full_description"]])
    missing = [a for a in t.attrs if a not in attrs]
    require(not leaks(text, missing), f"{asin}: its text names an attribute it lacks")


def check_goal(g: dict, product: dict, attrs: list[str]) -> None:
    text, asin = g["instruction_text"], g["asin"]
    require(1 <= len(g["attributes"]) <= 3 and set(g["attributes"]) <= set(attrs), f"{asin}: goal attributes")
    values = {name: {o["value"].lower() for o in opts} for name, opts in product["customization_options"].items()}
    used: set[str] = set()
    for option in g["goal_options"]:
        names = [n for n, vs in values.items() if option in vs and n not in used]
        require(len(names) == 1, f"{asin}: goal option {option!r} is not one value of a distinct option type")
        used.add(names[0])
    require(g["price_upper"] > max(prices_of(product["pricing"])) and g["price_upper"] in PRICE_RANGE,
            f"{asin}: price_upper")
    require(text == text.lower() and g["query"] in text, f"{asin}: instruction must be lowercase and name the type")
    require(all(x in text for x in g["attributes"] + g["goal_options"]), f"{asin}: instruction misses a term")
    require(text.endswith(f", and price lower than {g['price_upper']:.2f} dollars"), f"{asin}: instruction ending")
    require(g["name"] == product["name"] and g["product_category"] == product["product_category"]
            and g["category"] == product["category"], f"{asin}: goal and product disagree")


def validate(products: list[dict], attributes: dict[str, list[str]], goals: list[dict],
             types: dict[str, ProductType]) -> None:
    """Fail loudly (SystemExit) before anything is written."""
    by_asin = {p["asin"]: p for p in products}
    require(len(by_asin) == len(products), "asins are not unique")
    require(len({p["name"] for p in products}) == len(products), "titles are not unique")
    require(set(attributes) == set(by_asin), "items_ins_v2 and the products list different asins")
    require(len({g["instruction_text"] for g in goals}) == len(goals), "two goals share an instruction")
    for p in products:
        check_product(p, attributes[p["asin"]], types[p["query"]])
    for g in goals:
        require(g["asin"] in by_asin, f"goal for unknown asin {g['asin']}")
        check_goal(g, by_asin[g["asin"]], attributes[g["asin"]])
    test = [g for g in goals if g["split"] == "test"]
    require(len(products) >= MIN_PRODUCTS and len(goals) >= MIN_GOALS, f"{len(products)} products, {len(goals)} goals")
    require(len(test) >= MIN_TEST_GOALS and 0.15 <= len(test) / len(goals) <= 0.25, f"{len(test)} test goals")
    for split in ("train", "test"):
        present = {g["category"] for g in goals if g["split"] == split}
        require(present == set(CATEGORIES), f"{split} lacks goals of {set(CATEGORIES) - present}")
    split_of: dict[str, str] = {}
    for g in goals:
        require(split_of.setdefault(g["asin"], g["split"]) == g["split"], f"{g['asin']}: goals in both splits")


def distractor_shares(goals: list[dict], products: list[dict], attributes: dict[str, list[str]]) -> dict:
    """Shares of goals with another product of the type that has some, but not all, of the goal's attributes
    and options (partial credit), and with one that satisfies the whole goal (full credit)."""
    by_query: dict[str, list[dict]] = {}
    for p in products:
        by_query.setdefault(p["query"], []).append(p)
    partial = full = 0
    for g in goals:
        wanted = set(g["attributes"]) | set(g["goal_options"])
        others = [p for p in by_query[g["query"]] if p["asin"] != g["asin"]]
        shared = [len(wanted & (set(attributes[p["asin"]]) | option_values(p))) for p in others]
        partial += any(0 < n < len(wanted) for n in shared)
        full += any(satisfies(p, attributes[p["asin"]], g) for p in others)
    return {"partial_credit_distractor": round(partial / len(goals), 4),
            "full_credit_distractor": round(full / len(goals), 4)}


# ================================================================ output
def json_lines(records: list) -> str:
    """A JSON list with one compact record per line (diff friendly, deterministic)."""
    rows = [json.dumps(r, ensure_ascii=False, sort_keys=True, separators=(",", ":")) for r in records]
    return "[\n" + ",\n".join(rows) + "\n]\n"


def write(out: Path, products: list[dict], attributes: dict[str, list[str]], goals: list[dict]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, filename="") as fh:  # no timestamp, no name
        fh.write(json_lines(products).encode("utf-8"))
    (out / "items_shuffle.json.gz").write_bytes(buffer.getvalue())
    rows = [json.dumps(asin) + ":" + json.dumps({"attributes": attributes[asin]}, ensure_ascii=False,
                                                separators=(",", ":")) for asin in sorted(attributes)]
    (out / "items_ins_v2.json").write_text("{\n" + ",\n".join(rows) + "\n}\n", encoding="utf-8", newline="\n")
    (out / "goals.json").write_text(json_lines(goals), encoding="utf-8", newline="\n")


def build(seed: int) -> tuple[list[dict], dict[str, list[str]], list[dict], dict[str, ProductType]]:
    types = {t.query: replace(t, category=c) for c in CATEGORIES for t in TAXONOMY[c]}
    check_taxonomy(list(types.values()))
    asins: set[str] = set()
    titles: set[str] = set()
    texts: set[str] = set()
    products, attributes, goals = [], {}, []
    for t in types.values():
        made = make_products(t, seed, asins, titles)
        goals += make_goals(t, made, seed, texts)
        for product, attrs in made:
            products.append(product)
            attributes[product["asin"]] = attrs
    rng = random.Random(seed)
    rng.shuffle(products)  # items_shuffle: categories mixed in file order
    rng.shuffle(goals)
    assign_splits(goals, seed)
    return products, attributes, goals, types


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "agentgym/data/webshop")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    products, attributes, goals, types = build(args.seed)
    validate(products, attributes, goals, types)
    write(args.out, products, attributes, goals)
    per_category = Counter(p["category"] for p in products)
    goal_counts = Counter((g["category"], g["split"]) for g in goals)
    stats = {
        "products": len(products), "goals": len(goals), "product_types": len(types),
        "train": sum(g["split"] == "train" for g in goals), "test": sum(g["split"] == "test" for g in goals),
        "per_category": {c: {"products": per_category[c], "train": goal_counts[c, "train"],
                             "test": goal_counts[c, "test"]} for c in CATEGORIES},
        "products_without_options": sum(not p["customization_options"] for p in products),
        "range_prices": sum(" - " in p["pricing"] for p in products),
        "goals_without_options": sum(not g["goal_options"] for g in goals),
        **distractor_shares(goals, products, attributes),
        "seconds": round(time.perf_counter() - start, 2),
    }
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
