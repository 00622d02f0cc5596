"""Trusted test harness, run inside the sandbox: grades a submission without letting it touch the grading.

Protocol on stdin: two frames (4-byte big-endian length + JSON). Frame 1 is the
submission; frame 2 the tests. The harness forks the worker that loads the
submission *before* it reads frame 2, so the submission never has the tests in
its memory, its files or its fds. The harness is not dumpable, so the worker
(same uid) can neither ptrace it nor open its /proc entries. Test code runs in
the harness and calls the function through a proxy: arguments go to the worker
as plain data, the return value comes back as plain data (exact built-in types
only), and the comparison happens here. So ``sys.exit(0)``, printing "passed",
patching ``unittest``/``assert`` machinery, or returning an object whose
``__eq__`` is always true, count as failures. The verdict is the last line on
the harness's own stdout, which the worker cannot write to.

The harness imports only from directories the submission cannot write: before
its first import it drops from ``sys.path`` the working directory (which the
sandbox puts first), relative entries and every directory this uid (the
worker's too) could create files in, and keeps only the standard import
finders (an editable install's finder maps a package to a host path that may be
writable in the sandbox). Otherwise a submission that writes ``string.py`` to
``/work`` would be imported by a test's ``import string`` and could print a
verdict and exit. The interpreter's own installation is kept: every isolating
backend mounts it read-only (the ``local`` backend isolates nothing). The
modules tests commonly import are loaded before the worker starts. The worker
gets the original import path back, as ``python file.py`` would have it.

Read as source by agentgym and passed to the sandbox as code after ``agentgym/sandbox/harness_prelude.py`` (the
import path made safe, the frames): standard library only.
"""

# Loaded before the worker exists, so not even a writable installation (local backend) can swap them.
TEST_MODULES = ("collections", "copy", "functools", "heapq", "itertools", "math", "random", "re", "string")

for module in TEST_MODULES:
    __import__(module)

MARK = "@@agentgym-grade@@"
CALL_TIMEOUT_S = 5.0


def encode(value, depth=0):
    """Plain data to JSON-able tagged form; anything else is refused (no custom __eq__ can pass)."""
    if depth > 50:
        raise TypeError("value nested too deeply")
    t = type(value)
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return {"i": str(value)} if abs(value) > 2**53 else value
    if t is float:
        return {"f": repr(value)}
    if t is list:
        return [encode(v, depth + 1) for v in value]
    if t is tuple:
        return {"t": [encode(v, depth + 1) for v in value]}
    if t is dict:
        return {"d": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    if t is set or t is frozenset:
        return {"s": [encode(v, depth + 1) for v in value], "frozen": t is frozenset}
    if t is bytes:
        return {"b": value.hex()}
    if t is complex:
        return {"c": [repr(value.real), repr(value.imag)]}
    raise TypeError(f"a value of type {t.__name__} is not plain data (return built-in types only)")


def decode(obj):
    if obj is None or isinstance(obj, (bool, str, int)):
        return obj
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    if isinstance(obj, dict):
        if "i" in obj:
            return int(obj["i"])
        if "f" in obj:
            return float(obj["f"])
        if "t" in obj:
            return tuple(decode(v) for v in obj["t"])
        if "d" in obj:
            return {decode(k): decode(v) for k, v in obj["d"]}
        if "s" in obj:
            items = (decode(v) for v in obj["s"])
            return frozenset(items) if obj.get("frozen") else set(items)
        if "b" in obj:
            return bytes.fromhex(obj["b"])
        if "c" in obj:
            return complex(float(obj["c"][0]), float(obj["c"][1]))
    raise ValueError("malformed value from the worker")


def worker(sub, req_r, resp_w):
    """Load the submission and answer calls. Runs the untrusted code; holds nothing secret."""
    sys.path[:], sys.meta_path[:] = SUBMISSION_IMPORTS
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    keep = {req_r, resp_w, 0, 1, 2}
    for fd in range(3, 1024):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(sub["setup_code"] + "\n" + sub["code"], "<submission>", "exec"), namespace)
        fn = namespace.get(sub["entry_point"])
        if not callable(fn):
            raise NameError(f"the submission does not define a function named {sub['entry_point']!r}")
        send(resp_w, {"ready": True})
    except BaseException as e:  # noqa: BLE001 - any failure to load is the submission's
        send(resp_w, {"ready": False, "error": f"{type(e).__name__}: {e}"})
        os._exit(0)
    while True:
        try:
            call = read_frame(req_r)
        except EOFError:
            os._exit(0)
        try:
            args = decode(call["args"])
            result = fn(*args)
            reply = {"value": encode(result)}
        except BaseException as e:  # noqa: BLE001 - the function's own error is a failed test
            reply = {"error": f"{type(e).__name__}: {e}"[:500]}
        send(resp_w, reply)


class WorkerGone(Exception):
    pass


class Proxy:
    """Stands in for the submitted function inside the tests."""

    def __init__(self, pid, req_w, resp_r):
        self.pid, self.req_w, self.resp_r, self.alive = pid, req_w, resp_r, True

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError("keyword arguments are not supported by the grader")
        if not self.alive:
            raise WorkerGone("the submission's process is gone (it exited, crashed or timed out earlier)")
        try:
            send(self.req_w, {"args": encode(list(args))})
            ready, _, _ = select.select([self.resp_r], [], [], CALL_TIMEOUT_S)
            if not ready:
                raise TimeoutError(f"the call did not return within {CALL_TIMEOUT_S:g} s")
            reply = read_frame(self.resp_r)
        except (OSError, EOFError, TimeoutError) as e:
            self.alive = False
            try:
                os.kill(self.pid, 9)
            except OSError:
                pass
            raise WorkerGone(f"the submission's process stopped answering ({type(e).__name__}: {e})") from None
        if "error" in reply:
            raise RuntimeError(f"the function raised {reply['error']}")
        return decode(reply["value"])


def main():
    libc = ctypes.CDLL(None)
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: the worker may not ptrace us or read our /proc files
    sub = read_frame(0)
    req_r, req_w = os.pipe()
    resp_r, resp_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(req_w)
        os.close(resp_r)
        worker(sub, req_r, resp_w)
        os._exit(0)
    os.close(req_r)
    os.close(resp_w)
    tests = read_frame(0)
    verdict = {"passed": 0, "total": 0, "failures": [], "load_error": None}
    ready, _, _ = select.select([resp_r], [], [], CALL_TIMEOUT_S * 2)
    hello = read_frame(resp_r) if ready else {"ready": False, "error": "loading the submission timed out"}
    proxy = Proxy(pid, req_w, resp_r)
    units = tests["asserts"] or ([tests["check"]] if tests["check"] else [])
    verdict["total"] = len(units)
    if not hello.get("ready"):
        verdict["load_error"] = hello.get("error", "the submission did not load")
    else:
        env = {"__name__": "__grader__", "math": math}
        try:
            exec(compile(tests["setup_code"], "<setup>", "exec"), env)
            if tests["check"] and not tests["asserts"]:
                exec(compile(tests["check"], "<check>", "exec"), env)
        except BaseException as e:  # noqa: BLE001 - a broken test file is reported, not raised
            verdict["load_error"] = f"the tests failed to load: {type(e).__name__}: {e}"
            units = []
        env[tests["entry_point"]] = proxy
        env["candidate"] = proxy
        for i, unit in enumerate(units):
            try:
                if tests["asserts"]:
                    exec(compile(unit, f"<test {i}>", "exec"), env)
                else:
                    env["check"](proxy)
                verdict["passed"] += 1
            except BaseException as e:  # noqa: BLE001 - a failing test, whatever it raised
                if len(verdict["failures"]) < 5:
                    message = str(e) or type(e).__name__
                    if isinstance(e, AssertionError) and tests["show"]:
                        message = f"failed: {unit.strip()}" + (f" ({e})" if str(e) else "")
                    elif tests["show"]:
                        message = f"{unit.strip()}: {type(e).__name__}: {e}"
                    verdict["failures"].append(message[:400])
    try:
        os.kill(pid, 9)
    except OSError:
        pass
    sys.stdout.write("\n" + MARK + " " + json.dumps(verdict) + "\n")
    sys.stdout.flush()


main()
