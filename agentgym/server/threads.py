"""Worker threads for env code: the event loop never runs env code, and hands it off cheaply.

Every env call the server makes (create, reset, step, close) is a job for these
threads. Compared with a generic ``to_thread``, a hand-off costs one queue put on
the way out and, on the way back, one wake-up of the event loop per *batch* of
finished jobs: under load, results that finish while the loop is busy are
delivered together.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["DEFAULT_THREADS", "EnvThreads"]

# As concurrent.futures.ThreadPoolExecutor: enough for envs that wait on subprocesses
# or containers, few enough that CPU-bound envs do not fight over the GIL.
DEFAULT_THREADS = min(32, (os.cpu_count() or 1) + 4)

T = TypeVar("T")
_STOP = object()


class EnvThreads:
    """Up to ``size`` daemon threads, started on demand, that run jobs for event loops."""

    def __init__(self, size: int = DEFAULT_THREADS, name: str = "agentgym-env") -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}.")
        self.size, self.name = size, name
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a job
        self._queued = 0  # jobs put and not yet taken
        self._lock = threading.Lock()
        self._done: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], bool, Any]]] = {}

    async def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn()`` in a worker thread and return its result (or raise its exception)."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        with self._lock:
            self._queued += 1
            start_thread = self._queued > self._idle and len(self._threads) < self.size
        self._jobs.put((fn, future))
        if start_thread:
            thread = threading.Thread(target=self._work, args=(self._jobs,), daemon=True,
                                      name=f"{self.name}-{len(self._threads)}")
            self._threads.append(thread)
            thread.start()
        return await future

    def shutdown(self, wait: bool = True) -> None:
        """Stop the threads once the queued jobs are done; a later ``run`` starts new ones."""
        with self._lock:
            jobs, threads = self._jobs, self._threads
            self._jobs, self._threads, self._idle, self._queued = queue.SimpleQueue(), [], 0, 0
        for _ in threads:
            jobs.put(_STOP)
        if wait:
            for thread in threads:
                thread.join()

    # ---- worker side ----------------------------------------------------------
    def _work(self, jobs: queue.SimpleQueue[Any]) -> None:
        while True:
            with self._lock:
                current = jobs is self._jobs  # threads of a shut-down generation keep no counts
                if current:
                    self._idle += 1
            job = jobs.get()
            if job is _STOP:
                return
            with self._lock:
                if current and jobs is self._jobs:
                    self._idle -= 1
                    self._queued -= 1
            fn, future = job
            try:
                outcome = (future, True, fn())
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting coroutine
                outcome = (future, False, e)
            loop = future.get_loop()
            with self._lock:
                pending = self._done.get(loop)
                if pending is None:  # the loop has no delivery scheduled: schedule one
                    self._done[loop] = [outcome]
                else:
                    pending.append(outcome)
            if pending is None:
                try:
                    loop.call_soon_threadsafe(self._deliver, loop)
                except RuntimeError:  # the loop is closed: nobody awaits the result any more
                    with self._lock:
                        self._done.pop(loop, None)

    def _deliver(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            done = self._done.pop(loop, [])
        for future, ok, value in done:
            if future.done():  # the awaiting coroutine was cancelled
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
