"""The gateway's batching engine: chat requests from many agents become one batched generation.

One thread owns the generator (the default local model's ``TransformersGenerator``, any local HF model's, or
``VLLMGenerator`` on a GPU). Requests queue; the engine takes what is waiting, and keeps gathering while more
arrive (a gap of ``gather_s`` ends the gathering) or until every open rollout has a request in (the lockstep the
built-in loop has), then runs one ``generate`` per sampling setting. Rows are ordered by rollout, so a rollout's
next call extends its own row of the previous batch and reuses its KV cache.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym.lm.generation import Generator, Turn, _seed

__all__ = ["Engine", "Request"]

log = logging.getLogger(__name__)


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

    @property
    def setting(self) -> tuple[float, float, int]:
        return (self.temperature, self.top_p, self.max_tokens)


class Engine:
    """Runs queued requests through ``generator`` in batches on one thread."""

    def __init__(self, generator: Generator, *, gather_s: float = 0.05, max_wait_s: float = 2.0,
                 max_rows: int = 64, expected: Callable[[], int] | None = None,
                 context: Callable[[], Any] | None = None) -> None:
        self.generator = generator
        self.tokenizer = generator.tokenizer
        self.gather_s = gather_s
        self.max_wait_s = max_wait_s
        self.max_rows = max_rows
        #: how many requests to wait for before starting a batch (open rollouts); None: gather by time only
        self.expected = expected
        #: a context manager around each generation (the trainer's bf16 autocast: it is per thread)
        self.context = context or contextlib.nullcontext
        self.stats = {"batches": 0, "rows": 0, "generate_s": 0.0}
        self._queue: queue.SimpleQueue[Request | None] = queue.SimpleQueue()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agentgym-gateway-engine", daemon=True)
        self._thread.start()

    def submit(self, request: Request) -> concurrent.futures.Future[list[Turn]]:
        if self._closed.is_set():
            request.future.set_exception(RuntimeError("The gateway's engine is closed."))
        else:
            self._queue.put(request)
        return request.future

    def close(self) -> None:
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

    def _run(self) -> None:
        while not self._closed.is_set():
            first = self._queue.get()
            if first is None:
                break
            batch = self._gather(first)
            groups: dict[tuple[float, float, int], list[Request]] = {}
            for request in sorted(batch, key=lambda r: r.order):
                groups.setdefault(request.setting, []).append(request)
            for group in groups.values():
                self._generate(group)
        while True:  # whatever is still queued fails rather than hangs
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not None and not item.future.done():
                item.future.set_exception(RuntimeError("The gateway's engine is closed."))

    def _generate(self, group: Sequence[Request]) -> None:
        first = group[0]
        contexts = [r.prompt_ids for r in group for _ in range(r.n)]
        stops = [r.stops for r in group for _ in range(r.n)]
        generator: Any = self.generator
        generator.temperature, generator.top_p = first.temperature, first.top_p
        start = time.perf_counter()
        try:
            with self.context():
                turns = generator.generate(contexts, stops=stops, max_new_tokens=first.max_tokens,
                                           seed=_seed("gateway", *(r.seed for r in group)))
        except BaseException as e:  # noqa: BLE001 - the model's failure fails these requests, not the engine
            log.exception("generation failed for a batch of %d rows", len(contexts))
            for request in group:
                request.future.set_exception(e)
            return
        self.stats["batches"] += 1
        self.stats["rows"] += len(contexts)
        self.stats["generate_s"] += time.perf_counter() - start
        k = 0
        for request in group:
            request.future.set_result(list(turns[k:k + request.n]))
            k += request.n
