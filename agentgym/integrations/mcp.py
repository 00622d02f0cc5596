"""An agentgym env session's tools as an MCP server (the official ``mcp`` SDK, streamable HTTP).

Each MCP session (one ``Mcp-Session-Id``) plays on its own env instance, made on the session's first
``reset`` call and closed when the session ends: the client's DELETE, the idle timeout, or shutdown.
The tools are ``reset``, one per env tool (the names and JSON schemas the env publishes in
``info["tools"]``), and ``answer`` where the env's episodes end with an answer. Each returns the
observation as text, and ``{observation, reward, terminated, truncated, info}`` as structured content.

An agent's mistake with an env tool is what it is in process: an observation (``is_error`` set) that
counts a turn. What is no action at all (a call before ``reset`` or after the end, a malformed ``answer``
or ``reset``, a session the server has no room for) is an error that changes nothing. ``reset``'s
arguments have the HTTP protocol's bounds (a seed in [0, 2**63), ...), in its schema and checked before
any env code runs; every tool's schema is closed (``additionalProperties: false``). The tools are those
of ``mcp_tools.py``, which the OpenEnv ``/mcp`` of ``agentgym serve`` serves too.

    app = create_mcp_app(["agentgym/SearchQA-v0"])   # any ASGI server; `agentgym mcp` runs it on uvicorn
    # the env's endpoint is mcp_path("agentgym/SearchQA-v0") == "/mcp/agentgym/SearchQA-v0"
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agentgym.core.registry import create_env, env_info
from agentgym.errors import AgentGymError, ConfigError, DependencyNotInstalled, ResetNeeded
from agentgym.integrations.mcp_tools import (
    ANSWER,
    RESET,
    RESET_INPUT,
    RESET_OUTPUT,
    STEP_OUTPUT,
    call_action,
    env_tools,
    json_value,
    reset_arguments,
    step_answer,
)

__all__ = ["MCP_INSTALL", "create_mcp_app", "mcp_path"]

MCP_INSTALL = "pip install 'agentgym-suite[mcp]'"
log = logging.getLogger(__name__)
T = TypeVar("T")


def _require_mcp() -> None:
    try:
        import mcp  # noqa: F401
        import starlette  # noqa: F401
    except ImportError as e:
        raise DependencyNotInstalled("The MCP Python SDK (mcp)", MCP_INSTALL) from e


def mcp_path(env_id: str) -> str:
    """The URL path of ``env_id``'s MCP endpoint in ``create_mcp_app``."""
    return f"/mcp/{env_id}"


# ---- one MCP session's env ----------------------------------------------------------------------------


@dataclass
class _Session:
    """The env of one MCP session; ``lock`` serialises its calls (an env is not thread-safe)."""

    id: str
    env: Any = None
    lock: Any = None
    done: bool = False
    closed: bool = False


@dataclass
class _Registry:
    """Open sessions of every served env id, against one limit; env code runs in ``workers`` threads.

    ``background`` (the app's lifespan sets it) runs the closing of ended sessions' envs: a close may wait
    for a step in flight, longer than the SDK lets a session's own cleanup take.
    """

    max_sessions: int
    workers: int
    sessions: dict[str, _Session] = field(default_factory=dict)
    envs: int = 0  # env instances alive
    background: Any = None
    limiter: Any = None

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` in a worker thread. Not abandoned on cancel: a session's lock is held until env code is done."""
        import anyio

        return await anyio.to_thread.run_sync(fn, limiter=self.limiter)

    async def make_env(self, env_id: str, kwargs: Mapping[str, Any]) -> Any:
        env = await self.run(lambda: create_env(env_id=env_id, **kwargs))
        self.envs += 1
        return env

    async def close_env(self, env: Any, why: str) -> None:
        self.envs -= 1
        try:
            await self.run(env.close)
        except Exception:  # a failing close must not keep anything alive
            log.exception("closing an env (%s) failed", why)


def _connection(ctx: Any) -> Any:
    # mcp 2.3.0 gives lowlevel handlers no public route to the session's Connection. Its exit_stack is where
    # the SDK says per-session cleanup belongs: it unwinds when the session ends for any reason.
    return ctx.session._connection


# ---- tools ------------------------------------------------------------------------------------------


def _tools(env: Any) -> list[Any]:
    """The MCP tools of an env: reset, its own tools (as ``info["tools"]``), and answer where it has one."""
    from mcp import types

    schemas = env.tool_schemas()
    if {RESET, ANSWER} & {s["function"]["name"] for s in schemas}:
        raise ConfigError(f"{type(env).__name__} has a tool named {RESET!r} or {ANSWER!r}, which the MCP server "
                          "adds itself; rename the env's tool.")
    reset = types.Tool(name=RESET, description="Start a new episode (a new task) and return the task prompt. "
                                               "Call it first; call it again to play another episode.",
                       input_schema=RESET_INPUT, output_schema=RESET_OUTPUT)
    return [reset, *(types.Tool(name=s.name, description=s.description, input_schema=s.input_schema,
                                output_schema=STEP_OUTPUT)
                     for s in env_tools(schemas, has_answer=env.action_format.has_answer))]


def _result(text: str, structured: Mapping[str, Any] | None = None, *, error: bool = False) -> Any:
    from mcp import types

    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured,
                                is_error=error)


# ---- one env id's MCP server ----------------------------------------------------------------------------


class _EnvServer:
    """The MCP server of one env id: its tools, and the env of each of its sessions."""

    def __init__(self, env_id: str, kwargs: Mapping[str, Any], registry: _Registry) -> None:
        self.env_id, self.kwargs, self.registry = env_id, dict(kwargs), registry
        probe = create_env(env_id=env_id, **self.kwargs)  # checks the kwargs and reads the tools, once
        try:
            self.tools = _tools(probe)
        finally:
            probe.close()
        self.env_tools = {t.name for t in self.tools} - {RESET, ANSWER}
        self.has_answer = ANSWER in {t.name for t in self.tools}

    def server(self) -> Any:
        """A lowlevel ``mcp`` Server speaking for this env id."""
        from mcp import types
        from mcp.server import Server
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

        server = Server(f"agentgym {self.env_id}", version=_version(), description=env_info(self.env_id).description,
                        instructions=self.instructions(), on_list_tools=self.list_tools, on_call_tool=self.call_tool)

        async def discover(ctx: Any, params: Any) -> Any:
            # Advertise the handshake versions only: a session per client is what an episode needs, and a
            # client that probes first (mcp's Client, mode "auto") falls back to the initialize handshake.
            return types.DiscoverResult(supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
                                        capabilities=server.get_capabilities())

        server.add_request_handler("server/discover", types.RequestParams, discover)
        server.middleware.append(self.admit)
        return server

    def instructions(self) -> str:
        """How to play, for the client's model: the env's prompt describes its text actions, not these tools."""
        end = ("give the final answer with the answer tool: it ends the episode and scores it" if self.has_answer
               else "the episode ends by an action in the environment, as the task prompt says")
        return (f"Each MCP session plays episodes of {self.env_id}. Call reset to get a task. Then act only through "
                "the tools: where the task prompt shows an action as text (such as <search>query</search> or "
                f"search[query]), call the tool of that name instead; {end}. Every tool returns what the env "
                "observed, and the reward once the episode is over.")

    async def admit(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        """On ``initialize``: refuse past capacity, else register the session and its end."""
        if ctx.method != "initialize":
            return await call_next(ctx)
        from mcp.shared.exceptions import MCPError
        from mcp_types import INTERNAL_ERROR

        connection = _connection(ctx)
        registry = self.registry
        if connection.session_id is None or connection.session_id in registry.sessions:
            return await call_next(ctx)
        if len(registry.sessions) >= registry.max_sessions:
            raise MCPError(INTERNAL_ERROR, f"The server holds its limit of {registry.max_sessions} MCP sessions. "
                                           "End finished sessions (the client's DELETE; closing an SDK client "
                                           "does it) or retry later; the operator raises the limit with "
                                           "agentgym mcp --max-sessions N.")
        import anyio

        session = _Session(connection.session_id, lock=anyio.Lock())
        registry.sessions[session.id] = session
        connection.exit_stack.callback(self._end, session)
        return await call_next(ctx)

    def _end(self, session: _Session) -> None:
        """The session ended (DELETE, idle timeout, shutdown): it frees its place now, its env soon."""
        self.registry.sessions.pop(session.id, None)
        self.registry.background.start_soon(self._close, session)

    async def _close(self, session: _Session) -> None:
        async with session.lock:  # once env code in flight is done with it
            session.closed = True
            env, session.env = session.env, None
            if env is not None:
                await self.registry.close_env(env, f"MCP session {session.id} of {self.env_id} ended")

    async def list_tools(self, ctx: Any, params: Any) -> Any:
        from mcp import types

        return types.ListToolsResult(tools=self.tools)

    async def call_tool(self, ctx: Any, params: Any) -> Any:
        name, arguments = params.name, dict(params.arguments or {})
        session = self.registry.sessions.get(_connection(ctx).session_id or "")
        if session is None:
            return _result("This server plays one episode per MCP session: connect with a session (the "
                           "initialize handshake of streamable HTTP, which sets Mcp-Session-Id).", error=True)
        if name == RESET:
            return await self._reset(session, arguments)
        action = call_action(name, arguments, tool_names=self.env_tools, has_answer=self.has_answer)
        if isinstance(action, str):  # no action at all: nothing happens, no turn is counted
            return _result(action, error=True)
        return await self._step(session, action)

    async def _reset(self, session: _Session, arguments: Mapping[str, Any]) -> Any:
        parsed = reset_arguments(arguments)  # before any env code: a bad reset changes nothing
        if isinstance(parsed, str):
            return _result(parsed, error=True)
        seed, options = parsed
        async with session.lock:
            if session.closed:
                return _result("This MCP session has ended; open a new one.", error=True)
            try:
                if session.env is None:
                    session.env = await self.registry.make_env(self.env_id, self.kwargs)
                observation, info = await self.registry.run(lambda: session.env.reset(seed=seed, options=options))
            except ConfigError as e:  # a task id, split or index this env does not have
                return _result(f"reset failed: {e}", error=True)
            except Exception as e:  # noqa: BLE001 - the env's failure, reported to this session only
                return await self._failed(session, e)
            session.done = False
            return _result(observation, {"observation": observation, "info": json_value(info)})

    async def _step(self, session: _Session, action: Mapping[str, Any]) -> Any:
        async with session.lock:
            if session.env is None:
                return _result("No episode yet: call reset first (optionally with seed, task_id, split or index).",
                               error=True)
            if session.done:
                return _result("The episode is over: call reset to start a new one.", error=True)
            try:
                observation, reward, terminated, truncated, info = await self.registry.run(
                    lambda: session.env.step(action))
            except ResetNeeded:
                session.done = True
                return _result("The episode is over: call reset to start a new one.", error=True)
            except Exception as e:  # noqa: BLE001 - the env's failure, reported to this session only
                return await self._failed(session, e)
            session.done = bool(terminated or truncated)
            text, structured, mistake = step_answer(observation, reward, terminated, truncated, info)
            return _result(text, structured, error=mistake)

    async def _failed(self, session: _Session, error: Exception) -> Any:
        """The env raised: close it (the session may reset to get a fresh one) and say so. Holds the lock."""
        if not isinstance(error, AgentGymError):
            log.error("env failure in MCP session %s (%s)", session.id, self.env_id, exc_info=error)
        env, session.env, session.done = session.env, None, False
        if env is not None:
            await self.registry.close_env(env, f"MCP session {session.id} of {self.env_id} failed")
        return _result(f"The env failed ({type(error).__name__}: {error}); it was closed. Call reset to start "
                       "over on a fresh one.", error=True)


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("agentgym-suite")
    except metadata.PackageNotFoundError:
        return "0"


# ---- the ASGI app -------------------------------------------------------------------------------------


def create_mcp_app(env_ids: Sequence[str], *, max_sessions: int = 64, session_ttl_s: float = 600.0,
                   server_kwargs: Mapping[str, Mapping[str, Any]] | None = None, workers: int | None = None,
                   token: str | None = None, host: str = "127.0.0.1") -> Any:
    """A Starlette app serving each env id's MCP endpoint at ``mcp_path(env_id)``, and ``GET /healthz``.

    ``max_sessions`` bounds the open MCP sessions of all env ids together; a session idle
    ``session_ttl_s`` (no request in flight, no open stream) ends and its env is closed.
    ``server_kwargs``: env keyword arguments per env id. ``token``: clients must send
    ``Authorization: Bearer <token>``. ``host``: where it is served; on loopback, requests
    naming another host are refused (the SDK's DNS-rebinding protection). The app runs its
    session managers in its lifespan: mounted in another app, enter
    ``app.router.lifespan_context(app)`` in that app's lifespan.
    """
    _require_mcp()
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    if max_sessions < 1:
        raise ConfigError(f"max_sessions must be >= 1, got {max_sessions}.")
    if session_ttl_s <= 0:
        raise ConfigError(f"session_ttl_s must be > 0, got {session_ttl_s}.")
    if not env_ids:
        raise ConfigError("Give at least one env id to serve over MCP.")
    # agentgym serve's default (agentgym.server.threads, which needs the server extra to import)
    workers = min(32, (os.cpu_count() or 1) + 4) if workers is None else workers
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}.")
    registry = _Registry(max_sessions=max_sessions, workers=workers)
    security = _transport_security(host)
    managers = {}
    for env_id in sorted(set(env_ids)):
        env_server = _EnvServer(env_id, (server_kwargs or {}).get(env_id, {}), registry)
        # The SDK's own bound is a backstop for sessions this server refused at initialize but whose client
        # never ended them (they idle out); the limit users meet is the registry's, with its message.
        managers[env_id] = StreamableHTTPSessionManager(
            env_server.server(), security_settings=security, session_idle_timeout=session_ttl_s,
            max_sessions=2 * max_sessions)

    async def healthz(request: Any) -> Any:
        return JSONResponse({"status": "ok", "sessions": len(registry.sessions), "envs_open": registry.envs,
                             "max_sessions": max_sessions,
                             "endpoints": {env_id: mcp_path(env_id) for env_id in managers}})

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        import anyio

        registry.limiter = anyio.CapacityLimiter(workers)
        # the session managers stop first; the envs of the sessions that ended then are closed before the end
        async with anyio.create_task_group() as registry.background, contextlib.AsyncExitStack() as stack:
            for manager in managers.values():
                await stack.enter_async_context(manager.run())
            yield

    routes = [Route(mcp_path(env_id), StreamableHTTPASGIApp(m), methods=["GET", "POST", "DELETE"])
              for env_id, m in managers.items()]
    routes.append(Route("/healthz", healthz, methods=["GET"]))
    app = Starlette(routes=routes, lifespan=lifespan)
    return _BearerToken(app, token) if token else app


def _transport_security(host: str) -> Any:
    """On loopback, the SDK's DNS-rebinding protection: requests must name a loopback host (and origin)."""
    from mcp.server.transport_security import TransportSecuritySettings

    if host not in ("127.0.0.1", "localhost", "::1"):
        return None
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])


class _BearerToken:
    """ASGI middleware: every HTTP request but ``/healthz`` must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self._expected = app, f"Bearer {token}".encode("latin-1")
        self.router = getattr(app, "router", None)  # so a host app can enter the lifespan as documented

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not scope["path"].endswith("/healthz"):
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                from starlette.responses import JSONResponse

                body = {"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32001, "message": "Send the server's token as 'Authorization: Bearer <token>'."}}
                await JSONResponse(body, status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)
