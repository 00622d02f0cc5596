"""SWEBench's isolated runner, part 1 of 3: what both sides speak (the pipes' request/reply loop, values as
tagged JSON). Source text only: ``agentgym.envs.swe.isolation`` joins ``harness_prelude.py``, this file,
``isolated_worker.py`` and ``isolated.py`` into the one program the sandbox runs. See ``isolated.py``'s docstring
for the design."""


import builtins  # noqa: E402 - after the prelude, which makes the import path safe
import datetime  # noqa: E402
import decimal  # noqa: E402
import fractions  # noqa: E402
import importlib.abc  # noqa: E402
import importlib.machinery  # noqa: E402
import pathlib  # noqa: E402
import random  # noqa: E402
import string  # noqa: E402
import tempfile  # noqa: E402
import types  # noqa: E402

import pytest  # noqa: E402 - the interpreter's own, loaded before the worker exists

MARK = "@@agentgym-isolated@@"
CALL_TIMEOUT_S = 60.0
MAX_DEPTH = 100
#: built-in types whose subclasses cross as a copy of their built-in value
BASE_TYPES = (str, int, float, bytes, tuple, list, dict, set, frozenset, complex)


class WorkerGone(Exception):
    """The worker stopped answering, answered out of protocol, or exited."""


class Channel:
    """One side's end of the request pipes: ``request`` sends and serves the other side's nested requests until
    its own reply comes back."""

    def __init__(self, rfd, wfd, serve, timeout_s):
        self.rfd, self.wfd, self.serve, self.timeout_s, self.alive = rfd, wfd, serve, timeout_s, True

    def request(self, message):
        if not self.alive:
            raise WorkerGone("the repository's process is gone (it exited, crashed or stopped answering earlier)")
        try:
            send(self.wfd, message)
            while True:
                if self.timeout_s is not None:
                    ready, _, _ = select.select([self.rfd], [], [], self.timeout_s)
                    if not ready:
                        raise TimeoutError(f"no answer within {self.timeout_s:g} s")
                frame = read_frame(self.rfd)
                if not isinstance(frame, dict):
                    raise ValueError("a frame that is not an object")
                if "op" in frame:
                    send(self.wfd, self.serve(frame))
                    continue
                return frame
        except (OSError, EOFError, ValueError, TimeoutError, RecursionError) as e:
            self.alive = False
            raise WorkerGone(f"the repository's process stopped answering ({type(e).__name__}: {e})") from None


# ---- values ------------------------------------------------------------------------------------------------

def encode_data(value, depth, other):
    """``value`` as tagged JSON if its type is exactly a data type, else ``other(value)``."""
    if depth > MAX_DEPTH:
        raise ValueError("a value nested too deeply to cross")
    t = type(value)
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return {"i": str(value)} if abs(value) > 2 ** 53 else value
    if t is float:
        return {"f": repr(value)}
    if t is list or t is tuple:
        return {"l" if t is list else "t": [encode_data(v, depth + 1, other) for v in value]}
    if t is dict:
        return {"d": [[encode_data(k, depth + 1, other), encode_data(v, depth + 1, other)] for k, v in value.items()]}
    if t is set or t is frozenset:
        return {"s": [encode_data(v, depth + 1, other) for v in value], "fz": t is frozenset}
    if t is bytes:
        return {"b": value.hex()}
    if t is complex:
        return {"c": [repr(value.real), repr(value.imag)]}
    if t is decimal.Decimal:
        return {"dec": str(value)}
    if t is fractions.Fraction:
        return {"frac": str(value)}
    if t is datetime.timedelta:
        return {"td": [value.days, value.seconds, value.microseconds]}
    if t is datetime.date or ((t is datetime.datetime or t is datetime.time)
                              and (value.tzinfo is None or type(value.tzinfo) is datetime.timezone)):
        tz = value.utcoffset() if t is not datetime.date else None
        if t is datetime.time and value.tzinfo is not None:
            tz = value.tzinfo.utcoffset(None)
        return {"dt": t.__name__, "iso": value.replace(tzinfo=None).isoformat() if tz is not None else value.isoformat(),
                "tz": None if tz is None else tz.total_seconds()}
    if t is pathlib.PosixPath or t is pathlib.PurePosixPath:
        return {"path": str(value), "pure": t is pathlib.PurePosixPath}
    return other(value)


def decode_data(obj, depth, other):
    """The value of ``encode_data``'s form; tagged forms it does not know go to ``other``."""
    if depth > MAX_DEPTH:
        raise ValueError("a value nested too deeply to cross")
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return obj
    if not isinstance(obj, dict):
        raise ValueError("a malformed value")
    if "i" in obj:
        return int(obj["i"])
    if "f" in obj:
        return float(obj["f"])
    if "l" in obj:
        return [decode_data(v, depth + 1, other) for v in obj["l"]]
    if "t" in obj:
        return tuple(decode_data(v, depth + 1, other) for v in obj["t"])
    if "d" in obj:
        return {decode_data(k, depth + 1, other): decode_data(v, depth + 1, other) for k, v in obj["d"]}
    if "s" in obj:
        items = [decode_data(v, depth + 1, other) for v in obj["s"]]
        return frozenset(items) if obj.get("fz") else set(items)
    if "b" in obj:
        return bytes.fromhex(obj["b"])
    if "c" in obj:
        return complex(float(obj["c"][0]), float(obj["c"][1]))
    if "dec" in obj:
        return decimal.Decimal(obj["dec"])
    if "frac" in obj:
        return fractions.Fraction(obj["frac"])
    if "td" in obj:
        days, seconds, micro = obj["td"]
        return datetime.timedelta(days=days, seconds=seconds, microseconds=micro)
    if "dt" in obj:
        kind = {"date": datetime.date, "datetime": datetime.datetime, "time": datetime.time}[obj["dt"]]
        value = kind.fromisoformat(obj["iso"])
        if obj.get("tz") is not None:
            value = value.replace(tzinfo=datetime.timezone(datetime.timedelta(seconds=obj["tz"])))
        return value
    if "path" in obj:
        return (pathlib.PurePosixPath if obj.get("pure") else pathlib.PosixPath)(obj["path"])
    return other(obj)
