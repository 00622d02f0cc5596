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

Configuration: ``AGENTGYM_VERIFIER_BUDGET_S`` (default 5 seconds; ``0`` or
``off`` verifies in the calling process with no budget, for debugging),
``AGENTGYM_VERIFIER_WORKERS`` (default: the CPU count, at most 4) and
``AGENTGYM_VERIFIER_MEMORY_MB`` (default 2048). A verifier function can be given
its own budget with its ``budget_s`` argument, and an env with its
``verifier_budget_s`` kwarg.
"""

from __future__ import annotations

import atexit
import importlib
import math
import os
import pickle
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError, VerifierError
from agentgym.verifiers.score import Score

__all__ = ["DEFAULT_BUDGET_S", "OVER_BUDGET", "budget_seconds", "over_budget", "run_budgeted", "shutdown_workers"]

DEFAULT_BUDGET_S = 5.0
DEFAULT_MEMORY_MB = 2048
OVER_BUDGET = "verifier time budget exceeded"
_START_TIMEOUT_S = 120.0  # importing sympy on a loaded 2-core machine
# Imported when a worker starts, so that the first verification does not pay for them inside its budget.
_PRELOAD = ("agentgym.verifiers", "sympy", "math_verify", "rapidfuzz.fuzz")


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


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    try:
        value = int(raw) if raw else default
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}.") from None
    if value < 1:
        raise ConfigError(f"{name} must be >= 1, got {value}.")
    return value


class _Worker:
    """One verifier process and the two pipes to it."""

    def __init__(self, memory_mb: int) -> None:
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
    """Verifier workers shared by every thread of this process; started on first use, at most ``size``."""

    def __init__(self) -> None:
        self._idle: list[_Worker] = []
        self._busy = 0
        self._lock = threading.Condition()
        self._pid = os.getpid()

    def _acquire(self, size: int, memory_mb: int) -> _Worker:
        with self._lock:
            if self._pid != os.getpid():  # a forked child does not share its parent's workers
                self._idle, self._busy, self._pid = [], 0, os.getpid()
            while not self._idle and self._busy >= size:
                self._lock.wait()
            self._busy += 1
            if self._idle:
                return self._idle.pop()
        try:
            return _Worker(memory_mb)
        except BaseException:
            self._release(None)
            raise

    def _release(self, worker: _Worker | None) -> None:
        with self._lock:
            self._busy -= 1
            if worker is not None:
                self._idle.append(worker)
            self._lock.notify()

    def run(self, request: tuple[Any, ...], seconds: float) -> tuple[str, Any] | None:
        worker = self._acquire(_int_env("AGENTGYM_VERIFIER_WORKERS", min(4, os.cpu_count() or 1)),
                               _int_env("AGENTGYM_VERIFIER_MEMORY_MB", DEFAULT_MEMORY_MB))
        try:
            reply = worker.call(request, seconds)
        except (EOFError, OSError):
            reply = ("crashed", None)
        except BaseException:  # interrupted while waiting: the worker's state is unknown
            worker.kill()
            self._release(None)
            raise
        if reply is None or reply[0] == "crashed":
            worker.kill()
            self._release(None)
            if reply is not None:
                reply = ("crashed", worker.process.returncode)
        else:
            self._release(worker)
        return reply

    def shutdown(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


_POOL = _Pool()
atexit.register(_POOL.shutdown)


def shutdown_workers() -> None:
    """Stop the idle verifier workers (new ones start on the next verification)."""
    _POOL.shutdown()


def run_budgeted(func: Callable[..., Score], *args: Any, budget_s: float | None = None, verifier: str = "",
                 **kwargs: Any) -> Score:
    """``func(*args, **kwargs)`` in a verifier worker, within ``budget_s`` seconds (see ``budget_seconds``).

    ``func`` is a module-level function returning a ``Score``; its arguments must
    pickle. Exceptions it raises (a ``VerifierError`` for bad gold data) are
    raised here. Over budget, out of memory or crashed, the verdict is a failed
    ``Score`` that says so in ``details``.
    """
    seconds = budget_seconds(budget_s)
    if seconds is None:
        return func(*args, **kwargs)
    name = verifier or func.__name__
    start = time.perf_counter()
    reply = _POOL.run((func.__module__, func.__qualname__, args, kwargs, seconds), seconds)
    elapsed = round(time.perf_counter() - start, 3)
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
    replies.send(("ready", None))
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
