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

The action format is in ``browser_actions.py``, the reading of the tree in ``aria.py`` and the
Chromium driver in ``chromium.py``; this module is the env.
"""

from __future__ import annotations

import base64
import importlib.util
import itertools
import json
import os
import re
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit

from agentgym.core.env import AgentEnv
from agentgym.core.formats import ActionFormat, DictFormat, get_format
from agentgym.core.task import Task
from agentgym.core.tools import Tool, ToolCall
from agentgym.envs.webshop.aria import _REF, TreeNode, _find, _Seen, parse_tree
from agentgym.envs.webshop.browser_actions import BrowserGymFormat, _BrowserTagsFormat
from agentgym.envs.webshop.catalog import load_catalog
from agentgym.envs.webshop.chromium import (
    _INSTALL_PLAYWRIGHT,
    SHOP_HOST,
    SHOP_ORIGIN,
    _Chromium,
    _describe,
    _find_chromium,
    _shared_chromium,
    _viewport,
)
from agentgym.envs.webshop.env import goal_tasks
from agentgym.errors import ConfigError, DependencyNotInstalled, ToolError
from agentgym.verifiers import Score
from agentgym.verifiers.budget import budget_seconds
from agentgym.verifiers.webshop import verify_webshop

__all__ = ["SHOP_ORIGIN", "BrowserGymFormat", "TreeNode", "WebShopBrowserEnv", "parse_tree"]

_SERIALS = itertools.count(1)
_INTRO = (
    "You are shopping in a web browser to buy the product the instruction on the page describes. Each turn "
    "you see the page's URL, title and accessibility tree; every element has an id, shown as [ref=...]. "
    "Search with the search box, open a product, choose the options the instruction asks for (a chosen option "
    "is marked [pressed]) and click Buy Now; buying ends the episode."
)


class WebShopBrowserEnv(AgentEnv):
    """WebShop in Chromium: the accessibility tree in, BrowserGym actions out, WebShop's reward.

    A mistake (unparsable text, an id not on the page, ``fill`` on a link, a
    timeout) is an observation with the error and the page, and is reported in
    ``info["action_error"]``. ``info["url"]`` is the page's URL; with
    ``screenshot=True``, ``info["screenshot"]`` is a base64 PNG of the viewport.
    Action formats: ``browsergym`` (default), and the standard ``tags`` (several
    arguments comma-separated), ``hermes`` and ``dict`` over the same tools.
    """

    def __init__(self, *, data_dir: str | Path | None = None, split: str = "test", max_turns: int = 20,
                 headless: bool = True, screenshot: bool = False, chromium_path: str | os.PathLike[str] | None = None,
                 viewport: tuple[int, int] | Mapping[str, int] = (1280, 720),
                 action_format: str | ActionFormat = "browsergym", timeout_s: float = 3.0,
                 cache_dir: str | Path | None = None, max_observation_chars: int = 12_000,
                 verifier_budget_s: float | None = None,
                 render_mode: Literal["ansi", "human"] | None = None) -> None:
        budget_seconds(verifier_budget_s)  # a bad budget is an error here, not at the end of an episode
        self.verifier_budget_s = verifier_budget_s
        if importlib.util.find_spec("playwright") is None:
            raise DependencyNotInstalled("playwright", _INSTALL_PLAYWRIGHT)
        if not timeout_s > 0:
            raise ConfigError(f"timeout_s must be > 0 seconds, got {timeout_s!r}.")
        self.catalog = load_catalog(data_dir, cache_dir=None if cache_dir is None else str(cache_dir))
        self.chromium_path = _find_chromium(chromium_path)
        self.headless = headless
        self.screenshot = screenshot
        self.viewport = _viewport(viewport)
        self.timeout_s = float(timeout_s)
        # unique per env, the same every episode; sent as a header only, so no observation shows it
        self.session_id = f"s{next(_SERIALS)}"
        self._chromium: _Chromium | None = None
        self._sessions: Any = None
        self._context: Any = None
        self._page: Any = None
        self._seen = _Seen()
        self._errors: list[str] = []
        formats = {"browsergym": BrowserGymFormat, "tags": _BrowserTagsFormat}
        fmt = formats[action_format]() if isinstance(action_format, str) and action_format in formats \
            else get_format(action_format)
        super().__init__(tasks=goal_tasks(self.catalog), action_format=fmt, split=split, max_turns=max_turns,
                         max_observation_chars=max_observation_chars, render_mode=render_mode)

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
        problem = self._check(action, args)
        if problem is None:
            self._seen, problem = self._browser(self._perform(action, args))
        if problem is not None:
            self._errors.append(problem)
            return f"Error: {problem}\n\n{self._seen.render()}"
        return self._seen.render()

    def _check(self, action: str, args: dict[str, Any]) -> str | None:
        """What is wrong with the action's target before the browser sees it (ids, URLs), or None."""
        if "element" in args:
            element = re.sub(r"^\[?(?:ref=)?|\]$", "", str(args["element"]).strip())
            if not _REF.fullmatch(element):
                return f"{args['element']!r} is not an element id: use the id in [ref=...] of the page's tree, like e12."
            if element not in self._seen.refs():
                return f"There is no element {element!r} on this page: use an id from the current page's tree."
            args["element"] = element
        if action == "goto":
            base = self._seen.url if self._seen.url.startswith(SHOP_ORIGIN + "/") else SHOP_ORIGIN + "/"
            url = urljoin(base, str(args["url"]).strip())
            parts = urlsplit(url)
            if parts.scheme != "http" or parts.netloc != SHOP_HOST:
                return f"goto opens pages of this shop only ({SHOP_ORIGIN}/...), not {args['url']!r}."
            args["url"] = url
        return None

    async def _perform(self, action: str, args: dict[str, Any]) -> tuple[_Seen, str | None]:
        from playwright.async_api import Error as PlaywrightError

        page, timeout_ms = self._page, self.timeout_s * 1000
        problem = None
        try:
            if action in ("click", "fill", "press"):
                target = page.locator(f"aria-ref={args['element']}")
                if action == "click":
                    await target.click(timeout=timeout_ms)
                elif action == "fill":
                    await target.fill(args["value"], timeout=timeout_ms)
                else:
                    await target.press(args["key"], timeout=timeout_ms)
            elif action == "scroll":
                await page.mouse.wheel(args["dx"], args["dy"])
            elif action == "go_back":
                # the Navigation API lists this origin's entries only: the tab's initial about:blank is not one
                if await page.evaluate("window.navigation ? navigation.canGoBack : history.length > 2"):
                    await page.go_back(timeout=timeout_ms, wait_until="domcontentloaded")
                else:
                    problem = "There is no previous page to go back to."
            elif action == "goto":
                await page.goto(args["url"], timeout=timeout_ms, wait_until="domcontentloaded")
        except PlaywrightError as e:
            problem = f"{action} failed: {_describe(e)}"
        return await self._read(), problem

    async def _read(self) -> _Seen:
        from playwright.async_api import Error as PlaywrightError

        page, timeout_ms = self._page, self.timeout_s * 1000
        for attempt in range(3):
            try:
                await page.wait_for_load_state("domcontentloaded", timeout=timeout_ms)
                tree = await page.locator("body").aria_snapshot(mode="ai", timeout=timeout_ms)
                title = await page.title()
                break
            except PlaywrightError as e:
                # a navigation that commits while the page is read destroys that document: read the new one
                if attempt == 2 or "destroyed" not in str(e) and "navigat" not in str(e):
                    raise
        png = await page.screenshot(type="png", timeout=timeout_ms) if self.screenshot else None
        return _Seen(page.url, title, tree, png)

    async def _open(self, url: str) -> _Seen:
        from agentgym.envs.webshop.webapp import SESSION_HEADER

        if self._context is None:
            # the context sends the session with every request (navigations, forms, redirects): the page never sees it
            self._context = await self._chromium.browser.new_context(
                viewport=self.viewport, base_url=SHOP_ORIGIN, extra_http_headers={SESSION_HEADER: self.session_id})
        if self._page is not None:
            await self._page.close()
        self._page = await self._context.new_page()  # a fresh page per episode: empty history, refs from e1
        await self._page.goto(url, timeout=self.timeout_s * 1000, wait_until="domcontentloaded")
        return await self._read()

    def _browser(self, coro: Coroutine[Any, Any, Any]) -> Any:
        assert self._chromium is not None  # set by on_reset before any tool runs
        # one call does the action and reads the page; the margin covers a retried read after a navigation
        return self._chromium.run(coro, timeout_s=self.timeout_s * 6 + 5)

    # ---- episode --------------------------------------------------------------------
    def on_reset(self, task: Task) -> None:
        from agentgym.envs.webshop.webapp import shared_server

        server = shared_server()
        self._sessions = server.app.state.sessions
        self._sessions.open(self.session_id, instruction=task.prompt, catalog=self.catalog)
        if self._chromium is None or not self._chromium.is_alive:
            self._chromium = _shared_chromium(self.chromium_path, headless=self.headless, shop_port=server.port)
            self._context = self._page = None
        self._errors = []
        self._seen = self._browser(self._open(f"{SHOP_ORIGIN}/"))

    def build_prompt(self, task: Task) -> str:
        return f"{_INTRO}\n{self.action_format.instructions(self.tools)}\n\n{self._seen.render()}"

    def step(self, action: str | Mapping[str, Any] | list[Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = super().step(action)
        if info["action_error"] and not info.get("tool_calls"):
            # an action that could not be read never reached the page: show the page with the error
            observation = f"{observation}\n\n{self._seen.render()}"
        return observation, reward, terminated, truncated, info

    def episode_outcome(self) -> str | None:
        purchase = None if self._sessions is None else self._sessions.purchase(self.session_id)
        return None if purchase is None else json.dumps(purchase, ensure_ascii=False, sort_keys=True)

    def extra_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"url": self._seen.url}
        if self.screenshot and self._seen.png is not None:
            info["screenshot"] = base64.b64encode(self._seen.png).decode("ascii")
        if self._errors:
            # the browser's errors of this turn, reported once (tool calls run before info is built)
            info["action_error"] = " ".join(self._errors)
            self._errors = []
        return info

    def verify(self, answer: str | None, task: Task) -> Score:
        """WebShop's reward for the purchase the shop recorded. A final answer (``tags``/``hermes``/``dict``
        formats) that is not that purchase scores as no purchase: text cannot claim an order."""
        bought = self.episode_outcome()
        return verify_webshop(answer if answer is not None and answer == bought else None, task.gold,
                              budget_s=self.verifier_budget_s)

    def oracle_action(self) -> str | dict[str, Any]:
        """Through the page, as a user would: search the target's title, open it (paging with Next >), press
        the goal's options, Buy Now. Ids come from the current tree."""
        target = self.catalog.products[self.task.gold["asin"]]
        nodes = parse_tree(self._seen.tree)
        path = urlsplit(self._seen.url).path.strip("/").split("/")  # the search page's path is [""]

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
            link = _find(nodes, "link", target.asin) or _find(nodes, "link", "Next >")
            return click(link, item)
        if path == ["item", target.asin]:
            for wanted in self.task.gold["goal_options"]:
                kind = target.option_type_of(wanted)
                button = kind and _find(nodes, "button", wanted, inside=("group", kind))
                if button and not button.is_pressed:
                    return click(button, "/")
            return click(_find(nodes, "button", "Buy Now"), "/")
        if path[:2] == ["item", target.asin]:
            return click(_find(nodes, "link", "< Prev"), item)
        return click(_find(nodes, "link", "Back to Search"), "/")

    def close(self) -> None:
        if self._context is not None and self._chromium is not None and self._chromium.is_alive:
            try:
                self._chromium.run(self._context.close(), timeout_s=10)
            except ToolError:
                pass  # the browser went away first: nothing left to release
        self._context = self._page = None
        if self._sessions is not None:
            self._sessions.close(self.session_id)
        super().close()
