"""Limits on WebSocket connections: an idle timeout, and a cap on the connections one client holds open.

A WebSocket costs the server a file descriptor for as long as it is open, and the
server's ping keeps a connection alive for as long as the client's library answers it,
frames or not. So every WebSocket route here:

- closes a connection that has sent no data frame for ``idle_timeout_s`` (close code
  1001, reason ``idle_timeout: ...``). Pings and pongs do not count: the server answers
  them at the protocol level and the app never sees them. Time the server spends on a
  frame's answer (a step may run for minutes) does not count either: only the wait for
  the client's next frame;
- refuses a client's connection past ``max_per_client`` open ones with HTTP 429
  ``too_many_websockets`` before the handshake completes (where the server cannot answer
  HTTP: close code 1013, try again later). A client is its host or a token the operator issued it
  (``agentgym.server.clients``): one server token is shared by every client of a server, so it
  tells none apart, and an ``X-Forwarded-For`` header counts only from a proxy named with
  ``agentgym serve --forwarded-allow-ips``.

The counts are per server process (``agentgym serve --processes N`` has N of them).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from starlette.types import Message
from starlette.websockets import WebSocket

from agentgym.errors import ConfigError
from agentgym.server.clients import client_key

__all__ = ["DEFAULT_MAX_WS_PER_CLIENT", "FULL_CLOSE_CODE", "IDLE_CLOSE_CODE", "MIN_DEFAULT_WS_IDLE_TIMEOUT_S",
           "WebSocketGate", "WebSocketLimits", "client_of", "default_idle_timeout_s"]

# A quarter of the common 1,024-descriptor limit: three quarters stay for other clients, env processes, files.
DEFAULT_MAX_WS_PER_CLIENT = 256
# The default idle timeout is the session idle TTL, and never below this: a trainer between rollouts (an optimizer
# step, an evaluation) keeps its connections, even where a short TTL frees the sessions behind them.
MIN_DEFAULT_WS_IDLE_TIMEOUT_S = 300.0
IDLE_CLOSE_CODE = 1001  # "going away": what servers send when they drop an idle connection
FULL_CLOSE_CODE = 1013  # "try again later": where a refusal cannot be an HTTP 429


def default_idle_timeout_s(session_ttl_s: float) -> float:
    """The idle timeout of a WebSocket where none is set: the session idle TTL, and at least 5 minutes."""
    return max(session_ttl_s, MIN_DEFAULT_WS_IDLE_TIMEOUT_S)


@dataclass(frozen=True)
class WebSocketLimits:
    """How long a WebSocket may go without a data frame, and how many one client may hold open."""

    idle_timeout_s: float
    max_per_client: int = DEFAULT_MAX_WS_PER_CLIENT

    def __post_init__(self) -> None:
        if not self.idle_timeout_s > 0:
            raise ConfigError(f"The WebSocket idle timeout must be > 0 s, got {self.idle_timeout_s} "
                              "(agentgym serve --ws-idle-timeout-s).")
        if self.max_per_client < 1:
            raise ConfigError(f"WebSockets per client must be >= 1, got {self.max_per_client} "
                              "(agentgym serve --max-ws-per-client).")


class WebSocketGate:
    """The open WebSockets of each client, under ``limits``; and the wait for a connection's next frame."""

    def __init__(self, limits: WebSocketLimits) -> None:
        self.limits = limits
        self._open: dict[str, int] = {}

    def admit(self, client: str) -> bool:
        """Count one more connection of ``client``, or False (counting none) when it holds its cap."""
        held = self._open.get(client, 0)
        if held >= self.limits.max_per_client:
            return False
        self._open[client] = held + 1
        return True

    def release(self, client: str) -> None:
        """One connection ``admit`` counted is closed."""
        held = self._open.pop(client) - 1
        if held:
            self._open[client] = held

    def refusal(self, client: str) -> str:
        """What a connection past ``client``'s cap is refused with."""
        return (f"{client} holds {self.limits.max_per_client} open WebSockets, the most one client may hold: close "
                "one first (the operator sets the cap with agentgym serve --max-ws-per-client).")

    async def receive(self, ws: WebSocket) -> Message | None:
        """The connection's next message, or None after closing it for ``idle_timeout_s`` without one."""
        try:
            return await asyncio.wait_for(ws.receive(), self.limits.idle_timeout_s)
        except asyncio.TimeoutError:  # the server's receive queue is safe to cancel: no message is lost
            with contextlib.suppress(RuntimeError, OSError):  # the client went away meanwhile
                # a close reason is at most 123 bytes
                await ws.close(IDLE_CLOSE_CODE, f"idle_timeout: no frame in {self.limits.idle_timeout_s:g} s")
            return None


def client_of(ws: WebSocket) -> str:
    """The client a connection counts against (``agentgym.server.clients.client_key``)."""
    return client_key(ws.scope)
