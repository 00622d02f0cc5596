"""Start ``agentgym serve`` as a real process on a free port (real uvicorn, real socket): ``agentgym.testing``'s
``serving``, with a token and a test env preloaded from tests/."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentgym.testing import free_port
from agentgym.testing import serving as _serving

__all__ = ["free_port", "serving"]


@contextlib.contextmanager
def serving(*args: str, token: str | None = None, timeout_s: float = 60.0, return_process: bool = False,
            preload: str | None = None, command_name: str = "serve") -> Iterator[Any]:
    """``agentgym serve *args`` (or ``agentgym <command_name>``: ``mcp``) on a free port; ``preload``: a module to
    import first (a test env, e.g. ``helpers.crashy_env``), found on tests/."""
    env: dict[str, str] = {}
    if token:
        env["AGENTGYM_TOKEN"] = token
    command = None
    if preload:
        paths = [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        command = [sys.executable, "-c", f"import {preload}; from agentgym.cli import main; main()"]
    with _serving(*args, command=command, command_name=command_name, env=env, timeout_s=timeout_s) as (url, proc):
        yield (url, proc) if return_process else url
