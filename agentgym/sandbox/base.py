"""What every sandbox backend takes and returns: ``Limits``, ``Result``, the ``Sandbox`` interface."""

from __future__ import annotations

import posixpath
import shlex
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from agentgym.errors import ConfigError

__all__ = ["WRITABLE_DIRS", "Limits", "Program", "Result", "Sandbox"]

Isolation = Literal["episode", "call"]
WRITABLE_DIRS = ("/work", "/tmp", "/dev/shm")  # a call's only writable places; tmpfs of disk_mb each (not local)


@dataclass(frozen=True)
class Limits:
    """Resource limits applied to every call. All of them always apply.

    ``memory_mb`` bounds a call on top of the interpreter it runs in (Python
    code) or in all (commands), twice: each process's address space, and the
    memory of all the call's processes together (proportional set size) plus the
    SysV shared memory and message queues it holds; past the total the call is
    stopped with ``oom`` set. ``disk_mb`` sizes each private writable directory
    (``/work``, ``/tmp``, ``/dev/shm``) and ``max_files`` caps the files and
    directories in each (default 256 per MB of ``disk_mb``: 16,384 at 64 MB; an
    inode costs the host about 1 KB of kernel memory); ``file_size_mb`` caps one file. ``max_output_bytes``
    caps stdout and stderr each; a call that writes more than 8x that is stopped.
    """

    timeout_s: float = 10.0
    cpu_s: float | None = None
    memory_mb: int = 1024
    max_processes: int = 64
    file_size_mb: int = 16
    disk_mb: int = 64
    max_files: int | None = None
    open_files: int = 256
    max_output_bytes: int = 64_000

    def __post_init__(self) -> None:
        if not 0 < self.timeout_s <= 3600:
            raise ConfigError(f"timeout_s must be in (0, 3600], got {self.timeout_s}.")
        if self.cpu_s is not None and self.cpu_s <= 0:
            raise ConfigError(f"cpu_s must be > 0 (or None for timeout_s), got {self.cpu_s}.")
        for name in ("memory_mb", "max_processes", "file_size_mb", "disk_mb", "open_files", "max_output_bytes"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if self.max_files is not None and self.max_files < 1:
            raise ConfigError(f"max_files must be >= 1 (or None for 256 per MB of disk_mb), got {self.max_files}.")
        if self.open_files < 16:
            raise ConfigError(f"open_files must be >= 16 (the interpreter needs a few), got {self.open_files}.")

    @property
    def effective_cpu_s(self) -> float:
        return self.cpu_s if self.cpu_s is not None else self.timeout_s + 1.0

    @property
    def effective_max_files(self) -> int:
        return self.max_files if self.max_files is not None else 256 * self.disk_mb

    @property
    def tmpfs_mb(self) -> int:
        """Memory the writable directories can pin between calls (``bwrap``, ``docker``): ``/work``, ``/tmp``
        and ``/dev/shm`` are each a tmpfs of ``disk_mb``.

        >>> Limits(disk_mb=512).tmpfs_mb
        1536
        """
        return len(WRITABLE_DIRS) * self.disk_mb

    def with_overrides(self, **overrides: Any) -> Limits:
        """These limits with the given fields replaced (``None`` values ignored)."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


@dataclass(frozen=True)
class Result:
    """What one sandboxed call did.

    ``exit_code`` is negative for a signal (``-9``: killed). ``timed_out`` covers
    the wall-clock and the CPU-time limits; ``oom`` means the program ran out of
    its memory limit; ``output_truncated`` that stdout or stderr was cut to the cap.
    """

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool = False
    oom: bool = False
    duration_s: float = 0.0
    output_truncated: bool = False
    output_limit_exceeded: bool = False
    backend: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def as_dict(self) -> dict[str, Any]:
        return {"stdout": self.stdout, "stderr": self.stderr, "exit_code": self.exit_code,
                "timed_out": self.timed_out, "oom": self.oom, "duration_s": self.duration_s,
                "output_truncated": self.output_truncated, "output_limit_exceeded": self.output_limit_exceeded,
                "backend": self.backend}


@dataclass(frozen=True)
class Program:
    """One call: Python ``code``, or ``files`` plus a command ``argv``, with ``stdin``."""

    code: str | None = None
    argv: tuple[str, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)
    stdin: str = ""
    code_name: str = "<code>"

    @classmethod
    def build(cls, code: str | None, cmd: str | Sequence[str] | None, files: Mapping[str, str] | None,
              stdin: str | None, code_name: str = "<code>") -> Program:
        """Validate a ``run`` call's arguments into a ``Program``."""
        if code is None and cmd is None:
            raise ConfigError("Give the sandbox Python `code` to run, or a `cmd` (with `files`).")
        if code is not None and cmd is not None:
            raise ConfigError("Give either `code` or `cmd`, not both: put the code in `files` and run it with `cmd`.")
        if code is not None and not isinstance(code, str):
            raise ConfigError(f"`code` must be a string, got {type(code).__name__}.")
        argv: tuple[str, ...] = ()
        if cmd is not None:
            argv = tuple(shlex.split(cmd)) if isinstance(cmd, str) else tuple(str(a) for a in cmd)
            if not argv:
                raise ConfigError("`cmd` is empty.")
        checked: dict[str, str] = {}
        for path, content in (files or {}).items():
            norm = posixpath.normpath(str(path))
            if norm.startswith(("/", "..")) or norm in (".", ""):
                raise ConfigError(f"File path {path!r} must be relative and stay inside the working directory.")
            if not isinstance(content, str):
                raise ConfigError(f"File {path!r}: content must be a string, got {type(content).__name__}.")
            checked[norm] = content
        return cls(code=code, argv=argv, files=checked, stdin=stdin or "", code_name=code_name)


class Sandbox(ABC):
    """Runs untrusted programs in isolation. One call at a time per instance.

    ``isolation="episode"`` keeps ``/work``, ``/tmp`` and ``/dev/shm`` across calls
    until ``reset()``; ``"call"`` wipes them after every call. No process and no
    IPC object (SysV, POSIX message queue) outlives a call.
    Use it as a context manager or call ``close()``.
    """

    backend: str = ""

    def __init__(self, *, limits: Limits | None = None, isolation: Isolation = "episode") -> None:
        if isolation not in ("episode", "call"):
            raise ConfigError(f"isolation must be 'episode' or 'call', got {isolation!r}.")
        self.limits = limits or Limits()
        self.isolation = isolation

    def run(self, code: str | None = None, *, cmd: str | Sequence[str] | None = None,
            files: Mapping[str, str] | None = None, stdin: str | None = None, timeout_s: float | None = None,
            memory_mb: int | None = None, env: Mapping[str, str] | None = None,
            code_name: str = "<code>") -> Result:
        """Run Python ``code`` (in the sandbox's interpreter) or ``cmd`` after writing ``files``.

        ``cmd`` is an argv list or a shell-style string (split, not run by a shell);
        ``python``/``python3`` is the sandbox's interpreter. The program starts in
        ``/work``, where ``files`` are written.
        """
        program = Program.build(code, cmd, files, stdin, code_name)
        limits = self.limits.with_overrides(timeout_s=timeout_s, memory_mb=memory_mb)
        return self._run(program, limits, dict(env or {}))

    @abstractmethod
    def _run(self, program: Program, limits: Limits, env: dict[str, str]) -> Result:
        """Run one validated program under ``limits``."""

    def reset(self) -> None:
        """Forget the files of earlier calls (a new episode)."""

    def close(self) -> None:
        """Release the sandbox's processes and containers."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown may have torn down what close() needs
            pass
