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
- ``GET /state`` (of a fresh env: no episode), ``/schema``, ``/metadata``, ``/health``.

Actions: ``{"message": "<model text>"}`` (``"text"`` too), parsed by the env's action format as
in process; or an agentgym dict action (``{"name", "arguments"}``, ``{"answer"}``,
``{"tool_calls": [...]}``), where a wrong one is an observation with ``info.action_error``, as in
process. Observations: ``{"text", "info", "terminated", "truncated"}``, the env's own.

The server's token applies: HTTP routes need ``Authorization: Bearer <token>``; a WebSocket
also accepts HTTP Basic with the token as password, which is what OpenEnv's client (the
``websockets`` library) sends for a base URL ``http://user:<token>@host:port/...``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import uuid
from typing import Any, Literal

import orjson
from fastapi import APIRouter, Body, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from starlette.websockets import WebSocketState

from agentgym import __version__
from agentgym.core.registry import env_info
from agentgym.errors import EnvNotFound
from agentgym.server.protocol import ResetOptions, reset_options
from agentgym.server.sessions import ApiError, Session, SessionStore

__all__ = ["PREFIX", "openenv_router"]

PREFIX = "/openenv"

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


def _step_result(step: dict[str, Any]) -> dict[str, Any]:
    return _result(step["observation"], step["info"], step["reward"], step["terminated"], step["truncated"])


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

    def __init__(self, store: SessionStore, env_id: str) -> None:
        self.store, self.env_id = store, env_id
        self.session: Session | None = None
        self.kwargs: dict[str, Any] = {}
        self.state: dict[str, Any] = {"episode_id": None, "step_count": 0, "env_id": env_id, "task_id": None,
                                      "done": True}

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
        if message["type"] not in ("reset", "step", "state", "close"):
            return _error_frame("UNKNOWN_TYPE", f"Unknown message type {message['type']!r}: send reset, step, state or "
                                                "close (this server does not serve MCP)."), False
        try:
            frame = _Frame.model_validate(message)
            if frame.type == "close":
                return None, True
            if frame.type == "state":
                return {"type": "state", "data": dict(self.state)}, False
            if frame.type == "reset":
                data = ResetData.model_validate({} if frame.data is None else frame.data)
                return {"type": "observation", "data": await self.reset(data)}, False
            if not isinstance(frame.data, dict):
                return _error_frame("VALIDATION_ERROR", "A step's data is the action: an object (see /schema)."), False
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
        return _result(observation, info)

    async def step(self, action: dict[str, Any]) -> dict[str, Any]:
        if self.session is None:
            raise ApiError(409, "reset_needed", "No episode yet: send a reset frame first.")
        step = await self.store.step(self.session.id, to_action(action), None)
        self.state["step_count"] += 1
        self.state["done"] = step["terminated"] or step["truncated"]
        return _step_result(step)

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


def openenv_router(store: SessionStore, *, token: str | None, max_frame_bytes: int) -> APIRouter:
    """Routes under ``/openenv/<env id>`` speaking OpenEnv's protocol over this server's sessions."""
    router = APIRouter(prefix=PREFIX, tags=["OpenEnv compatibility"])

    def served(env_id: str) -> str:
        if env_id not in store.env_ids:
            raise ApiError(404, "env_not_found", str(EnvNotFound(env_id, store.env_ids)))
        return env_id

    async def one_off(env_id: str, data: ResetData, action: dict[str, Any] | None) -> dict[str, Any]:
        session, (observation, info) = await store.create(served(env_id), data.kwargs or {}, data.seed,
                                                          reset_options(data.options))
        try:
            if action is None:
                return _result(observation, info)
            return _step_result(await store.step(session.id, to_action(action), None))
        finally:
            with contextlib.suppress(ApiError):  # a failed step closed it already
                await store.close(session.id, "OpenEnv stateless request done")

    @router.post("/{env_id:path}/reset", response_model=Result)
    async def reset(env_id: str, body: ResetData = Body(default_factory=ResetData)) -> dict[str, Any]:
        """A fresh env's first observation (stateless, as OpenEnv's HTTP reset: the env is closed after)."""
        return await one_off(env_id, body, None)

    @router.post("/{env_id:path}/step", response_model=Result)
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

    @router.websocket("/{env_id:path}/ws")
    async def websocket(ws: WebSocket, env_id: str) -> None:
        if not _authorized(ws.headers.get("authorization", ""), token):
            await _deny(ws, 401, "unauthorized", "Send the server's token as 'Authorization: Bearer <token>', or "
                                                 "in the URL: http://user:<token>@host:port/openenv/<env id>.")
            return
        if env_id not in store.env_ids:
            await _deny(ws, 404, "env_not_found", str(EnvNotFound(env_id, store.env_ids)))
            return
        await ws.accept()
        connection = _Connection(store, env_id)
        try:
            while True:
                message = await ws.receive()
                if message["type"] == "websocket.disconnect":
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
            await connection.close()
            # a client that went away has nothing to close (closing would raise, and log a traceback per client)
            with contextlib.suppress(RuntimeError, OSError, WebSocketDisconnect):
                if WebSocketState.DISCONNECTED not in (ws.client_state, ws.application_state):
                    await ws.close()

    return router


async def _deny(ws: WebSocket, status: int, code: str, message: str) -> None:
    """Refuse a WebSocket handshake with an HTTP error where the server can send one, else close 1008."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    try:
        await ws.send_denial_response(JSONResponse({"code": code, "message": message}, status, headers=headers))
    except RuntimeError:  # no websocket.http.response extension
        await ws.close(code=1008, reason=code)
