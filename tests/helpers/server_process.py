"""Start ``agentgym serve`` as a real process on a free port (real uvicorn, real socket)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(*args: str, token: str | None = None, timeout_s: float = 60.0, return_process: bool = False,
            preload: str | None = None, command_name: str = "serve") -> Iterator[Any]:
    """``agentgym serve *args`` (or ``agentgym <command_name>``: ``mcp``) on a free port; ``preload``: a module to
    import first (a test env, e.g. ``helpers.crashy_env``), found on tests/."""
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if token:
        env["AGENTGYM_TOKEN"] = token
    command = [sys.executable, "-m", "agentgym.cli"]
    if preload:
        paths = [str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        command = [sys.executable, "-c", f"import {preload}; from agentgym.cli import main; main()"]
    # The output goes to a file, never to a pipe nobody drains: a full pipe blocks the server in its next log
    # line. ``proc.stdout`` reads that file (what the server wrote so far, never blocking).
    fd, log_path = tempfile.mkstemp(prefix="agentgym-serve-", suffix=".log")
    with open(fd, "a") as log:
        proc = subprocess.Popen([*command, command_name, *args, "--port", str(port)],
                                env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    proc.stdout = open(log_path)  # noqa: SIM115 - its own offset; the file is removed at the end
    os.unlink(log_path)  # the open reader keeps it readable
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"agentgym {command_name} exited {proc.returncode}: {proc.stdout.read()}")
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"agentgym {command_name} did not come up in time")
            time.sleep(0.1)
        yield (url, proc) if return_process else url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
