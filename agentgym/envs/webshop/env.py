"""``agentgym/WebShop-v0``: WebShop's text-mode shopping task with WebShop's reward."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentgym.core.env import AgentEnv, EnvDefaults
from agentgym.core.formats import ActionFormat, ParsedAction, ToolResult
from agentgym.core.task import Task, TaskList
from agentgym.core.tools import Tool, ToolCall
from agentgym.envs.webshop.catalog import Catalog, load_catalog
from agentgym.envs.webshop.shop import ACTION, PAGE_SIZE, ShopSession
from agentgym.verifiers import Score
from agentgym.verifiers.budget import budget_seconds
from agentgym.verifiers.webshop import Purchase, verify_purchase

__all__ = ["WebShopEnv", "WebShopFormat", "goal_tasks"]

_INSTRUCTIONS = (
    "You are shopping on WebShop to buy the product the instruction describes. Each turn, read the page "
    "and write exactly one action: search[your query] on the search page, or click[button] to click one "
    "of the page's buttons, links or product ids (for example click[Next >], click[B07XYZ1234], "
    "click[large], click[Buy Now]). Pick the options the instruction asks for before you click Buy Now; "
    "buying ends the episode."
)
_TOOL_INSTRUCTIONS = (
    "You are shopping on WebShop to buy the product the instruction describes. Use the search tool on "
    "the search page and the click tool for the page's buttons, links and product ids. Pick the options "
    "the instruction asks for before you click Buy Now; buying ends the episode."
)


class WebShopFormat(ActionFormat):
    """WebShop's own action text: ``search[query]`` or ``click[button]`` (first one in the text)."""

    name = "webshop"
    has_answer = False

    def parse(self, text: str, tools: Mapping[str, Tool]) -> ParsedAction:
        if not isinstance(text, str):
            return ParsedAction(error=f"Expected the action as text, got {type(text).__name__}.")
        match = ACTION.search(text)
        if match is None:
            return ParsedAction(error="No valid action found. Write search[your query] on the search page, "
                                      "or click[button] with a button of the page.")
        verb, arg = match.group(1).lower(), match.group(2).strip()
        key = "query" if verb == "search" else "element"
        return ParsedAction(tool_calls=(ToolCall(verb, {key: arg}),))

    def render_call(self, call: ToolCall, tools: Mapping[str, Tool]) -> str:
        arg = call.arguments.get("query", call.arguments.get("element", ""))
        return f"{call.name}[{arg}]"

    def render_answer(self, answer: str) -> str:
        # WebShop has no answer action: buying ends the episode, and this is how to buy
        return "click[Buy Now]"

    def render_results(self, results: Sequence[ToolResult]) -> str:
        return "\n".join(r.output for r in results)

    def instructions(self, tools: Mapping[str, Tool]) -> str:
        return "Actions: search[query] on the search page; click[button] for a button, link or product id."


def goal_tasks(catalog: Catalog) -> TaskList:
    """One task per goal: the instruction as prompt, the goal as (privileged) gold."""
    return TaskList(Task(id=g.id, prompt=g.instruction_text, gold=g.as_gold(), split=g.split,
                         meta={"category": g.category, "weight": g.weight}) for g in catalog.goals)


class WebShopEnv(AgentEnv[Purchase]):
    """WebShop (Yao et al., 2022) in text mode: search and click until ``Buy Now``.

    Observations are WebShop's ``text`` pages with ``[SEP]`` separators; ``info``
    carries ``available_actions`` (``has_search_bar``, ``clickables``) as WebShop's
    ``get_available_actions()``. The reward is WebShop's (type x mean of attribute,
    option and price matches), computed from what was bought; running out of turns
    without buying scores 0. Defaults to the bundled catalog; pass ``data_dir`` for
    WebShop's own files (``items_shuffle*.json``, ``items_ins_v2*.json``,
    ``items_human_ins*.json``).
    """

    defaults = EnvDefaults(action_format="webshop", max_turns=15)

    def __init__(self, *, data_dir: str | Path | None = None, cache_dir: str | Path | None = None,
                 verifier_budget_s: float | None = None, **base: Any) -> None:
        budget_seconds(verifier_budget_s)  # a bad budget is an error here, not at the end of an episode
        self.verifier_budget_s = verifier_budget_s
        self.catalog = load_catalog(data_dir, cache_dir=None if cache_dir is None else str(cache_dir))
        self._shop: ShopSession | None = None
        super().__init__(tasks=goal_tasks(self.catalog), **base)

    def make_action_format(self, spec: str | ActionFormat) -> ActionFormat:
        return WebShopFormat() if spec == "webshop" else super().make_action_format(spec)

    def make_tools(self) -> Sequence[Tool]:
        return [
            Tool("search", "Search the shop (only on the search page); returns the results page.",
                 {"type": "object", "properties": {"query": {"type": "string", "description": "What to search for."}},
                  "required": ["query"]}, fn=lambda query: self._act("search", query)),
            Tool("click", "Click a button, link, option or product id of the current page.",
                 {"type": "object", "properties": {"element": {"type": "string",
                  "description": "The text of what to click, e.g. 'Buy Now', 'Next >', an asin, an option."}},
                  "required": ["element"]}, fn=lambda element: self._act("click", element)),
        ]

    @property
    def shop(self) -> ShopSession:
        if self._shop is None:
            self._shop = ShopSession(self.catalog, "")
        return self._shop

    def on_reset(self, task: Task) -> None:
        self._shop = ShopSession(self.catalog, task.prompt)

    def _act(self, verb: str, arg: str) -> str:
        shop = self.shop
        error = shop.search(arg) if verb == "search" else shop.click(arg)
        if error is None:
            return shop.observation()
        clickables = shop.available_actions()["clickables"]
        hint = "search[...]" if shop.page == "search" else "click[...] with one of: " + ", ".join(clickables)
        return f"{error} Available: {hint}.\n{shop.observation()}"

    def build_prompt(self, task: Task) -> str:
        page = self.shop.observation()
        if isinstance(self.action_format, WebShopFormat):
            return f"{_INSTRUCTIONS}\n\n{page}"
        return f"{_TOOL_INSTRUCTIONS}\n{self.action_format.instructions(self.tools)}\n\n{page}"

    def episode_outcome(self) -> Purchase | None:
        """What ``Buy Now`` recorded; buying ends the episode."""
        purchase = self.shop.purchase
        return None if purchase is None else Purchase.from_record(purchase)

    def extra_info(self) -> dict[str, Any]:
        shop = self.shop
        return {"available_actions": shop.available_actions(), "page": shop.page,
                "selected_options": dict(shop.options)}

    def verify(self, outcome: Purchase | None, task: Task) -> Score:
        """WebShop's reward for what the shop recorded. An answer (``tags``/``hermes``/``dict`` formats) is
        not an outcome of this env: an <answer> holding a made-up purchase record scores as no purchase."""
        return verify_purchase(outcome, task.gold, budget_s=self.verifier_budget_s)

    def oracle_action(self) -> str:
        """Search the target's title, open it (paging if needed), pick the goal options, buy."""
        shop, gold = self.shop, self.task.gold
        click = self._render_click
        if shop.page == "search":
            target = self.catalog.products[gold["asin"]]
            return self.action_format.render_call(ToolCall("search", {"query": target.name}), self.tools)
        if shop.page == "results":
            if gold["asin"] in shop._page_asins():
                return click(gold["asin"])
            later = gold["asin"] in shop.results[shop.page_num * PAGE_SIZE:]
            return click("Next >" if later else "Back to Search")
        if shop.page == "item" and shop.asin == gold["asin"]:
            product = self.catalog.products[shop.asin]
            for wanted in gold["goal_options"]:
                kind = product.option_type_of(wanted)
                if kind is not None and shop.options.get(kind) != wanted.strip().lower():
                    return click(wanted.strip().lower())
            return click("Buy Now")
        return click("< Prev" if shop.page != "item" else "Back to Search")

    def _render_click(self, element: str) -> str:
        return self.action_format.render_call(ToolCall("click", {"element": element}), self.tools)

