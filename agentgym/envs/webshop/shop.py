"""One shopper's walk through the shop: WebShop's pages, actions and text observations.

Pages: search, results (10 per page of the top 50), item (with option buttons),
an item's description / features / reviews sub-page, and the receipt after
``Buy Now``. Actions are WebShop's ``search[query]`` (on the search page) and
``click[button]`` (any clickable of the page, case-insensitive). Observations are
WebShop's ``text`` mode: the page's text with ``[SEP]`` between elements.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentgym.envs.webshop.catalog import Catalog, Product

__all__ = ["ACTION", "ShopSession", "purchase_record"]

SEP = " [SEP] "
PAGE_SIZE = 10
SUB_PAGES = ("description", "features", "reviews")
BACK, PREV, NEXT, BUY = "back to search", "< prev", "next >", "buy now"
ACTION = re.compile(r"\b(search|click)\[(.*)\]", re.IGNORECASE)


def purchase_record(product: Product, options: Mapping[str, str]) -> dict[str, Any]:
    """What ``Buy Now`` records, in text mode and in the browser: what the reward is computed from."""
    return {"asin": product.asin, "product": product.reward_record(), "options": dict(options),
            "price": product.price}


@dataclass
class ShopSession:
    """The navigation state of one episode, driven by ``search`` and ``click``."""

    catalog: Catalog
    instruction: str
    page: str = "search"  # search | results | item | description | features | reviews | done
    query: str = ""
    results: list[str] = field(default_factory=list)
    page_num: int = 1
    asin: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    purchase: dict[str, Any] | None = None

    # ---- what the agent sees ---------------------------------------------------
    def available_actions(self) -> dict[str, Any]:
        """WebShop's ``get_available_actions()``: the search bar flag and the lower-cased clickables."""
        if self.page == "search":
            return {"has_search_bar": True, "clickables": ["search"]}
        if self.page == "results":
            clickables = [BACK] + ([PREV] if self.page_num > 1 else [])
            clickables += [NEXT] if self.page_num * PAGE_SIZE < len(self.results) else []
            return {"has_search_bar": False, "clickables": clickables + [a.lower() for a in self._page_asins()]}
        if self.page == "item":
            values = [v for values in self._product().options.values() for v in values]
            return {"has_search_bar": False, "clickables": [BACK, PREV, *values, *SUB_PAGES, BUY]}
        if self.page in SUB_PAGES:
            return {"has_search_bar": False, "clickables": [BACK, PREV]}
        return {"has_search_bar": False, "clickables": []}

    def observation(self) -> str:
        head = f"Instruction:{SEP}{self.instruction}"
        if self.page == "search":
            return f"WebShop{SEP}{head}{SEP}Search"
        if self.page == "results":
            return SEP.join([head, "Back to Search", *self._results_body()])
        if self.page == "done":
            return self._receipt()
        product = self._product()
        if self.page == "item":
            parts = [head, "Back to Search", "< Prev"]
            for kind, values in product.options.items():
                parts += [kind, *values]
            parts += [product.name, f"Price: {product.price_tag}", f"Rating: {product.rating}",
                      "Description", "Features", "Reviews", "Buy Now"]
            return SEP.join(parts)
        return SEP.join([head, "Back to Search", "< Prev", *self._sub_page(product)])

    def _results_body(self) -> list[str]:
        parts = [f"Page {self.page_num} (Total results: {len(self.results)})"]
        parts += ["< Prev"] if self.page_num > 1 else []
        parts += ["Next >"] if self.page_num * PAGE_SIZE < len(self.results) else []
        for asin in self._page_asins():
            product = self.catalog.products[asin]
            parts += [asin, product.name, product.price_tag]
        return parts

    def _sub_page(self, product: Product) -> list[str]:
        if self.page == "description":
            return [product.description or "No description."]
        if self.page == "features":
            return list(product.bullet_points) or ["No features."]
        reviews = [f"{r.get('title', '')}{SEP}{r.get('score', '')}{SEP}{r.get('body', '')}" for r in product.reviews]
        return reviews or ["No reviews."]

    def _receipt(self) -> str:
        bought = self.purchase or {}
        options = ", ".join(f"{k}: {v}" for k, v in bought.get("options", {}).items()) or "none"
        return SEP.join(["Thank you for shopping with us!", "Purchased", bought.get("asin", ""),
                         bought.get("product", {}).get("name", ""), f"Options: {options}",
                         f"Price: ${bought.get('price', 0.0):.2f}"])

    # ---- what the agent does ---------------------------------------------------
    def act(self, action: str) -> str | None:
        """Apply WebShop action text; returns what was wrong with it, or None."""
        match = ACTION.search(action or "")
        if match is None:
            return "Invalid action: write search[your query] or click[a button on the page]."
        verb, arg = match.group(1).lower(), match.group(2)
        return self.search(arg) if verb == "search" else self.click(arg)

    def search(self, query: str) -> str | None:
        if self.page != "search":
            return "Invalid action: search is only available on the search page; click[Back to Search] first."
        if not query.strip():
            return "Invalid action: the search query is empty; write search[what you are looking for]."
        self.query = query.strip()
        self.results = [p.asin for p in self.catalog.search(self.query)]
        self.page, self.page_num = "results", 1
        return None

    def click(self, target: str) -> str | None:
        wanted = target.strip().lower()
        clickables = self.available_actions()["clickables"]
        if self.page == "done":
            return "Invalid action: the order is placed; the episode is over."
        if wanted not in clickables:
            return f"Invalid action: {target.strip()!r} is not clickable on this page."
        if self.page == "search":  # its one button needs a query
            return "Invalid action: to search, write search[your query]."
        if wanted == BACK:
            self.page, self.query, self.results, self.asin, self.options = "search", "", [], None, {}
        elif wanted == NEXT:
            self.page_num += 1
        elif wanted == PREV:
            self._go_back()
        elif self.page == "results":
            self.page, self.asin, self.options = "item", wanted.upper(), {}
        elif wanted in SUB_PAGES:
            self.page = wanted
        elif wanted == BUY:
            self._buy()
        else:
            kind = self._product().option_type_of(wanted)
            self.options[kind] = wanted
        return None

    def _go_back(self) -> None:
        if self.page == "results":
            self.page_num -= 1
        elif self.page == "item":
            self.page, self.asin, self.options = "results", None, {}
        else:
            self.page = "item"

    def _buy(self) -> None:
        self.purchase = purchase_record(self._product(), self.options)
        self.page = "done"

    def _page_asins(self) -> list[str]:
        start = (self.page_num - 1) * PAGE_SIZE
        return self.results[start:start + PAGE_SIZE]

    def _product(self) -> Product:
        assert self.asin is not None  # item and sub-pages always have one
        return self.catalog.products[self.asin]
