"""The gateway's batching engine: chat requests from many agents become one batched generation.

One thread owns the generator (the default local model's ``TransformersGenerator``, any local HF model's, or
``VLLMGenerator`` on a GPU). Requests queue; when nothing is being generated the engine takes what is waiting, and
keeps gathering while more arrive (a gap of ``gather_s`` ends the gathering) or until every open rollout has a
request in (the lockstep the built-in loop has). Generation runs in chunks of ``chunk_tokens`` (``join_tokens``
while at most half the open rollouts have a request in, so the others join soon): between chunks,
requests that arrived join the batch, a cancelled request's rows (its client went away, or it ran past its time
limit) leave it, and finished requests are answered. So one long request never holds a short one for longer than a
chunk, and a batch that started with one row does not stay one row. Rows are ordered by rollout, so a rollout's
next call (and a row's next chunk) extends its own row of the previous batch and reuses its KV cache.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym.lm.generation import Generator, Turn, _seed

__all__ = ["Cancelled", "Engine", "Request"]

log = logging.getLogger(__name__)

#: the window a stop string is looked for in, in ids (the generator's own)
_STOP_WINDOW = 24


class Cancelled(Exception):
    """The request was cancelled (its client went away, or it ran past its time limit) before it finished."""


@dataclass
class Request:
    """``n`` rows of one chat completion: the prompt ids (the same for each row), how to sample, where it sorts."""

    prompt_ids: list[int]
    n: int
    stops: tuple[str, ...]
    max_tokens: int
    temperature: float
    top_p: float
    seed: int
    #: (rollout's creation number, call number): rows of one rollout keep their place batch after batch
    order: tuple[int, int]
    future: concurrent.futures.Future[list[Turn]] = field(default_factory=concurrent.futures.Future)
    #: set to have the engine drop the request: queued, it never runs; running, its rows leave at the next chunk
    cancelled: threading.Event = field(default_factory=threading.Event)
    #: its rows while the engine generates them
    rows: list[_Row] = field(default_factory=list, init=False, repr=False)

    @property
    def setting(self) -> tuple[float, float]:
        return (self.temperature, self.top_p)


@dataclass
class _Row:
    """One row of a request being generated: what it sampled so far."""

    request: Request
    k: int
    ids: list[int] = field(default_factory=list)
    logprobs: list[float] | None = field(default_factory=list)
    ended: bool = False
    stopped: bool = False

    @property
    def done(self) -> bool:
        return self.ended or self.stopped or len(self.ids) >= self.request.max_tokens

    def turn(self) -> Turn:
        return Turn(ids=list(self.ids), ended=self.ended, stopped=self.stopped, logprobs=self.logprobs)


class Engine:
    """Runs queued requests through ``generator`` in batches, chunk by chunk, on one thread."""

    def __init__(self, generator: Generator, *, gather_s: float = 0.05, max_wait_s: float = 2.0,
                 max_rows: int = 64, expected: Callable[[], int] | None = None,
                 context: Callable[[], Any] | None = None, chunk_tokens: int = 64, join_tokens: int = 8) -> None:
        if min(chunk_tokens, join_tokens) < 1:
            raise ValueError(f"chunk_tokens and join_tokens must be >= 1, got {chunk_tokens}, {join_tokens}.")
        self.generator = generator
        self.tokenizer = generator.tokenizer
        self.gather_s = gather_s
        self.max_wait_s = max_wait_s
        self.max_rows = max_rows
        #: ids generated per row before the batch is open to new requests and cancellations again
        self.chunk_tokens = chunk_tokens
        #: the chunk while fewer requests run than rollouts are open (``expected``): latecomers join after it
        self.join_tokens = join_tokens
        #: how many requests to wait for before starting a batch (open rollouts); None: gather by time only
        self.expected = expected
        #: a context manager around each generation (the trainer's bf16 autocast: it is per thread)
        self.context = context or contextlib.nullcontext
        self.stats = {"batches": 0, "rows": 0, "generate_s": 0.0, "chunks": 0, "cancelled": 0}
        self._queue: queue.SimpleQueue[Request | None] = queue.SimpleQueue()
        self._closed = threading.Event()
        self._chunk = itertools.count()
        self._thread = threading.Thread(target=self._run, name="agentgym-gateway-engine", daemon=True)
        self._thread.start()

    def submit(self, request: Request) -> concurrent.futures.Future[list[Turn]]:
        if self._closed.is_set():
            request.future.set_exception(RuntimeError("The gateway's engine is closed."))
        else:
            self._queue.put(request)
        return request.future

    def cancel(self, request: Request) -> None:
        """Drop ``request``: its future fails with :class:`Cancelled` at the next chunk boundary (or at once, where
        it already finished it keeps its result)."""
        request.cancelled.set()

    def close(self) -> None:
        """Stop: what is running or queued fails ("the engine is closed") at the next chunk boundary; idempotent."""
        if not self._closed.is_set():
            self._closed.set()
            self._queue.put(None)
        self._thread.join(timeout=30)

    def _gather(self, first: Request) -> list[Request]:
        batch, start = [first], time.monotonic()
        while sum(r.n for r in batch) < self.max_rows:
            expected = self.expected() if self.expected is not None else 0
            if expected and len(batch) >= expected:
                break
            wait = min(self.gather_s, self.max_wait_s - (time.monotonic() - start))
            if wait <= 0:
                break
            try:
                item = self._queue.get(timeout=wait)
            except queue.Empty:
                break
            if item is None:
                self._queue.put(None)
                break
            batch.append(item)
        return batch

    def _arrived(self) -> list[Request] | None:
        """Whatever is queued now, without waiting; None once the engine is closing."""
        out: list[Request] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return out
            if item is None:
                self._queue.put(None)
                return None if not out else out
            out.append(item)

    def _run(self) -> None:
        running: list[_Row] = []
        waiting: list[Request] = []  # arrived while the batch was full: they join as rows finish
        while not self._closed.is_set():
            if not running and not waiting:
                first = self._queue.get()
                if first is None:
                    break
                waiting.extend(self._gather(first))
            else:
                arrived = self._arrived()
                if arrived is None and self._closed.is_set():
                    break
                waiting.extend(arrived or [])
            running = [row for row in running if not self._dropped(row.request)]
            waiting = [r for r in waiting if not self._dropped(r)]
            rows = len(running)
            while waiting and (rows + waiting[0].n <= self.max_rows or rows == 0):
                request = waiting.pop(0)
                request.rows = [_Row(request, k) for k in range(request.n)]
                running.extend(request.rows)
                rows += request.n
            if not running:
                continue
            running.sort(key=lambda row: (row.request.order, row.k))
            groups: dict[tuple[float, float], list[_Row]] = {}
            for row in running:
                groups.setdefault(row.request.setting, []).append(row)
            # while fewer than half the open rollouts have a request in, short chunks: those about to ask join soon,
            # rather than after a long chunk of a nearly empty batch (the first agent of a run asks alone)
            expected = self.expected() if self.expected is not None else 0
            sparse = 2 * len({id(r.request) for r in running}) <= expected
            chunk = min(self.chunk_tokens, self.join_tokens) if sparse else self.chunk_tokens
            for group in groups.values():
                self._generate(group, chunk)
            running = [row for row in running if not self._finish(row)]
        for row in running:
            self._fail(row.request, RuntimeError("The gateway's engine is closed."))
        for request in waiting:
            self._fail(request, RuntimeError("The gateway's engine is closed."))
        while True:  # whatever is still queued fails rather than hangs
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                self._fail(item, RuntimeError("The gateway's engine is closed."))

    def _dropped(self, request: Request) -> bool:
        if request.future.done():
            return True
        if request.cancelled.is_set():
            self.stats["cancelled"] += 1
            self._fail(request, Cancelled("The request was cancelled."))
            return True
        return False

    @staticmethod
    def _fail(request: Request, error: BaseException) -> None:
        if not request.future.done():
            request.future.set_exception(error)

    def _finish(self, row: _Row) -> bool:
        """Whether ``row`` leaves the batch: its request failed, or every row of it is done (then it is answered)."""
        request = row.request
        if request.future.done():
            return True
        if not row.done:
            return False
        if all(r.done for r in request.rows):
            request.future.set_result([r.turn() for r in request.rows])
            return True
        return False

    def _generate(self, group: Sequence[_Row], chunk: int) -> None:
        first = group[0].request
        contexts = [[*row.request.prompt_ids, *row.ids] for row in group]
        stops = [row.request.stops for row in group]
        limits = [min(chunk, row.request.max_tokens - len(row.ids)) for row in group]
        generator: Any = self.generator
        generator.temperature, generator.top_p = first.temperature, first.top_p
        start = time.perf_counter()
        try:
            with self.context():
                turns = generator.generate(contexts, stops=stops,
                                           max_new_tokens=limits[0] if len(set(limits)) == 1 else limits,
                                           seed=_seed("gateway", next(self._chunk),
                                                      *(row.request.seed for row in group)))
        except BaseException as e:  # noqa: BLE001 - the model's failure fails these requests, not the engine
            log.exception("generation failed for a batch of %d rows", len(contexts))
            for row in group:
                self._fail(row.request, e)
            return
        # a batch: a generation that started rows (others may go on in it); chunks: every generation
        started = sum(not row.ids and row.k == 0 for row in group)
        self.stats["chunks"] += 1
        self.stats["batches"] += bool(started)
        self.stats["rows"] += sum(not row.ids for row in group)
        self.stats["generate_s"] += time.perf_counter() - start
        for row, turn in zip(group, turns):
            before = len(row.ids)
            row.ids.extend(turn.ids)
            if row.logprobs is not None:
                row.logprobs = [*row.logprobs, *turn.logprobs] if turn.logprobs is not None else None
            row.ended, row.stopped = turn.ended, turn.stopped
            if before and row.request.stops and not (row.ended or row.stopped):
                self._stop_across(row, before)

    def _stop_across(self, row: _Row, before: int) -> None:
        """A stop string that spans two chunks (the generator looked within this chunk's ids only): the row stops
        at the id that completed it, as the generator would have."""
        decode = self.tokenizer.decode
        if not any(s in decode(row.ids[max(0, before - _STOP_WINDOW):before + _STOP_WINDOW])
                   for s in row.request.stops):
            return
        for end in range(before + 1, min(len(row.ids), before + _STOP_WINDOW) + 1):
            if any(s in decode(row.ids[max(0, end - _STOP_WINDOW):end]) for s in row.request.stops):
                del row.ids[end:]
                if row.logprobs is not None:
                    del row.logprobs[end:]
                row.stopped = True
                return
