"""The first part of every trusted grading harness (PyCode's ``_harness.py``, SWEBench's isolated runner):
source text that agentgym puts in front of the harness's own, never a module to import.

Before its first import it makes the import path one the graded code cannot write (see ``trusted_import_path``),
keeps the path the graded code gets in ``SUBMISSION_IMPORTS``, and defines the frames both sides speak: a length
in decimal, a newline, then that many bytes of ASCII JSON. Standard library only.
"""

import os
import sys

STDLIB_FINDERS = ("_frozen_importlib", "_frozen_importlib_external")
#: the largest frame either side reads: a bigger one is the other side misbehaving
MAX_FRAME_BYTES = 64 * 1024 * 1024


def is_writable(path):
    """Whether this uid could create, replace or rename files at ``path`` (or where it would be made)."""
    path = os.path.abspath(path)
    while True:
        if os.path.exists(path) and os.access(path, os.W_OK):
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def trusted_import_path(entries, cwd, installation):
    """``entries`` without '', relative paths (they resolve in ``cwd``), ``cwd`` itself, and writable
    directories outside the interpreter's ``installation`` directories."""
    cwd = os.path.realpath(cwd)
    kept = []
    for entry in entries:
        if not isinstance(entry, str) or not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if real == cwd:
            continue
        inside = any(real == root or real.startswith(root.rstrip("/") + "/") for root in installation)
        if inside or not is_writable(real):
            kept.append(entry)
    return kept


SUBMISSION_IMPORTS = (list(sys.path), list(sys.meta_path))
INSTALLATION = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
sys.path[:] = trusted_import_path(sys.path, os.getcwd(), INSTALLATION - {"/"})
sys.meta_path[:] = [finder for finder in sys.meta_path if getattr(finder, "__module__", "") in STDLIB_FINDERS]
sys.path_importer_cache.clear()

import ctypes  # noqa: E402 - every import comes after the import path is made safe
import json  # noqa: E402
import math  # noqa: E402
import select  # noqa: E402


def read_frame(fd):
    """One frame: its length in decimal, a newline, then that many bytes of ASCII JSON."""
    digits = b""
    while True:
        ch = os.read(fd, 1)  # byte by byte: never read past this frame (the next may be secret)
        if not ch:
            raise EOFError("truncated frame header")
        if ch == b"\n":
            break
        digits += ch
        if len(digits) > 12:
            raise ValueError("malformed frame header")
    size = int(digits)
    if size > MAX_FRAME_BYTES:
        raise ValueError("frame too large")
    body = bytearray()
    while len(body) < size:
        chunk = os.read(fd, size - len(body))
        if not chunk:
            raise EOFError("truncated frame")
        body += chunk
    return json.loads(bytes(body))


def send(fd, obj):
    body = json.dumps(obj).encode()
    data = str(len(body)).encode() + b"\n" + body
    while data:
        data = data[os.write(fd, data):]
