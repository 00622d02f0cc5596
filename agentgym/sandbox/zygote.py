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
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any

from agentgym.errors import SandboxError
from agentgym.sandbox.base import Isolation, Limits, Program, Result, Sandbox

__all__ = ["Channel", "ProcessChannel", "ZygoteSandbox", "zygote_argv"]

_ZYGOTE_SOURCE = (resources.files("agentgym.sandbox") / "_zygote.py").read_text(encoding="utf-8")
_START_TIMEOUT_S = 60.0
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentgym-sandbox-spawner")
_REPLY_MARGIN_S = 10.0
_LAST_WORDS_S = 5.0  # how long a supervisor that closed its stdout may take to exit and finish its stderr


def zygote_argv(python: str, config: dict[str, Any]) -> list[str]:
    """The command line that starts the supervisor with ``config``."""
    return [python, "-I", "-c", _ZYGOTE_SOURCE, json.dumps(config)]


class Channel(ABC):
    """A byte pipe to a supervisor: what it is connected through (a process, a container's stdio)."""

    @abstractmethod
    def write(self, data: bytes) -> None:
        """Send bytes; raise ``OSError`` if the other end is gone."""

    @abstractmethod
    def read(self, n: int, timeout_s: float) -> bytes | None:
        """Up to ``n`` bytes; ``None`` when nothing came in ``timeout_s``; ``b""`` at EOF."""

    @abstractmethod
    def alive(self) -> bool:
        """Whether the supervisor still runs."""

    @abstractmethod
    def close(self) -> None:
        """Stop the supervisor and release the channel."""

    def last_words(self) -> str:
        """What the supervisor wrote on stderr, for error messages (after it died)."""
        return ""


class ProcessChannel(Channel):
    """A supervisor that is a child process, spoken to on its stdin and stdout."""

    def __init__(self, argv: list[str], env: dict[str, str], *, executable: str | None = None,
                 pass_fds: tuple[int, ...] = ()) -> None:
        self._words: str | None = None
        try:
            # Spawned from one long-lived thread: bwrap's --die-with-parent fires when the *thread*
            # that started it ends, and envs run in short-lived worker threads. In a session of its own:
            # a Ctrl-C in the terminal signals the whole foreground process group, and must reach the
            # caller (which lets running episodes finish), never the sandbox mid-call. The supervisor
            # still ends with the caller: it exits when its stdin closes.
            self.proc = _SPAWNER.submit(subprocess.Popen, argv, executable=executable, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, close_fds=True,
                                        pass_fds=pass_fds, start_new_session=True).result()
        except OSError as e:
            raise SandboxError(f"Could not start the sandbox ({executable or argv[0]}): {e}") from e

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read(self, n: int, timeout_s: float) -> bytes | None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], max(0.0, timeout_s))
        return os.read(fd, n) if ready else None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:  # a write the dead process never read is still buffered: the pipe is closed anyway
                    pass

    def last_words(self) -> str:
        """Its stderr to the end, once it has exited. Asked when its stdout closed: the process may not have
        exited yet, nor written its last line (bubblewrap's reason), so wait for both, briefly."""
        if self._words is not None:
            return self._words
        if self.proc.stderr is None:
            return ""
        try:
            self.proc.wait(timeout=_LAST_WORDS_S)
        except subprocess.TimeoutExpired:
            return ""  # still running: it has nothing last to say yet
        fd = self.proc.stderr.fileno()
        words = bytearray()
        deadline = time.monotonic() + _LAST_WORDS_S
        while (remaining := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([fd], [], [], remaining)
            chunk = os.read(fd, 65536) if ready else b""
            if not chunk:
                break  # EOF (or a process it left holds the pipe past the deadline)
            words += chunk
        self._words = words.decode("utf-8", "replace").strip()[-1500:]
        return self._words


class ZygoteSandbox(Sandbox):
    """A sandbox whose calls fork from one warm supervisor process (started lazily, restarted on death)."""

    def __init__(self, *, limits: Limits | None = None, isolation: Isolation = "episode",
                 preload: tuple[str, ...] = ()) -> None:
        super().__init__(limits=limits, isolation=isolation)
        self.preload = tuple(preload)
        self.preloaded: tuple[str, ...] = ()
        self._channel: Channel | None = None
        self._lock = threading.Lock()
        self._dirty = False
        self._nproc = 0
        self.starts = 0

    @abstractmethod
    def _open(self) -> Channel:
        """Start the supervisor (inside the isolation, if any) and connect to it."""

    def _base_env(self) -> dict[str, str]:
        return {"PATH": f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin", "HOME": "/work",
                "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONUNBUFFERED": "1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg", "TMPDIR": "/tmp"}

    def _nproc_base(self) -> int:
        return 0

    def _start(self) -> Channel:
        channel = self._open()
        try:
            ready = self._recv(channel, time.monotonic() + _START_TIMEOUT_S)
        except SandboxError as e:
            words = channel.last_words()  # before close(), which closes the stream it reads
            channel.close()
            raise SandboxError(f"The {self.backend} sandbox failed to start: {words or e}. "
                               f"{self._start_hint()}") from None
        if not ready.get("ready"):
            channel.close()
            raise SandboxError(f"The {self.backend} sandbox sent an unexpected greeting: {ready!r}.")
        self.starts += 1
        self._nproc = self._nproc_base()  # once per start: it scans /proc when not root
        self.preloaded = tuple(ready.get("preloaded", ()))
        return channel

    def _start_hint(self) -> str:
        return ""

    def _ensure(self) -> Channel:
        if self._channel is None or not self._channel.alive():
            if self._channel is not None:
                self._channel.close()
            self._channel = self._start()
            self._dirty = False
        return self._channel

    def _run(self, program: Program, limits: Limits, env: dict[str, str]) -> Result:
        stdin = program.stdin.encode("utf-8", "surrogateescape")
        request = {"op": "run", "code": program.code, "argv": list(program.argv), "files": dict(program.files),
                   "stdin_size": len(stdin), "code_name": program.code_name, "env": {**self._base_env(), **env},
                   "timeout_s": limits.timeout_s, "cpu_s": limits.effective_cpu_s, "memory_mb": limits.memory_mb,
                   "max_processes": limits.max_processes, "nproc_base": self._nproc,
                   "file_size_mb": limits.file_size_mb, "open_files": limits.open_files,
                   "max_output_bytes": limits.max_output_bytes}
        with self._lock:
            channel = self._ensure()
            deadline = time.monotonic() + limits.timeout_s + _REPLY_MARGIN_S
            try:
                self._send(channel, request, stdin)
                reply = self._recv(channel, deadline)
            except SandboxError:
                self._kill()
                raise
            self._dirty = True
            # The call is over and its result in hand: a sandbox that cannot be made clean again is replaced
            # (the next call starts a fresh one), and the call still returns its result.
            if reply.pop("replace", None):
                self._kill()
            elif self.isolation == "call":
                try:
                    self._wipe(channel)
                except SandboxError:
                    self._kill()
        return Result(backend=self.backend, **reply)

    def _wipe(self, channel: Channel) -> None:
        """Empty the writable directories; ``SandboxError`` if the supervisor could not."""
        self._send(channel, {"op": "wipe"})
        reply = self._recv(channel, time.monotonic() + _REPLY_MARGIN_S)
        if not reply.get("ok"):
            raise SandboxError(f"The sandbox could not empty its writable directories: {reply.get('error')}")
        self._dirty = False

    def reset(self) -> None:
        """Forget the files of earlier calls; the warm supervisor is kept."""
        with self._lock:
            if self._channel is None or not self._channel.alive() or not self._dirty:
                return
            try:
                self._wipe(self._channel)
            except SandboxError:
                self._kill()

    def close(self) -> None:
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            self._kill()

    def _kill(self) -> None:
        channel, self._channel = getattr(self, "_channel", None), None
        if channel is not None:
            channel.close()

    @staticmethod
    def _send(channel: Channel, obj: dict[str, Any], payload: bytes = b"") -> None:
        """A framed JSON request, then ``payload`` raw (its size is in the request)."""
        body = json.dumps(obj).encode()
        try:
            channel.write(struct.pack(">I", len(body)) + body + payload)
        except OSError as e:
            raise SandboxError(f"The sandbox process is gone ({e}); it will be restarted on the next call.") from e

    @staticmethod
    def _recv(channel: Channel, deadline: float) -> dict[str, Any]:
        data = bytearray()
        need = 4
        size = None
        while len(data) < need:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SandboxError("The sandbox did not answer in time; it was restarted.")
            chunk = channel.read(need - len(data), remaining)
            if chunk is None:
                continue
            if not chunk:
                words = channel.last_words()
                raise SandboxError("The sandbox process died during the call; it will be restarted."
                                   + (f" Its last words: {words}" if words else ""))
            data += chunk
            if size is None and len(data) >= 4:
                (size,) = struct.unpack(">I", bytes(data[:4]))
                need = 4 + size
        return json.loads(bytes(data[4:need]))
