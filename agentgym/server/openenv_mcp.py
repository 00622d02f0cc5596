"""OpenEnv's MCP for each served env: JSON-RPC ``tools/list`` and ``tools/call`` on this server's sessions.

The tools are an env's MCP tools wherever agentgym serves it (``integrations/mcp_tools.py``): the env's own
tools (closed schemas) and ``answer`` where its episodes end with an answer. There is no ``reset`` tool:
OpenEnv reserves the names reset, step, state and close, and an episode starts with OpenEnv's reset (a
``reset`` frame, or ``openenv/session/create`` below).

``POST /openenv/<env id>/mcp`` answers JSON-RPC 2.0 (always HTTP 200, errors as JSON-RPC errors, as OpenEnv's):

- ``tools/list``: the env's tools (``{"name", "description", "inputSchema"}``).
- ``openenv/session/create``: a new session playing a new episode; params are a reset's (``seed`` in
  [0, 2**63), ``options``, ``kwargs``, checked as ``POST /reset`` checks them: a bad one creates nothing).
  Answers ``{"session_id", "observation", "info"}`` (the task prompt and info).
- ``tools/call`` with ``{"name", "arguments", "session_id"}``: one step of that session's episode. Answers
  MCP's ``{"content", "structuredContent", "isError"}``, and ``data`` (what OpenEnv's ``MCPToolClient``
  returns from ``call_tool``): ``{observation, reward, terminated, truncated, info}``.
- ``openenv/session/close`` with ``{"session_id"}``.

The WebSocket (``/ws``) carries the same tools in OpenEnv's step actions ``{"type": "list_tools"}`` and
``{"type": "call_tool", "tool_name", "arguments"}`` (what ``MCPToolClient`` sends) and in ``mcp`` frames
(JSON-RPC), on the connection's session: ``openenv.py``.

An agent's mistake with an env tool (an argument the tool refuses) is the env's observation, as in process:
it counts a turn and ``isError`` is set. An unknown tool or a malformed ``answer`` is no action: an error
that changes nothing.
"""

from __future__ import annotations

import contextlib
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentgym.core.formats import format_of
from agentgym.integrations.mcp_tools import ANSWER, MAX_SEED, ToolSpec, call_action, env_tools, step_answer
from agentgym.server.protocol import ResetOptions, reset_options
from agentgym.server.sessions import ApiError, Session, SessionStore

__all__ = ["EnvTools", "OpenEnvMcp", "RpcRequest", "RpcResponse", "ToolFailure", "rpc_error", "tool_result"]

# JSON-RPC 2.0's error codes (OpenEnv's JsonRpcErrorCode)
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR, SERVER_ERROR = (
    -32700, -32600, -32601, -32602, -32603, -32000)
_PROBES_KEPT = 32  # the tool lists of env kwargs no session has reported yet, kept per (env id, kwargs)


# ---- wire models ------------------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class RpcRequest(_Strict):
    """A JSON-RPC 2.0 request (``id`` absent: a notification, answered all the same)."""

    jsonrpc: Literal["2.0"]
    method: str = Field(examples=["tools/list", "tools/call", "openenv/session/create", "openenv/session/close"])
    params: dict[str, Any] = Field(default_factory=dict)
    id: str | int | None = None


class RpcError(BaseModel):
    code: int
    message: str
    data: Any = None


class RpcResponse(BaseModel):
    jsonrpc: Literal["2.0"] = "2.0"
    id: str | int | None = None
    result: Any = None
    error: RpcError | None = None


class _Params(_Strict):
    meta: dict[str, Any] | None = Field(default=None, alias="_meta", description="MCP's request metadata (not used).")


class _ListParams(_Params):
    session_id: str | None = Field(default=None, max_length=255)
    cursor: str | None = Field(default=None, description="MCP's pagination cursor: every tool is on one page.")


class _CallParams(_Params):
    name: str = Field(max_length=255)
    arguments: dict[str, Any] = Field(default_factory=dict)
    session_id: str | None = Field(default=None, max_length=255)


class _CreateParams(_Params):
    seed: int | None = Field(default=None, ge=0, le=MAX_SEED, strict=True)
    options: ResetOptions | None = None
    kwargs: dict[str, Any] = Field(default_factory=dict)
    episode_id: str | None = Field(default=None, max_length=255, description="Accepted as in a reset; not used.")


class _CloseParams(_Params):
    session_id: str = Field(max_length=255)


class CallToolFrame(_Strict):
    """OpenEnv's ``CallToolAction``, a WebSocket step's data."""

    type: Literal["call_tool"]
    tool_name: str = Field(max_length=255)
    arguments: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)


class ListToolsFrame(_Strict):
    """OpenEnv's ``ListToolsAction``, a WebSocket step's data."""

    type: Literal["list_tools"]
    metadata: dict[str, Any] = Field(default_factory=dict)


# ---- tools ----------------------------------------------------------------------------
@dataclass(frozen=True)
class EnvTools:
    """The MCP tools of one env (as made with its kwargs)."""

    specs: tuple[ToolSpec, ...]
    names: frozenset[str]  # the env's own tools
    has_answer: bool

    @classmethod
    def of(cls, info: Mapping[str, Any], env: Any = None) -> EnvTools:
        """The tools of the env whose reset or step gave ``info`` (``env``: that env, for its action format)."""
        schemas = info.get("tools") or []
        has_answer = format_of(info, env).has_answer
        return cls(tuple(env_tools(schemas, has_answer=has_answer)), frozenset(s["function"]["name"] for s in schemas),
                   has_answer)

    def listed(self, *, key: str = "inputSchema") -> list[dict[str, Any]]:
        """``tools/list``'s tools; OpenEnv's ``ListToolsObservation`` names the schema ``input_schema``."""
        return [{"name": s.name, "description": s.description, key: s.input_schema} for s in self.specs]


@dataclass(frozen=True)
class ToolFailure:
    """A ``tools/call`` that is no action: OpenEnv's ``ToolError`` (``tool_not_found`` or ``invalid_args``)."""

    kind: str
    message: str


def tool_result(step: Mapping[str, Any]) -> dict[str, Any]:
    """A step as MCP's ``CallToolResult``, with ``data`` (OpenEnv's client returns it from ``call_tool``)."""
    text, structured, mistake = step_answer(step["observation"], step["reward"], step["terminated"],
                                            step["truncated"], step["info"])
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": mistake,
            "data": structured}


@dataclass
class Binding:
    """What ``mcp`` frames of one WebSocket act on: its session (None before the first reset), its tools, and
    ``call`` (a step of that session, recorded in the connection's state)."""

    session: Callable[[], Session | None]
    tools: Callable[[], Awaitable[EnvTools]]
    call: Callable[[str, dict[str, Any]], Awaitable[dict[str, Any] | ToolFailure]]


class OpenEnvMcp:
    """The MCP side of the OpenEnv routes, over one server's session store."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._probed: OrderedDict[tuple[str, str], EnvTools] = OrderedDict()
        self._created: dict[str, EnvTools] = {}  # tools of the sessions openenv/session/create made

    async def tools(self, env_id: str, kwargs: Mapping[str, Any]) -> EnvTools:
        """An env's tools before any session of it reported them: read from a session made for it, once."""
        key = (env_id, json.dumps(kwargs, sort_keys=True, default=str))
        if key not in self._probed:
            session, (_, info) = await self.store.create(env_id, kwargs, None, None)
            try:
                self._probed[key] = EnvTools.of(info, session.env)
            finally:
                with contextlib.suppress(ApiError):
                    await self.store.close(session.id, "OpenEnv tools/list")
            while len(self._probed) > _PROBES_KEPT:
                self._probed.popitem(last=False)
        self._probed.move_to_end(key)
        return self._probed[key]

    async def call(self, session: Session, tools: EnvTools, name: str,
                   arguments: dict[str, Any]) -> dict[str, Any] | ToolFailure:
        """One ``tools/call`` on ``session``: the step it made, or why it is no action."""
        action = call_action(name, arguments, tool_names=tools.names, has_answer=tools.has_answer)
        if isinstance(action, str):
            known = name in tools.names or (name == ANSWER and tools.has_answer)
            return ToolFailure("invalid_args" if known else "tool_not_found", action)
        return await self.store.step(session.id, action, None)

    # ---- JSON-RPC -----------------------------------------------------------------------
    async def rpc(self, env_id: str, raw: bytes | Any, binding: Binding | None = None) -> dict[str, Any]:
        """The JSON-RPC response to one request: ``raw`` bytes (HTTP) or the parsed ``data`` of an ``mcp`` frame."""
        if isinstance(raw, (bytes, bytearray)):
            try:
                raw = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as e:
                return _error(None, PARSE_ERROR, f"Parse error: {e}")
        request_id = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), (str, int)) else None
        try:
            request = RpcRequest.model_validate(raw)
            return {"jsonrpc": "2.0", "id": request.id, "result": await self._method(env_id, request, binding)}
        except _RpcFailure as e:
            return _error(request_id, e.code, e.message, e.data)
        except ValidationError as e:
            where = "request" if not isinstance(raw, dict) or "params" not in _locations(e) else "params"
            return _error(request_id, INVALID_REQUEST if where == "request" else INVALID_PARAMS,
                          f"Invalid {where}: {_problems(e)}", e.errors(include_url=False, include_context=False,
                                                                       include_input=False))
        except ApiError as e:
            message = e.message
            if e.code == "reset_needed":  # there is no reset tool: say how an episode starts here
                message = "The episode is over (or never started): " + (
                    "send a reset frame." if binding is not None else
                    "make a new session with openenv/session/create (and close this one).")
            return rpc_error(request_id, e, message)

    async def _method(self, env_id: str, request: RpcRequest, binding: Binding | None) -> Any:
        params, method = request.params, request.method
        if method == "tools/list":
            listed = _parse(_ListParams, params, "params")
            return {"tools": (await self._tools_of(env_id, listed.session_id, binding)).listed()}
        if method == "tools/call":
            call = _parse(_CallParams, params, "params")
            session, tools = await self._session_for_call(env_id, call.session_id, binding)
            outcome = (await binding.call(call.name, call.arguments) if binding is not None
                       else await self.call(session, tools, call.name, call.arguments))
            if isinstance(outcome, ToolFailure):
                if outcome.kind == "tool_not_found":  # MCP: an unknown tool is a protocol error
                    raise _RpcFailure(INVALID_PARAMS, outcome.message, {"error_type": outcome.kind})
                return {"content": [{"type": "text", "text": outcome.message}], "isError": True}
            return tool_result(outcome)
        if method == "openenv/session/create":
            return await self._create(env_id, _parse(_CreateParams, params, "params"), binding)
        if method == "openenv/session/close":
            closing = _parse(_CloseParams, params, "params")
            if binding is not None:
                raise _RpcFailure(INVALID_REQUEST, "A WebSocket's session closes with it: send a close frame.")
            self._own(env_id, closing.session_id)
            await self.store.close(closing.session_id, "OpenEnv openenv/session/close")
            self._created.pop(closing.session_id, None)
            return {"session_id": closing.session_id, "closed": True}
        raise _RpcFailure(METHOD_NOT_FOUND, f"Method not found: {method!r}; this endpoint answers tools/list, "
                                            "tools/call, openenv/session/create and openenv/session/close.")

    async def _tools_of(self, env_id: str, session_id: str | None, binding: Binding | None) -> EnvTools:
        if binding is not None:
            return await binding.tools()
        if session_id is not None:
            self._own(env_id, session_id)
            if session_id in self._created:
                return self._created[session_id]
        return await self.tools(env_id, {})

    async def _session_for_call(self, env_id: str, session_id: str | None,
                                binding: Binding | None) -> tuple[Session | None, EnvTools]:
        if binding is not None:
            session = binding.session()
            if session_id is not None and (session is None or session_id != session.id):
                raise _RpcFailure(INVALID_PARAMS, "Over a WebSocket, tools/call acts on the connection's session: "
                                                  "leave out session_id.")
            if session is None:
                raise _RpcFailure(INVALID_REQUEST, "No episode yet: send a reset frame first.")
            return session, await binding.tools()
        if session_id is None:
            raise _RpcFailure(INVALID_PARAMS, "tools/call steps a session's episode: make one with "
                                              "openenv/session/create and pass its session_id (or use the /ws "
                                              "WebSocket, one session per connection).")
        return self._own(env_id, session_id), await self._tools_of(env_id, session_id, None)

    async def _create(self, env_id: str, params: _CreateParams, binding: Binding | None) -> dict[str, Any]:
        if binding is not None:
            session = binding.session()
            if session is None:
                raise _RpcFailure(INVALID_REQUEST, "A WebSocket's session starts with its first reset frame.")
            return {"session_id": session.id}
        session, (observation, info) = await self.store.create(env_id, params.kwargs, params.seed,
                                                               reset_options(params.options))
        for gone in [s for s in self._created if s not in self.store.sessions]:  # closed meanwhile (TTL, DELETE)
            del self._created[gone]
        self._created[session.id] = EnvTools.of(info, session.env)
        return {"session_id": session.id, "observation": observation, "info": info}

    def _own(self, env_id: str, session_id: str) -> Session:
        session = self.store.get(session_id)
        if session.env_id != env_id:
            raise _RpcFailure(INVALID_PARAMS, f"Session {session_id!r} plays {session.env_id}, not {env_id}.")
        return session


class _RpcFailure(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def _parse(model: type[BaseModel], value: Any, where: str) -> Any:
    try:
        return model.model_validate(value)
    except ValidationError as e:
        raise _RpcFailure(INVALID_PARAMS, f"Invalid {where}: {_problems(e)}",
                          e.errors(include_url=False, include_context=False, include_input=False)) from e


def _locations(e: ValidationError) -> set[str]:
    return {str(err["loc"][0]) for err in e.errors() if err["loc"]}


def _problems(e: ValidationError) -> str:
    errors = e.errors(include_url=False, include_context=False, include_input=False)
    return "; ".join(f"{'.'.join(str(x) for x in err['loc']) or 'value'}: {err['msg']}" for err in errors[:5])


def rpc_error(request_id: str | int | None, e: ApiError, message: str | None = None) -> dict[str, Any]:
    """The JSON-RPC error answering what the HTTP API answers with ``e`` (its code and status in ``data``)."""
    code = {429: SERVER_ERROR, 503: SERVER_ERROR, 500: INTERNAL_ERROR, 409: INVALID_REQUEST}.get(e.status,
                                                                                                 INVALID_PARAMS)
    return _error(request_id, code, e.message if message is None else message, {"code": e.code, "status": e.status})


def _error(request_id: str | int | None, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}
