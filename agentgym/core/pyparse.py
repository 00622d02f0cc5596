"""``parse``: ``ast.parse`` one call at a time in this process.

CPython 3.11 keeps the recursion depth of its AST-to-Python-object conversion in per-interpreter state, shared by
every thread: two threads parsing at once can corrupt it and raise ``SystemError: AST constructor recursion depth
mismatch`` (seen grading SWE-bench instances on several env threads; fixed in later CPython releases). Parsing is
fast (milliseconds), so agentgym's threads take turns.
"""

from __future__ import annotations

import ast
import threading

__all__ = ["parse"]

_LOCK = threading.Lock()


def parse(source: str, mode: str = "exec") -> ast.AST:
    """``ast.parse(source, mode=mode)``, never at the same time as another thread's."""
    with _LOCK:
        return ast.parse(source, mode=mode)
