"""What the processes of one ``agentgym serve --processes N`` share: which process owns a session, which died, capacity.

Each process has an index (0..N-1) and a generation (0, then one more for each
replacement the parent starts after a death, modulo 256). Every id names its owner,
so any process can pass a request on to the process holding its session, and an id
of a dead generation is told apart from one that never existed:

    session id  "<index>.<generation>.<secret>"                        e.g. "1.0.kq3VbH..."
    compat id   <secret> << 16 | <generation> << 8 | <index>           AgentGym clients' int ids

The processes share one private directory (mode 0700), made by the parent:

    <index>.sock                     each process's unix socket (requests passed on, /healthz and /metrics gathered)
    lost-<index>.<generation>.json   written by the parent when that process died: its pid, how it ended, when
    capacity                         one row per process: its open (and being created) sessions of each env
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import secrets
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgym.server.api_error import ApiError

__all__ = ["MAX_PROCESSES", "ProcessSlot", "SharedCapacity", "owner_of", "record_death"]

MAX_PROCESSES = 256  # an index is one byte of a compat id
_GENERATIONS = 256  # so is a generation: after 256 replacements of one process, an old id reads as unknown (404)


def owner_of(session_id: str | int) -> tuple[int, int] | None:
    """The (index, generation) a session id or compat id names, or None for an id no process made."""
    if isinstance(session_id, int):
        return (session_id & 0xFF, (session_id >> 8) & 0xFF) if session_id > 0 else None
    index, _, rest = session_id.partition(".")
    generation, _, secret = rest.partition(".")
    if not (index.isdigit() and generation.isdigit() and secret) or len(index) > 3 or len(generation) > 3:
        return None
    return int(index), int(generation)


@dataclass(frozen=True)
class ProcessSlot:
    """One server process among its siblings: where it is, and the ids it hands out."""

    index: int
    generation: int
    count: int  # processes in all
    directory: Path

    def socket_path(self, index: int | None = None) -> Path:
        return self.directory / f"{self.index if index is None else index}.sock"

    def new_session_id(self) -> str:
        return f"{self.index}.{self.generation}.{secrets.token_urlsafe(12)}"

    def new_compat_id(self, taken: dict[int, Any]) -> int:
        """A random int id in [1, 2**63) naming this process; 47 bits of it are the secret."""
        while True:
            compat_id = secrets.randbits(47) << 16 | self.generation << 8 | self.index
            if compat_id and compat_id not in taken:
                return compat_id

    def lost(self, session_id: str | int) -> ApiError | None:
        """Why this process does not know ``session_id``, where the reason is that its owner died; else None."""
        owner = owner_of(session_id)
        if owner is None or owner == (self.index, self.generation):
            return None
        return lost_error(self.directory, session_id, owner)


def lost_error(directory: Path, session_id: str | int, owner: tuple[int, int]) -> ApiError | None:
    """410 ``session_lost`` naming the dead process that held ``session_id``, if the parent recorded its death."""
    try:
        record = json.loads((directory / f"lost-{owner[0]}.{owner[1]}.json").read_text())
    except (OSError, ValueError):
        return None
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(record["at"]))
    return ApiError(410, "session_lost", f"Session {session_id!r} was held by server process {owner[0]} (pid "
                                         f"{record['pid']}), which {record['reason']} at {when}; the sessions it "
                                         "held are lost. Create a new session.")


def record_death(directory: Path, index: int, generation: int, pid: int, exitcode: int | None) -> str:
    """Write the death record of a process (what ``lost_error`` reads) and return how it ended, in words."""
    if exitcode is not None and exitcode < 0:
        reason = f"was killed by {signal.Signals(-exitcode).name}"
    elif exitcode == 128 + signal.SIGTERM:  # how a process exits on SIGTERM (processes._exit)
        reason = "was stopped by SIGTERM"
    else:
        reason = f"exited with status {exitcode}"
    path = directory / f"lost-{index}.{generation}.json"
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps({"pid": pid, "reason": reason, "at": time.time()}))
    partial.replace(path)  # readers see the whole record or none
    return reason


def next_generation(generation: int) -> int:
    return (generation + 1) % _GENERATIONS


class SharedCapacity:
    """The sessions all processes hold, counted in a shared file of int64 counters, one row per process.

    A process changes only its own row, and checks the totals and takes a slot under one
    exclusive ``flock``: the check and the take are atomic across processes, and the lock
    of a process that dies is released by the kernel with it. The parent zeroes a dead
    process's row (its sessions died with it).
    """

    def __init__(self, path: Path, env_ids: list[str], index: int | None = None) -> None:
        import fcntl  # Unix only, as --processes is: importing this module must not need it

        self._flock, self._lock_ex, self._lock_un = fcntl.flock, fcntl.LOCK_EX, fcntl.LOCK_UN
        self.index, self.columns = index, {env_id: i for i, env_id in enumerate(env_ids)}
        self._fd = os.open(path, os.O_RDWR)  # an open file description of its own: flock excludes the others'
        self._counts = memoryview(mmap.mmap(self._fd, 0)).cast("q")
        self._width = len(env_ids)

    @staticmethod
    def create(path: Path, processes: int, env_ids: list[str]) -> None:
        path.write_bytes(bytes(8 * processes * len(env_ids)))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self._flock(self._fd, self._lock_ex)  # held for microseconds: a few loads and a store
        try:
            yield
        finally:
            self._flock(self._fd, self._lock_un)

    def _used(self) -> tuple[int, list[int]]:
        per_env = [sum(self._counts[row + col] for row in range(0, len(self._counts), self._width))
                   for col in range(self._width)]
        return sum(per_env), per_env

    def used(self) -> tuple[int, dict[str, int]]:
        """Sessions held (open or being created) by all processes: in all, and per env."""
        with self._locked():
            total, per_env = self._used()
        return total, {env_id: per_env[col] for env_id, col in self.columns.items()}

    def reserve(self, env_id: str, max_sessions: int, limit: int | None) -> str | None:
        """Take a slot for a session of ``env_id`` in this process's row; or say which limit is full: "server"
        (``max_sessions``, all envs) or "env" (``limit``, this env's)."""
        col = self.columns[env_id]
        with self._locked():
            total, per_env = self._used()
            if total >= max_sessions:
                return "server"
            if limit is not None and per_env[col] >= limit:
                return "env"
            self._counts[self.index * self._width + col] += 1
        return None

    def release(self, env_id: str) -> None:
        with self._locked():
            self._counts[self.index * self._width + self.columns[env_id]] -= 1

    def clear(self, index: int) -> None:
        """Zero the row of process ``index`` (the parent's part, when that process died)."""
        with self._locked():
            for col in range(self._width):
                self._counts[index * self._width + col] = 0
