"""The shop's catalog and goals, read from WebShop's own data files, and product search.

WebShop's files (Yao et al., 2022) and the bundled ones share one schema:

- products: ``items_shuffle*.json[.gz]``, a list of ``{asin, name, category, query,
  product_category, pricing, full_description, small_description, customization_options,
  average_rating, ...}``;
- attributes: ``items_ins_v2*.json``, ``{asin: {"attributes": [...]}}``;
- goals: either ``goals.json`` (resolved goals, a list of ``{asin, instruction_text,
  attributes, goal_options, price_upper, query, name, product_category, split}``, as the
  bundled data ships them) or WebShop's human instructions ``items_human_ins*.json``
  (``{asin: [{instruction, instruction_attributes, instruction_options}]}``), from which
  goals are derived as WebShop does: a budget drawn above the product's price, goals
  without attributes dropped, a seeded shuffle, then test / valid / train splits.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.core.shared import load_shared
from agentgym.errors import ConfigError, DataError

__all__ = ["Catalog", "Goal", "Product", "bundled_data_dir", "load_catalog", "option_value", "parse_pricing"]

PRICE_RANGE = tuple(10.0 * i for i in range(1, 100))
RESULTS_LIMIT = 50  # WebShop's search engine returns its top 50 products
# WebShop's split of the human goals after its seeded shuffle: test, then valid, then train.
SPLIT_SIZES = (("test", 500), ("valid", 1000))
_PRICE = re.compile(r"\$\s*([0-9][0-9,]*(?:\.[0-9]+)?)")


@dataclass(frozen=True)
class Product:
    """One product as the shop shows it; option values lower-cased as in WebShop."""

    asin: str
    name: str
    category: str
    query: str
    product_category: str
    pricing: tuple[float, ...]
    options: dict[str, tuple[str, ...]]
    attributes: tuple[str, ...]
    description: str
    bullet_points: tuple[str, ...]
    rating: str
    reviews: tuple[dict[str, Any], ...] = ()

    @property
    def price(self) -> float:
        """The price charged: the single price, or the low end of a range (WebShop's goal budgets start there)."""
        return self.pricing[0]

    @property
    def price_tag(self) -> str:
        if len(self.pricing) == 1:
            return f"${self.pricing[0]:.2f}"
        return f"${self.pricing[0]:.2f} to ${self.pricing[1]:.2f}"

    def reward_record(self) -> dict[str, Any]:
        """The fields WebShop's reward reads, as plain JSON."""
        return {"asin": self.asin, "name": self.name, "query": self.query, "category": self.category,
                "product_category": self.product_category, "attributes": list(self.attributes),
                "bullet_points": list(self.bullet_points), "description": self.description}

    def option_type_of(self, value: str) -> str | None:
        """The option type that offers ``value`` (case-insensitive), if any."""
        wanted = value.strip().lower()
        return next((kind for kind, values in self.options.items() if wanted in values), None)


@dataclass(frozen=True)
class Goal:
    """One shopping task: the instruction and what the reward compares the purchase with."""

    id: str
    asin: str
    instruction_text: str
    attributes: tuple[str, ...]
    goal_options: tuple[str, ...]
    price_upper: float
    query: str
    name: str
    product_category: str
    category: str
    split: str
    weight: float = 1.0

    def as_gold(self) -> dict[str, Any]:
        return {"asin": self.asin, "attributes": list(self.attributes), "goal_options": list(self.goal_options),
                "price_upper": self.price_upper, "query": self.query, "name": self.name,
                "product_category": self.product_category, "category": self.category}


@dataclass
class Catalog:
    """Products by asin, goals by split, and BM25 search over the products."""

    products: dict[str, Product]
    goals: list[Goal]
    source: str = ""
    cache_dir: str | None = None
    _retriever: Any = field(default=None, repr=False)

    def product(self, asin: str) -> Product | None:
        return self.products.get(asin.strip().upper())

    def search(self, query: str, limit: int = RESULTS_LIMIT) -> list[Product]:
        """The best ``limit`` products for ``query`` (BM25 over title, type, features, description)."""
        if self._retriever is None:
            self._retriever = self._build_retriever()
        return [self.products[p.id] for p in self._retriever.search(query, limit)]

    def _build_retriever(self) -> Any:
        from agentgym.envs.search.retrieval import Corpus, make_retriever

        corpus = Corpus()
        for p in self.products.values():
            options = " ".join(v for values in p.options.values() for v in values)
            corpus.add(p.asin, p.name, " ".join((p.query, p.product_category, " ".join(p.bullet_points),
                                                 p.description, " ".join(p.attributes), options)))
        return make_retriever("bm25", corpus=corpus, cache_dir=self.cache_dir)


def bundled_data_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "data" / "webshop"


def _read_json(path: Path) -> Any:
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return json.load(f)
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, EOFError) as e:
        raise DataError(f"Cannot read WebShop file {path}: {e}") from e


def _find(data_dir: Path, stem: str, *, required: bool = True) -> Path | None:
    hits = sorted(p for p in data_dir.iterdir() if p.name.startswith(stem) and p.name.endswith((".json", ".json.gz")))
    if not hits and required:
        raise DataError(f"{data_dir} has no {stem}*.json file; a WebShop data directory holds "
                        "items_shuffle*.json, items_ins_v2*.json and goals.json or items_human_ins*.json.")
    return hits[0] if hits else None


def parse_pricing(pricing: Any) -> tuple[float, ...]:
    """WebShop's price field (``"$12.99"``, ``"$10.99 - $15.99"``, a number or a list) as floats."""
    if isinstance(pricing, (int, float)):
        return (float(pricing),)
    if isinstance(pricing, list) and pricing:
        return tuple(float(p) for p in pricing[:2])
    prices = tuple(float(m.replace(",", "")) for m in _PRICE.findall(str(pricing or "")))[:2]
    return prices or (100.0,)  # WebShop's default for an unpriced product


def option_value(value: Any) -> str:
    """An option value as the shop shows it: WebShop lower-cases it and writes "/" as " | "."""
    return str(value).strip().replace("/", " | ").lower()


def _product(record: Mapping[str, Any], attributes: Sequence[str]) -> Product:
    options: dict[str, tuple[str, ...]] = {}
    for kind, contents in (record.get("customization_options") or {}).items():
        values = tuple(option_value(c["value"]) for c in contents or () if isinstance(c, Mapping) and c.get("value"))
        if values:
            options[str(kind).strip().lower()] = values
    bullets = record.get("small_description") or []
    bullets = [bullets] if isinstance(bullets, str) else bullets
    rating = record.get("average_rating")
    return Product(
        asin=str(record["asin"]).strip().upper(), name=str(record.get("name") or record.get("Title") or ""),
        category=str(record.get("category") or ""), query=str(record.get("query") or "").strip().lower(),
        product_category=str(record.get("product_category") or ""), pricing=parse_pricing(record.get("pricing")),
        options=options, attributes=tuple(str(a) for a in attributes),
        description=str(record.get("full_description") or ""), bullet_points=tuple(str(b) for b in bullets),
        rating="N.A." if rating in (None, "") else str(rating),
        reviews=tuple(r for r in record.get("reviews") or record.get("Reviews") or () if isinstance(r, Mapping)))


def _load_products(data_dir: Path) -> dict[str, Product]:
    records = _read_json(_find(data_dir, "items_shuffle"))
    if not isinstance(records, list):
        raise DataError(f"{data_dir}: the items_shuffle file must hold a JSON list of products.")
    attributes_path = _find(data_dir, "items_ins_v2", required=False)
    attributes = _read_json(attributes_path) if attributes_path else {}
    products: dict[str, Product] = {}
    for i, record in enumerate(records):
        if not isinstance(record, Mapping) or not record.get("asin"):
            raise DataError(f"{data_dir}: product {i} has no 'asin'.")
        asin = str(record["asin"]).strip().upper()
        if asin in products:  # WebShop keeps the first of duplicated asins
            continue
        extra = attributes.get(record["asin"]) or attributes.get(asin) or {}
        products[asin] = _product(record, extra.get("attributes") or [])
    if not products:
        raise DataError(f"{data_dir}: no products.")
    return products


def _resolved_goals(records: list[Mapping[str, Any]], products: Mapping[str, Product]) -> list[Goal]:
    goals = []
    for i, g in enumerate(records):
        asin = str(g.get("asin", "")).strip().upper()
        if asin not in products:
            raise DataError(f"goals.json goal {i}: asin {g.get('asin')!r} is not in the catalog.")
        p = products[asin]
        options = g.get("goal_options") or []
        goals.append(Goal(
            id=str(g.get("id") or f"goal-{i:04d}"), asin=asin, instruction_text=str(g["instruction_text"]),
            attributes=tuple(g.get("attributes") or ()),
            goal_options=tuple(option_value(o) for o in (options.values() if isinstance(options, Mapping) else options)),
            price_upper=float(g.get("price_upper") or 0.0), query=str(g.get("query") or p.query),
            name=str(g.get("name") or p.name), product_category=str(g.get("product_category") or p.product_category),
            category=str(g.get("category") or p.category), split=str(g.get("split") or "test"),
            weight=float(g.get("weight") or 1.0)))
    return goals


def _human_goals(instructions: Mapping[str, Any], products: Mapping[str, Product], seed: int) -> list[Goal]:
    """Goals from WebShop's human instructions, the way WebShop derives them."""
    rng = random.Random(seed)
    drafts = []
    for raw_asin, entries in instructions.items():
        product = products.get(str(raw_asin).strip().upper())
        for entry in entries if product is not None else ():
            if not entry.get("instruction_attributes"):
                continue  # WebShop drops goals without attributes
            candidates = [p for p in PRICE_RANGE if p > product.pricing[0]][:4]
            if len(candidates) >= 2:
                price_upper = sorted(rng.sample(candidates, 2))[1]
                price_text = f", and price lower than {price_upper:.2f} dollars"
            else:
                price_upper, price_text = 1_000_000.0, ""
            drafts.append((product, entry, price_upper, str(entry["instruction"]).strip().rstrip(".") + price_text))
    rng.shuffle(drafts)
    goals = []
    for i, (product, entry, price_upper, text) in enumerate(drafts):
        split = "train"
        start = 0
        for name, size in SPLIT_SIZES:
            if start <= i < start + size:
                split = name
                break
            start += size
        goals.append(Goal(
            id=f"goal-{i:05d}", asin=product.asin, instruction_text=text,
            attributes=tuple(entry["instruction_attributes"]),
            goal_options=tuple(option_value(o) for o in entry.get("instruction_options") or ()),
            price_upper=price_upper,
            query=product.query, name=product.name, product_category=product.product_category,
            category=product.category, split=split))
    return goals


def load_catalog(data_dir: str | Path | None = None, *, seed: int = 233, cache_dir: str | None = None) -> Catalog:
    """The catalog in ``data_dir`` (WebShop's files), or the bundled one."""
    path = Path(data_dir) if data_dir is not None else bundled_data_dir()
    if not path.is_dir():
        raise ConfigError(f"WebShop data_dir {path} is not a directory.")
    # Catalogs are read-only: every env of a process (a server's sessions) shares one.
    return load_shared(_read_catalog, str(path.resolve()), seed, cache_dir)


def _read_catalog(path: str, seed: int, cache_dir: str | None) -> Catalog:
    data_dir = Path(path)
    products = _load_products(data_dir)
    goals_file = data_dir / "goals.json"
    if goals_file.is_file():
        records = _read_json(goals_file)
        if not isinstance(records, list):
            raise DataError(f"{goals_file} must hold a JSON list of goals.")
        goals = _resolved_goals(records, products)
    else:
        human = _find(data_dir, "items_human_ins", required=False)
        if human is None:
            raise DataError(f"{data_dir} has neither goals.json nor items_human_ins*.json: no goals to play.")
        goals = _human_goals(_read_json(human), products, seed)
    if not goals:
        raise DataError(f"{data_dir}: no usable goals (every goal needs at least one attribute).")
    return Catalog(products=products, goals=goals, source=path, cache_dir=cache_dir)
