"""``start_uvicorn``: an ASGI app served by uvicorn on a daemon thread of this process, on a port of its own.

What the WebShop env's shop server and the model gateway (``eval --agent``) both need: bind first (port 0 picks a
free one), then wait until uvicorn says it started, or fail with the caller's error; ``stop_uvicorn`` ends it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["start_uvicorn", "stop_uvicorn"]


def start_uvicorn(app: Any, *, host: str = "127.0.0.1", port: int = 0, name: str, timeout_s: float,
                  failed: Callable[[str], Exception], **config: Any) -> tuple[Any, threading.Thread, int]:
    """Serve ``app`` on ``host:port`` from a daemon thread named ``name``; ``(server, thread, port)`` once it
    started. ``failed(message)`` is raised when it does not start within ``timeout_s``. ``config``: more
    ``uvicorn.Config`` arguments (``lifespan="off"``, ...)."""
    import uvicorn

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, **config))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise failed(f"did not start on {host}:{port} within {timeout_s} s")
        time.sleep(0.005)
    return server, thread, port


def stop_uvicorn(server: Any, thread: threading.Thread | None, timeout_s: float) -> None:
    """Ask ``server`` (from ``start_uvicorn``) to exit and wait up to ``timeout_s`` for its thread."""
    if server is not None:
        server.should_exit = True
    if thread is not None:
        thread.join(timeout_s)
