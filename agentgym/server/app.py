"""The FastAPI app: translates HTTP to and from env sessions, and nothing else."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio.to_thread
import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentgym import __version__
from agentgym.core.registry import env_info
from agentgym.server import protocol as p
from agentgym.server.compat import agentgym_router
from agentgym.server.sessions import ApiError, Session, SessionStore
from agentgym.verifiers import get_verifier

__all__ = ["create_app"]

_OPEN_PATHS = frozenset({"/healthz"})


def _json(data: Any) -> Response:
    # Env results are plain JSON already: skip re-validating them against the response model (hot path).
    return Response(orjson.dumps(data), media_type="application/json")


def _error(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=status, headers=dict(headers or {}))


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


class _Guard:
    """Pure ASGI middleware: bearer token, request body size limit, request metrics."""

    def __init__(self, app: ASGIApp, *, token: str | None, max_body_bytes: int, metrics: _Metrics) -> None:
        self.app, self.token, self.max_body_bytes, self.metrics = app, token, max_body_bytes, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start, status = time.perf_counter(), 500
        headers = dict(scope["headers"])
        if self.token and scope["path"] not in _OPEN_PATHS:
            given = headers.get(b"authorization", b"").decode("latin-1")
            if not hmac.compare_digest(given, f"Bearer {self.token}"):
                response = _error(401, "unauthorized", "Send the server's token as 'Authorization: Bearer <token>'.",
                                  {"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                self._observe(scope, 401, start)
                return
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            await _error(413, "payload_too_large", f"Request bodies are limited to {self.max_body_bytes} bytes.")(
                scope, receive, send)
            self._observe(scope, 413, start)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body_bytes:  # chunked bodies without a Content-Length
                raise ApiError(413, "payload_too_large", f"Request bodies are limited to {self.max_body_bytes} bytes.")
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
        route = getattr(scope.get("route"), "path", "unmatched")
        self.metrics.requests.labels(route, str(status)).inc()
        self.metrics.latency.labels(route).observe(time.perf_counter() - start)


def create_app(env_ids: list[str] | None = None, *, max_sessions: int = 1024, session_ttl_s: float = 600.0,
               token: str | None = None, max_body_bytes: int = 1 << 20, reap_every_s: float | None = None,
               env_threads: int | None = None, server_kwargs: Mapping[str, Mapping[str, Any]] | None = None) -> FastAPI:
    """The agentgym HTTP app serving sessions of ``env_ids`` (default: every registered id).

    ``server_kwargs[env_id]`` are env keyword arguments set by the operator (data paths,
    retriever); clients may add only the env's ``client_kwargs``.
    """
    store = SessionStore(allowed_env_ids=env_ids, max_sessions=max_sessions, session_ttl_s=session_ttl_s,
                         server_kwargs=server_kwargs)
    metrics = _Metrics()

    def on_close(session: Session, reason: str) -> None:
        metrics.sessions.labels(session.env_id).dec()
        metrics.closed.labels(reason.split(":")[0]).inc()

    store.on_close = on_close

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if env_threads is not None:  # the worker threads that run env code
            anyio.to_thread.current_default_thread_limiter().total_tokens = env_threads
        reaper = asyncio.create_task(store.reaper(reap_every_s or max(0.5, min(30.0, session_ttl_s / 4))))
        try:
            yield
        finally:
            reaper.cancel()
            await store.close_all()

    app = FastAPI(title="agentgym", version=__version__, lifespan=lifespan,
                  description="Sessions of agentgym environments over HTTP. Errors are {code, message}.",
                  responses={"default": {"model": p.ErrorBody}})
    app.state.store = store
    app.add_middleware(_Guard, token=token, max_body_bytes=max_body_bytes, metrics=metrics)
    _add_error_handlers(app)
    _add_routes(app, store, metrics)
    for env_id in store.env_ids:
        app.include_router(agentgym_router(store, env_id))
    return app


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, e: ApiError) -> JSONResponse:
        return _error(e.status, e.code, e.message)

    @app.exception_handler(RequestValidationError)
    async def invalid_payload(request: Request, e: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}" for err in e.errors()[:5])
        return _error(422, "invalid_payload", f"Invalid request: {problems}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, e: StarletteHTTPException) -> JSONResponse:
        codes = {404: "not_found", 405: "method_not_allowed"}
        return _error(e.status_code, codes.get(e.status_code, "http_error"),
                      f"{request.method} {request.url.path}: {e.detail}. See GET /docs for the API.")

    @app.exception_handler(Exception)
    async def internal(request: Request, e: Exception) -> JSONResponse:
        return _error(500, "internal", f"Internal error ({type(e).__name__}); the server keeps serving.")


def _add_routes(app: FastAPI, store: SessionStore, metrics: _Metrics) -> None:
    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "sessions": len(store.sessions), "version": __version__}

    @app.get("/metrics", response_class=PlainTextResponse)
    async def prometheus() -> PlainTextResponse:
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/envs", response_model=list[p.EnvSpecModel])
    async def list_envs() -> list[dict[str, Any]]:
        infos = [env_info(e) for e in store.env_ids]
        return [{"id": i.id, "description": i.description, "extras": list(i.extras),
                 "client_kwargs": list(i.client_kwargs)} for i in infos]

    @app.post("/v1/sessions", response_model=p.CreateSessionResponse, status_code=201)
    async def create_session(body: p.CreateSessionRequest) -> dict[str, Any]:
        session, (observation, info) = await store.create(body.env_id, body.kwargs, body.seed, body.options)
        metrics.sessions.labels(session.env_id).inc()
        return {"session_id": session.id, "env_id": session.env_id, "observation": observation, "info": info}

    @app.post("/v1/sessions/{session_id}/reset", response_model=p.ResetResponse)
    async def reset(session_id: str, body: p.ResetRequest) -> Response:
        observation, info = await store.reset(session_id, body.seed, body.options)
        return _json({"observation": observation, "info": info})

    @app.post("/v1/sessions/{session_id}/step", response_model=p.StepResponse)
    async def step(session_id: str, body: p.StepRequest) -> Response:
        return _json(await store.step(session_id, body.action, body.step_id))

    @app.delete("/v1/sessions/{session_id}")
    async def close(session_id: str) -> dict[str, bool]:
        await store.close(session_id)
        return {"closed": True}

    @app.post("/v1/step", response_model=p.BatchStepResponse)
    async def batch_step(body: p.BatchStepRequest) -> Response:
        outcomes = await store.batch_step([(s.session_id, s.action, s.step_id) for s in body.steps])
        results = []
        for item, outcome in zip(body.steps, outcomes):
            if isinstance(outcome, ApiError):
                results.append({"session_id": item.session_id,
                                "error": {"code": outcome.code, "message": outcome.message}})
            else:
                results.append({"session_id": item.session_id, "result": outcome})
        return _json({"results": results})

    @app.post("/v1/verify", response_model=p.VerifyResponse)
    async def verify(body: p.VerifyRequest) -> dict[str, Any]:
        try:
            verifier = get_verifier(body.verifier)
            return verifier(body.prediction, body.task).as_dict()
        except Exception as e:  # ConfigError (unknown name) or VerifierError (bad gold): the client's input
            raise ApiError(422, "invalid_verify_request", str(e)) from e
