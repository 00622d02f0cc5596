"""Who a request is from: a client is what it cannot choose, its peer address.

A bearer token does not tell clients apart (a server has one token, which all its clients send; without
``--token`` any made-up token would be a new client), and neither does an ``X-Forwarded-For`` header unless the
server was told to trust the proxy that sends it (``agentgym serve --forwarded-allow-ips``: uvicorn then puts the
forwarded address in the peer's place; by default it takes no forwarded header at all). Per-client limits key on
this: ``/v1/verify`` in flight, open WebSockets, open sessions, and the env worker threads' fair queue.

The client of the request being served is in ``CURRENT_CLIENT`` (set by the server's middleware for every HTTP
request and WebSocket), so code deep in a request (the env threads) reads it without it being passed along.
"""

from __future__ import annotations

import contextvars

from starlette.types import Scope

__all__ = ["CURRENT_CLIENT", "client_key"]

#: the client (``client_key``) of the request this code serves; "" outside requests
CURRENT_CLIENT: contextvars.ContextVar[str] = contextvars.ContextVar("agentgym_client", default="")


def client_key(scope: Scope) -> str:
    """The client a request or connection counts against: its peer address (uvicorn's, after a proxy the
    server was told to trust)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"
