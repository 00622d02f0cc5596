"""What an open session of each env holds on its host, and the per-env session limits that follow from it.

Most sessions are a few KB of Python objects. Some hold processes and memory of their
own; each of those envs gets a per-env limit on a host (one ``agentgym serve``, or one
node of a Ray pool), by default the share of the host's memory its sessions may fill
at their worst:

    limit = (MEMORY_SHARE x host memory / costly envs served) // memory_mb of one session

Host memory is the smaller of physical memory and the cgroup's limit (a container's).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agentgym.sandbox.base import WRITABLE_DIRS, Limits
from agentgym.sandbox.bwrap import IDLE_MB, IDLE_PROCESSES

__all__ = ["MEMORY_SHARE", "SESSION_COSTS", "SWE_DISK_MB", "SWE_SANDBOXES", "SessionCost", "default_env_limits",
           "host_memory_mb"]


@dataclass(frozen=True)
class SessionCost:
    """What one open session holds at its worst, besides its Python objects."""

    memory_mb: int  # resident memory of its processes plus the tmpfs it may fill
    processes: int
    holds: str  # the message's words for it


# A SWEBench session keeps two bwrap sandboxes from one episode to the next: the working copy's and the
# grader's checkout (agentgym.envs.swe: a Workspace each, Limits(disk_mb=512)). Between calls each can pin
# its three writable tmpfs full (Limits.tmpfs_mb) and its idle processes (bwrap.IDLE_MB);
# tests/sandbox/test_attacks.py checks both numbers against a real session. A call in flight adds up to
# its memory_mb (2,048 MB) for its duration: those are bounded by the server's workers, not by sessions.
SWE_SANDBOXES = 2
SWE_DISK_MB = 512
_SWE_SANDBOX_MB = Limits(disk_mb=SWE_DISK_MB).tmpfs_mb + IDLE_MB

# WebShopBrowser measured on agentgym serve (process-tree RSS per session over 3-4 sessions, reset once).
# PyCode and MathTool are not here: their sessions borrow one process-wide pool of
# sandboxes (CPU count of them) per call and hold none of their own (measured: 0 MB, 0 processes).
SESSION_COSTS: dict[str, SessionCost] = {
    "agentgym/SWEBench-v0": SessionCost(
        memory_mb=SWE_SANDBOXES * _SWE_SANDBOX_MB, processes=SWE_SANDBOXES * IDLE_PROCESSES,
        holds=f"two sandboxes (working copy, grader): {SWE_SANDBOXES * IDLE_PROCESSES} processes "
              f"(~{SWE_SANDBOXES * IDLE_MB} MB) and {SWE_SANDBOXES * len(WRITABLE_DIRS)} tmpfs of {SWE_DISK_MB} MB"),
    "agentgym/WebShopBrowser-v0": SessionCost(
        memory_mb=320, processes=2, holds="a Chromium context and page (~320 MB, 2 processes)"),
}

MEMORY_SHARE = 0.5  # of host memory, for the sessions of costly envs; the rest: the server, the OS, the clients


def host_memory_mb() -> int:
    """Physical memory, or the cgroup's memory limit where that is smaller."""
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            physical = min(physical, int(text))
        break
    return physical >> 20


def default_env_limits(env_ids: Iterable[str], *, memory_mb: int | None = None) -> dict[str, int]:
    """The per-env session limits of the costly envs among ``env_ids``, from ``memory_mb`` (default: the host's)."""
    costly = sorted(e for e in set(env_ids) if e in SESSION_COSTS)
    if not costly:
        return {}
    budget_mb = MEMORY_SHARE * (host_memory_mb() if memory_mb is None else memory_mb) / len(costly)
    return {e: max(1, int(budget_mb // SESSION_COSTS[e].memory_mb)) for e in costly}
