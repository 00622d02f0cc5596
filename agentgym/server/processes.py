"""``agentgym serve --processes N``: N server processes behind one address, and the parent that keeps them.

Each process binds the address itself with SO_REUSEPORT, so the kernel spreads new
connections over them, and holds its own sessions on its own env worker threads;
``affinity.py`` passes a request on to the process holding its session. The parent
listens on nothing: it starts the processes (forked, so what the parent registered,
e.g. a preloaded env module, is registered in each), watches them, and

- when one dies (killed, crashed): records the death (``siblings.record_death``: the
  others then answer its sessions 410 ``session_lost``), frees its share of the shared
  capacity, says so on stderr, and starts a replacement of the next generation (at
  once; after 1, 2, 4 ... 30 s while replacements keep dying within 10 s of starting);
- on Ctrl-C or SIGTERM: stops every process (SIGTERM; each closes its sessions as a
  single-process server does) and reaps it, SIGKILL after 30 s. Each process also gets
  SIGTERM should the parent itself die (Linux's parent-death signal): none outlives it.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError
from agentgym.server.siblings import MAX_PROCESSES, ProcessSlot, SharedCapacity, next_generation, record_death

__all__ = ["check_processes", "reuse_port_socket", "serve_processes"]

_QUICK_DEATH_S = 10.0  # a replacement dying sooner than this is restarted after a growing pause
_MAX_PAUSE_S = 30.0
_STOP_GRACE_S = 30.0  # for a process to close its sessions on shutdown, before SIGKILL
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def check_processes(processes: int) -> None:
    """A ConfigError for a process count this machine cannot serve with."""
    if not 1 <= processes <= MAX_PROCESSES:
        raise ConfigError(f"--processes must be between 1 and {MAX_PROCESSES}, got {processes}.")
    if processes > 1 and not sys.platform.startswith("linux"):
        raise ConfigError("--processes N > 1 needs Linux (SO_REUSEPORT spreading connections over the processes); "
                          "run one server per port instead.")


def reuse_port_socket(family: int, address: Any) -> socket.socket:
    """A TCP socket bound to ``address`` with SO_REUSEPORT, which the processes' sockets share."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(address)
    return sock


@dataclass
class _Child:
    slot: ProcessSlot
    process: BaseProcess
    started: float


class _Stop(Exception):
    """Ctrl-C or SIGTERM reached the parent."""


def serve_processes(processes: int, *, held: socket.socket, env_ids: list[str],
                    serve_one: Callable[[ProcessSlot, list[socket.socket]], None],
                    say: Callable[[str], None]) -> None:
    """Run ``serve_one(slot, sockets)`` in ``processes`` child processes until Ctrl-C or SIGTERM.

    ``held``: a socket the parent bound (with SO_REUSEPORT, not listening) to the address;
    it keeps the port while processes come and go, and each process binds its own beside it.
    ``serve_one`` serves on a TCP socket of that address and the process's unix socket.
    """
    directory = Path(tempfile.mkdtemp(prefix="agentgym-serve-"))  # 0700: only this user reaches the sockets
    SharedCapacity.create(directory / "capacity", processes, env_ids)
    capacity = SharedCapacity(directory / "capacity", env_ids)
    children: dict[int, _Child] = {}
    context = multiprocessing.get_context("fork")
    parent = os.getpid()

    def start(slot: ProcessSlot) -> None:
        process = context.Process(target=_child, args=(slot, held, parent, serve_one),
                                  name=f"agentgym-serve-{slot.index}")
        process.start()
        children[slot.index] = _Child(slot, process, time.monotonic())

    previous = {s: signal.signal(s, _raise_stop) for s in _STOP_SIGNALS}
    try:
        for index in range(processes):
            start(ProcessSlot(index, 0, processes, directory))
        _watch(children, start, capacity, say)
    except _Stop:
        pass
    finally:
        for s in _STOP_SIGNALS:  # a second Ctrl-C reaches the processes (uvicorn then exits at once), not this
            signal.signal(s, signal.SIG_IGN)
        _stop_all([c.process for c in children.values()])
        shutil.rmtree(directory, ignore_errors=True)
        for s, handler in previous.items():
            signal.signal(s, handler)


def _watch(children: dict[int, _Child], start: Callable[[ProcessSlot], None], capacity: SharedCapacity,
           say: Callable[[str], None]) -> None:
    """Replace each process that dies, forever (until a signal raises ``_Stop``)."""
    due: dict[int, tuple[float, ProcessSlot]] = {}  # index -> when its replacement starts, and as what
    pauses: dict[int, float] = {}  # index -> pause before the next replacement, if the last died young
    while True:
        timeout = max(0.0, min(t for t, _ in due.values()) - time.monotonic()) if due else None
        alive = [c.process.sentinel for i, c in children.items() if i not in due]
        multiprocessing.connection.wait(alive, timeout)
        now = time.monotonic()
        for index, child in children.items():
            if index in due or child.process.exitcode is None:
                continue
            child.process.join()
            slot = child.slot
            reason = record_death(slot.directory, slot.index, slot.generation, child.process.pid or 0,
                                  child.process.exitcode)
            capacity.clear(slot.index)
            young = now - child.started < _QUICK_DEATH_S
            pause = pauses.get(index, 0.0) if young else 0.0
            pauses[index] = min(_MAX_PAUSE_S, max(1.0, 2 * pause)) if young else 0.0
            say(f"agentgym: server process {slot.index} (pid {child.process.pid}) {reason}; the sessions it held "
                f"are lost (their requests answer 410 session_lost). Starting a replacement"
                f"{f' in {pause:g} s' if pause else ''}.")
            due[index] = (now + pause, ProcessSlot(slot.index, next_generation(slot.generation), slot.count,
                                                   slot.directory))
        for index, (when, slot) in list(due.items()):
            if when <= now:
                del due[index]
                start(slot)


def _child(slot: ProcessSlot, held: socket.socket, parent: int,
           serve_one: Callable[[ProcessSlot, list[socket.socket]], None]) -> None:
    """One server process: its own sockets, then ``serve_one`` until it is stopped."""
    signal.signal(signal.SIGINT, signal.default_int_handler)  # not the parent's handlers, inherited by the fork
    signal.signal(signal.SIGTERM, _exit)  # uvicorn handles it while it serves, and raises it again when done
    _die_with_parent(parent)
    tcp = reuse_port_socket(held.family, held.getsockname())
    held.close()
    path = slot.socket_path()
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # the socket of the process this one replaces
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(path))
    try:
        with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl-C it shut down on
            serve_one(slot, [tcp, unix])
    finally:
        if os.getppid() != parent:  # stopped by the parent's death (SIGKILL?): nobody else removes the directory
            shutil.rmtree(slot.directory, ignore_errors=True)


def _exit(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)  # as a shell reports a death by that signal, with ``finally`` blocks run


def _die_with_parent(parent: int) -> None:
    """SIGTERM to this process when the parent dies, however it dies (Linux's PR_SET_PDEATHSIG)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before the call
        os._exit(0)


def _stop_all(processes: list[BaseProcess]) -> None:
    for process in processes:
        if process.exitcode is None:
            process.terminate()
    deadline = time.monotonic() + _STOP_GRACE_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.exitcode is None:
            process.kill()
            process.join()


def _raise_stop(signum: int, frame: Any) -> None:
    raise _Stop
