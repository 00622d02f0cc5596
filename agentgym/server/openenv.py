"""OpenEnv's protocol, per served env, so OpenEnv clients (and TRL through them) use ``agentgym serve`` unchanged.

An OpenEnv client is given one env's base URL; here that is
``http://host:port/openenv/<env id>`` (e.g. ``/openenv/agentgym/SearchQA-v0``), and the
client adds ``/ws``, ``/reset``, ... to it, as it does to an OpenEnv server's root.

- ``/ws`` (WebSocket): one agentgym session per connection, made through the session
  store (capacity, idle TTL, metrics, per-env limits, the env worker threads all apply).
  Frames ``{"type": "reset"|"step"|"state"|"close", "data": ...}``; answers
  ``{"type": "observation", "data": {"observation", "reward", "done"}}``,
  ``{"type": "state", "data": {...}}`` or ``{"type": "error", "data": {"code", "message"}}``
  with OpenEnv's codes (``CAPACITY_REACHED``, ``VALIDATION_ERROR``, ...). A bad frame is an
  error frame and the connection lives on. The session is made at the first reset (so a
  full server answers that reset ``CAPACITY_REACHED``, and a later reset may retry), and
  closed when the connection closes.
- ``POST /reset`` and ``POST /step``: stateless, as in OpenEnv (a fresh env per request,
  closed after it). ``/reset`` answers a new episode's first observation; ``/step`` resets a
  fresh env with the request's ``seed``/``options`` and makes one step: a one-step episode.
- ``GET /state`` (of a fresh env: no episode), ``/schema``, ``/metadata``, ``/health``, and
  ``/openapi.json``: these routes alone, as paths of the env's base URL (what ``openenv validate`` reads).
- ``POST /mcp`` (JSON-RPC), and over ``/ws`` OpenEnv's ``list_tools``/``call_tool`` actions (what its
  ``MCPToolClient`` sends) and ``mcp`` frames: the env's tools as MCP tools, ``openenv_mcp.py``.

Actions: ``{"message": "<model text>"}`` (``"text"`` too), parsed by the env's action format as
in process; or an agentgym dict action (``{"name", "arguments"}``, ``{"answer"}``,
``{"tool_calls": [...]}``), where a wrong one is an observation with ``info.action_error``, as in
process. Observations: ``{"text", "info", "terminated", "truncated"}``, the env's own; after a reset also
``metadata: {"prompt", "task_id"}``, the one field OpenEnv's ``MCPToolClient`` shows of an observation.

The server's token applies: HTTP routes need ``Authorization: Bearer <token>``; a WebSocket
also accepts HTTP Basic with the token as password, which is what OpenEnv's client (the
``websockets`` library) sends for a base URL ``http://user:<token>@host:port/...``.

A WebSocket that sends no frame for the idle timeout is closed (1001), and a client holding
its cap of open WebSockets is refused (429): ``ws_limits.py``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import uuid
from typing import Any, Literal

import orjson
from fastapi import APIRouter, Body, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from starlette.websockets import WebSocketState

from agentgym import __version__
from agentgym.core.registry import env_info
from agentgym.errors import EnvNotFound
from agentgym.server.openenv_mcp import (
    Binding,
    CallToolFrame,
    EnvTools,
    ListToolsFrame,
    OpenEnvMcp,
    RpcRequest,
    RpcResponse,
    ToolFailure,
    tool_result,
)
from agentgym.server.protocol import ResetOptions, reset_options
from agentgym.server.sessions import ApiError, Session, SessionStore
from agentgym.server.ws_limits import FULL_CLOSE_CODE, WebSocketGate, WebSocketLimits, client_of

__all__ = ["OPENENV_HTTP_VERSION", "PREFIX", "env_openapi", "openenv_router"]

PREFIX = "/openenv"
# The OpenEnv HTTP API these routes speak, as a per-env openapi.json declares it: openenv-core's servers say
# 1.0.0, and `openenv validate` reads its standard profile (openenv-http/1.x) from it. agentgym's own version
# is the document's x-agentgym-version.
OPENENV_HTTP_VERSION = "1.0.0"

_MAX_SEED = 2**63 - 1


# ---- wire models ------------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextAction(_Strict):
    message: str = Field(description="The model's text, parsed by the env's action format as in process "
                                     "(\"text\" is accepted for the same field).")
    metadata: dict[str, Any] = Field(default_factory=dict, description="OpenEnv's action metadata (not used).")


class ToolCallAction(_Strict):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)


class ToolCallsAction(_Strict):
    tool_calls: list[ToolCallAction]
    metadata: dict[str, Any] = Field(default_factory=dict)


class AnswerAction(_Strict):
    answer: str
    metadata: dict[str, Any] = Field(default_factory=dict)


_ACTION_SCHEMA = TypeAdapter(TextAction | ToolCallAction | ToolCallsAction | AnswerAction).json_schema()


class Observation(BaseModel):
    text: str = Field(description="The env's observation: the task prompt after reset, the tool output after a step.")
    info: dict[str, Any] = Field(description="The env's info dict, as in process (task_id, tools, action_error, ...).")
    terminated: bool = False
    truncated: bool = False
    metadata: dict[str, Any] | None = Field(default=None, description=(
        "After a reset only: {prompt, task_id}, where OpenEnv's MCPToolClient shows them (observation.metadata)."))


class Result(BaseModel):
    """OpenEnv's step result: what HTTP answers and a WebSocket ``observation`` frame carries as ``data``."""

    observation: Observation
    reward: float | None = Field(description="None after reset; 0 until the episode ends, then the verifier's.")
    done: bool = Field(description="terminated or truncated.")


class State(BaseModel):
    episode_id: str | None
    step_count: int = Field(ge=0)
    env_id: str
    task_id: str | None = None
    done: bool = True


class ResetData(_Strict):
    """A reset: the data of a ``reset`` frame, or the body of ``POST /reset``."""

    seed: int | None = Field(default=None, ge=0, le=_MAX_SEED, strict=True)
    episode_id: str | None = Field(default=None, max_length=255, description="Reported by state (default: a uuid).")
    options: ResetOptions | None = Field(default=None, description="reset options: task_id, split, index.")
    kwargs: dict[str, Any] | None = Field(default=None, description=(
        "Env keyword arguments a client may set (the env's client_kwargs, see GET /v1/envs). Over a WebSocket, "
        "a reset with other kwargs than the session's replaces the session."))


class StepBody(ResetData):
    """``POST /step``: a fresh env, reset with ``seed``/``options``, and one step of ``action``."""

    action: dict[str, Any] = Field(description="An action (see GET .../schema).")
    timeout_s: float | None = Field(default=None, gt=0, description="OpenEnv's field; not used.")
    request_id: str | None = Field(default=None, max_length=255, description="OpenEnv's field; not used.")


class Schemas(BaseModel):
    action: dict[str, Any]
    observation: dict[str, Any]
    state: dict[str, Any]


class Metadata(BaseModel):
    name: str
    description: str
    readme_content: str | None = None
    version: str | None = None
    author: str | None = None
    documentation_url: str | None = None


class Health(BaseModel):
    status: Literal["healthy"] = "healthy"


class _Frame(_Strict):
    type: str
    data: Any = None


# ---- mapping ------------------------------------------------------------------------
def to_action(action: dict[str, Any]) -> Any:
    """The agentgym action of an OpenEnv action dict (OpenEnv's ``metadata`` dropped)."""
    fields = {k: v for k, v in action.items() if k != "metadata"}
    if len(fields) == 1:
        (key, value), = fields.items()
        if key in ("message", "text") and isinstance(value, str):
            return value
        if key == "tool_calls" and isinstance(value, list):
            return value
    return fields  # a dict action; anything else the env answers as the agent's mistake, as in process


def _result(observation: str, info: dict[str, Any], reward: float | None = None, terminated: bool = False,
            truncated: bool = False) -> dict[str, Any]:
    return {"observation": {"text": observation, "info": info, "terminated": terminated, "truncated": truncated},
            "reward": reward, "done": terminated or truncated}


def _reset_result(observation: str, info: dict[str, Any]) -> dict[str, Any]:
    result = _result(observation, info)
    result["observation"]["metadata"] = {"prompt": observation, "task_id": info.get("task_id")}
    return result


def _step_result(step: dict[str, Any]) -> dict[str, Any]:
    return _result(step["observation"], step["info"], step["reward"], step["terminated"], step["truncated"])


def _call_tool_result(name: str, outcome: dict[str, Any] | ToolFailure, done: bool) -> dict[str, Any]:
    """A ``call_tool`` step as OpenEnv's ``CallToolObservation`` result: the tool's result, or its error."""
    if isinstance(outcome, ToolFailure):  # no action: nothing happened
        observation = {"tool_name": name, "result": None,
                       "error": {"error_type": outcome.kind, "message": outcome.message}}
        return {"observation": observation, "reward": None, "done": done}
    return {"observation": {"tool_name": name, "result": tool_result(outcome), "error": None},
            "reward": outcome["reward"], "done": outcome["terminated"] or outcome["truncated"]}


# OpenEnv's error codes, from ours
_WS_CODES = {429: "CAPACITY_REACHED", 422: "VALIDATION_ERROR", 400: "VALIDATION_ERROR", 413: "VALIDATION_ERROR",
             404: "SESSION_ERROR", 409: "EXECUTION_ERROR", 500: "EXECUTION_ERROR"}


def _error_frame(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"code": code, "message": message, **extra}}


def _api_error_frame(e: ApiError) -> dict[str, Any]:
    message = "The episode is over (or never started): send a reset frame." if e.code == "reset_needed" else e.message
    return _error_frame(_WS_CODES.get(e.status, "EXECUTION_ERROR"), message, agentgym_code=e.code)


def _validation_frame(e: ValidationError, what: str) -> dict[str, Any]:
    errors = e.errors(include_url=False, include_context=False, include_input=False)
    problems = "; ".join(f"{'.'.join(str(x) for x in err['loc']) or what}: {err['msg']}" for err in errors[:5])
    return _error_frame("VALIDATION_ERROR", f"Invalid {what}: {problems}", errors=errors)


# ---- one WebSocket connection ---------------------------------------------------------
class _Connection:
    """The session of one WebSocket connection and what OpenEnv's ``state`` reports of it."""

    def __init__(self, store: SessionStore, env_id: str, mcp: OpenEnvMcp) -> None:
        self.store, self.env_id, self.mcp = store, env_id, mcp
        self.session: Session | None = None
        self.kwargs: dict[str, Any] = {}
        self.tools: EnvTools | None = None  # the session's, from its last reset
        self.state: dict[str, Any] = {"episode_id": None, "step_count": 0, "env_id": env_id, "task_id": None,
                                      "done": True}
        self.binding = Binding(session=lambda: self.session, tools=self.env_tools, call=self.call_tool)

    async def answer(self, raw: str | bytes, max_bytes: int) -> tuple[dict[str, Any] | None, bool]:
        """The reply to one frame (None for none) and whether the connection ends."""
        if len(raw) > max_bytes:
            return _error_frame("VALIDATION_ERROR", f"Frames are limited to {max_bytes} bytes."), False
        try:
            message = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            return _error_frame("INVALID_JSON", f"Invalid JSON: {e}"), False
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            return _error_frame("VALIDATION_ERROR", 'A frame is an object {"type": ..., "data": ...}.'), False
        if message["type"] not in ("reset", "step", "state", "close", "mcp"):
            return _error_frame("UNKNOWN_TYPE", f"Unknown message type {message['type']!r}: send reset, step, state, "
                                                "mcp or close."), False
        try:
            frame = _Frame.model_validate(message)
            if frame.type == "close":
                return None, True
            if frame.type == "state":
                return {"type": "state", "data": dict(self.state)}, False
            if frame.type == "mcp":  # JSON-RPC, answered as POST /mcp answers, on this connection's session
                return {"type": "mcp", "data": await self.mcp.rpc(self.env_id, frame.data, self.binding)}, False
            if frame.type == "reset":
                data = ResetData.model_validate({} if frame.data is None else frame.data)
                return {"type": "observation", "data": await self.reset(data)}, False
            if not isinstance(frame.data, dict):
                return _error_frame("VALIDATION_ERROR", "A step's data is the action: an object (see /schema)."), False
            if frame.data.get("type") == "list_tools":  # OpenEnv's MCP actions (its MCPToolClient's)
                ListToolsFrame.model_validate(frame.data)
                tools = (await self.env_tools()).listed(key="input_schema")
                return {"type": "observation", "data": {"observation": {"tools": tools}, "reward": None,
                                                        "done": False}}, False
            if frame.data.get("type") == "call_tool":
                call = CallToolFrame.model_validate(frame.data)
                outcome = await self.call_tool(call.tool_name, call.arguments)
                return {"type": "observation",
                        "data": _call_tool_result(call.tool_name, outcome, self.state["done"])}, False
            return {"type": "observation", "data": await self.step(frame.data)}, False
        except ValidationError as e:
            return _validation_frame(e, f"{message['type']} frame"), False
        except ApiError as e:
            return _api_error_frame(e), False

    async def reset(self, data: ResetData) -> dict[str, Any]:
        kwargs = self.kwargs if data.kwargs is None else data.kwargs
        if self.session is None or self.session.closed or kwargs != self.kwargs:
            # the new session first: a reset that fails (bad kwargs, a full server) leaves the old one as it was
            session, (observation, info) = await self.store.create(self.env_id, kwargs, data.seed,
                                                                   reset_options(data.options))
            await self.close()
            self.session, self.kwargs = session, kwargs
        else:
            observation, info = await self.store.reset(self.session.id, data.seed, reset_options(data.options))
        self.state = {"episode_id": data.episode_id or uuid.uuid4().hex, "step_count": 0, "env_id": self.env_id,
                      "task_id": info.get("task_id"), "done": False}
        self.tools = EnvTools.of(info, self.session.env)
        return _reset_result(observation, info)

    async def step(self, action: dict[str, Any]) -> dict[str, Any]:
        if self.session is None:
            raise ApiError(409, "reset_needed", "No episode yet: send a reset frame first.")
        step = await self.store.step(self.session.id, to_action(action), None)
        self._stepped(step)
        return _step_result(step)

    async def env_tools(self) -> EnvTools:
        """The env's MCP tools: the session's, or (before the first reset) those of an env made with the
        connection's kwargs."""
        return self.tools if self.tools is not None else await self.mcp.tools(self.env_id, self.kwargs)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any] | ToolFailure:
        """A tool call on the connection's session: its step, or why it is no action (then nothing happens)."""
        if self.session is None or self.tools is None:
            raise ApiError(409, "reset_needed", "No episode yet: send a reset frame first.")
        outcome = await self.mcp.call(self.session, self.tools, name, arguments)
        if not isinstance(outcome, ToolFailure):
            self._stepped(outcome)
        return outcome

    def _stepped(self, step: dict[str, Any]) -> None:
        self.state["step_count"] += 1
        self.state["done"] = step["terminated"] or step["truncated"]

    async def close(self) -> None:
        session, self.session = self.session, None
        if session is not None and not session.closed:
            with contextlib.suppress(ApiError):  # closed meanwhile (idle TTL): nothing to do
                await self.store.close(session.id, "OpenEnv connection closed")


# ---- routes -------------------------------------------------------------------------
def _authorized(authorization: str, token: str | None) -> bool:
    """Whether an Authorization header carries the token: Bearer, or Basic with the token as password."""
    if not token:
        return True
    scheme, _, credentials = authorization.partition(" ")
    secret = credentials.strip()
    if scheme.lower() == "basic":
        try:
            secret = base64.b64decode(secret, validate=True).decode("utf-8").partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            return False
    elif scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(secret.encode("utf-8"), token.encode("utf-8"))


def openenv_router(store: SessionStore, *, token: str | None, max_frame_bytes: int,
                   ws_limits: WebSocketLimits) -> APIRouter:
    """Routes under ``/openenv/<env id>`` speaking OpenEnv's protocol over this server's sessions."""
    router = APIRouter(prefix=PREFIX, tags=["OpenEnv compatibility"])
    gate = WebSocketGate(ws_limits)
    mcp = OpenEnvMcp(store)

    def served(env_id: str) -> str:
        if env_id not in store.env_ids:
            raise ApiError(404, "env_not_found", str(EnvNotFound(env_id, store.env_ids)))
        return env_id

    async def one_off(env_id: str, data: ResetData, action: dict[str, Any] | None) -> dict[str, Any]:
        session, (observation, info) = await store.create(served(env_id), data.kwargs or {}, data.seed,
                                                          reset_options(data.options))
        try:
            if action is None:
                return _reset_result(observation, info)
            return _step_result(await store.step(session.id, to_action(action), None))
        finally:
            with contextlib.suppress(ApiError):  # a failed step closed it already
                await store.close(session.id, "OpenEnv stateless request done")

    # exclude_unset: an observation has metadata after a reset only
    @router.post("/{env_id:path}/reset", response_model=Result, response_model_exclude_unset=True)
    async def reset(env_id: str, body: ResetData = Body(default_factory=ResetData)) -> dict[str, Any]:
        """A fresh env's first observation (stateless, as OpenEnv's HTTP reset: the env is closed after)."""
        return await one_off(env_id, body, None)

    @router.post("/{env_id:path}/step", response_model=Result, response_model_exclude_unset=True)
    async def step(env_id: str, body: StepBody) -> dict[str, Any]:
        """A fresh env reset with ``seed``/``options`` and stepped once (stateless, as OpenEnv's HTTP step)."""
        return await one_off(env_id, body, body.action)

    @router.get("/{env_id:path}/state", response_model=State)
    async def state(env_id: str) -> dict[str, Any]:
        """A fresh env's state, as OpenEnv's HTTP state: no episode (sessions are WebSocket connections)."""
        return {"episode_id": None, "step_count": 0, "env_id": served(env_id), "task_id": None, "done": True}

    @router.get("/{env_id:path}/schema", response_model=Schemas)
    async def schema(env_id: str) -> dict[str, Any]:
        served(env_id)
        return {"action": _ACTION_SCHEMA, "observation": Observation.model_json_schema(),
                "state": State.model_json_schema()}

    @router.get("/{env_id:path}/metadata", response_model=Metadata)
    async def metadata(env_id: str) -> dict[str, Any]:
        return {"name": served(env_id), "description": env_info(env_id).description, "version": __version__}

    @router.get("/{env_id:path}/health", response_model=Health)
    async def health(env_id: str) -> dict[str, Any]:
        served(env_id)
        return {"status": "healthy"}

    @router.get("/{env_id:path}/openapi.json", response_model=dict[str, Any])
    async def openapi(env_id: str, request: Request) -> dict[str, Any]:
        """The OpenAPI document of these routes alone, as paths of the env's base URL (OpenEnv's ``/openapi.json``)."""
        return env_openapi(request.app.openapi(), served(env_id))

    @router.post("/{env_id:path}/mcp", response_model=RpcResponse, openapi_extra={"requestBody": {
        "required": True, "content": {"application/json": {"schema": RpcRequest.model_json_schema()}}}})
    async def mcp_endpoint(env_id: str, request: Request) -> JSONResponse:
        """MCP's JSON-RPC (``tools/list``, ``tools/call``) and OpenEnv's session methods; errors are JSON-RPC
        errors, with HTTP 200 (``openenv_mcp.py``)."""
        return JSONResponse(await mcp.rpc(served(env_id), await request.body()))

    @router.websocket("/{env_id:path}/ws")
    async def websocket(ws: WebSocket, env_id: str) -> None:
        if not _authorized(ws.headers.get("authorization", ""), token):
            await _deny(ws, 401, "unauthorized", "Send the server's token as 'Authorization: Bearer <token>', or "
                                                 "in the URL: http://user:<token>@host:port/openenv/<env id>.")
            return
        if env_id not in store.env_ids:
            await _deny(ws, 404, "env_not_found", str(EnvNotFound(env_id, store.env_ids)))
            return
        client = client_of(ws)
        if not gate.admit(client):
            await _deny(ws, 429, "too_many_websockets", gate.refusal(client), close_code=FULL_CLOSE_CODE)
            return
        connection = _Connection(store, env_id, mcp)
        try:
            await ws.accept()
            while True:
                message = await gate.receive(ws)
                if message is None or message["type"] == "websocket.disconnect":  # None: closed for idling
                    break
                raw = message.get("text")
                reply, end = await connection.answer(raw if raw is not None else message.get("bytes") or b"",
                                                     max_frame_bytes)
                if reply is not None:
                    await ws.send_text(orjson.dumps(reply).decode())
                if end:
                    break
        except (WebSocketDisconnect, OSError):  # the client went away mid-answer
            pass
        finally:
            gate.release(client)
            await connection.close()
            # a client that went away has nothing to close (closing would raise, and log a traceback per client)
            with contextlib.suppress(RuntimeError, OSError, WebSocketDisconnect):
                if WebSocketState.DISCONNECTED not in (ws.client_state, ws.application_state):
                    await ws.close()

    return router


def env_openapi(document: dict[str, Any], env_id: str) -> dict[str, Any]:
    """The OpenAPI document of one env's OpenEnv routes, from the server's: their paths relative to the env's
    base URL (``/reset``, ``/step``, ``/mcp``, ...), which is the document's server."""
    prefix = f"{PREFIX}/{{env_id}}"
    paths = {path[len(prefix):]: {method: _without_env_id(operation) for method, operation in item.items()}
             for path, item in document.get("paths", {}).items() if path.startswith(f"{prefix}/")}
    info = {"title": f"{env_id} (agentgym, OpenEnv protocol)", "version": OPENENV_HTTP_VERSION,
            "description": f"OpenEnv's HTTP API for {env_id}, served by agentgym {__version__}; the WebSocket "
                           "is /ws (not an OpenAPI path).",
            "x-agentgym-version": __version__}
    return {"openapi": document.get("openapi", "3.1.0"), "info": info, "servers": [{"url": f"{PREFIX}/{env_id}"}],
            "paths": paths, "components": document.get("components", {})}


def _without_env_id(operation: Any) -> Any:
    if not isinstance(operation, dict) or "parameters" not in operation:
        return operation
    parameters = [p for p in operation["parameters"] if not (p.get("in") == "path" and p.get("name") == "env_id")]
    return {k: v for k, v in operation.items() if k != "parameters"} | ({"parameters": parameters} if parameters else {})


async def _deny(ws: WebSocket, status: int, code: str, message: str, close_code: int = 1008) -> None:
    """Refuse a WebSocket handshake with an HTTP error where the server can send one, else close ``close_code``."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    try:
        await ws.send_denial_response(JSONResponse({"code": code, "message": message}, status, headers=headers))
    except RuntimeError:  # no websocket.http.response extension
        await ws.close(code=close_code, reason=code)
