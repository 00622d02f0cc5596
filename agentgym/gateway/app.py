"""The gateway's HTTP app (Starlette): OpenAI's chat completions and models, per-rollout base URLs, the rollouts'
records, and each rollout's env tools over plain HTTP and MCP.

    /v1/models, /v1/chat/completions                      not recorded (any OpenAI client)
    /rollouts/{id}/v1/models, /rollouts/{id}/v1/chat/completions    recorded on the rollout
    POST /rollouts  {"id"?, "metadata"?}  -> {"id", "base_url"};  GET/DELETE /rollouts/{id}: its record
    GET /rollouts/{id}/tools, POST /rollouts/{id}/tools/call {"name", "arguments"}   the env session's tools
    /rollouts/{id}/mcp                                     the same tools as an MCP server (streamable HTTP)

Every error is OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``, with a 4xx for the caller's
mistake and a reason that says what to do.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from agentgym.gateway.chat import GatewayError
from agentgym.gateway.service import Gateway
from agentgym.gateway.session import NoAction

__all__ = ["create_app"]


def _error(error: GatewayError) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse(error.body(), status_code=error.status)


async def _body(request: Any, limit: int) -> Any:
    """The request's JSON body; past ``limit`` bytes a 413, read no further (announced or streamed)."""
    declared = request.headers.get("content-length")
    too_big = GatewayError(413, f"The body is larger than this gateway takes ({limit} bytes): send less (a long "
                           "history can be summarised), or raise the limit (agentgym gateway --max-body-mb).",
                           code="body_too_large")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_big
        chunks.append(chunk)
    raw = b"".join(chunks)
    try:
        return json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError) as e:
        raise GatewayError(400, f"The body is not valid JSON: {e}.") from e


def _sse(response: dict[str, Any], include_usage: bool) -> AsyncIterator[bytes]:
    """A finished completion as OpenAI's stream of chunks: the role, the content or tool calls, the finish."""
    base = {"id": response["id"], "object": "chat.completion.chunk", "created": response["created"],
            "model": response["model"]}

    async def chunks() -> AsyncIterator[bytes]:
        for choice in response["choices"]:
            message, k = choice["message"], choice["index"]
            delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
            if message.get("tool_calls"):
                delta["tool_calls"] = [{**c, "index": j} for j, c in enumerate(message["tool_calls"])]
            for part in ({"index": k, "delta": delta, "logprobs": choice.get("logprobs"), "finish_reason": None},
                         {"index": k, "delta": {}, "logprobs": None, "finish_reason": choice["finish_reason"]}):
                yield f"data: {json.dumps({**base, 'choices': [part]})}\n\n".encode()
        if include_usage:
            yield f"data: {json.dumps({**base, 'choices': [], 'usage': response['usage']})}\n\n".encode()
        yield b"data: [DONE]\n\n"

    return chunks()


def create_app(gateway: Gateway, *, mcp: Any = None, threads: int = 256) -> Any:
    """The ASGI app of ``gateway``; ``mcp``: a :class:`agentgym.gateway.mcp.RolloutMcp` to mount (its routes and
    lifespan), so each rollout's env session is an MCP server too."""
    import anyio
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    limiter = anyio.CapacityLimiter(threads)

    async def blocking(fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args, limiter=limiter)

    def handler(fn: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def wrapped(request: Request) -> Any:
            try:
                return await fn(request)
            except GatewayError as e:
                return _error(e)
            except NoAction as e:
                return _error(GatewayError(409, str(e), code="no_action"))
        return wrapped

    def rollout_id(request: Request) -> str | None:
        return request.path_params.get("rollout_id")

    async def models(request: Request) -> Any:
        if rollout_id(request) is not None:
            gateway.rollout(rollout_id(request))  # type: ignore[arg-type]
        return JSONResponse(gateway.models())

    async def chat(request: Request) -> Any:
        body = await _body(request, gateway.limits.body_bytes)
        gone = threading.Event()

        async def watch() -> None:  # a client that went away cancels its request (its rows leave the batch)
            while not await request.is_disconnected():
                await anyio.sleep(0.2)
            gone.set()

        outcome: list[Any] = []

        async def answer(group: Any) -> None:
            try:
                outcome.append(await blocking(functools.partial(gateway.chat, body, rollout_id(request), gone=gone)))
            except BaseException as e:  # noqa: BLE001 - raised below, outside the task group (not as a group)
                outcome.append(e)
            group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            group.start_soon(answer, group)
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        response = outcome[0]
        if isinstance(body, dict) and body.get("stream"):
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(_sse(response, usage), media_type="text/event-stream")
        return JSONResponse(response)

    def base_url(request: Request, rid: str) -> str:
        return f"{str(request.base_url).rstrip('/')}/rollouts/{rid}/v1"

    async def create(request: Request) -> Any:
        body = await _body(request, gateway.limits.body_bytes) or {}
        if not isinstance(body, dict) or set(body) - {"id", "metadata"}:
            raise GatewayError(400, "POST /rollouts takes an optional JSON object {'id': str, 'metadata': {...}}.")
        if body.get("metadata") is not None and not isinstance(body["metadata"], dict):
            raise GatewayError(400, "metadata must be an object.", param="metadata")
        rollout = gateway.create_rollout(body.get("id"), metadata=body.get("metadata"))
        return JSONResponse({"id": rollout.id, "base_url": base_url(request, rollout.id)}, status_code=201)

    async def record(request: Request) -> Any:
        rid = rollout_id(request)
        if request.method == "DELETE":
            return JSONResponse((await blocking(gateway.close_rollout, rid)).as_dict())
        return JSONResponse(gateway.rollout(rid).as_dict())  # type: ignore[arg-type]

    async def tools(request: Request) -> Any:
        return JSONResponse({"tools": gateway.session(rollout_id(request)).openai_tools()})  # type: ignore[arg-type]

    async def call_tool(request: Request) -> Any:
        session = gateway.session(rollout_id(request))  # type: ignore[arg-type]
        body = await _body(request, gateway.limits.body_bytes)
        if not isinstance(body, dict) or not isinstance(body.get("name"), str):
            raise GatewayError(400, "POST /rollouts/{id}/tools/call takes {'name': str, 'arguments': {...}}.",
                               param="name")
        text, structured, is_error = await blocking(session.call, body["name"], body.get("arguments") or {})
        return JSONResponse({"output": text, "is_error": is_error, "ended": session.ended,
                             "reward": structured["reward"] if session.ended else None})

    async def healthz(request: Request) -> Any:
        return JSONResponse({"status": "ok", "model": gateway.model_name,
                             "open_rollouts": gateway.open_rollouts()})

    async def not_found(request: Request, exc: Exception) -> Any:
        return _error(GatewayError(404, f"No route {request.method} {request.url.path}: the gateway serves "
                                   "/v1/chat/completions, /v1/models and /rollouts/{id}/v1/...", kind="not_found_error"))

    async def not_allowed(request: Request, exc: Exception) -> Any:
        return _error(GatewayError(405, f"{request.method} is not allowed on {request.url.path}."))

    prefix = "/rollouts/{rollout_id}"
    routes = [Route("/healthz", handler(healthz), methods=["GET"]),
              Route("/v1/models", handler(models), methods=["GET"]),
              Route("/v1/chat/completions", handler(chat), methods=["POST"]),
              Route("/rollouts", handler(create), methods=["POST"]),
              Route(prefix, handler(record), methods=["GET", "DELETE"]),
              Route(f"{prefix}/v1/models", handler(models), methods=["GET"]),
              Route(f"{prefix}/v1/chat/completions", handler(chat), methods=["POST"]),
              Route(f"{prefix}/tools", handler(tools), methods=["GET"]),
              Route(f"{prefix}/tools/call", handler(call_tool), methods=["POST"])]
    if mcp is not None:
        routes.extend(mcp.routes)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with (mcp.lifespan() if mcp is not None else contextlib.nullcontext()):
            yield

    return Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_found, 405: not_allowed})
