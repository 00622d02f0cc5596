"""A lean HTTP/1.1 client over a unix socket: how one server process passes a request on to a sibling.

The sibling is our own uvicorn, so the client speaks just what it answers: a status
line, headers, and a body of ``content-length`` bytes, chunks, or all until the close.
Connections are kept and reused. A general client (httpx) cost ~0.7 ms of CPU a
request here, and more with many connections in its pool: more than serving one.
"""

from __future__ import annotations

import asyncio
import time

__all__ = ["Relay", "RelayError"]

Headers = list[tuple[bytes, bytes]]


class RelayError(Exception):
    """The sibling could not be reached, or closed the connection before answering whole."""


class Relay:
    """Requests to the HTTP server on one unix socket, over connections kept up to ``keep_alive_s`` idle."""

    def __init__(self, path: str, *, keep_alive_s: float, max_idle: int = 64) -> None:
        self.path, self.keep_alive_s, self.max_idle = path, keep_alive_s, max_idle
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []

    async def request(self, method: str, target: str, headers: Headers, body: bytes) -> tuple[int, Headers, bytes]:
        """The answer (status, headers, body) to one request; a kept connection the server had closed meanwhile
        is retried on a new one, once (the request never reached the server)."""
        head = b"".join([f"{method} {target} HTTP/1.1\r\nhost: agentgym\r\n".encode("latin-1"),
                         *(k + b": " + v + b"\r\n" for k, v in headers),
                         b"content-length: %d\r\n\r\n" % len(body)])
        reused = self._kept()
        if reused is not None:
            try:
                return await self._exchange(*reused, head + body, fresh=False)
            except _Stale:
                pass
        try:
            reader, writer = await asyncio.open_unix_connection(self.path, limit=1 << 24)
        except OSError as e:
            raise RelayError(f"cannot connect: {e.strerror or e}") from e
        return await self._exchange(reader, writer, head + body, fresh=True)

    def _kept(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        now = time.monotonic()
        while self._idle:
            reader, writer, since = self._idle.pop()
            if now - since < self.keep_alive_s and not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()
        return None

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, data: bytes, *,
                        fresh: bool) -> tuple[int, Headers, bytes]:
        try:
            writer.write(data)
            head = await reader.readuntil(b"\r\n\r\n")
        except (OSError, asyncio.IncompleteReadError) as e:
            writer.close()
            if isinstance(e, asyncio.IncompleteReadError) and e.partial or fresh:
                raise RelayError(f"the connection broke: {type(e).__name__}") from e
            raise _Stale from e  # a kept connection closed by the server, no byte of an answer: try a new one
        except asyncio.CancelledError:  # a timeout: the connection is in no state to be reused
            writer.close()
            raise
        try:
            status, headers, keep = _parse_head(head)
            body = b"" if status in (204, 304) else await _read_body(reader, headers)
        except (OSError, asyncio.IncompleteReadError, ValueError) as e:
            writer.close()
            raise RelayError(f"the answer broke off: {type(e).__name__}") from e
        except asyncio.CancelledError:
            writer.close()
            raise
        if keep and not reader.at_eof() and len(self._idle) < self.max_idle:
            self._idle.append((reader, writer, time.monotonic()))
        else:
            writer.close()
        return status, [(k, v) for k, v in headers if k not in (b"content-length", b"transfer-encoding")], body


class _Stale(Exception):
    """The connection was closed before any of the answer came."""


def _parse_head(head: bytes) -> tuple[int, Headers, bool]:
    """Status, headers (names lower-cased) and whether the connection may be kept, of a response head."""
    status_line, *lines = head[:-4].split(b"\r\n")
    headers = []
    for line in lines:
        name, _, value = line.partition(b":")
        headers.append((name.strip().lower(), value.strip()))
    keep = (b"connection", b"close") not in [(k, v.lower()) for k, v in headers]
    return int(status_line.split(b" ", 2)[1]), headers, keep


async def _read_body(reader: asyncio.StreamReader, headers: Headers) -> bytes:
    fields = dict(headers)
    if b"content-length" in fields:
        return await reader.readexactly(int(fields[b"content-length"]))
    if fields.get(b"transfer-encoding", b"").lower() != b"chunked":
        return await reader.read()  # until the close
    chunks = []
    while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)
    while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers, if any
        pass
    return b"".join(chunks)
