"""Worker threads for env code: the event loop never runs env code, and hands it off cheaply.

Every env call the server makes (create, reset, step, close) is a job for these
threads. A hand-off wakes one idle thread on the way out and, on the way back,
wakes the event loop once per *batch* of finished jobs (under load, results that
finish while the loop is busy are delivered together).

Both wake-ups are writes to a file descriptor (a pipe the idle threads read; an
eventfd the loop watches), and ``os.write`` releases the GIL before its system
call. That is the point: a wake-up made while holding the GIL (``queue.put``,
``call_soon_threadsafe``) lets the woken thread preempt the waker on a shared
core only to wait for the GIL the waker still holds: an empty job's hand-off took
~6 context switches, and takes ~2 (``benchmarks/bench_hot_path.py`` counts them).

The queue is fair across clients (``agentgym.server.clients.CURRENT_CLIENT``, the peer address of the request a
job serves): a free thread takes the next job of the client with the fewest jobs running, not the oldest job; one
client runs at most ``size`` jobs at once; and a client with no job running gets a thread at once, past ``size``
if need be (up to twice it): one client's sessions holding every thread with slow steps delay another client's
step by nothing.
"""

from __future__ import annotations

import asyncio
import collections
import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from agentgym.server.admission import lent
from agentgym.server.clients import CURRENT_CLIENT

__all__ = ["DEFAULT_THREADS", "EnvThreads"]

# As concurrent.futures.ThreadPoolExecutor: enough for envs that wait on subprocesses
# or containers, few enough that CPU-bound envs do not fight over the GIL.
DEFAULT_THREADS = min(32, (os.cpu_count() or 1) + 4)

T = TypeVar("T")
_STOP = object()
_Outcome = tuple["asyncio.Future[Any]", bool, Any]  # (future, ok, result or exception)


class EnvThreads:
    """Up to ``size`` daemon threads, started on demand, that run jobs for event loops."""

    def __init__(self, size: int = DEFAULT_THREADS, name: str = "agentgym-env") -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}.")
        self.size, self.name = size, name
        self._lock = threading.Lock()
        self._crew: _Crew | None = None  # the threads taking jobs now; a shutdown retires them
        self._channels: dict[asyncio.AbstractEventLoop, _Channel] = {}

    async def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn()`` in a worker thread and return its result (or raise its exception)."""
        loop = asyncio.get_running_loop()
        channel = self._channels.get(loop) or self._open_channel(loop)
        future: asyncio.Future[T] = loop.create_future()
        client = CURRENT_CLIENT.get()
        thread = None
        with self._lock:
            crew = self._crew
            if crew is None:
                crew = self._crew = _Crew()
            crew.jobs.setdefault(client, collections.deque()).append((fn, future, channel))
            wake = crew.idle > 0
            if wake:
                crew.idle -= 1  # that thread's wake-up is this job's: each idle thread reads one byte
            elif len(crew.threads) < self.size or (not crew.running.get(client)
                                                   and len(crew.threads) < 2 * self.size):
                thread = threading.Thread(target=self._work, args=(crew,), daemon=True,
                                          name=f"{self.name}-{len(crew.threads)}")
                crew.threads.append(thread)
        if wake:
            os.write(crew.write_fd, b"\0")  # the GIL is released first: the woken thread runs at once
        elif thread is not None:
            thread.start()
        async with lent():  # the request's place in the front door is another's while the job runs
            return await future

    def shutdown(self, wait: bool = True) -> None:
        """Stop the threads once the queued jobs are done; a later ``run`` starts new ones."""
        with self._lock:
            crew, self._crew = self._crew, None
            if crew is not None:
                crew.stops += len(crew.threads)  # taken after the queued jobs
                idle, crew.idle = crew.idle, 0
        if crew is None:
            return
        if idle:
            os.write(crew.write_fd, b"\0" * idle)
        here = _running_loop()
        with self._lock:  # another thread's running loop keeps its channel
            mine = [loop for loop in list(self._channels) if loop is here or loop.is_closed()]
            channels = [self._channels.pop(loop) for loop in mine]
        for channel in channels:
            channel.detach()
        if wait:
            for thread in crew.threads:
                thread.join()

    def _open_channel(self, loop: asyncio.AbstractEventLoop) -> _Channel:
        channel = _Channel(loop)
        with self._lock:  # loops in other threads may open theirs at the same time
            self._channels[loop] = channel
            closed = [other for other in list(self._channels) if other.is_closed()]
            dropped = [self._channels.pop(other) for other in closed]
        for other in dropped:  # their loops are closed: nothing watches them any more
            other.detach()
        return channel

    # ---- worker side ----------------------------------------------------------
    def _work(self, crew: _Crew) -> None:
        while True:
            with self._lock:
                client, job = crew.take(self.size)
                if job is None:
                    crew.idle += 1
            if job is None:
                os.read(crew.read_fd, 1)  # blocks, without the GIL, until a run() or a shutdown claims this thread
                continue
            if job is _STOP:
                crew.stopped()
                return
            fn, future, channel = job
            try:
                outcome = (future, True, fn())
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting coroutine
                outcome = (future, False, e)
            with self._lock:
                crew.done(client)
            channel.put(outcome)
            del job, fn, future, channel, outcome  # no finished job's objects live on while this thread waits


class _Crew:
    """One generation of threads: their job queues (one per client), how many wait for a job, and the pipe that
    wakes them (one byte for each waiting thread claimed). A shutdown queues one stop per thread, taken after every
    queued job; the last to stop closes the pipe, after every byte written to it was read (each waiting thread reads
    one before it can stop). ``take`` and ``done`` are called under the pool's lock."""

    def __init__(self) -> None:
        self.jobs: dict[str, collections.deque[Any]] = {}
        self.running: dict[str, int] = {}
        self.stops = 0
        self.threads: list[threading.Thread] = []
        self.idle = 0
        self.read_fd, self.write_fd = os.pipe()  # readers of a pipe wait exclusively: a byte wakes one thread
        self._running = 0
        self._lock = threading.Lock()

    def take(self, cap: int) -> tuple[str, Any]:
        """(client, job): the next job of the client with the fewest running (the first queued of those with
        as few) among those running fewer than ``cap``, a stop once none is queued, or ("", None)."""
        best = None
        for client in self.jobs:
            running = self.running.get(client, 0)
            if (running < cap or self.stops) and (best is None or running < self.running.get(best, 0)):
                best = client
        if best is None:
            if self.stops and not self.jobs:
                self.stops -= 1
                return "", _STOP
            return "", None
        queue = self.jobs.pop(best)
        job = queue.popleft()
        if queue:
            self.jobs[best] = queue  # back in line, behind the other clients
        self.running[best] = self.running.get(best, 0) + 1
        return best, job

    def done(self, client: str) -> None:
        left = self.running.pop(client) - 1
        if left:
            self.running[client] = left

    def stopped(self) -> None:
        with self._lock:
            self._running += 1
            last = self._running == len(self.threads)
        if last:
            os.close(self.read_fd)
            os.close(self.write_fd)


class _Channel:
    """Where one event loop's finished jobs wait, and the file descriptor the loop watches for them.

    A thread that finishes a job appends its outcome; the first outcome after a delivery writes the descriptor,
    which wakes the loop (``add_reader``), and the loop delivers everything appended by then. Detached (at a
    shutdown, or where the loop cannot watch descriptors), outcomes go through ``call_soon_threadsafe``. The
    descriptor is closed when the channel is collected: never while a thread still holds it to write."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._done: list[_Outcome] = []
        self._lock = threading.Lock()
        if hasattr(os, "eventfd"):
            self._read_fd = self._write_fd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
            self._signal = (1).to_bytes(8, sys.byteorder)
        else:
            self._read_fd, self._write_fd = os.pipe()
            os.set_blocking(self._read_fd, False)
            os.set_blocking(self._write_fd, False)
            self._signal = b"\0"
        weakref.finalize(self, _close, {self._read_fd, self._write_fd})
        try:
            loop.add_reader(self._read_fd, self._deliver)
            self._attached = True
        except NotImplementedError:  # a loop without add_reader (Windows' proactor)
            self._attached = False

    def put(self, outcome: _Outcome) -> None:
        """Called by a worker thread: hand ``outcome`` to the loop."""
        with self._lock:
            self._done.append(outcome)
            first, attached = len(self._done) == 1, self._attached
        if not first:  # a wake-up is on its way
            return
        if attached:
            try:
                os.write(self._write_fd, self._signal)
            except BlockingIOError:  # full: the loop has wake-ups to read already
                pass
            return
        try:
            self.loop.call_soon_threadsafe(self._deliver)
        except RuntimeError:  # the loop is closed: nobody awaits the result any more
            pass

    def detach(self) -> None:
        """From the loop's thread (or once it is closed): stop watching, deliver what is done, hand later
        outcomes over with ``call_soon_threadsafe``."""
        with self._lock:
            attached, self._attached = self._attached, False
        if attached and not self.loop.is_closed():
            self.loop.remove_reader(self._read_fd)
            self._deliver()

    def _deliver(self) -> None:
        try:
            os.read(self._read_fd, 4096)  # before taking the outcomes: a write after this one wakes the loop again
        except BlockingIOError:
            pass
        with self._lock:
            done, self._done = self._done, []
        for future, ok, value in done:
            if future.done():  # the awaiting coroutine was cancelled
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)


def _close(fds: set[int]) -> None:
    for fd in fds:
        os.close(fd)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
