"""The shop as a website: WebShop's pages as HTML for a real browser (Starlette + Jinja2).

It is the shop of the text mode (``shop.py``) with URLs: the same search results
(``Catalog.search``, 10 per page of the top 50), the same pages and the same
button and link names, and the same purchase record. Every page is addressable,
so a browser's back button and typed URLs work::

    GET  /                                               search page
    GET  /search?q=...&page=N                            results
    GET  /item/{asin}?q=..&page=..&opt.<type>=<value>    item, with the chosen options
    GET  /item/{asin}/{description|features|reviews}?...
    POST /buy/{asin}                                     records the purchase, redirects to the receipt
    GET  /receipt

A session (``ShopSessions``) is one shopper: the instruction shown on every page,
the catalog it shops in, and its purchase once ``Buy Now`` is clicked. The env
opens sessions in process and reads the purchase back. A request names its
session in the ``X-WebShop-Session`` header, out of band: the env's browser
context sends it on every request, so no URL, link or page shows it and two envs
on the same task see the same pages. Without the header the session may come
first in the path instead (``/{session}``, ``/{session}/search?...``, ...; the
links then keep that prefix), which serves a plain HTTP client or a person.
``ShopServer`` serves an app with uvicorn on 127.0.0.1 in a background thread;
``shared_server()`` is the one of this process, which the browser envs share.
"""

from __future__ import annotations

import atexit
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from agentgym.envs.webshop.catalog import Catalog, Product
from agentgym.envs.webshop.shop import PAGE_SIZE, SUB_PAGES, purchase_record
from agentgym.errors import ConfigError, ToolError

__all__ = ["SESSION_HEADER", "ShopServer", "ShopSessions", "make_app", "purchase_record", "shared_server"]

TEMPLATES = Path(__file__).resolve().parent / "templates"
OPTION_PREFIX = "opt."  # option query parameters: opt.size=large, so no option type can shadow q or page
SESSION_HEADER = "X-WebShop-Session"
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_PAGES = frozenset({"search", "item", "buy", "receipt"})  # first path segments of the header form
_NO_SESSION = (f"This request names no shop session: send its id in the {SESSION_HEADER} header (the env's "
               "browser does), or put it first in the path, /{session}/...")
_SEARCH_CACHE_SIZE = 256


@dataclass
class _Shopper:
    instruction: str
    catalog: Catalog | None
    purchase: dict[str, Any] | None = None


class ShopSessions:
    """Shopper sessions by id; thread-safe (the server thread writes, env threads read)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, _Shopper] = {}

    def open(self, session_id: str, *, instruction: str, catalog: Catalog | None = None) -> None:
        """Start (or restart, forgetting its purchase) session ``session_id``."""
        if not _SESSION_ID.fullmatch(session_id):
            raise ConfigError(f"Session id {session_id!r} must be 1-64 letters, digits, '-' or '_'.")
        if session_id in _PAGES:
            raise ConfigError(f"Session id {session_id!r} is the name of a page; choose another.")
        with self._lock:
            self._sessions[session_id] = _Shopper(instruction, catalog)

    def close(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)

    def get(self, session_id: str) -> _Shopper | None:
        with self._lock:
            return self._sessions.get(session_id)

    def purchase(self, session_id: str) -> dict[str, Any] | None:
        """The session's purchase record, or None before ``Buy Now``."""
        with self._lock:
            shopper = self._sessions.get(session_id)
            return None if shopper is None else shopper.purchase

    def record_purchase(self, session_id: str, purchase: dict[str, Any]) -> dict[str, Any] | None:
        """Record ``purchase`` unless the session already bought; the session's purchase (None: no session)."""
        with self._lock:
            shopper = self._sessions.get(session_id)
            if shopper is not None and shopper.purchase is None:  # the first order stands, as in the text mode
                shopper.purchase = purchase
            return None if shopper is None else shopper.purchase


@dataclass(frozen=True)
class _View:
    """Where a shopper is: the links' prefix, the search (query, page) that led here and the chosen options.

    ``base`` is ``""`` when the header names the session and ``"/{session}"`` when the path does.
    """

    base: str
    query: str
    page: int
    options: dict[str, str]

    def search_url(self) -> str:
        return self.base or "/"

    def results_url(self, page: int | None = None) -> str:
        return f"{self.base}/search?" + urlencode({"q": self.query, "page": page or self.page})

    def item_url(self, asin: str, sub: str | None = None, options: Mapping[str, str] | None = None) -> str:
        path = f"{self.base}/item/{quote(asin)}" + (f"/{sub}" if sub else "")
        params = self.context(options)
        return f"{path}?{urlencode(params)}" if params else path

    def context(self, options: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
        """The query parameters that carry the search and the options from page to page."""
        chosen = self.options if options is None else options
        params = [("q", self.query), ("page", str(self.page))] if self.query else []
        return params + [(OPTION_PREFIX + kind, value) for kind, value in chosen.items()]


class _Shop:
    """The request handlers; one instance per app."""

    def __init__(self, catalog: Catalog | None, sessions: ShopSessions) -> None:
        self.catalog = catalog
        self.sessions = sessions
        self.templates = Jinja2Templates(directory=str(TEMPLATES))
        # (id(catalog), query) -> (catalog, asins): holding the catalog keeps its id from being reused
        self._search_cache: OrderedDict[tuple[int, str], tuple[Catalog, list[str]]] = OrderedDict()
        self._cache_lock = threading.Lock()

    # ---- helpers ------------------------------------------------------------------
    def _render(self, request: Request, template: str, context: dict[str, Any], status_code: int = 200) -> Response:
        return self.templates.TemplateResponse(request, template, context, status_code=status_code)

    @staticmethod
    def _session(request: Request) -> tuple[str | None, str]:
        """The session the request names (None: none) and the prefix of its page's links."""
        header = request.headers.get(SESSION_HEADER)
        in_path = request.path_params.get("session")
        if header is not None:
            if in_path is not None:  # the header form has no session in its paths: other sessions stay out of reach
                raise HTTPException(404, f"There is no page {request.url.path} in this shop.")
            return header, ""
        return in_path, "" if in_path is None else f"/{in_path}"

    def _shopper(self, request: Request) -> tuple[str, str, _Shopper, Catalog]:
        """The request's session, its links' prefix, shopper and catalog; an HTTP error page if it has none."""
        session, base = self._session(request)
        if session is None:
            raise HTTPException(400, _NO_SESSION)
        shopper = self.sessions.get(session)
        catalog = None if shopper is None else (shopper.catalog or self.catalog)
        if shopper is None or catalog is None:
            raise HTTPException(404, f"Unknown session {session!r}: sessions are opened by the env's reset().")
        return session, base, shopper, catalog

    def _search(self, catalog: Catalog, query: str) -> list[str]:
        # A results page, each of its item pages and every "< Prev" repeat the search: cache the asins.
        key = (id(catalog), query)
        with self._cache_lock:
            if key in self._search_cache:
                self._search_cache.move_to_end(key)
                return self._search_cache[key][1]
        asins = [p.asin for p in catalog.search(query)]
        with self._cache_lock:
            self._search_cache[key] = (catalog, asins)
            while len(self._search_cache) > _SEARCH_CACHE_SIZE:
                self._search_cache.popitem(last=False)
        return asins

    @staticmethod
    def _product(catalog: Catalog, asin: str) -> Product:
        product = catalog.product(asin)
        if product is None:
            raise HTTPException(404, f"No product with asin {asin!r} in this shop.")
        return product

    @staticmethod
    def _view(base: str, params: Mapping[str, str], product: Product | None = None) -> _View:
        query = params.get("q", "").strip()
        try:
            page = max(1, int(params.get("page", "1")))
        except ValueError:
            page = 1
        options: dict[str, str] = {}
        for kind, values in (product.options if product else {}).items():
            value = params.get(OPTION_PREFIX + kind)
            if value is None:
                continue
            if value.strip().lower() not in values:
                raise HTTPException(404, f"{product.asin} has no {kind} {value!r}; it offers: {', '.join(values)}.")
            options[kind] = value.strip().lower()
        return _View(base, query, page, options)

    # ---- pages --------------------------------------------------------------------
    async def search_page(self, request: Request) -> Response:
        _, base, shopper, _ = self._shopper(request)
        urls = {"results": f"{base}/search"}
        return self._render(request, "search.html", {"instruction": shopper.instruction, "urls": urls})

    async def results(self, request: Request) -> Response:
        _, base, shopper, catalog = self._shopper(request)
        view = self._view(base, request.query_params)
        if not view.query:
            urls = {"results": f"{base}/search"}
            return self._render(request, "search.html", {"instruction": shopper.instruction, "urls": urls,
                                                         "message": "Enter what you are looking for."})
        asins = self._search(catalog, view.query)
        pages = max(1, -(-len(asins) // PAGE_SIZE))
        if view.page > pages:
            raise HTTPException(404, f"There are only {pages} page(s) of results for {view.query!r}.")
        start = (view.page - 1) * PAGE_SIZE
        products = [{"asin": a, "name": catalog.products[a].name, "price_tag": catalog.products[a].price_tag,
                     "url": view.item_url(a, options={})} for a in asins[start:start + PAGE_SIZE]]
        urls = {"back": view.search_url(), "prev": view.results_url(view.page - 1) if view.page > 1 else None,
                "next": view.results_url(view.page + 1) if view.page < pages else None}
        return self._render(request, "results.html", {
            "instruction": shopper.instruction, "query": view.query, "page": view.page, "total": len(asins),
            "products": products, "urls": urls})

    async def item(self, request: Request) -> Response:
        _, base, shopper, catalog = self._shopper(request)
        product = self._product(catalog, request.path_params["asin"])
        view = self._view(base, request.query_params, product)
        groups = []
        for kind, values in product.options.items():
            others = {k: v for k, v in view.options.items() if k != kind}
            groups.append({"kind": kind, "choices": values, "param": OPTION_PREFIX + kind,
                           "selected": view.options.get(kind), "keep": view.context(others)})
        urls = {"back": view.search_url(), "prev": view.results_url() if view.query else view.search_url(),
                "item": f"{base}/item/{quote(product.asin)}", "buy": f"{base}/buy/{quote(product.asin)}",
                **{sub: view.item_url(product.asin, sub) for sub in SUB_PAGES}}
        chosen = [(OPTION_PREFIX + k, v) for k, v in view.options.items()]
        return self._render(request, "item.html", {
            "instruction": shopper.instruction, "product": product, "option_groups": groups,
            "chosen": chosen, "urls": urls})

    async def detail(self, request: Request) -> Response:
        _, base, shopper, catalog = self._shopper(request)
        sub = request.path_params["sub"]
        if sub not in SUB_PAGES:
            raise HTTPException(404, f"Items have no {sub!r} page; they have {', '.join(SUB_PAGES)}.")
        product = self._product(catalog, request.path_params["asin"])
        view = self._view(base, request.query_params, product)
        urls = {"back": view.search_url(), "prev": view.item_url(product.asin)}
        return self._render(request, "detail.html", {
            "instruction": shopper.instruction, "product": product, "sub": sub, "heading": sub.capitalize(),
            "urls": urls})

    async def buy(self, request: Request) -> Response:
        session, base, _, catalog = self._shopper(request)
        product = self._product(catalog, request.path_params["asin"])
        # the form is urlencoded; parsed here so the app needs no multipart package
        form = dict(parse_qsl((await request.body()).decode("utf-8", "replace")))
        view = self._view(base, form, product)
        if self.sessions.record_purchase(session, purchase_record(product, view.options)) is None:
            raise HTTPException(404, f"Session {session!r} was closed before the order was placed.")
        return RedirectResponse(f"{base}/receipt", status_code=303)

    async def receipt(self, request: Request) -> Response:
        _, _, shopper, _ = self._shopper(request)
        if shopper.purchase is None:
            raise HTTPException(404, "Nothing was bought in this session yet.")
        return self._render(request, "receipt.html", {"instruction": shopper.instruction,
                                                      "purchase": shopper.purchase})

    async def error(self, request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        try:
            session, base = self._session(request)
        except HTTPException:
            session, base = request.headers.get(SESSION_HEADER), ""
        known = session is not None and self.sessions.get(session) is not None
        return self._render(request, "error.html", {
            "status": status, "reason": HTTPStatus(status).phrase, "message": getattr(exc, "detail", str(exc)),
            "back": (base or "/") if known else None}, status_code=status)


def make_app(catalog: Catalog | None = None, *, sessions: ShopSessions | None = None) -> Starlette:
    """The shop's Starlette app. ``catalog`` serves sessions opened without their own catalog.

    The registry is ``app.state.sessions``; open a session before its pages exist, then name it in the
    ``X-WebShop-Session`` header (or first in the path: ``/demo/search?q=...``):

    >>> app = make_app()
    >>> app.state.sessions.open("demo", instruction="i need a red lipstick")
    """
    shop = _Shop(catalog, sessions or ShopSessions())
    pages = [("", shop.search_page, None), ("/search", shop.results, None), ("/item/{asin}", shop.item, None),
             ("/item/{asin}/{sub}", shop.detail, None), ("/buy/{asin}", shop.buy, ["POST"]),
             ("/receipt", shop.receipt, None)]
    # the header form first: "/search" is that page, not a session named "search" (no session may be named so)
    routes = [Route(path or "/", handler, methods=methods) for path, handler, methods in pages]
    routes += [Route("/{session}" + path, handler, methods=methods) for path, handler, methods in pages]
    app = Starlette(routes=routes, exception_handlers={HTTPException: shop.error})
    app.state.sessions = shop.sessions
    return app


class ShopServer:
    """An app served by uvicorn on 127.0.0.1 (a free port) in a daemon thread."""

    def __init__(self, app: Starlette) -> None:
        self.app = app
        self.port: int | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise ToolError("The shop server is not running: call start() first.")
        return f"http://127.0.0.1:{self.port}"

    @property
    def is_running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._server.should_exit

    def start(self, timeout_s: float = 10.0) -> ShopServer:
        from agentgym.core.background_server import start_uvicorn

        self._server, self._thread, self.port = start_uvicorn(
            self.app, name="agentgym-webshop-server", timeout_s=timeout_s, lifespan="off",
            failed=lambda why: ToolError(f"The shop server {why}."))
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        from agentgym.core.background_server import stop_uvicorn

        stop_uvicorn(self._server, self._thread, timeout_s)
        self._thread = None


_shared: tuple[int, ShopServer] | None = None
_shared_lock = threading.Lock()


def shared_server() -> ShopServer:
    """This process's shop server (started on first use, stopped at exit); sessions bring their catalog."""
    global _shared
    with _shared_lock:
        # a forked child inherits the object but not the server thread: it starts its own
        if _shared is None or _shared[0] != os.getpid() or not _shared[1].is_running:
            server = ShopServer(make_app()).start()
            atexit.register(server.stop)
            _shared = (os.getpid(), server)
        return _shared[1]
