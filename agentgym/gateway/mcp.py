"""Each rollout's env episode as an MCP server (the official ``mcp`` SDK, streamable HTTP), at
``/rollouts/{rollout_id}/mcp`` of the model gateway.

The agent of a rollout calls its env's tools there: ``tools/list`` is the session's ``mcp_tools()`` (no ``reset``:
the harness reset the episode), and each ``tools/call`` is one step of that rollout's :class:`ToolSession`, run in a
worker thread. An agent's mistake with a tool is an observation (``isError`` set, a turn counted); a call that is no
action (:class:`NoAction`: an unknown tool, a call after the end) is an error result and changes nothing.

The endpoint is stateless MCP: it keeps no session of its own (the episode is the rollout's ``ToolSession``), each
POST is served on its own, and the request's path alone decides the rollout, so one SDK server serves every rollout
and nothing is left behind when an agent goes away without a DELETE. An unknown rollout is a 404 before any MCP.

    mcp = RolloutMcp(sessions.get)   # rollout id -> ToolSession, or None
    app = Starlette(routes=[*mcp.routes, ...], lifespan=lambda app: mcp.lifespan())
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from agentgym.errors import ConfigError
from agentgym.gateway.chat import GatewayError
from agentgym.gateway.session import NoAction, ToolSession
from agentgym.integrations.mcp import _require_mcp, _result, _transport_security, _version
from agentgym.integrations.mcp_tools import STEP_OUTPUT

__all__ = ["MCP_PATH", "RolloutMcp"]

MCP_PATH = "/rollouts/{rollout_id}/mcp"
_INSTRUCTIONS = ("These tools act on one rollout's episode, which has already started: every call is a step of it. "
                 "Where an answer tool is listed, it gives the final answer and ends the episode.")


class RolloutMcp:
    """The MCP endpoints of the rollouts ``lookup`` knows (rollout id -> its ``ToolSession``, or ``None``).

    ``routes``: mount them in the gateway's app; enter ``lifespan()`` in the app's lifespan. ``lookup`` runs on
    the event loop: it must not block. ``host``: where the gateway is served; on loopback, requests naming another
    host are refused (the SDK's DNS-rebinding protection). ``threads``: how many steps run at once, at most.
    """

    def __init__(self, lookup: Callable[[str], ToolSession | None], *, host: str = "127.0.0.1",
                 threads: int = 256) -> None:
        _require_mcp()
        from starlette.routing import Route

        if threads < 1:
            raise ConfigError(f"threads must be >= 1, got {threads}.")
        self._lookup, self._threads = lookup, threads
        self._security = _transport_security(host)
        self._manager: Any = None
        self._limiter: Any = None
        # GET and DELETE too, so that an unknown rollout is a 404 whatever the method
        self.routes = [Route(MCP_PATH, self, methods=["GET", "POST", "DELETE"])]

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Runs the SDK's session manager while the gateway serves (a fresh one each time it is entered)."""
        import anyio
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        manager = StreamableHTTPSessionManager(self._server(), stateless=True, security_settings=self._security)
        async with manager.run():
            self._manager, self._limiter = manager, anyio.CapacityLimiter(self._threads)
            try:
                yield
            finally:
                self._manager = self._limiter = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """ASGI: the rollout's MCP endpoint, or a 404 for a rollout ``lookup`` does not know."""
        from starlette.responses import JSONResponse

        rollout_id = scope["path_params"]["rollout_id"]
        if self._lookup(rollout_id) is None:
            error = GatewayError(404, _unknown(rollout_id), kind="not_found")
            await JSONResponse(error.body(), status_code=404)(scope, receive, send)
            return
        if scope["method"] != "POST":  # stateless: no SSE stream to GET, no MCP session to DELETE (spec: a 405)
            error = GatewayError(405, "This MCP endpoint is stateless: POST each message; there is no stream to GET "
                                      "and no session to DELETE.", kind="method_not_allowed")
            await JSONResponse(error.body(), status_code=405, headers={"Allow": "POST"})(scope, receive, send)
            return
        if self._manager is None:
            raise RuntimeError("RolloutMcp serves only inside its lifespan(): enter it in the app's lifespan.")
        await self._manager.handle_request(scope, receive, send)

    def _server(self) -> Any:
        from mcp.server import Server

        return Server("agentgym gateway", version=_version(), instructions=_INSTRUCTIONS,
                      on_list_tools=self._list_tools, on_call_tool=self._call_tool)

    def _session(self, ctx: Any) -> ToolSession:
        """The session of the rollout the request's path names (the handler's request is the HTTP request)."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import INVALID_REQUEST

        rollout_id = ctx.request.path_params["rollout_id"]
        session = self._lookup(rollout_id)
        if session is None:  # it ended between the route's lookup and this one
            raise MCPError(INVALID_REQUEST, _unknown(rollout_id))
        return session

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        from mcp import types

        tools = [types.Tool(name=t.name, description=t.description, input_schema=t.input_schema,
                            output_schema=STEP_OUTPUT) for t in self._session(ctx).mcp_tools()]
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        import anyio

        session = self._session(ctx)
        try:
            # a step blocks (a search, a sandbox run): in a worker thread, so other rollouts are served meanwhile
            text, structured, mistake = await anyio.to_thread.run_sync(session.call, params.name, params.arguments,
                                                                       limiter=self._limiter)
        except NoAction as e:
            return _result(str(e), error=True)
        return _result(text, structured, error=mistake)


def _unknown(rollout_id: str) -> str:
    return f"No rollout {rollout_id!r} on this gateway: it has ended, or it was never started."
