"""``agentgym/WebShopBrowser-v0``: the WebShop shop in real Chromium, BrowserGym style.

The shop of the text mode is served as a website (``webapp.py``) and each env
drives its own Chromium page with Playwright. The agent reads the page's
accessibility tree (Playwright's ``aria_snapshot(mode="ai")``), where every
element carries an id, ``[ref=e12]``, and acts with BrowserGym's function calls:
``click("e12")``, ``fill("e5", "text")``, ``press("e5", "Enter")``,
``scroll(0, 300)``, ``go_back()``, ``goto("url")``, ``noop()``. Ids come from
the latest tree; a navigation renumbers them (``f3e12``: element 12 of the
page's third document). Buying ends the episode; the reward is WebShop's, from
the purchase the shop recorded, as in the text mode.

Threading: Playwright's sync API refuses to run inside a running asyncio loop,
and its objects belong to the loop that made them. So one daemon thread per
process owns an event loop, Playwright and Chromium; env calls submit
coroutines to it and wait (``run_coroutine_threadsafe(...).result(timeout)``).
Envs in any thread, or inside ``asyncio.run``, share that browser; each env has
its own browser context and a fresh page per episode.

Chromium reaches the shop as http://webshop.test: ``--host-resolver-rules`` maps
that host to the local server's port and every other host to nothing, so
observations do not depend on the port and pages cannot reach the network. The
envs of a process share one shop server; each env's browser context names its
shop session in a request header, never in a URL, so an observation depends on
the task and the actions only, not on how many envs the process made before.

The parts: the browser (``chromium.py``), one env's tab and the actions mapped onto
it (``page.py``), the reading of the tree (``aria.py``), the action formats
(``browser_actions.py``); this module is the env: tools, episodes, the oracle, the reward.
"""

from __future__ import annotations

import base64
import importlib.util
import itertools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agentgym.core.env import AgentEnv, EnvDefaults
from agentgym.core.formats import ActionFormat, DictFormat
from agentgym.core.task import Task
from agentgym.core.tools import Tool, ToolCall
from agentgym.envs.webshop.aria import TreeNode, find_node, parse_tree
from agentgym.envs.webshop.browser_actions import BrowserGymFormat, BrowserTagsFormat
from agentgym.envs.webshop.catalog import load_catalog
from agentgym.envs.webshop.chromium import INSTALL_PLAYWRIGHT, SHOP_ORIGIN, find_chromium, viewport_size
from agentgym.envs.webshop.env import goal_tasks
from agentgym.envs.webshop.page import ShopPage
from agentgym.errors import ConfigError, DependencyNotInstalled
from agentgym.verifiers import Score
from agentgym.verifiers.budget import budget_seconds
from agentgym.verifiers.webshop import Purchase, verify_purchase

__all__ = ["SHOP_ORIGIN", "BrowserGymFormat", "TreeNode", "WebShopBrowserEnv", "parse_tree"]

_SERIALS = itertools.count(1)
_INTRO = (
    "You are shopping in a web browser to buy the product the instruction on the page describes. Each turn "
    "you see the page's URL, title and accessibility tree; every element has an id, shown as [ref=...]. "
    "Search with the search box, open a product, choose the options the instruction asks for (a chosen option "
    "is marked [pressed]) and click Buy Now; buying ends the episode."
)


class WebShopBrowserEnv(AgentEnv[Purchase]):
    """WebShop in Chromium: the accessibility tree in, BrowserGym actions out, WebShop's reward.

    A mistake (unparsable text, an id not on the page, ``fill`` on a link, a
    timeout) is an observation with the error and the page, and is reported in
    ``info["action_error"]``. ``info["url"]`` is the page's URL; with
    ``screenshot=True``, ``info["screenshot"]`` is a base64 PNG of the viewport.
    Action formats: ``browsergym`` (default), and the standard ``tags`` (several
    arguments comma-separated), ``hermes`` and ``dict`` over the same tools.
    """

    defaults = EnvDefaults(action_format="browsergym", max_turns=20, max_observation_chars=12_000)
    # check_env's oracle on 20 tasks, twice each (a Chromium episode is ~1 s: ~45 s in all; every task: n_tasks=100)
    check_tasks = 20

    def __init__(self, *, data_dir: str | Path | None = None, headless: bool = True, screenshot: bool = False,
                 chromium_path: str | os.PathLike[str] | None = None,
                 viewport: tuple[int, int] | Mapping[str, int] = (1280, 720), timeout_s: float = 3.0,
                 cache_dir: str | Path | None = None, verifier_budget_s: float | None = None, **base: Any) -> None:
        budget_seconds(verifier_budget_s)  # a bad budget is an error here, not at the end of an episode
        self.verifier_budget_s = verifier_budget_s
        if importlib.util.find_spec("playwright") is None:
            raise DependencyNotInstalled("playwright", INSTALL_PLAYWRIGHT)
        if not timeout_s > 0:
            raise ConfigError(f"timeout_s must be > 0 seconds, got {timeout_s!r}.")
        self.catalog = load_catalog(data_dir, cache_dir=None if cache_dir is None else str(cache_dir))
        self.screenshot = screenshot
        # unique per env, the same every episode; sent as a header only, so no observation shows it
        self.session_id = f"s{next(_SERIALS)}"
        self.page = ShopPage(session_id=self.session_id, chromium_path=find_chromium(chromium_path),
                             headless=headless, viewport=viewport_size(viewport), timeout_s=float(timeout_s),
                             screenshot=screenshot)
        self._sessions: Any = None
        self._errors: list[str] = []
        super().__init__(tasks=goal_tasks(self.catalog), **base)

    def make_action_format(self, spec: str | ActionFormat) -> ActionFormat:
        own = {"browsergym": BrowserGymFormat, "tags": BrowserTagsFormat}
        return own[spec]() if isinstance(spec, str) and spec in own else super().make_action_format(spec)

    # ---- tools ----------------------------------------------------------------------
    def make_tools(self) -> Sequence[Tool]:
        element = {"type": "string", "description": "The element's id: its [ref=...] in the page's tree, e.g. e12."}

        def params(**properties: Any) -> dict[str, Any]:
            return {"type": "object", "properties": properties, "required": list(properties)}

        return [
            Tool("click", "Click an element (a link, a button, an option).", params(element=element),
                 fn=lambda element: self._do("click", element=element)),
            Tool("fill", "Type text into a text box, replacing what it holds.",
                 params(element=element, value={"type": "string", "description": "The text to type."}),
                 fn=lambda element, value: self._do("fill", element=element, value=value)),
            Tool("press", "Press a key or key combination (Enter, Tab, ArrowDown, Control+A) on an element.",
                 params(element=element, key={"type": "string", "description": "Playwright key name."}),
                 fn=lambda element, key: self._do("press", element=element, key=key)),
            Tool("scroll", "Scroll the page by dx, dy pixels.",
                 params(dx={"type": "number", "description": "Pixels right."},
                        dy={"type": "number", "description": "Pixels down."}),
                 fn=lambda dx, dy: self._do("scroll", dx=dx, dy=dy)),
            Tool("go_back", "Go back to the previous page.", params(), fn=lambda: self._do("go_back")),
            Tool("goto", "Open a URL of the shop.", params(url={"type": "string", "description": "The URL."}),
                 fn=lambda url: self._do("goto", url=url)),
            Tool("noop", "Do nothing and read the page again.", params(), fn=lambda: self._do("noop")),
        ]

    def _do(self, action: str, **args: Any) -> str:
        problem = self.page.act(action, args)
        if problem is not None:
            self._errors.append(problem)
            return f"Error: {problem}\n\n{self.page.view.render()}"
        return self.page.view.render()

    # ---- episode --------------------------------------------------------------------
    def on_reset(self, task: Task) -> None:
        from agentgym.envs.webshop.webapp import shared_server

        server = shared_server()
        self._sessions = server.app.state.sessions
        self._sessions.open(self.session_id, instruction=task.prompt, catalog=self.catalog)
        self._errors = []
        self.page.open(server.port)

    def build_prompt(self, task: Task) -> str:
        return f"{_INTRO}\n{self.action_format.instructions(self.tools)}\n\n{self.page.view.render()}"

    def step(self, action: str | Mapping[str, Any] | list[Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = super().step(action)
        if info["action_error"] and not info.get("tool_calls"):
            # an action that could not be read never reached the page: show the page with the error
            observation = f"{observation}\n\n{self.page.view.render()}"
        return observation, reward, terminated, truncated, info

    def episode_outcome(self) -> Purchase | None:
        """What the shop recorded when ``Buy Now`` was clicked; buying ends the episode."""
        purchase = None if self._sessions is None else self._sessions.purchase(self.session_id)
        return None if purchase is None else Purchase.from_record(purchase)

    def extra_info(self) -> dict[str, Any]:
        view = self.page.view
        info: dict[str, Any] = {"url": view.url}
        if self.screenshot and view.png is not None:
            info["screenshot"] = base64.b64encode(view.png).decode("ascii")
        if self._errors:
            # the browser's errors of this turn, reported once (tool calls run before info is built)
            info["action_error"] = " ".join(self._errors)
            self._errors = []
        return info

    def verify(self, outcome: Purchase | None, task: Task) -> Score:
        """WebShop's reward for the purchase the shop recorded. An answer (``tags``/``hermes``/``dict``
        formats) is not an outcome of this env: it scores as no purchase, text cannot claim an order."""
        return verify_purchase(outcome, task.gold, budget_s=self.verifier_budget_s)

    def oracle_action(self) -> str | dict[str, Any]:
        """Through the page, as a user would: search the target's title, open it (paging with Next >), press
        the goal's options, Buy Now. Ids come from the current tree."""
        target = self.catalog.products[self.task.gold["asin"]]
        nodes = parse_tree(self.page.view.tree)
        path = urlsplit(self.page.view.url).path.strip("/").split("/")  # the search page's path is [""]

        def act(name: str, **arguments: Any) -> str | dict[str, Any]:
            call = ToolCall(name, arguments)
            # dict actions are mappings; the dict format renders them as JSON text for the wire
            return call.as_dict() if isinstance(self.action_format, DictFormat) else self.action_format.render_call(
                call, self.tools)

        def click(node: TreeNode | None, fallback_url: str) -> str | dict[str, Any]:
            return act("click", element=node.ref) if node else act("goto", url=fallback_url)

        item = f"/item/{target.asin}"
        if path == [""]:
            box = next(n for n in nodes if n.role in ("searchbox", "textbox") and n.ref)
            query = " ".join(target.name.split())
            if box.value != query:
                return act("fill", element=box.ref, value=query)
            return act("press", element=box.ref, key="Enter")
        if path == ["search"]:
            link = find_node(nodes, "link", target.asin) or find_node(nodes, "link", "Next >")
            return click(link, item)
        if path == ["item", target.asin]:
            for wanted in self.task.gold["goal_options"]:
                kind = target.option_type_of(wanted)
                button = kind and find_node(nodes, "button", wanted, inside=("group", kind))
                if button and not button.is_pressed:
                    return click(button, "/")
            return click(find_node(nodes, "button", "Buy Now"), "/")
        if path[:2] == ["item", target.asin]:
            return click(find_node(nodes, "link", "< Prev"), item)
        return click(find_node(nodes, "link", "Back to Search"), "/")

    def close(self) -> None:
        self.page.close()
        if self._sessions is not None:
            self._sessions.close(self.session_id)
        super().close()
