"""SWEBench's isolated runner, part 2 of 3: the worker, the repository's side (it runs the patched code and
holds nothing secret). Source text only, after ``isolated_wire.py``; see ``isolated.py``."""


# ---- the worker: the repository's side ---------------------------------------------------------------------

def worker_main(config, rfd, wfd):
    """Import the repository on demand and answer requests. Runs the patched code; holds nothing secret."""
    os.chdir(config["repo_dir"])
    sys.path[:] = [config["repo_dir"], *config.get("pythonpath", []), *SUBMISSION_IMPORTS[0]]
    sys.meta_path[:] = SUBMISSION_IMPORTS[1]
    sys.path_importer_cache.clear()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    for fd in range(3, 4096):
        if fd not in (rfd, wfd):
            try:
                os.close(fd)
            except OSError:
                pass
    objects, numbers = {}, {}

    def base_value(value, base):
        """The built-in value of a built-in subclass's object, read with the built-in type's own methods."""
        if base is str:
            return str.__str__(value)
        if base is int:
            return int.__int__(value)
        if base is float:
            return float.__float__(value)
        if base is complex:
            return complex(complex.real.__get__(value), complex.imag.__get__(value))
        if base in (bytes, tuple, list):
            return base.__getitem__(value, slice(None))
        if base is dict:
            return dict(dict.items(value))
        return base(base.__iter__(value))

    def handle_of(value):
        key = id(value)
        if key not in numbers:
            numbers[key] = len(objects) + 1
            objects[numbers[key]] = value
        return numbers[key]

    def meta(value):
        """A value that is not data: a base copy, an exception class, or a handle."""
        t = type(value)
        for base in BASE_TYPES:
            if isinstance(value, base):
                return {"base": base.__name__, "value": encode(base_value(value, base)), "h": handle_of(value),
                        "name": t.__qualname__}
        if isinstance(value, type) and issubclass(value, BaseException):
            return exc_class(value)
        kind = "class" if isinstance(value, type) else "module" if isinstance(value, types.ModuleType) else "object"
        return {"h": handle_of(value), "kind": kind, "name": getattr(t, "__qualname__", "?")}

    def exc_class(cls):
        if getattr(builtins, cls.__name__, None) is cls:
            return {"builtin": cls.__name__}
        bases = [exc_class(b) for b in cls.__bases__ if isinstance(b, type) and issubclass(b, BaseException)]
        return {"h": handle_of(cls), "exc": str(cls.__name__), "module": str(getattr(cls, "__module__", "")),
                "bases": bases}

    def encode(value):
        return encode_data(value, 0, meta)

    def decode(obj):
        def other(tagged):
            if "h" in tagged:
                return objects[tagged["h"]]
            if "r" in tagged:
                return TrustedRef(tagged)
            if "bt" in tagged:
                return getattr(builtins, tagged["bt"])
            raise ValueError("a malformed value")
        return decode_data(obj, 0, other)

    class TrustedRef:
        """A test's own object handed to the repository (a callback, a fake clock): every use is asked of the
        harness, which answers only for public names."""

        def __init__(self, tagged):
            object.__setattr__(self, "_rid", tagged["r"])
            for name in ("__name__", "__qualname__", "__doc__", "__module__"):
                if name in tagged:
                    object.__setattr__(self, name, tagged[name])

        def _ask(self, op, *args, **kwargs):
            return answer(channel.request({"op": op, "r": self._rid, "args": encode(list(args)),
                                           "kwargs": encode(kwargs)}))

        def __call__(self, *args, **kwargs):
            return self._ask("call", *args, **kwargs)

        def __getattr__(self, name):
            if name.startswith("_"):
                raise AttributeError(name)
            return self._ask("getattr", name)

        def __iter__(self):
            return self._ask("iter")

        def __next__(self):
            return self._ask("next")

        def __len__(self):
            return self._ask("len")

        def __getitem__(self, key):
            return self._ask("getitem", key)

        def __contains__(self, item):
            return self._ask("contains", item)

        def __bool__(self):
            return self._ask("bool")

        def __eq__(self, other):
            return isinstance(other, TrustedRef) and other._rid == self._rid

        def __hash__(self):
            return hash(("trusted", self._rid))

    def answer(reply):
        if "raise" in reply:
            error = reply["raise"]
            cls = objects.get(error.get("h")) if "h" in error else getattr(builtins, error.get("builtin", ""), None)
            if not (isinstance(cls, type) and issubclass(cls, Exception)):
                cls = RuntimeError
            raise cls(*decode(error.get("args", {"t": []})))
        return decode(reply.get("value"))

    def equal(a, b):
        results = [r for r in (type(a).__eq__(a, b), type(b).__eq__(b, a)) if r is not NotImplemented]
        return a is b if not results else all(bool(r) for r in results)

    binary = {"add": "__add__", "sub": "__sub__", "mul": "__mul__", "truediv": "__truediv__",
              "floordiv": "__floordiv__", "mod": "__mod__", "pow": "__pow__", "matmul": "__matmul__",
              "and": "__and__", "or": "__or__", "xor": "__xor__", "lshift": "__lshift__", "rshift": "__rshift__",
              "lt": "__lt__", "le": "__le__", "gt": "__gt__", "ge": "__ge__"}

    def perform(request):
        op, args = request["op"], decode(request.get("args", {"l": []}))
        kwargs = decode(request.get("kwargs", {"d": []}))
        if op == "import":
            __import__(args[0])
            return sys.modules[args[0]]
        target = args[0]
        if op == "call":
            return target(*args[1:], **kwargs)
        if op == "getattr":
            return getattr(target, args[1])
        if op == "setattr":
            return setattr(target, args[1], args[2])
        if op == "delattr":
            return delattr(target, args[1])
        if op == "eq":
            return bool(equal(target, args[1]))
        if op == "eqmany":
            return [bool(equal(target, value)) for value in args[1]]
        if op == "construct":
            return Replies([serve_call(target, a, k) for a, k in args[1]])
        if op in binary or op.startswith("r") and op[1:] in binary:
            reflected = op not in binary
            name = binary[op[1:] if reflected else op]
            if reflected:
                name = "__r" + name[2:]
            method = getattr(type(target), name, None)
            return NotImplemented if method is None else method(target, args[1])
        simple = {"getitem": lambda: target[args[1]], "setitem": lambda: target.__setitem__(args[1], args[2]),
                  "delitem": lambda: target.__delitem__(args[1]), "len": lambda: len(target),
                  "iter": lambda: iter(target), "next": lambda: next(target), "contains": lambda: args[1] in target,
                  "bool": lambda: bool(target), "repr": lambda: str(repr(target)), "str": lambda: str(str(target)),
                  "format": lambda: str(format(target, args[1])), "hash": lambda: int(hash(target)),
                  "neg": lambda: -target, "pos": lambda: +target, "abs": lambda: abs(target),
                  "invert": lambda: ~target, "int": lambda: int(target), "float": lambda: float(target),
                  "index": lambda: int(target.__index__()), "round": lambda: round(target, *args[1:]),
                  "enter": lambda: target.__enter__(), "exit": lambda: target.__exit__(*args[1:]),
                  "isinstance": lambda: isinstance(args[1], target), "issubclass": lambda: issubclass(args[1], target),
                  "dir": lambda: [str(n) for n in dir(target)]}
        if op not in simple:
            raise ValueError(f"unknown request {op!r}")
        return simple[op]()

    class Replies(list):
        """Replies to several calls, each as ``serve`` would give it."""

    def serve_call(target, args, kwargs):
        try:
            return {"value": encode(target(*args, **kwargs))}
        except BaseException as e:  # noqa: BLE001 - the repository's error is the test's to see
            return raised(e)

    def raised(e):
        try:
            args = encode(tuple(a for a in e.args))
        except (ValueError, RecursionError):
            args = {"t": [str(e)[:2000]]}
        return {"raise": {**exc_class(type(e)), "args": args, "obj": handle_of(e)}}

    def serve(request):
        try:
            result = perform(request)
            if type(result) is Replies:
                return {"replies": list(result)}
            return {"notimpl": True} if result is NotImplemented else {"value": encode(result)}
        except BaseException as e:  # noqa: BLE001 - the repository's error is the test's to see
            return raised(e)

    channel = Channel(rfd, wfd, serve, None)
    send(wfd, {"ready": True})
    while True:
        try:
            request = read_frame(rfd)
        except (EOFError, OSError, ValueError):
            os._exit(0)
        send(wfd, serve(request))
