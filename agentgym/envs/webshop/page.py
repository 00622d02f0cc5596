"""One env's tab in the shop: the browser actions mapped onto Playwright calls, and the page read back.

A ``ShopPage`` owns an env's browser context (which names the env's shop session
in a request header, so no page or URL shows it) and a fresh page per episode.
Each action is one call into the shared ``Chromium``: do the action, then read
the page (URL, title, accessibility tree, optionally a screenshot). What is
wrong with an action's target (an id not on the page, a URL outside the shop) is
found before the browser sees it and comes back as a problem, not an exception.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin, urlsplit

from agentgym.envs.webshop.aria import ELEMENT_REF, PageView
from agentgym.envs.webshop.chromium import SHOP_HOST, SHOP_ORIGIN, Chromium, describe_error, shared_chromium
from agentgym.errors import ToolError

__all__ = ["ACTIONS", "ShopPage"]

ACTIONS = ("click", "fill", "press", "scroll", "go_back", "goto", "noop")  # BrowserGym's, as the env's tools
_READ_ATTEMPTS = 3  # a navigation that commits while the page is read destroys that document: read the new one


# whether acting on an element opens a page: a link clicked, or a form submitted (its submit button clicked, Enter in
# one of its inputs) that its own checks let through (a required box left empty submits nothing). The shop's pages
# have no scripts, so this is all that navigates.
_OPENS_PAGE = """(el, key) => {
  if (key === null && el.closest('a[href]')) return true;
  const control = el.closest('button, input');
  const form = (control && control.form) || el.closest('form');
  if (!form) return false;
  const submits = key === null ? !!control && control.type === 'submit' : key === 'Enter' && el.tagName === 'INPUT';
  return submits && form.checkValidity();
}"""


async def _opens_page(target: Any, key: str | None, timeout_ms: float) -> bool:
    """Whether clicking ``target`` (``key`` None) or pressing ``key`` on it opens a page; False when it names no
    element (the action then fails with its own message)."""
    if await target.count() != 1:
        return False
    return bool(await target.evaluate(_OPENS_PAGE, key, timeout=timeout_ms))


class ShopPage:
    """An env's browser context and page in the shop, driven by ``act`` (see the module docstring)."""

    def __init__(self, *, session_id: str, chromium_path: str, headless: bool, viewport: dict[str, int],
                 timeout_s: float, screenshot: bool) -> None:
        self.session_id = session_id
        self.chromium_path = chromium_path
        self.headless = headless
        self.viewport = viewport
        self.timeout_s = timeout_s
        self.screenshot = screenshot
        self.chromium: Chromium | None = None
        self.view = PageView()
        self._context: Any = None
        self._page: Any = None

    def open(self, shop_port: int) -> PageView:
        """A fresh page on the shop's search page (the browser launched, or relaunched if it died)."""
        if self.chromium is None or not self.chromium.is_alive:
            self.chromium = shared_chromium(self.chromium_path, headless=self.headless, shop_port=shop_port)
            self._context = self._page = None
        self.view = self._call(self._open(f"{SHOP_ORIGIN}/"))
        return self.view

    def act(self, action: str, args: dict[str, Any]) -> str | None:
        """Do one of ``ACTIONS`` and read the page into ``view``; what went wrong (the agent's to fix), or None.

        ``args`` are the tool's arguments (``element``, ``value``, ``key``, ``dx``/``dy``, ``url``);
        an element id may come as ``[ref=e12]``, a URL relative to the page."""
        problem = self._check(action, args)
        if problem is None:
            self.view, problem = self._call(self._perform(action, args))
        return problem

    def close(self) -> None:
        """Close the browser context (the shared browser stays for the other envs)."""
        if self._context is not None and self.chromium is not None and self.chromium.is_alive:
            try:
                self.chromium.run(self._context.close(), timeout_s=10)
            except ToolError:
                pass  # the browser went away first: nothing left to release
        self._context = self._page = None

    # ---- before the browser: the action's target ----------------------------------------
    def _check(self, action: str, args: dict[str, Any]) -> str | None:
        """What is wrong with the action's target before the browser sees it (ids, URLs), or None."""
        if "element" in args:
            element = re.sub(r"^\[?(?:ref=)?|\]$", "", str(args["element"]).strip())
            if not ELEMENT_REF.fullmatch(element):
                return f"{args['element']!r} is not an element id: use the id in [ref=...] of the page's tree, like e12."
            if element not in self.view.refs():
                return f"There is no element {element!r} on this page: use an id from the current page's tree."
            args["element"] = element
        if action == "goto":
            base = self.view.url if self.view.url.startswith(SHOP_ORIGIN + "/") else SHOP_ORIGIN + "/"
            url = urljoin(base, str(args["url"]).strip())
            parts = urlsplit(url)
            if parts.scheme != "http" or parts.netloc != SHOP_HOST:
                return f"goto opens pages of this shop only ({SHOP_ORIGIN}/...), not {args['url']!r}."
            args["url"] = url
        return None

    # ---- in the browser's loop ------------------------------------------------------------
    def _call(self, coro: Any) -> Any:
        assert self.chromium is not None  # set by open() before any action
        # one call does the action and reads the page; the margin covers a retried read after a navigation
        return self.chromium.run(coro, timeout_s=self.timeout_s * 6 + 5)

    async def _perform(self, action: str, args: dict[str, Any]) -> tuple[PageView, str | None]:
        from playwright.async_api import Error as PlaywrightError

        page, timeout_ms = self._page, self.timeout_s * 1000
        problem = None
        try:
            if action in ("click", "fill", "press"):
                target = page.locator(f"aria-ref={args['element']}")
                if action == "fill":
                    await target.fill(args["value"], timeout=timeout_ms)
                else:
                    act = (target.click(timeout=timeout_ms) if action == "click"
                           else target.press(args["key"], timeout=timeout_ms))
                    if await _opens_page(target, args.get("key"), timeout_ms):
                        # read the page it opens, not the one it leaves: a navigation may start after the action
                        # returns, later the busier the machine (an observation that depended on timing)
                        async with page.expect_navigation(wait_until="domcontentloaded", timeout=timeout_ms):
                            await act
                    else:
                        await act
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
            problem = f"{action} failed: {describe_error(e)}"
        return await self._read(), problem

    async def _read(self) -> PageView:
        from playwright.async_api import Error as PlaywrightError

        page, timeout_ms = self._page, self.timeout_s * 1000
        for attempt in range(_READ_ATTEMPTS):
            try:
                await page.wait_for_load_state("domcontentloaded", timeout=timeout_ms)
                tree = await page.locator("body").aria_snapshot(mode="ai", timeout=timeout_ms)
                title = await page.title()
                break
            except PlaywrightError as e:
                if attempt == _READ_ATTEMPTS - 1 or "destroyed" not in str(e) and "navigat" not in str(e):
                    raise
        png = await page.screenshot(type="png", timeout=timeout_ms) if self.screenshot else None
        return PageView(page.url, title, tree, png)

    async def _open(self, url: str) -> PageView:
        from agentgym.envs.webshop.webapp import SESSION_HEADER

        if self._context is None:
            # the context sends the session with every request (navigations, forms, redirects): the page never sees it
            self._context = await self.chromium.browser.new_context(  # type: ignore[union-attr]
                viewport=self.viewport, base_url=SHOP_ORIGIN, extra_http_headers={SESSION_HEADER: self.session_id})
        if self._page is not None:
            await self._page.close()
        self._page = await self._context.new_page()  # a fresh page per episode: empty history, refs from e1
        await self._page.goto(url, timeout=self.timeout_s * 1000, wait_until="domcontentloaded")
        return await self._read()
