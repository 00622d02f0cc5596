"""Every HTTP request's admission: a cap on one client's requests in flight across all routes, served fairly.

A client (``agentgym.server.clients``: its host, or the name of a token the operator issued it) runs at most
``max_client`` requests at once, whatever route they are for and however many connections carry them: a host
that opens 64 connections gets the share of one client, not of 64. Its further requests wait in its own queue (in
order) and start as its earlier ones end; past ``max_client_queued`` waiting, the next is refused at once with 429
``too_many_requests`` naming the flag. The server as a whole runs at most ``max_in_flight`` requests at once;
when it is full, the next to start is the oldest waiting request of the client with the fewest running, so a
client with none running is next in line, however long the other clients' queues are.

The places count the requests the server is working on, not those waiting on something else: a request lends its
place while it waits for an env worker thread, a verifier or another request's hold on its session (``lent``), and
takes it back (before its client's new requests, never refused) to answer. So a client may have any number of
steps running on the env threads (their fair queue shares those), while the event loop's own work (reading,
checking and answering requests) goes to the clients in turn: a host's 64 connections get the turns of one client.
One whose client goes away while it waits gives its place up. Nothing here is shared between the processes of a
``--processes N`` server: each holds the caps for the connections the kernel gives it. WebSockets are not requests
here (``ws_limits.py`` caps one client's).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
from collections.abc import AsyncIterator
from dataclasses import dataclass

from agentgym.errors import ConfigError
from agentgym.server.api_error import ApiError

__all__ = ["DEFAULT_MAX_CLIENT_QUEUED", "DEFAULT_MAX_CLIENT_REQUESTS", "DEFAULT_MAX_IN_FLIGHT", "Admission",
           "AdmissionCounts", "Held", "lent"]

DEFAULT_MAX_CLIENT_REQUESTS = 2
DEFAULT_MAX_CLIENT_QUEUED = 1024
DEFAULT_MAX_IN_FLIGHT = 64


class Held:
    """The place the request being served holds (``CURRENT_PLACE``), if it holds one now."""

    def __init__(self, admission: Admission, client: str) -> None:
        self.admission, self.client, self.held = admission, client, False

    async def take(self) -> None:
        await self.admission.acquire(self.client)
        self.held = True

    def give_up(self) -> None:
        if self.held:
            self.held = False
            self.admission.release(self.client)


#: the place of the request this code serves (set by the server's front door); None outside requests
CURRENT_PLACE: contextvars.ContextVar[Held | None] = contextvars.ContextVar("agentgym_place", default=None)


@contextlib.asynccontextmanager
async def lent() -> AsyncIterator[None]:
    """Around a wait on something that is not the event loop's work (an env thread, a verifier, another request's
    hold on a session): the request's place is lent meanwhile and taken back after, before its client's new
    requests. A no-op outside a request that holds one."""
    place = CURRENT_PLACE.get()
    if place is None or not place.held:
        yield
        return
    place.give_up()
    try:
        yield
    except asyncio.CancelledError:  # its client went away: nothing left to answer
        raise
    except BaseException:
        await place.admission.acquire(place.client, returning=True)  # to answer with the error
        place.held = True
        raise
    await place.admission.acquire(place.client, returning=True)
    place.held = True


@dataclass(frozen=True)
class AdmissionCounts:
    """Requests running and waiting, in all and for the busiest client (``/metrics``)."""

    running: int
    waiting: int
    clients: int
    busiest_running: int


class Admission:
    """The caps above for one event loop's requests. Use ``async with admission.slot(client):`` around a request;
    it raises ``ApiError`` 429 when the client's queue is full."""

    def __init__(self, *, max_client: int, max_client_queued: int = DEFAULT_MAX_CLIENT_QUEUED,
                 max_in_flight: int = DEFAULT_MAX_IN_FLIGHT) -> None:
        for name, value in (("max_client_requests", max_client), ("max_client_queued", max_client_queued),
                            ("max_requests_in_flight", max_in_flight)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a whole number >= 1, got {value!r}.")
        self.max_client, self.max_client_queued, self.max_in_flight = max_client, max_client_queued, max_in_flight
        self._running: dict[str, int] = {}
        self._waiting: dict[str, collections.deque[asyncio.Future[None]]] = {}
        self._total = 0

    def slot(self, client: str) -> _Slot:
        return _Slot(self, client)

    def counts(self) -> AdmissionCounts:
        return AdmissionCounts(self._total, sum(len(q) for q in self._waiting.values()),
                               len(set(self._running) | set(self._waiting)), max(self._running.values(), default=0))

    def _may_start(self, client: str) -> bool:
        return self._total < self.max_in_flight and self._running.get(client, 0) < self.max_client

    def _start(self, client: str) -> None:
        self._running[client] = self._running.get(client, 0) + 1
        self._total += 1

    async def acquire(self, client: str, *, returning: bool = False) -> None:
        """Wait for a place (``returning``: a request taking back the place it lent, first in its client's queue
        and never refused)."""
        if (returning or not self._waiting.get(client)) and self._may_start(client):
            self._start(client)
            return
        queue = self._waiting.setdefault(client, collections.deque())
        if len(queue) >= self.max_client_queued and not returning:
            running = self._running.get(client, 0)
            raise ApiError(429, "too_many_requests",
                           f"This client has {running} requests running and {len(queue)} waiting, the most one client "
                           f"may queue (agentgym serve --max-client-queued {self.max_client_queued}; at most "
                           f"--max-client-requests {self.max_client} run at once): send the next when one is answered.",
                           {"Retry-After": "1"})
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if returning:
            queue.appendleft(waiter)
        else:
            queue.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release(client)  # it was let in as it gave up: pass the place on
            else:
                queue.remove(waiter)
                if not queue:
                    del self._waiting[client]
            raise

    def release(self, client: str) -> None:
        left = self._running[client] - 1
        if left:
            self._running[client] = left
        else:
            del self._running[client]
        self._total -= 1
        self._dispatch()

    def _dispatch(self) -> None:
        """Start waiting requests while there is room: the oldest of the client with the fewest running first."""
        while self._waiting and self._total < self.max_in_flight:
            ready = [c for c in self._waiting if self._running.get(c, 0) < self.max_client]
            if not ready:
                return
            client = min(ready, key=lambda c: self._running.get(c, 0))
            queue = self._waiting[client]
            waiter = queue.popleft()
            if not queue:
                del self._waiting[client]
            self._start(client)
            waiter.set_result(None)


class _Slot:
    def __init__(self, admission: Admission, client: str) -> None:
        self.admission, self.client = admission, client

    async def __aenter__(self) -> None:
        await self.admission.acquire(self.client)

    async def __aexit__(self, *exc: object) -> None:
        self.admission.release(self.client)
