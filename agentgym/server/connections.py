"""Connection timeouts for uvicorn: no client holds a connection by sending slowly, or nothing.

uvicorn closes a keep-alive connection left idle after a response, but waits
forever for the first request of a new connection, for headers that come a byte
at a time, and for a body that never ends. Here:

- an *idle* connection (no request in progress: new, or after a response) is
  closed after ``keep_alive_s`` without a byte, silently, as uvicorn does after
  a response;
- a *request* must arrive whole (request line, headers and body) within
  ``request_timeout_s`` of its first byte. Past that the connection is answered
  408 ``request_timeout`` (while a response is still possible) and closed.

The time the app takes to answer a whole request is not bounded here: a step may
run tests for minutes. Only the client's sending is.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

import orjson
import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from agentgym.errors import ConfigError

__all__ = ["DEFAULT_KEEP_ALIVE_S", "DEFAULT_REQUEST_TIMEOUT_S", "engine", "timed_protocol", "uvicorn_config"]

DEFAULT_KEEP_ALIVE_S = 5.0  # uvicorn's own default for idle keep-alive connections
DEFAULT_REQUEST_TIMEOUT_S = 30.0  # a 1 MiB body (the default limit) at 35 KB/s; a step's few KB on any link

_LINGER_S = 2.0  # after a 408: how long a client still sending is read (and ignored) before the close


def timed_protocol(request_timeout_s: float, base: type[asyncio.Protocol] = AutoHTTPProtocol) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol ``base`` (h11 or httptools) with the idle and whole-request timeouts."""
    if not request_timeout_s > 0:
        raise ConfigError(f"request_timeout_s must be > 0, got {request_timeout_s}.")
    body = orjson.dumps({"code": "request_timeout", "message": (
        f"The request did not arrive whole within {request_timeout_s:g} s of its first byte; the connection is "
        "closed. Send each request at once (the operator sets the limit with agentgym serve --request-timeout-s).")})
    timeout_response = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                        b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))

    class TimedProtocol(base):  # type: ignore[misc, valid-type]
        # uvicorn's protocols share these attributes: transport, loop, cycle (with more_body,
        # response_started, response_complete, disconnected, message_event), and the keep-alive timer.
        _request_timer: asyncio.TimerHandle | None = None
        _lingering = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            _no_delay(transport)
            # a new connection is idle until its first byte: uvicorn's keep-alive timer, which any data cancels
            self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive,
                                                                self.timeout_keep_alive_handler)

        def data_received(self, data: bytes) -> None:
            if self._lingering:  # timed out: what the client still sends is read and dropped
                return
            super().data_received(data)
            if self._upgraded():
                self._cancel_request_timer()
                return
            if self._receiving():
                if self._request_timer is None:
                    self._request_timer = self.loop.call_later(request_timeout_s, self._request_timed_out)
            elif self._request_timer is not None:
                self._request_timer.cancel()
                self._request_timer = None

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_request_timer()
            super().connection_lost(exc)

        def _cancel_request_timer(self) -> None:
            if self._request_timer is not None:
                self._request_timer.cancel()
                self._request_timer = None

        def _upgraded(self) -> bool:
            """Whether the connection became a WebSocket: no HTTP request is coming any more, so none can
            time out (a WebSocket lives as long as its session, e.g. OpenEnv's /ws)."""
            return self.transport.get_protocol() is not self

        def _receiving(self) -> bool:
            """Whether part of a request has arrived and not all of it."""
            cycle = self.cycle
            if cycle is None or cycle.response_complete:
                # the bytes just read started no request the parser could hand on: its head is still coming
                # (or, after an early response, the rest of an unread body)
                return not self.transport.is_closing()
            return cycle.more_body  # a request the app has: its body is still coming

        def _request_timed_out(self) -> None:
            self._request_timer = None
            if self.transport.is_closing() or self._upgraded():
                return
            cycle = self.cycle
            # a response is possible if none started for this request: a head still coming, or a body still
            # coming to an app that has not answered; not if the app answered early and the body still comes
            if cycle is None or (cycle.response_complete and not cycle.more_body) or not cycle.response_started:
                if cycle is not None and not cycle.response_complete:
                    cycle.disconnected = True  # the app sees http.disconnect; what it sends is dropped
                    cycle.message_event.set()
                self.transport.write(timeout_response)
            self._close_lingering()

        def _close_lingering(self) -> None:
            """Close after the 408, without losing it: a socket closed with unread bytes from the client
            (which is still sending) answers them with a reset, and the client's kernel may drop the 408 it
            had received. So: end our side (FIN after the 408), drop what still comes, close a moment later."""
            self._lingering = True
            if not self.transport.can_write_eof():
                self.transport.close()
                return
            self.transport.write_eof()
            self.loop.call_later(_LINGER_S, self.transport.close)

    TimedProtocol.__name__ = TimedProtocol.__qualname__ = f"Timed{base.__name__}"
    return TimedProtocol


def _no_delay(transport: Any) -> None:
    """Send small writes at once (TCP_NODELAY).

    asyncio sets it only on sockets made with proto=IPPROTO_TCP, which a listening socket
    handed to uvicorn (``agentgym serve`` binds its own) need not be: without it a response
    written as head then body waits on the client's delayed ACK, ~40 ms a request.
    """
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def engine() -> str:
    """The event loop and HTTP parser uvicorn runs on here: uvloop + httptools (the ``server`` extra), or
    asyncio + h11 where they are missing (about half the throughput)."""
    import importlib.util

    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    return f"{loop} + {'httptools' if AutoHTTPProtocol.__name__ == 'HttpToolsProtocol' else 'h11'}"


def uvicorn_config(app: Any, *, keep_alive_s: float = DEFAULT_KEEP_ALIVE_S,
                   request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S, forwarded_allow_ips: str | None = None,
                   **kwargs: Any) -> uvicorn.Config:
    """A uvicorn config serving ``app`` with the connection timeouts. Forwarded headers (``X-Forwarded-For``) are
    read only from the proxies ``forwarded_allow_ips`` names (comma-separated addresses or networks); by default
    from none, so a client cannot pose as another address (uvicorn alone trusts 127.0.0.1's)."""
    if not keep_alive_s > 0:
        raise ConfigError(f"keep_alive_s must be > 0, got {keep_alive_s}.")
    proxies = {"proxy_headers": True, "forwarded_allow_ips": forwarded_allow_ips} if forwarded_allow_ips else \
        {"proxy_headers": False}
    return uvicorn.Config(app, http=timed_protocol(request_timeout_s), timeout_keep_alive=keep_alive_s,
                          **proxies, **kwargs)
