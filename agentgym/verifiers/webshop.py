"""WebShop's reward: how well a purchase matches the goal (Yao et al., 2022, section 3.1).

    reward = r_type * (n_attributes_matched + n_options_matched + 1[price <= budget])
                    / (n_goal_attributes + n_goal_options + 1)

- attributes: a goal attribute matches when one of the product's attributes is a
  fuzzy match (token-set ratio > 85), or when it appears verbatim in the product's
  title, bullet points or description;
- options: a goal option matches when one of the chosen options is a fuzzy match
  (token-set ratio > 85), after colours are reduced to a base colour word;
- r_type: 1 when the product is of the goal's type (same search query, or >= 2
  shared product-category levels, or title nouns overlap by more than 20 %); 0.5
  when none of these holds; 0.1 when the title overlap is below 10 %; 0 when it is 0.

A purchase is scored in the calling process when an upper bound on what scoring
it costs (``_work``: substring tests cost at most the product of the lengths,
fuzzy matches the product of theirs, the rest is linear) is small, and its
fields are plain text; else in a verifier worker under the time budget. The same
``_verify_purchase`` runs in both places.

One substitution, documented in the README: WebShop finds the title nouns with
spaCy's ``en_core_web_lg`` part-of-speech tagger, which is not on PyPI. Here the
"nouns" are the title's content words (letters only, English stopwords and
numbers removed). Product titles are noun-heavy, so the two agree on type
matches; every other term is WebShop's.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentgym.errors import DependencyNotInstalled, VerifierError
from agentgym.verifiers.budget import run_budgeted
from agentgym.verifiers.outcome import Outcome
from agentgym.verifiers.score import Score

__all__ = ["Purchase", "attribute_matches", "option_matches", "title_nouns", "type_reward", "verify_purchase",
           "verify_webshop"]

FUZZY_THRESHOLD = 85
# Size bounds, checked before any matching (goal attributes x product attributes fuzzy matches): far above real
# WebShop records (a few attributes and options, product pages of a few thousand characters).
_MAX_GOAL_ITEMS = 100
_MAX_PRODUCT_ITEMS = 500
_MAX_RECORD_CHARS = 500_000
# In process at most this much work (see _work), in character comparisons: a few ms at worst, ~0.1 ms for a real
# record. A call (a fuzzy match, a colour lookup) counts as 5,000 (~4 us measured), a character read by Python-level
# code (lower-casing, splitting, tokenising words) as 50, a character looked up among the colour names as 64.
_IN_PROCESS_WORK = 4_000_000
_CALL_WORK = 5_000
_CHAR_WORK = 50
_COLOR_CHAR_WORK = 64
# Longer names first, so "light blue" wins over "blue"; a chosen option is reduced to the first hit.
_COLORS = tuple(sorted((
    "beige", "black", "blue", "brown", "burgundy", "charcoal", "coral", "cream", "gold", "gray", "green",
    "grey", "ivory", "khaki", "lavender", "light blue", "light gray", "light grey", "light pink", "maroon",
    "mint", "multicolor", "navy", "navy blue", "nude", "olive", "orange", "pink", "purple", "red", "rose gold",
    "silver", "tan", "teal", "turquoise", "white", "wine", "yellow", "dark blue", "dark brown", "dark green",
    "dark gray", "dark grey", "sky blue", "royal blue", "army green", "hot pink", "natural", "clear",
), key=lambda c: (-len(c), c)))
_STOPWORD_TEXT = """
a about above after again against all am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
now of off on once only or other our ours ourselves out over own same she should so some such than that the
their theirs them themselves then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours yourself yourselves pack pcs
piece pieces set count inch inches oz fl ml lb lbs ft cm mm x
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class Purchase(Outcome):
    """What ``Buy Now`` recorded: the product (WebShop's reward fields), the options chosen, the price paid.

    The fields hold what the record held: a record from the wire is checked when
    it is scored (``verify_purchase``), not here.

    >>> purchase = Purchase.from_record({"asin": "B01", "product": {"name": "Lipstick"}, "options": {}, "price": 9.5})
    >>> purchase.as_answer()
    '{"asin": "B01", "options": {}, "price": 9.5, "product": {"name": "Lipstick"}}'
    >>> Purchase.from_record(json.loads(purchase.as_answer())) == purchase
    True
    """

    product: Mapping[str, Any]
    options: Mapping[str, str] = field(default_factory=dict)
    price: float | None = None
    asin: str | None = None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Purchase:
        """A purchase from its record, ``{"asin", "product", "options", "price"}`` (the shop's and the wire's form)."""
        return cls(product=record.get("product"), options=record.get("options") or {},  # type: ignore[arg-type]
                   price=record.get("price"), asin=record.get("asin"))

    def as_record(self) -> dict[str, Any]:
        product = dict(self.product) if isinstance(self.product, Mapping) else self.product
        options = dict(self.options) if isinstance(self.options, Mapping) else self.options
        return {"asin": self.asin, "product": product, "options": options, "price": self.price}

    def as_answer(self) -> str:
        return json.dumps(self.as_record(), ensure_ascii=False, sort_keys=True)


def _token_set_ratio(a: str, b: str) -> float:
    try:
        from rapidfuzz import fuzz, utils
    except ImportError as e:
        raise DependencyNotInstalled("rapidfuzz", "pip install 'agentgym-suite[webshop]'") from e
    # thefuzz (WebShop's matcher) lower-cases and strips punctuation first; rapidfuzz does so when asked
    return fuzz.token_set_ratio(a, b, processor=utils.default_process)


def normalize_color(option: str) -> str:
    """An option reduced to its base colour when it names one, else the option itself.

    >>> normalize_color("Navy Blue Stripe"), normalize_color("XL")
    ('navy blue', 'XL')
    """
    lowered = option.lower()
    return next((c for c in _COLORS if c in lowered), option)


def title_nouns(title: str) -> set[str]:
    """The title's content words: WebShop's spaCy nouns, approximated without a tagger.

    >>> sorted(title_nouns("Men's Waterproof Ski Pants, 2 Pack"))
    ['men', 'pants', 'ski', 'waterproof']
    """
    return {w for w in _WORD.findall(title.lower().replace("'s", "")) if len(w) > 1 and w not in _STOPWORDS}


def type_reward(product: Mapping[str, Any], goal: Mapping[str, Any]) -> dict[str, Any]:
    """``r_type`` and what decided it: query match, category overlap, title-noun overlap."""
    query_match = bool(product.get("query")) and product.get("query") == goal.get("query")
    categories = [{c.strip() for c in str(x.get("product_category") or "").split("›") if c.strip()}
                  for x in (product, goal)]
    category_match = len(categories[0] & categories[1]) >= 2
    wanted = title_nouns(str(goal.get("name") or ""))
    got = title_nouns(str(product.get("name") or product.get("title") or ""))
    title_score = len(wanted & got) / len(wanted) if wanted else 0.2
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {"r_type": r_type, "query_match": query_match, "category_match": category_match,
            "title_score": round(title_score, 4)}


def attribute_matches(product: Mapping[str, Any], goal_attributes: Iterable[str]) -> list[str]:
    """The goal attributes the product has (fuzzy over its attributes, verbatim in its text).

    >>> attribute_matches({"attributes": ["long-lasting"], "name": "Matte Lipstick", "bullet_points": [],
    ...                    "description": "Cruelty free formula."}, ["long lasting", "cruelty free", "vegan"])
    ['long lasting', 'cruelty free']
    """
    attributes = [str(a) for a in product.get("attributes") or []]
    texts = (str(product.get("name") or product.get("title") or "").lower(),
             " ".join(str(b) for b in product.get("bullet_points") or []).lower(),
             str(product.get("description") or "").lower())
    matched = []
    for wanted in goal_attributes:
        if (any(_token_set_ratio(have, wanted) > FUZZY_THRESHOLD for have in attributes)
                or any(wanted.lower() in text for text in texts)):
            matched.append(wanted)
    return matched


def option_matches(chosen: Iterable[str], goal_options: Iterable[str]) -> list[str]:
    """The goal options among the chosen ones (fuzzy, colours reduced to a base colour).

    >>> option_matches(["Navy Blue", "Large"], ["navy blue", "medium"])
    ['navy blue']
    """
    chosen = [normalize_color(str(o)) for o in chosen]
    return [wanted for wanted in goal_options
            if any(_token_set_ratio(have, normalize_color(str(wanted))) > FUZZY_THRESHOLD for have in chosen)]


def _goal_options(goal: Mapping[str, Any]) -> list[str]:
    options = goal.get("goal_options") or []
    return [str(v) for v in (options.values() if isinstance(options, Mapping) else options)]


def _too_big(record: Mapping[str, Any], lists: tuple[str, ...], limit: int) -> str | None:
    """Why ``record`` is past the size bounds (items in each list, characters in all), or None."""
    for key in lists:
        items = record.get(key) or []
        if isinstance(items, (list, tuple, Mapping)) and len(items) > limit:
            return f"{key!r} has {len(items)} entries (at most {limit})"
    size = len(json.dumps(record, default=str))
    return f"{size} characters (at most {_MAX_RECORD_CHARS})" if size > _MAX_RECORD_CHARS else None


def verify_purchase(purchase: Purchase | None, goal: Mapping[str, Any], *, budget_s: float | None = None) -> Score:
    """WebShop's reward for ``purchase`` against ``goal``; no purchase scores 0.

    ``purchase.product`` has WebShop's reward fields (``name``, ``query``, ``product_category``,
    ``attributes``, ``bullet_points``, ``description``); ``goal`` has ``query``, ``name``,
    ``product_category``, ``attributes``, ``goal_options`` (list or dict) and ``price_upper``
    (no budget when missing or <= 0). A purchase record (a mapping) is accepted for
    one more release, with a ``DeprecationWarning``: pass ``Purchase.from_record(record)``.

    >>> goal = {"query": "lipstick", "name": "Rouge Matte Lipstick", "product_category": "Beauty › Lips",
    ...         "attributes": ["long lasting"], "goal_options": ["red"], "price_upper": 20.0}
    >>> product = {"query": "lipstick", "name": "Rouge Matte Lipstick", "product_category": "Beauty › Lips",
    ...            "attributes": ["long lasting"]}
    >>> verify_purchase(Purchase(product, {"color": "Red"}, 12.0), goal).reward
    1.0
    >>> verify_purchase(Purchase(product, {"color": "Pink"}, 25.0), goal).reward
    0.3333
    """
    if isinstance(purchase, Mapping):
        warnings.warn("verify_purchase() takes a Purchase; a purchase record (mapping) is accepted until the next "
                      "release: pass Purchase.from_record(record).", DeprecationWarning, stacklevel=2)
        purchase = Purchase.from_record(purchase) if purchase else None
    if purchase is not None and not isinstance(purchase, Purchase):
        return Score(0.0, False, {"reason": "the prediction is not a purchase record (JSON object)"})
    if purchase is None or not purchase.product:
        return Score(0.0, False, {"reason": "nothing was bought"})
    if not isinstance(goal, Mapping):
        raise VerifierError("The WebShop verifier needs the goal as a mapping.")
    if (why := _too_big(goal, ("attributes", "goal_options"), _MAX_GOAL_ITEMS)) is not None:
        raise VerifierError(f"The WebShop goal is too large to score: {why}; fix the task data.")
    if (why := _malformed_goal(goal)) is not None:
        raise VerifierError(f"The WebShop goal cannot be scored: {why}; fix the task data.")
    if (why := _malformed(purchase)) is not None:
        return Score(0.0, False, {"reason": why})
    record, goal = purchase.as_record(), dict(goal)
    if _work(record, goal) <= _IN_PROCESS_WORK:
        return _verify_purchase(record, goal)
    return run_budgeted(_verify_purchase, record, goal, budget_s=budget_s, verifier="webshop")


def _malformed_goal(goal: Mapping[str, Any]) -> str | None:
    """Why a goal (the task's, or a ``/v1/verify`` client's) is not one WebShop's reward is defined on, or None:
    it names what is wanted (a ``name`` with a word the type reward matches), and each field it has is of its
    type."""
    texts = ("query", "name", "product_category", "asin")
    for key in texts:
        if goal.get(key) is not None and not isinstance(goal[key], str):
            return f"{key!r} must be text, got {type(goal[key]).__name__}"
    attributes = goal.get("attributes")
    if attributes is not None and not (isinstance(attributes, (list, tuple)) and all(
            isinstance(a, str) for a in attributes)):
        return "'attributes' must be a list of text"
    options = goal.get("goal_options")
    if options is not None and not (
            (isinstance(options, (list, tuple)) and all(isinstance(o, str) for o in options))
            or (isinstance(options, Mapping) and all(isinstance(v, str) for v in options.values()))):
        return "'goal_options' must be a list of text or a mapping of option to text"
    price = goal.get("price_upper")
    if price is not None and (isinstance(price, bool) or not isinstance(price, (int, float))):
        return f"'price_upper' must be a number, got {type(price).__name__}"
    if not any(goal.get(key) for key in ("name", "query", "attributes")):
        return "it names nothing wanted (no 'name', 'query' or 'attributes'), so any purchase would score"
    if not title_nouns(str(goal.get("name") or "")):
        # the type reward matches the nouns of the goal's name: without one, any product's type scores 0.5 or more
        return ("its 'name' has no word the type reward can match (WebShop scores a product's type by the nouns "
                "of the goal's name), so any purchase would score")
    return None


def _malformed(purchase: Purchase) -> str | None:
    """Why a purchase (from the wire: any JSON) cannot be scored, or None."""
    product = purchase.product
    if not isinstance(product, Mapping):
        return "the purchase's product is not a record (JSON object)"
    why = _too_big(product, ("attributes", "bullet_points"), _MAX_PRODUCT_ITEMS) or _too_big(
        {"options": purchase.options or {}}, ("options",), _MAX_GOAL_ITEMS)
    if why is not None:
        return f"the purchase is too large to score: {why}"
    if not isinstance(purchase.options or {}, Mapping):
        return "the purchase's options are not a record {type: value}"
    price = purchase.price
    if price is not None and (isinstance(price, bool) or not isinstance(price, (int, float)) or price != price):
        return f"the purchase's price is not a number: {str(price)[:50]!r}"
    return None


def _work(record: Mapping[str, Any], goal: Mapping[str, Any]) -> float:
    """An upper bound on what ``_verify_purchase(record, goal)`` costs, in character comparisons; inf when a field
    it reads is not plain (text, a list of texts, a mapping of texts, a number), whose ``str()`` could be anything.

    A substring test costs at most the product of its two lengths (lower-casing at most doubles a length), a
    fuzzy match a call plus the product of its strings' lengths; everything else is linear.
    """
    product, options = record["product"], goal.get("goal_options")
    texts = [_text(product.get(k)) for k in ("query", "product_category", "name", "title", "description")]
    texts += [_text(goal.get(k)) for k in ("query", "product_category", "name")]
    attributes, bullets = _texts(product.get("attributes")), _texts(product.get("bullet_points"))
    wanted_attributes = _texts(goal.get("attributes"))
    wanted_options = _texts(list(options.values()) if isinstance(options, Mapping) else options)
    chosen = _texts(list((record.get("options") or {}).values()))
    price_upper = goal.get("price_upper")
    if (None in texts or attributes is None or bullets is None or wanted_attributes is None
            or wanted_options is None or chosen is None or not (price_upper is None or _is_number(price_upper))):
        return math.inf
    searched = sum(texts[2:5]) + sum(bullets) + len(bullets)  # the name (or title), bullet points, description
    wanted, options_wanted = sum(wanted_attributes), sum(wanted_options)
    matches = len(wanted_attributes) * len(attributes) + len(wanted_options) * len(chosen)  # fuzzy, each pair
    colour_lookups = len(chosen) * (1 + len(wanted_options))
    return (_CHAR_WORK * (sum(texts) + sum(bullets) + sum(attributes) + wanted + options_wanted)
            + 4 * wanted * searched  # each wanted attribute looked for in the text
            + _CALL_WORK * (matches + colour_lookups)
            + wanted * sum(attributes) + options_wanted * sum(chosen)  # the fuzzy matches' own lengths
            + _COLOR_CHAR_WORK * (sum(chosen) + len(chosen) * options_wanted))


def _text(value: Any) -> int | None:
    """The length of a text field (absent: 0), None when it is not text."""
    return 0 if value is None else len(value) if isinstance(value, str) else None


def _texts(values: Any) -> list[int] | None:
    """The lengths of a list of texts (absent: none), None when it is not one."""
    if values is None:
        return []
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        return None
    return [len(v) for v in values]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _verify_purchase(purchase: Mapping[str, Any], goal: Mapping[str, Any]) -> Score:
    product = purchase["product"]
    chosen = dict(purchase.get("options") or {})
    goal_attributes = [str(a) for a in goal.get("attributes") or []]
    goal_options = _goal_options(goal)
    type_details = type_reward(product, goal)
    attrs = attribute_matches(product, goal_attributes)
    options = option_matches(chosen.values(), goal_options)
    price = float(purchase.get("price") or 0.0)
    budget = float(goal.get("price_upper") or 0.0)
    price_ok = budget <= 0 or price <= budget
    total = (len(attrs) + len(options) + int(price_ok)) / (len(goal_attributes) + len(goal_options) + 1)
    reward = round(total * type_details["r_type"], 4)
    details = {
        **type_details,
        "asin": product.get("asin"), "goal_asin": goal.get("asin"),
        "attributes_matched": attrs, "attributes_wanted": goal_attributes,
        "r_att": round(len(attrs) / len(goal_attributes), 4) if goal_attributes else None,
        "options_matched": options, "options_wanted": goal_options, "options_chosen": chosen,
        "r_option": round(len(options) / len(goal_options), 4) if goal_options else None,
        "price": price, "price_upper": budget, "r_price": price_ok,
    }
    return Score(reward, reward >= 1.0, details)


def verify_webshop(prediction: str | Mapping[str, Any] | Purchase | None, gold: Mapping[str, Any], *,
                   budget_s: float | None = None) -> Score:
    """The by-name entry point (``/v1/verify``): ``prediction`` is the purchase as JSON text, as
    ``info["answer"]`` carries it (or its record, or a ``Purchase``); ``gold`` the goal or ``{"goal": ...}``."""
    if isinstance(prediction, str):
        if len(prediction) > _MAX_RECORD_CHARS:
            return Score(0.0, False, {"reason": f"the purchase is too large to score: {len(prediction)} characters "
                                                f"(at most {_MAX_RECORD_CHARS})"})
        try:
            prediction = json.loads(prediction) if prediction.strip() else None
        except json.JSONDecodeError:
            return Score(0.0, False, {"reason": "the prediction is not a purchase record (JSON)"})
    if prediction is not None and not isinstance(prediction, (Mapping, Purchase)):
        return Score(0.0, False, {"reason": "the prediction is not a purchase record (JSON object)"})
    if isinstance(prediction, Mapping):
        prediction = Purchase.from_record(prediction) if prediction else None
    return verify_purchase(prediction, gold.get("goal", gold), budget_s=budget_s)
