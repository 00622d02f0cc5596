"""The ``docker`` backend: one container per sandbox, driven through the Docker SDK.

The container runs the same supervisor as the ``bwrap`` backend as its main
process, with ``network_mode="none"``, a read-only root filesystem, tmpfs
``/work``, ``/tmp`` and ``/dev/shm`` capped in size and inodes, memory, CPU and
pids limits, ``init=True`` and every capability dropped but the few the
supervisor needs to drop to a per-sandbox uid for each call. As on ``bwrap``,
each call runs under the seccomp filter of ``seccomp.py`` (on top of Docker's
own profile), its total memory is watched, and its SysV IPC objects and POSIX
message queues (Docker mounts ``/dev/mqueue``) are removed after it. The image needs ``python3``; pick it with
``image=`` or ``$AGENTGYM_SANDBOX_IMAGE`` (default ``python:3.11-slim``).

``writable=("/testbed",)`` is for images that carry their own working tree (a
SWE-bench instance image keeps the repository at ``/testbed``): the root file
system becomes the container's own writable layer (thrown away with it) and those
paths are handed to the call uid before the first call, so calls still run
unprivileged and can change nothing else the image owns.
"""

from __future__ import annotations

import itertools
import os
import select
import socket
import struct
from typing import Any

from agentgym.errors import DependencyNotInstalled, SandboxError
from agentgym.sandbox.base import Isolation, Limits
from agentgym.sandbox.seccomp import call_filter
from agentgym.sandbox.zygote import Channel, ZygoteSandbox, zygote_argv

__all__ = ["DockerSandbox"]

_UID_BASE = 170_000
_uid_counter = itertools.count()
_CAPS = ["SETUID", "SETGID", "SETPCAP", "KILL", "CHOWN", "FOWNER", "DAC_OVERRIDE"]
_SUPERVISOR_MB = 256  # the supervisor's own interpreter, on top of the per-call memory limit


class _DockerChannel(Channel):
    """The supervisor as a container's main process, over its attached stdin/stdout stream.

    Docker multiplexes a non-TTY stream: each chunk has an 8-byte header (stream
    id, 3 zero bytes, big-endian length). stdout chunks are the protocol; stderr
    chunks are kept for error messages.
    """

    def __init__(self, container: Any, sock: socket.socket) -> None:
        self.container = container
        self.sock = sock
        self.buffer = bytearray()
        self.raw = bytearray()
        self.stderr = bytearray()
        self.eof = False

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _pump(self, timeout_s: float) -> bool:
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout_s))
        if not ready:
            return False
        chunk = self.sock.recv(65536)
        if not chunk:
            self.eof = True
            return True
        self.raw += chunk
        while len(self.raw) >= 8:
            kind, size = self.raw[0], struct.unpack(">I", bytes(self.raw[4:8]))[0]
            if len(self.raw) < 8 + size:
                break
            payload = bytes(self.raw[8:8 + size])
            del self.raw[:8 + size]
            if kind == 1:
                self.buffer += payload
            else:
                self.stderr = (self.stderr + payload)[-4000:]
        return True

    def read(self, n: int, timeout_s: float) -> bytes | None:
        if not self.buffer and not self.eof and not self._pump(timeout_s):
            return None
        if self.buffer:
            data = bytes(self.buffer[:n])
            del self.buffer[:n]
            return data
        return b"" if self.eof else None

    def alive(self) -> bool:
        # Checked before every call, so no Docker API round trip: a container that stopped has closed
        # its stream, which a zero-timeout peek sees.
        if self.eof:
            return False
        ready, _, _ = select.select([self.sock], [], [], 0)
        if ready and not self.raw and self.sock.recv(1, socket.MSG_PEEK) == b"":
            self.eof = True
        return not self.eof

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            try:
                self.container.remove(force=True)
            except Exception:  # noqa: BLE001 - already gone
                pass

    def last_words(self) -> str:
        return self.stderr.decode("utf-8", "replace").strip()[-1500:]


class DockerSandbox(ZygoteSandbox):
    """A container per sandbox (``network_mode="none"``), calls forked from a supervisor inside it."""

    backend = "docker"

    def __init__(self, *, limits: Limits | None = None, isolation: Isolation = "episode",
                 preload: tuple[str, ...] = (), image: str | None = None, python: str = "python3",
                 cpus: float = 1.0, writable: tuple[str, ...] = (), client: Any = None) -> None:
        super().__init__(limits=limits, isolation=isolation, preload=preload)
        try:
            import docker
        except ImportError as e:
            raise DependencyNotInstalled("The Docker SDK", "pip install 'agentgym-suite[swe]'  (docker>=7)") from e
        if not hasattr(docker, "from_env"):  # a folder named docker/ on sys.path (this repository has one)
            raise DependencyNotInstalled("The Docker SDK (found only a folder named docker)",
                                         "pip install 'agentgym-suite[swe]'  (docker>=7)")
        self.image = image or os.environ.get("AGENTGYM_SANDBOX_IMAGE", "python:3.11-slim")
        self.python = python
        self.cpus = cpus
        bad = [p for p in writable if not p.startswith("/") or p.rstrip("/") in ("", "/work", "/tmp")]
        if bad:
            raise SandboxError(f"writable= takes absolute paths of the image other than /, /work and /tmp, got {bad}.")
        self.writable = tuple(writable)
        try:
            self.client = client or docker.from_env()
            self.client.ping()
        except docker.errors.DockerException as e:
            raise SandboxError(f"Cannot reach a Docker engine ({e}). Start one, or set DOCKER_HOST.") from e
        self.uid = _UID_BASE + (os.getpid() * 7919 + next(_uid_counter)) % 60_000

    def _base_env(self) -> dict[str, str]:
        env = super()._base_env()
        env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
        return env

    def _open(self) -> Channel:
        import docker

        disk = f"size={self.limits.disk_mb}m,nr_inodes={self.limits.effective_max_files}"
        config = {"uid": self.uid, "gid": self.uid, "workdir": "/work", "pidns": True, "preload": list(self.preload),
                  "seccomp": call_filter().hex()}
        try:
            container = self.client.containers.create(
                self.image, zygote_argv(self.python, config), stdin_open=True, tty=False, detach=True,
                network_mode="none", read_only=not self.writable, init=True, user="0:0", working_dir="/work",
                tmpfs={"/work": disk, "/tmp": disk, "/dev/shm": disk}, environment=self._base_env(),
                mem_limit=f"{self.limits.memory_mb + _SUPERVISOR_MB}m",
                memswap_limit=f"{self.limits.memory_mb + _SUPERVISOR_MB}m",
                pids_limit=self.limits.max_processes + 16, nano_cpus=int(self.cpus * 1e9),
                cap_drop=["ALL"], cap_add=_CAPS, security_opt=["no-new-privileges"],
                labels={"agentgym.sandbox": "1"})
        except docker.errors.ImageNotFound as e:
            raise SandboxError(f"Docker image {self.image!r} is not available here. Build or pull one with python3, "
                               "and pass image= or set AGENTGYM_SANDBOX_IMAGE.") from e
        except docker.errors.DockerException as e:
            raise SandboxError(f"Could not create the sandbox container: {e}") from e
        sock = container.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        raw = getattr(sock, "_sock", sock)
        container.start()
        channel = _DockerChannel(container, raw)
        if self.writable:
            self._hand_over(channel)
        return channel

    def _hand_over(self, channel: _DockerChannel) -> None:
        """Give the ``writable`` paths to the call uid (the exec runs as root with the container's few caps)."""
        owner = f"{self.uid}:{self.uid}"
        result = channel.container.exec_run(["chown", "-R", "--", owner, *self.writable], user="0:0")
        if result.exit_code != 0:
            channel.close()
            output = result.output.decode("utf-8", "replace").strip()[-500:]
            raise SandboxError(f"Could not make {', '.join(self.writable)} writable in {self.image!r}: {output}")
