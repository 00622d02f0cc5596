"""Host side of the fork-server backends: start the supervisor, send it calls, restart it if it dies.

The supervisor (``_zygote.py``) is one long-lived process per sandbox. A call
costs a fork inside it instead of an interpreter start, which is why the
``bwrap`` backend runs close to (or faster than) a bare ``python -c``.
"""

from __future__ import annotations

import json
import os
import select
import struct
import subprocess
import sys
import threading
import time
from abc import abstractmethod
from importlib import resources
from typing import Any

from agentgym.errors import SandboxError
from agentgym.sandbox.base import Isolation, Limits, Program, Result, Sandbox

__all__ = ["ZygoteSandbox"]

_ZYGOTE_SOURCE = (resources.files("agentgym.sandbox") / "_zygote.py").read_text(encoding="utf-8")
_START_TIMEOUT_S = 60.0
_REPLY_MARGIN_S = 10.0


def zygote_argv(python: str, config: dict[str, Any]) -> list[str]:
    """The command line that starts the supervisor with ``config``."""
    return [python, "-I", "-c", _ZYGOTE_SOURCE, json.dumps(config)]


class ZygoteSandbox(Sandbox):
    """A sandbox whose calls fork from one warm supervisor process (started lazily, restarted on death)."""

    def __init__(self, *, limits: Limits | None = None, isolation: Isolation = "episode",
                 preload: tuple[str, ...] = ()) -> None:
        super().__init__(limits=limits, isolation=isolation)
        self.preload = tuple(preload)
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._dirty = False
        self.starts = 0

    @abstractmethod
    def _command(self) -> list[str]:
        """The argv that starts the supervisor (inside the isolation, if any)."""

    def _base_env(self) -> dict[str, str]:
        return {"PATH": f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin", "HOME": "/work",
                "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONUNBUFFERED": "1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg", "TMPDIR": "/tmp"}

    def _nproc_base(self) -> int:
        return 0

    def _start(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(self._command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self._base_env(), close_fds=True)
        try:
            ready = self._recv(proc, time.monotonic() + _START_TIMEOUT_S)
        except SandboxError:
            proc.kill()
            proc.wait()
            detail = proc.stderr.read().decode("utf-8", "replace")[-2000:] if proc.stderr else ""
            raise SandboxError(f"The {self.backend} sandbox failed to start: {detail.strip() or 'no output'}. "
                               f"{self._start_hint()}") from None
        if not ready.get("ready"):
            raise SandboxError(f"The {self.backend} sandbox sent an unexpected greeting: {ready!r}.")
        self.starts += 1
        self.preloaded = tuple(ready.get("preloaded", ()))
        return proc

    def _start_hint(self) -> str:
        return ""

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = self._start()
            self._dirty = False
        return self._proc

    def _run(self, program: Program, limits: Limits, env: dict[str, str]) -> Result:
        request = {"op": "run", "code": program.code, "argv": list(program.argv), "files": dict(program.files),
                   "stdin": program.stdin, "code_name": program.code_name, "env": {**self._base_env(), **env},
                   "timeout_s": limits.timeout_s, "cpu_s": limits.effective_cpu_s, "memory_mb": limits.memory_mb,
                   "max_processes": limits.max_processes, "nproc_base": self._nproc_base(),
                   "file_size_mb": limits.file_size_mb, "open_files": limits.open_files,
                   "max_output_bytes": limits.max_output_bytes}
        with self._lock:
            proc = self._ensure()
            deadline = time.monotonic() + limits.timeout_s + _REPLY_MARGIN_S
            try:
                self._send(proc, request)
                reply = self._recv(proc, deadline)
                self._dirty = True
                if self.isolation == "call":
                    self._wipe(proc)
            except SandboxError:
                self._kill()
                raise
        return Result(backend=self.backend, **reply)

    def _wipe(self, proc: subprocess.Popen[bytes]) -> None:
        self._send(proc, {"op": "wipe"})
        self._recv(proc, time.monotonic() + _REPLY_MARGIN_S)
        self._dirty = False

    def reset(self) -> None:
        """Forget the files of earlier calls; the warm supervisor is kept."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None or not self._dirty:
                return
            try:
                self._wipe(self._proc)
            except SandboxError:
                self._kill()

    def close(self) -> None:
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            self._kill()

    def _kill(self) -> None:
        proc, self._proc = getattr(self, "_proc", None), None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()

    @staticmethod
    def _send(proc: subprocess.Popen[bytes], obj: dict[str, Any]) -> None:
        body = json.dumps(obj).encode()
        try:
            assert proc.stdin is not None
            proc.stdin.write(struct.pack(">I", len(body)) + body)
            proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise SandboxError(f"The sandbox process is gone ({e}); it will be restarted on the next call.") from e

    @staticmethod
    def _recv(proc: subprocess.Popen[bytes], deadline: float) -> dict[str, Any]:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        data = bytearray()
        need = 4
        size = None
        while len(data) < need:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SandboxError("The sandbox did not answer in time; it was restarted.")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, need - len(data))
            if not chunk:
                detail = ""
                if proc.stderr is not None and proc.poll() is not None:
                    detail = proc.stderr.read().decode("utf-8", "replace").strip()[-1500:]
                raise SandboxError("The sandbox process died during the call; it will be restarted."
                                   + (f" Its last words: {detail}" if detail else ""))
            data += chunk
            if size is None and len(data) >= 4:
                (size,) = struct.unpack(">I", bytes(data[:4]))
                need = 4 + size
        return json.loads(bytes(data[4:need]))
