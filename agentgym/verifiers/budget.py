"""Verifiers under a budget: no answer can hold up a step, a grading or the server.

A verification runs in a verifier worker, a long-lived child process, and its
caller waits at most ``seconds`` for the verdict. A worker that overruns is
killed (SIGKILL: it can be stopped inside sympy's C-level big-integer
arithmetic, where no Python-level timeout reaches) and replaced; the caller gets
``Score(0.0, False, {"reason": "verifier time budget exceeded",
"budget_exceeded": True, ...})``. Nothing here uses signals in the caller, so it
holds on any thread (the env server scores on worker threads). Each worker also
has an address-space limit (a verification that allocates past it is a failure
with reason "verifier memory budget exceeded") and a CPU-time limit that ends it
if its parent is gone.

The budget also bounds the wait for a worker: a verification that cannot start
within ``seconds`` (every worker busy) raises ``VerifierUnavailable``, an
infrastructure error (a ``VerifierError``, so a ``RolloutError``: the episode
fails and trains nothing), never a 0. Once started it has its full ``seconds``,
so its verdict does not depend on the load: a caller waits at most twice the
budget (plus a worker's start-up, the first time). Waiters are served fairly:
a verification made on behalf of a client (``verifying_for``, which the server
uses for ``/v1/verify``) holds at most all workers but one, and of the waiters
that may start, the one whose client holds the fewest workers goes first. A
worker killed after an overrun is replaced by the caller whose verification
overran, in its own slot (its verdict comes after the new worker's start-up).

Workers start on first use, or ahead of it: ``prewarm_workers()`` (which ``agentgym serve``, ``agentgym eval``
and the trainer call when they start) starts the pool's workers one at a time on a background thread, so that
the first verification finds one ready. Verdicts that need no symbolic engine and whose inputs are within small
size bounds are not sent here at all: each verifier computes them in the calling process (``verify_qa``,
``verify_math`` for plain numbers, ``verify_purchase``; see docs/verifiers.md).

Configuration: ``AGENTGYM_VERIFIER_BUDGET_S`` (default 5 seconds; ``0`` or
``off`` verifies in the calling process with no budget, for debugging),
``AGENTGYM_VERIFIER_WORKERS`` (default: the CPU count, at most 4) and
``AGENTGYM_VERIFIER_MEMORY_MB`` (default 2048). A verifier function can be given
its own budget with its ``budget_s`` argument, and an env with its
``verifier_budget_s`` kwarg.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import itertools
import logging
import math
import os
import pickle
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError, VerifierError, VerifierUnavailable
from agentgym.settings import count_from_env
from agentgym.verifiers.score import Score

__all__ = ["DEFAULT_BUDGET_S", "OVER_BUDGET", "VerifierUnavailable", "budget_seconds", "over_budget",
           "prewarm_workers", "run_budgeted", "shutdown_workers", "verifier_workers", "verifying_for"]

log = logging.getLogger(__name__)

DEFAULT_BUDGET_S = 5.0
DEFAULT_MEMORY_MB = 2048
OVER_BUDGET = "verifier time budget exceeded"
_START_TIMEOUT_S = 120.0  # importing sympy on a loaded 2-core machine
# Imported when a worker starts, so that the first verification does not pay for them inside its budget; then
# each "module:function" of _WARM_UP is called (what builds its tables on first use: math-verify's parser, ~0.4 s).
_PRELOAD = ("agentgym.verifiers", "sympy", "math_verify", "rapidfuzz.fuzz")
_WARM_UP = ("agentgym.verifiers.math:_warm_up",)


# The client a verification is made for (the server's key for an HTTP client); None: this process's own callers.
_CLIENT: ContextVar[str | None] = ContextVar("agentgym_verifier_client", default=None)


@contextlib.contextmanager
def verifying_for(client: str) -> Iterator[None]:
    """Make the verifications inside on behalf of ``client``: it holds at most all workers but one at once."""
    token = _CLIENT.set(client)
    try:
        yield
    finally:
        _CLIENT.reset(token)


def over_budget(verification: Any) -> bool:
    """Whether a ``Score.as_dict()`` (an ``info["verification"]``) says its verifier ran out of budget."""
    details = verification.get("details") if isinstance(verification, dict) else None
    return bool(isinstance(details, dict) and details.get("budget_exceeded"))


def budget_seconds(budget_s: float | None = None) -> float | None:
    """The time budget in seconds: ``budget_s`` if given, else ``AGENTGYM_VERIFIER_BUDGET_S``, else 5; None: off."""
    if budget_s is None:
        raw = os.environ.get("AGENTGYM_VERIFIER_BUDGET_S", "").strip().lower()
        if not raw:
            return DEFAULT_BUDGET_S
        if raw in ("0", "off", "none"):
            return None
        try:
            budget_s = float(raw)
        except ValueError:
            raise ConfigError(f"AGENTGYM_VERIFIER_BUDGET_S must be a number of seconds or 'off', "
                              f"got {raw!r}.") from None
    if isinstance(budget_s, bool) or not isinstance(budget_s, (int, float)) or math.isnan(budget_s) or budget_s < 0:
        raise ConfigError(f"A verifier budget must be a number of seconds >= 0 (0 = off), got {budget_s!r}.")
    return float(budget_s) if budget_s > 0 else None


class _Worker:
    """One verifier process and the two pipes to it."""

    def __init__(self, memory_mb: int) -> None:
        self.generation = 0  # the pool's, when it was started
        to_child, from_parent = os.pipe()
        from_child, to_parent = os.pipe()
        package_root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", "from agentgym.verifiers.budget import _serve; _serve()",
                 str(to_child), str(to_parent), str(memory_mb)],
                pass_fds=(to_child, to_parent), stdin=subprocess.DEVNULL, env=env,
                start_new_session=True)  # Ctrl-C in a terminal reaches the caller, which decides
        finally:
            os.close(to_child)
            os.close(to_parent)
        self.requests = Connection(from_parent, readable=False)
        self.replies = Connection(from_child, writable=False)
        if not self.replies.poll(_START_TIMEOUT_S):
            self.kill()
            raise VerifierError(f"A verifier worker did not start within {_START_TIMEOUT_S:.0f} s.")
        try:
            self.replies.recv()  # "ready"
        except (EOFError, OSError) as e:
            self.kill()
            raise VerifierError(f"A verifier worker failed to start (exit code {self.process.poll()}).") from e

    def call(self, request: tuple[Any, ...], seconds: float) -> tuple[str, Any] | None:
        """The worker's reply, or None when it did not come within ``seconds``."""
        self.requests.send(request)
        if not self.replies.poll(seconds):
            return None
        return self.replies.recv()

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        for conn in (self.requests, self.replies):
            conn.close()


class _Pool:
    """Verifier workers shared by every thread of this process; started on first use, at most ``size``.

    A slot is taken while a worker verifies, starts, or is being replaced after an
    overrun; it counts against the client it was taken for (``_held``).
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._generation = 0  # shutdown() starts a new one: workers of an older one are not reused
        self._forget(os.getpid())

    def _forget(self, pid: int) -> None:
        self._idle: list[_Worker] = []
        self._busy = 0
        self._warming = False  # prewarm()'s thread is starting a worker
        self._claims = 0  # slots waiting for that worker (taken, so counted in _busy, but with no worker yet)
        self._held: dict[str | None, int] = {}
        self._waiting: list[tuple[int, str | None]] = []  # (ticket, client), in arrival order
        self._tickets = itertools.count()
        self._pid = pid

    def _next(self, size: int) -> int | None:
        """The ticket of the waiter to serve now, if a slot is free: of those whose client holds fewer than all
        workers but one (this process's own callers: no limit), the one whose client holds the fewest, then the
        earliest."""
        if self._busy >= size:
            return None
        share = max(1, size - 1)
        held = self._held
        ready = [(held.get(c, 0), t) for t, c in self._waiting if c is None or held.get(c, 0) < share]
        return min(ready)[1] if ready else None

    def _acquire(self, size: int, memory_mb: int, deadline: float, client: str | None) -> _Worker | None:
        """A worker for ``client``, or None when none was free by ``deadline`` (``time.monotonic()``)."""
        with self._lock:
            if self._pid != os.getpid():  # a forked child does not share its parent's workers
                self._forget(os.getpid())
            entry = (next(self._tickets), client)
            self._waiting.append(entry)
            try:
                while self._next(size) != entry[0]:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    self._lock.wait(left)
            finally:
                self._waiting.remove(entry)
                self._lock.notify_all()  # whoever is next in line now re-checks
            self._busy += 1
            self._held[client] = self._held.get(client, 0) + 1
            if not self._idle and self._warming and self._claims == 0:
                self._await_prewarmed(client)
            if self._idle:
                return self._idle.pop()
            generation = self._generation
        try:
            worker = _Worker(memory_mb)
        except BaseException:
            self._release(None, client)
            raise
        worker.generation = generation
        return worker

    def _await_prewarmed(self, client: str | None) -> None:
        """With the lock and a slot held: wait for the worker prewarm() is starting, further along than one started
        now would be (a start's wait, as in ``_acquire``, not the budget's)."""
        self._claims += 1
        try:
            start_by = time.monotonic() + _START_TIMEOUT_S
            while not self._idle and self._warming and (left := start_by - time.monotonic()) > 0:
                self._lock.wait(left)
        except BaseException:  # interrupted: the slot goes back
            self._busy -= 1
            self._held[client] -= 1
            if not self._held[client]:
                del self._held[client]
            self._lock.notify_all()
            raise
        finally:
            self._claims -= 1

    def _release(self, worker: _Worker | None, client: str | None) -> None:
        stale = None
        with self._lock:
            if self._pid != os.getpid():
                return
            self._busy -= 1
            self._held[client] -= 1
            if not self._held[client]:
                del self._held[client]
            if worker is not None and worker.generation == self._generation:
                self._idle.append(worker)
            else:
                stale = worker
            self._lock.notify_all()
        if stale is not None:
            stale.kill()

    def run(self, request: tuple[Any, ...], seconds: float) -> tuple[str, Any] | None:
        """The worker's reply within ``seconds`` of starting, or None; ``("unavailable", why)`` when no worker
        was free within ``seconds``."""
        client = _CLIENT.get()
        size = count_from_env("AGENTGYM_VERIFIER_WORKERS", min(4, os.cpu_count() or 1))
        memory_mb = count_from_env("AGENTGYM_VERIFIER_MEMORY_MB", DEFAULT_MEMORY_MB)
        worker = self._acquire(size, memory_mb, time.monotonic() + seconds, client)
        if worker is None:
            return ("unavailable", f"all {size} verifier workers were busy")
        try:
            reply = worker.call(request, seconds)
        except (EOFError, OSError):
            reply = ("crashed", None)
        except BaseException:  # interrupted while waiting: the worker's state is unknown
            worker.kill()
            self._release(None, client)
            raise
        if reply is None or reply[0] == "crashed":
            # The caller whose verification overran starts the replacement, in its own slot: the next caller finds
            # a warm worker, and a client's overruns cannot take another client's worker while its own restarts.
            worker.kill()
            generation = self._generation
            try:
                replacement = _Worker(memory_mb)
            except VerifierError:  # the next verification starts one itself, and says why if it cannot
                log.warning("a replacement verifier worker failed to start", exc_info=True)
                self._release(None, client)
            else:
                replacement.generation = generation
                self._release(replacement, client)
            if reply is not None:
                reply = ("crashed", worker.process.returncode)
        else:
            self._release(worker, client)
        return reply

    def shutdown(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            self._generation += 1
        for worker in idle:
            worker.kill()

    def counts(self) -> dict[str, int]:
        with self._lock:
            if self._pid != os.getpid():
                return {"idle": 0, "busy": 0}
            return {"idle": len(self._idle), "busy": self._busy}

    def prewarm(self) -> bool:
        """Start workers up to the pool's size on a background thread; False when one is already at it."""
        size = count_from_env("AGENTGYM_VERIFIER_WORKERS", min(4, os.cpu_count() or 1))
        memory_mb = count_from_env("AGENTGYM_VERIFIER_MEMORY_MB", DEFAULT_MEMORY_MB)
        with self._lock:
            if self._pid != os.getpid():
                self._forget(os.getpid())
            if self._warming:
                return False
            self._warming = True
            generation = self._generation
        threading.Thread(target=self._warm, args=(size, memory_mb, generation), name="agentgym-verifier-prewarm",
                         daemon=True).start()
        return True

    def _warm(self, size: int, memory_mb: int, generation: int) -> None:
        """One worker at a time (one core at most), each idle as soon as it is ready, until the pool has ``size``
        workers (idle, busy or being started by a caller); a worker nobody has room for is stopped."""
        pid = os.getpid()
        try:
            while True:
                with self._lock:
                    if self._pid != pid or self._generation != generation or \
                            len(self._idle) + self._busy - self._claims >= size:
                        return
                worker = _Worker(memory_mb)
                worker.generation = generation
                with self._lock:
                    kept = (self._pid == pid and self._generation == generation
                            and len(self._idle) + self._busy - self._claims < size)
                    if kept:
                        self._idle.append(worker)
                        self._lock.notify_all()
                if not kept:
                    worker.kill()
                    return
        except (VerifierError, OSError):  # the next verification starts one itself, and says why if it cannot
            log.warning("pre-warming a verifier worker failed", exc_info=True)
        finally:
            with self._lock:
                if self._pid == pid:
                    self._warming = False
                    self._lock.notify_all()


_POOL = _Pool()
atexit.register(_POOL.shutdown)


def shutdown_workers() -> None:
    """Stop the idle verifier workers (new ones start on the next verification)."""
    _POOL.shutdown()


def verifier_workers() -> dict[str, int]:
    """This process's verifier workers: ``idle`` (started, waiting) and ``busy`` (verifying)."""
    return _POOL.counts()


def prewarm_workers(*, local: bool = True) -> None:
    """Start the verifier workers now, in the background, instead of on the first verification.

    For what starts a long-running process that will verify (``agentgym serve``, ``agentgym eval``, the
    trainer): up to ``AGENTGYM_VERIFIER_WORKERS`` workers start one at a time on a daemon thread (each ~2 s of
    one core and ~90 MB: they import sympy and warm math-verify's parser), and the caller goes on at once. A
    verification that arrives while one is starting waits for it rather than starting another. Nothing starts
    when ``local`` is False (the episodes are verified elsewhere: an ``agentgym serve``, a Ray cluster), when
    the budget is off (verifications run in the caller), or when the settings are invalid (the first
    verification raises that, as without a pre-warm). Calling it again tops the pool up; it never starts more
    than the pool's size.
    """
    if not local:
        return
    try:
        if budget_seconds() is None:
            return
        _POOL.prewarm()
    except ConfigError:
        log.debug("verifier workers not pre-warmed: invalid settings", exc_info=True)


def run_budgeted(func: Callable[..., Score], *args: Any, budget_s: float | None = None, verifier: str = "",
                 **kwargs: Any) -> Score:
    """``func(*args, **kwargs)`` in a verifier worker, within ``budget_s`` seconds (see ``budget_seconds``).

    ``func`` is a module-level function returning a ``Score``; its arguments must
    pickle. Exceptions it raises (a ``VerifierError`` for bad gold data) are
    raised here. Over budget, out of memory or crashed, the verdict is a failed
    ``Score`` that says so in ``details``. No worker free within ``budget_s``:
    ``VerifierUnavailable``.
    """
    seconds = budget_seconds(budget_s)
    if seconds is None:
        return func(*args, **kwargs)
    name = verifier or func.__name__
    start = time.perf_counter()
    reply = _POOL.run((func.__module__, func.__qualname__, args, kwargs, seconds), seconds)
    elapsed = round(time.perf_counter() - start, 3)
    if reply is not None and reply[0] == "unavailable":  # a slot frees within a budget: a verification ends in one
        raise VerifierUnavailable(f"The {name} verifier could not start within its {seconds:g} s budget "
                                  f"({reply[1]}): the server's failure, not the answer's; retry. More workers: "
                                  "AGENTGYM_VERIFIER_WORKERS.", retry_after_s=seconds)
    if reply is None:
        return Score(0.0, False, {"reason": OVER_BUDGET, "budget_exceeded": True, "budget_s": seconds,
                                  "verifier": name})
    kind, value = reply
    if kind == "ok":
        return value
    if kind == "error":
        raise value
    reason = ("verifier memory budget exceeded" if kind == "memory"
              else f"the verifier process crashed (exit code {value})")
    return Score(0.0, False, {"reason": reason, "budget_exceeded": True, "budget_s": seconds, "verifier": name,
                              "elapsed_s": elapsed})


# ---- the worker side --------------------------------------------------------------------------------------------

def _portable(error: BaseException) -> BaseException:
    """``error`` if it survives pickling, else a VerifierError with its text."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return VerifierError(f"{type(error).__name__}: {error}")


def _serve() -> None:
    """A worker's loop: read (module, function, args, kwargs, seconds), answer (kind, value), until EOF."""
    requests = Connection(int(sys.argv[1]), writable=False)
    replies = Connection(int(sys.argv[2]), readable=False)
    memory = int(sys.argv[3]) * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    for module in _PRELOAD:
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    for target in _WARM_UP:
        module, _, name = target.partition(":")
        try:
            getattr(importlib.import_module(module), name)()
        except Exception:  # a warm-up only saves time (a missing extra: the verification says so)
            log.debug("verifier worker warm-up %s failed", target, exc_info=True)
    try:
        replies.send(("ready", None))
    except (BrokenPipeError, OSError):  # the parent is gone (it exited while a pre-warmed worker was starting)
        return
    while True:
        try:
            module, name, args, kwargs, seconds = requests.recv()
        except (EOFError, OSError):
            return
        # A backstop when the parent is gone and cannot kill this worker: CPU time past the budget ends it.
        used = resource.getrusage(resource.RUSAGE_SELF)
        cpu = int(used.ru_utime + used.ru_stime + 2 * seconds + 2)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, resource.RLIM_INFINITY))
        try:
            func: Any = importlib.import_module(module)
            for part in name.split("."):
                func = getattr(func, part)
            reply: tuple[str, Any] = ("ok", func(*args, **kwargs))
        except MemoryError:
            reply = ("memory", None)
        except Exception as e:
            reply = ("error", _portable(e))
        try:
            replies.send(reply)
        except (BrokenPipeError, OSError):
            return
