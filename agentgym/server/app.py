"""The FastAPI app: translates HTTP to and from env sessions, and nothing else."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import re
import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentgym import __version__
from agentgym.core.registry import env_ids as registered_env_ids
from agentgym.core.registry import env_info, load_env_class
from agentgym.server import protocol as p
from agentgym.server.admission import (
    CURRENT_PLACE,
    DEFAULT_MAX_CLIENT_QUEUED,
    DEFAULT_MAX_CLIENT_REQUESTS,
    DEFAULT_MAX_IN_FLIGHT,
    Admission,
    Held,
)
from agentgym.server.capacity import env_limits as merged_env_limits
from agentgym.server.clients import CURRENT_CLIENT, ClientTokens
from agentgym.server.clients import SCOPE_KEY as CLIENT_SCOPE_KEY
from agentgym.server.compat import agentgym_router
from agentgym.server.openenv import openenv_router
from agentgym.server.openenv_mcp import OpenEnvMcp
from agentgym.server.ors import OrsService, ors_router
from agentgym.server.sessions import ApiError, Session, SessionStore
from agentgym.server.threads import DEFAULT_THREADS
from agentgym.server.tokens import TOKEN_HOWTO, token_problem
from agentgym.server.verification import (
    DEFAULT_MAX_CLIENT_VERIFICATIONS,
    DEFAULT_MAX_QUEUED_VERIFICATIONS,
    EnvVerifiers,
    Verifications,
    client_key,
)
from agentgym.server.ws_limits import DEFAULT_MAX_WS_PER_CLIENT, WebSocketLimits, default_idle_timeout_s
from agentgym.verifiers.budget import VerifierUnavailable, prewarm_workers

if TYPE_CHECKING:
    from agentgym.cluster.pool import RayEnvPool
    from agentgym.server.siblings import ProcessSlot

__all__ = ["create_app"]

log = logging.getLogger(__name__)

_OPEN_PATHS = frozenset({"/healthz"})


def _json(data: Any) -> Response:
    # Env results are plain JSON already: skip re-validating them against the response model (hot path).
    return Response(orjson.dumps(data), media_type="application/json")


def _error(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse(_error_dict(ApiError(status, code, message)), status_code=status, headers=dict(headers or {}))


def _error_dict(error: ApiError) -> dict[str, str]:
    """The body of every error answer, on every path: ``{code, message}``."""
    return {"code": error.code, "message": error.message}


def _internal(e: Exception) -> ApiError:
    """What an unexpected exception is answered with, on every path: the server keeps serving."""
    return ApiError(500, "internal", f"Internal error ({type(e).__name__}); the server keeps serving.")


class _Operations:
    """Reset and step of one session: the one implementation behind the plain-ASGI hot path and the FastAPI
    routes declared for the same paths (see ``_add_routes``)."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    async def reset(self, session_id: str, body: p.ResetRequest) -> dict[str, Any]:
        observation, info = await self.store.reset(session_id, body.seed, p.reset_options(body.options))
        return {"observation": observation, "info": info}

    async def step(self, session_id: str, body: p.StepRequest) -> dict[str, Any]:
        return await self.store.step(session_id, body.action, body.step_id)


class _Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("agentgym_http_requests", "HTTP requests.", ["route", "status"],
                                registry=self.registry)
        self.latency = Histogram("agentgym_http_request_seconds", "HTTP request latency.", ["route"],
                                 registry=self.registry,
                                 buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5))
        self.sessions = Gauge("agentgym_sessions", "Open sessions.", ["env_id"], registry=self.registry)
        self.closed = Counter("agentgym_sessions_closed", "Closed sessions by reason.", ["reason"],
                              registry=self.registry)
        self.limit = Gauge("agentgym_session_limit", "Sessions one env may hold (max_sessions where it has no limit "
                           "of its own).", ["env_id"], registry=self.registry)
        self.max_sessions = Gauge("agentgym_max_sessions", "Sessions the server may hold in all.",
                                  registry=self.registry)
        self.refused = Counter("agentgym_sessions_refused", "Session creations refused at capacity (429).",
                               ["env_id"], registry=self.registry)
        self.running = Gauge("agentgym_requests_running", "HTTP requests admitted and not yet answered.",
                             registry=self.registry)
        self.waiting = Gauge("agentgym_requests_waiting", "HTTP requests waiting for their client's turn.",
                             registry=self.registry)
        self.busiest = Gauge("agentgym_requests_running_busiest_client", "HTTP requests running of the client "
                             "with the most.", registry=self.registry)

    def watch(self, admission: Admission) -> None:
        """Read the admission's counts when metrics are scraped."""
        self.running.set_function(lambda: admission.counts().running)
        self.waiting.set_function(lambda: admission.counts().waiting)
        self.busiest.set_function(lambda: admission.counts().busiest_running)


class _Policy:
    """What every request passes: the token (``tokens.py``), the body size limit; and the request metrics."""

    def __init__(self, *, token: str | None, max_body_bytes: int, metrics: _Metrics) -> None:
        self.token, self.max_body_bytes, self.metrics = token, max_body_bytes, metrics
        # (route, status) -> its counter and histogram: labels() looks the child up under a lock, every request
        # (bounded: the routes are the app's, the statuses the few it answers with)
        self._observers: dict[tuple[str, int], tuple[Any, Any]] = {}

    def deny(self, scope: Scope) -> ApiError | None:
        """The error for a request refused on its headers alone, or None."""
        headers = dict(scope["headers"])
        if self.token and scope["path"] not in _OPEN_PATHS:
            problem = token_problem(headers.get(b"authorization", b""), self.token)
            if problem is not None:
                return ApiError(401, "unauthorized", f"{problem} {TOKEN_HOWTO}")
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            return self.too_large()
        return None

    def too_large(self) -> ApiError:
        return ApiError(413, "payload_too_large", f"Request bodies are limited to {self.max_body_bytes} bytes.")

    def observe(self, route: str, status: int, start: float) -> None:
        observers = self._observers.get((route, status))
        if observers is None:
            observers = self._observers[route, status] = (self.metrics.requests.labels(route, str(status)),
                                                          self.metrics.latency.labels(route))
        observers[0].inc()
        observers[1].observe(time.perf_counter() - start)


class _Guard:
    """Pure ASGI middleware applying the policy to every request FastAPI serves."""

    def __init__(self, app: ASGIApp, *, policy: _Policy) -> None:
        self.app, self.policy = app, policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start, status = time.perf_counter(), 500
        denied = self.policy.deny(scope)
        if denied is not None:
            headers = {"WWW-Authenticate": "Bearer"} if denied.status == 401 else None
            await _error(denied.status, denied.code, denied.message, headers)(scope, receive, send)
            self._observe(scope, denied.status, start)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.policy.max_body_bytes:  # chunked bodies without a Content-Length
                raise self.policy.too_large()
            return message

        async def watched_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, limited_receive, watched_send)
        finally:
            self._observe(scope, status, start)

    def _observe(self, scope: Scope, status: int, start: float) -> None:
        self.policy.observe(getattr(scope.get("route"), "path", "unmatched"), status, start)


def create_app(env_ids: list[str] | None = None, *, max_sessions: int = 1024, session_ttl_s: float = 600.0,
               token: str | None = None, max_body_bytes: int = 1 << 20, reap_every_s: float | None = None,
               env_threads: int = DEFAULT_THREADS, server_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
               env_limits: Mapping[str, int] | None = None, process: ProcessSlot | None = None,
               env_pool: RayEnvPool | None = None, ws_idle_timeout_s: float | None = None,
               max_ws_per_client: int = DEFAULT_MAX_WS_PER_CLIENT,
               max_client_verifications: int = DEFAULT_MAX_CLIENT_VERIFICATIONS,
               max_queued_verifications: int = DEFAULT_MAX_QUEUED_VERIFICATIONS,
               prewarm_verifiers: bool = False, max_sessions_per_client: int | None = None,
               probe_envs: bool = False, client_tokens: Mapping[str, str] | None = None,
               max_client_requests: int = DEFAULT_MAX_CLIENT_REQUESTS,
               max_client_queued: int = DEFAULT_MAX_CLIENT_QUEUED,
               max_requests_in_flight: int = DEFAULT_MAX_IN_FLIGHT, ors_default: str | None = None) -> FastAPI:
    """The agentgym HTTP app serving sessions of ``env_ids`` (default: every registered id).

    ``server_kwargs[env_id]`` are env keyword arguments set by the operator (data paths,
    retriever); clients may add only the env's ``client_kwargs``. ``env_limits[env_id]``
    caps the sessions of one env; envs whose sessions hold processes and memory
    (``capacity.SESSION_COSTS``) have a default limit derived from the host's memory.
    ``process``: this app is one of several processes of a server (``agentgym serve
    --processes N``): its ids name it, and the limits hold for all the processes together.
    ``env_pool``: sessions are made on this Ray pool's host actors (``agentgym serve --ray``), under its per-node
    limits (``env_limits`` then has no defaults: only the operator's own, for the whole server); the app shuts
    the pool down with itself.
    ``ws_idle_timeout_s``: a WebSocket (OpenEnv's ``/ws``) that sends no data frame this long is closed (default:
    ``session_ttl_s``, at least 5 minutes); ``max_ws_per_client``: open WebSockets one client (peer address) may
    hold; more are refused with 429 (``ws_limits.py``).
    ORS (``ors.py``) is served at the root; ``ors_default`` is the env its bare routes play (default: the first of
    ``env_ids``).
    ``/v1/verify`` runs on threads of its own (``verification.py``): at most ``max_queued_verifications`` in
    flight (more: 503 with Retry-After), ``max_client_verifications`` of one client (more: 429).
    A client is its host (``clients.py``: every loopback address one, IPv6 by /64) or the name of a token the
    operator issued it (``client_tokens``: ``{name: token}``, each also a credential for this server):
    ``max_sessions_per_client`` sessions it may hold (default: all but an eighth of ``max_sessions``), and the
    env threads serve clients fairly (``threads.py``).
    Every HTTP request passes ``admission.py``: the server works on at most ``max_client_requests`` of one client
    at once (a request waiting on an env thread, a verifier or its session lends its place), the rest wait in its
    queue (past ``max_client_queued``: 429), at most ``max_requests_in_flight`` in all, the next taken from the
    client with the fewest.
    ``prewarm_verifiers``: start the verifier workers in the background when the app starts (``agentgym serve``
    does), so that no first verification waits for one (``agentgym.verifiers.budget.prewarm_workers``).
    ``probe_envs``: make one env of each id in the background at start and read its task list (``agentgym serve``
    does; ``SessionStore.probe``): an env whose sessions all fail (a broken task list) makes ``/healthz`` say
    ``degraded`` with the reason, as does an env whose last session failed to open.
    """
    ws_limits = WebSocketLimits(default_idle_timeout_s(session_ttl_s) if ws_idle_timeout_s is None
                                else ws_idle_timeout_s, max_ws_per_client)
    served = sorted(env_ids or registered_env_ids())
    store = SessionStore(allowed_env_ids=served, max_sessions=max_sessions, session_ttl_s=session_ttl_s,
                         server_kwargs=server_kwargs, env_threads=env_threads,
                         env_limits=merged_env_limits(served, env_limits, defaults=env_pool is None),
                         env_pool=env_pool, max_sessions_per_client=max_sessions_per_client)
    env_verifiers = None if env_pool is not None else EnvVerifiers(
        store.env_ids, lambda env_id: store._make_env(env_id, load_env_class(env_id),
                                                      dict(store.server_kwargs.get(env_id, {}))))
    verifications = Verifications(max_client=max_client_verifications, max_queued=max_queued_verifications,
                                  env_verifier=env_verifiers)
    if process is not None:
        from agentgym.server.siblings import SharedCapacity  # flock and mmap: one machine's processes

        store.new_session_id, store.lost = process.new_session_id, process.lost
        store.shared = SharedCapacity(process.directory / "capacity", store.env_ids, process.index)
    metrics = _Metrics()
    metrics.max_sessions.set(max_sessions)
    for env_id in store.env_ids:
        metrics.sessions.labels(env_id).set(0)
        metrics.limit.labels(env_id).set(store.env_limits.get(env_id, max_sessions))

    def on_close(session: Session, reason: str) -> None:
        metrics.sessions.labels(session.env_id).dec()
        metrics.closed.labels(reason.split(":")[0]).inc()

    store.on_open = lambda session: metrics.sessions.labels(session.env_id).inc()
    store.on_close = on_close
    store.on_refuse = lambda env_id: metrics.refused.labels(env_id).inc()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if prewarm_verifiers:
            prewarm_workers()
        reaper = asyncio.create_task(store.reaper(reap_every_s or max(0.5, min(30.0, session_ttl_s / 4))))
        probing = asyncio.create_task(store.probe()) if probe_envs and env_pool is None else None
        try:
            yield
        finally:
            reaper.cancel()
            if probing is not None:
                probing.cancel()
            await store.close_all()
            verifications.shutdown()
            if env_verifiers is not None:
                await asyncio.to_thread(env_verifiers.close)
            if env_pool is not None:
                await asyncio.to_thread(env_pool.shutdown)

    app = _App(title="agentgym", version=__version__, lifespan=lifespan,
                  description="Sessions of agentgym environments over HTTP. Errors are {code, message}.",
                  responses={"default": {"model": p.ErrorBody}})
    app.client_tokens, app.server_token = ClientTokens(client_tokens or {}, token), token
    app.admission = Admission(max_client=max_client_requests, max_client_queued=max_client_queued,
                              max_in_flight=max_requests_in_flight)
    metrics.watch(app.admission)
    policy = _Policy(token=token, max_body_bytes=max_body_bytes, metrics=metrics)
    app.state.store, app.state.policy, app.state.metrics_registry = store, policy, metrics.registry
    app.add_middleware(_Guard, policy=policy)
    operations = _Operations(store)
    app.hot = _HotPath(operations, policy)
    _add_error_handlers(app)
    _add_routes(app, store, metrics, process, operations, verifications)
    for env_id in store.env_ids:
        app.include_router(agentgym_router(store, env_id, process.new_compat_id if process else None))
    app.include_router(openenv_router(store, token=token, max_frame_bytes=max_body_bytes, ws_limits=ws_limits))
    # ORS at the root (its clients know no prefix); the default env, the bare routes', is the first named
    default = ors_default or (env_ids[0] if env_ids else None)
    app.include_router(ors_router(OrsService(store, OpenEnvMcp(store), default)))
    return app


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, e: ApiError) -> JSONResponse:
        return _error(e.status, e.code, e.message, e.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_payload(request: Request, e: RequestValidationError) -> JSONResponse:
        return _error(422, "invalid_payload", _validation_message(e.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, e: StarletteHTTPException) -> JSONResponse:
        codes = {404: "not_found", 405: "method_not_allowed"}
        return _error(e.status_code, codes.get(e.status_code, "http_error"),
                      f"{request.method} {request.url.path}: {e.detail}. See GET /docs for the API.")

    @app.exception_handler(Exception)
    async def internal(request: Request, e: Exception) -> JSONResponse:
        error = _internal(e)
        return _error(error.status, error.code, error.message)


def _batch(items: list[dict[str, Any]], outcomes: list[Any], answer: Any) -> Response:
    """A batch route's answer: per item, its key fields and ``answer(outcome)``, or the item's error."""
    return _json({"results": [{**item, "error": _error_dict(outcome)} if isinstance(outcome, ApiError)
                              else {**item, **answer(outcome)} for item, outcome in zip(items, outcomes)]})


def _validation_message(errors: list[dict[str, Any]]) -> str:
    problems = "; ".join(f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}" for err in errors[:5])
    return f"Invalid request: {problems}"


_HOT_PATH = re.compile(r"/v1/sessions/([^/]+)/(step|reset)")
_JSON_HEADERS = [(b"content-type", b"application/json")]


class _App(FastAPI):
    """FastAPI, with the hot path (reset and step) answered in plain ASGI.

    The FastAPI routes of the same paths stay declared for the OpenAPI schema and
    documentation; requests for them are served here, before FastAPI's middleware
    and routing layers, with the same checks (token, body limit), the same pydantic
    validation, the same bodies and the same metrics.
    """

    hot: _HotPath
    client_tokens: ClientTokens | None = None
    server_token: str | None = None
    admission: Admission | None = None

    def client_tokens_scope(self, scope: Scope) -> Scope:
        """``scope`` as the client whose issued token it carries, if it carries one: named in the scope
        (``client_key`` reads it), its credential then the server's own, so every later check (the token on
        every route, OpenEnv's WebSocket) takes it as the server's token."""
        headers = scope["headers"]
        authorization = next((value for name, value in headers if name == b"authorization"), b"")
        issued = self.client_tokens.client_of(authorization) if authorization and self.client_tokens else None
        if issued is None:
            return scope
        if self.server_token:
            headers = [(name, value) for name, value in headers if name != b"authorization"]
            headers.append((b"authorization", b"Bearer " + self.server_token.encode("utf-8")))
        return {**scope, "headers": headers, CLIENT_SCOPE_KEY: f"client:{issued}"}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await super().__call__(scope, receive, send)
            return
        scope = _api_key_as_bearer(scope)
        if self.client_tokens:  # a token the operator issued: that client, from any address
            scope = self.client_tokens_scope(scope)
        # the client every per-client share counts against (agentgym.server.clients), for the hot path too
        key = client_key(scope)
        client = CURRENT_CLIENT.set(key)
        try:
            if scope["type"] != "http" or self.admission is None:
                await self._dispatch(scope, receive, send)
                return
            place = Held(self.admission, key)
            try:  # one client's requests in flight, across routes and connections (admission.py)
                await place.take()
            except ApiError as e:
                await _error(e.status, e.code, e.message, e.headers)(scope, receive, send)
                return
            token = CURRENT_PLACE.set(place)
            try:
                await self._dispatch(scope, receive, send)
            finally:
                CURRENT_PLACE.reset(token)
                place.give_up()
        finally:
            CURRENT_CLIENT.reset(client)

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            match = _HOT_PATH.fullmatch(scope["path"])
            if match is not None:
                await self.hot(scope, receive, send, match[1], match[2])
                return
        await super().__call__(scope, receive, send)


def _api_key_as_bearer(scope: Scope) -> Scope:
    """An ``X-API-Key`` header (what ORS clients send their key as) read as ``Authorization: Bearer``, where the
    request has no Authorization of its own."""
    headers = scope["headers"]
    key = next((value for name, value in headers if name == b"x-api-key"), None)
    if key is None or any(name == b"authorization" for name, _ in headers):
        return scope
    return {**scope, "headers": [*headers, (b"authorization", b"Bearer " + key)]}


class _HotPath:
    """``POST /v1/sessions/{id}/step|reset`` in plain ASGI: the policy's checks, the body read under its size
    limit, the request model's validation, then ``_Operations``: what the FastAPI route of the path would do."""

    def __init__(self, operations: _Operations, policy: _Policy) -> None:
        self.operations, self.policy = operations, policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send, session_id: str, op: str) -> None:
        start, status, extra = time.perf_counter(), 500, {}
        try:
            denied = self.policy.deny(scope)
            if denied is not None:
                status, body = denied.status, orjson.dumps(_error_dict(denied))
            else:
                raw = await self._body(receive)
                if op == "step":
                    result = await self.operations.step(session_id, _parse(raw, p.StepRequest))
                else:
                    result = await self.operations.reset(session_id, _parse(raw, p.ResetRequest))
                status, body = 200, orjson.dumps(result)
        except ApiError as e:
            status, body, extra = e.status, orjson.dumps(_error_dict(e)), e.headers
        except Exception as e:  # as the FastAPI layer answers: the server keeps serving
            log.exception("internal error on %s", scope["path"])
            error = _internal(e)
            status, body = error.status, orjson.dumps(_error_dict(error))
        headers = [*_JSON_HEADERS, (b"content-length", str(len(body)).encode()),
                   *((name.lower().encode(), value.encode()) for name, value in extra.items())]
        if status == 401:
            headers.append((b"www-authenticate", b"Bearer"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        self.policy.observe(f"/v1/sessions/{{session_id}}/{op}", status, start)

    async def _body(self, receive: Receive) -> bytes:
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ApiError(400, "disconnected", "The client went away before sending the whole body.")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.policy.max_body_bytes:
                raise self.policy.too_large()
            chunks.append(chunk)
            more = message.get("more_body", False)
        return b"".join(chunks)


def _parse(raw: bytes, model: type[BaseModel]) -> Any:
    try:
        return model.model_validate_json(raw)
    except ValidationError as e:
        raise ApiError(422, "invalid_payload", _validation_message(e.errors())) from e


def _add_routes(app: FastAPI, store: SessionStore, metrics: _Metrics, process: ProcessSlot | None,
                operations: _Operations, verifications: Verifications) -> None:
    # Routing: every route below is served by FastAPI (behind the _Guard middleware), except
    # POST /v1/sessions/{id}/reset and /step: _App.__call__ answers those in plain ASGI (_HotPath) before FastAPI
    # sees them. Their routes stay declared here for the OpenAPI schema and call the same _Operations, so each
    # operation has one implementation whichever layer serves it. With --processes N, affinity.py routes a
    # request to the process holding its session before any of this runs.
    @app.get("/healthz", response_model=p.HealthResponse, response_model_exclude_none=True)
    async def healthz() -> dict[str, Any]:
        health = {"status": "ok", "sessions": len(store.sessions), "version": __version__,
                  "capacity": store.capacity()}
        if process is not None:
            health["processes"] = [{"index": process.index, "generation": process.generation, "pid": os.getpid(),
                                    "status": "ok", "sessions": len(store.sessions)}]
        if store.failing:  # an env none of whose sessions opens lately: the server is up, that env is not
            health["status"] = "degraded"
            health["envs_failing"] = dict(sorted(store.failing.items()))
        if store.pool is not None:
            health["ray"] = store.pool.describe()
            if health["ray"]["degraded"]:
                health["status"] = "degraded"  # a host died; its replacement starts when the pool next looks
        return health

    @app.get("/metrics", response_class=PlainTextResponse)
    async def prometheus() -> PlainTextResponse:
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/envs", response_model=list[p.EnvSpecModel])
    async def list_envs() -> list[dict[str, Any]]:
        infos = [env_info(e) for e in store.env_ids]
        return [{"id": i.id, "description": i.description, "extras": list(i.extras),
                 "client_kwargs": list(i.client_kwargs)} for i in infos]

    @app.post("/v1/envs/describe", response_model=p.DescribeEnvResponse)
    async def describe_env(body: p.DescribeEnvRequest) -> dict[str, Any]:
        """A served env's split, task count and digest: what `agentgym eval --remote` plans with when the env is
        only the server's (its file or package need not be on the client)."""
        return await store.describe(body.env_id, body.kwargs, body.split)

    @app.post("/v1/sessions", response_model=p.CreateSessionResponse, status_code=201)
    async def create_session(body: p.CreateSessionRequest) -> dict[str, Any]:
        options = p.reset_options(body.options)
        session, (observation, info) = await store.create(body.env_id, body.kwargs, body.seed, options)
        return {"session_id": session.id, "env_id": session.env_id, "observation": observation, "info": info}

    @app.post("/v1/sessions/{session_id}/reset", response_model=p.ResetResponse)
    async def reset(session_id: str, body: p.ResetRequest) -> Response:  # served by _HotPath; see above
        return _json(await operations.reset(session_id, body))

    @app.post("/v1/sessions/{session_id}/step", response_model=p.StepResponse)
    async def step(session_id: str, body: p.StepRequest) -> Response:  # served by _HotPath; see above
        return _json(await operations.step(session_id, body))

    @app.delete("/v1/sessions/{session_id}")
    async def close(session_id: str) -> dict[str, bool]:
        await store.close(session_id)
        return {"closed": True}

    @app.post("/v1/step", response_model=p.BatchStepResponse)
    async def batch_step(body: p.BatchStepRequest) -> Response:
        outcomes = await store.batch_step([(s.session_id, s.action, s.step_id) for s in body.steps])
        return _batch([{"session_id": s.session_id} for s in body.steps], outcomes, lambda result: {"result": result})

    @app.post("/v1/reset", response_model=p.BatchResetResponse)
    async def batch_reset(body: p.BatchResetRequest) -> Response:
        outcomes = await store.batch_reset([(r.session_id, r.seed, p.reset_options(r.options))
                                            for r in body.resets])
        return _batch([{"session_id": r.session_id} for r in body.resets], outcomes,
                      lambda result: {"result": {"observation": result[0], "info": result[1]}})

    @app.post("/v1/create", response_model=p.BatchCreateResponse)
    async def batch_create(body: p.BatchCreateRequest) -> Response:
        outcomes = await store.create_many([(s.env_id, s.kwargs, s.seed, p.reset_options(s.options))
                                            for s in body.sessions])
        return _batch([{"env_id": s.env_id} for s in body.sessions], outcomes,
                      lambda result: {"session_id": result[0].id, "observation": result[1][0], "info": result[1][1]})

    @app.post("/v1/verify", response_model=p.VerifyResponse)
    async def verify(body: p.VerifyRequest, request: Request) -> Any:
        try:
            # on threads of its own: a slow verification never holds up the event loop, a step or a new session
            return await verifications.verify(client_key(request.scope), body.verifier, body.prediction, body.task)
        except VerifierUnavailable as e:  # the server's failure, never a score: try again later
            retry_after = str(max(1, math.ceil(e.retry_after_s)))
            return _error(503, "verifier_unavailable", str(e), {"Retry-After": retry_after})
        except ApiError:
            raise
        except Exception as e:  # ConfigError (unknown name) or VerifierError (bad gold): the client's input
            raise ApiError(422, "invalid_verify_request", str(e)) from e
