"""Isolated execution of untrusted code. No env logic lives here.

    >>> from agentgym.sandbox import make_sandbox
    >>> with make_sandbox("bwrap") as sandbox:              # doctest: +SKIP
    ...     sandbox.run("print(6 * 7)").stdout
    '42\\n'

Backends: ``bwrap`` (default; Linux namespaces + rlimits + an unprivileged uid,
calls forked from a warm supervisor), ``docker`` (one container per sandbox,
``network_mode="none"``, memory/CPU/pids limits) and ``local`` (no isolation;
explicit opt-in). Untrusted code never runs in the calling process.

On ``bwrap`` and ``docker`` nothing of a call outlives it but the files it left
in ``/work``, ``/tmp`` and ``/dev/shm`` (kept until ``reset()`` with
``isolation="episode"``, wiped after the call with ``"call"``): its processes are
killed and its SysV shared memory, semaphores and message queues and its POSIX message queues removed. Every
call runs under a seccomp filter (``seccomp.py``) that denies the kernel keyring
and new namespaces, and under ``Limits``: time, CPU, memory per process and in
total (shared memory included), processes, file size, disk and inodes per
writable directory, open files, output.
"""

from __future__ import annotations

from typing import Any

from agentgym.errors import ConfigError
from agentgym.sandbox.base import Limits, Program, Result, Sandbox

__all__ = ["BACKENDS", "Limits", "Program", "Result", "Sandbox", "make_sandbox", "run"]

BACKENDS = ("bwrap", "docker", "local")


def make_sandbox(backend: str = "bwrap", **kwargs: Any) -> Sandbox:
    """A sandbox of the named backend; ``kwargs`` go to its class (``limits``, ``isolation``, ...)."""
    if backend == "bwrap":
        from agentgym.sandbox.bwrap import BwrapSandbox

        return BwrapSandbox(**kwargs)
    if backend == "docker":
        from agentgym.sandbox.docker import DockerSandbox

        return DockerSandbox(**kwargs)
    if backend == "local":
        from agentgym.sandbox.local import LocalSandbox

        return LocalSandbox(**kwargs)
    raise ConfigError(f"Unknown sandbox backend {backend!r}; choose one of {', '.join(BACKENDS)}.")


def run(code: str | None = None, *, backend: str = "bwrap", limits: Limits | None = None, **kwargs: Any) -> Result:
    """Run one program in a fresh sandbox of ``backend`` and close it (see ``Sandbox.run``)."""
    with make_sandbox(backend, limits=limits) as sandbox:
        return sandbox.run(code, **kwargs)
