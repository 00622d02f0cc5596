"""SWEBench's isolated test runner: the tests run here, the patched repository in a worker that never sees them.

Part 3 of 3: the harness, after ``isolated_wire.py`` (the pipes, values) and ``isolated_worker.py`` (the worker).

Read as source by agentgym and run in the grading sandbox after ``agentgym/sandbox/harness_prelude.py`` (which
makes the import path one the repository cannot write and defines the frames). Standard library and pytest only.

Stdin holds two frames. Frame 1 says where the repository is; the harness then forks the worker, which takes
the repository's import path, closes every descriptor but its two pipes, and waits for requests. Only then is
frame 2 read: the test files (from the test patch and the base commit's git objects, never the working copy),
the test ids to run, and a nonce. So the worker never has the tests, their expected values or the nonce in
its memory, files or descriptors, and the harness is not dumpable: the worker (same uid) can neither ptrace it
nor open its /proc entries.

The test modules run here, importing the repository through ``RepoFinder``: a module of the repository is a
``ProxyModule`` whose attributes come from the worker. Values cross as data when their type is exactly a
built-in one (or ``Decimal``, ``Fraction``, a date or time, a path); a built-in type's subclass crosses as a
copy of its built-in value (so its ``__eq__`` is never asked); anything else of the repository's is a
``Handle``: calls, attribute reads, operators and iteration on it are requests to the worker. Exceptions cross
as their class (a local class made once per repository class, over the same built-in bases) and arguments. A
test's own functions and objects handed to the repository (a callback, a fake clock) stay here and are called
back through the same pipes. Comparisons with anything a test wrote happen here, on data: a result the
repository computed is never asked about a test's value (equal to none, ordered against none), so no value a
test compares with reaches the worker. Only two repository objects, or an object the test built itself and
what it is compared with, are compared by the repository's own equality (a class may define what equality of
its own objects means: that is code under test), the test-built one beside two decoys; what the test built is
the Python object its construction returned (``BuiltHandle``), never told by the worker's object number. The
verdict, with the nonce, is the last line on this process's stdout, which the worker cannot write to: a worker
that crashes, exits, hangs or lies about the protocol fails the tests that were waiting on it and every test
after.
"""

# ---- the harness: the tests' side --------------------------------------------------------------------------

RNG = random.SystemRandom()
#: decoy argument sets tried for an object the test builds (two that build are kept)
DECOY_TRIES = 4


def _decoy_text(text, kinds=(string.digits, string.ascii_lowercase, string.ascii_uppercase)):
    """``text`` with each digit and ASCII letter replaced by a random one of its kind (the shape kept), and never
    ``text`` itself: where every draw gave the same character back, one of them is drawn again among the others of
    its kind (a one-digit number has nine decoys, it never becomes a string that is no number)."""
    out = [next((RNG.choice(k) for k in kinds if ch in k), ch) for ch in text]
    if out == list(text):
        places = [i for i, ch in enumerate(text) if any(ch in k for k in kinds)]
        if not places:  # nothing to replace: a longer text of the same kind
            return text + RNG.choice(string.ascii_lowercase)
        at = RNG.choice(places)
        kind = next(k for k in kinds if text[at] in k)
        out[at] = RNG.choice([c for c in kind if c != text[at]])
    return "".join(out)


def _decoy_or_same(value, depth):
    try:
        return decoy(value, depth + 1)
    except (TypeError, ValueError, ArithmeticError):
        return value


_SHIFT = [datetime.timedelta(days=1)]


def decoy(value, depth=0):
    """A value of ``value``'s type and shape that the test did not write: what a repository object compared
    with ``value`` is also compared with, unseen among them, so that an object equal to everything is caught."""
    if depth > 20:
        raise TypeError("too deep for a decoy")
    if depth == 0:  # the dates of one decoy move together (a range's start stays before its end)
        _SHIFT[0] = RNG.choice((-1, 1)) * datetime.timedelta(days=RNG.randint(1, 4000), seconds=RNG.randint(1, 86000))
    t = type(value)
    for attempt in range(8):
        sign = RNG.choice((-1, 1))  # numbers and dates move either way: a decoy is not always the larger one
        shift = _SHIFT[0] if attempt == 0 else sign * datetime.timedelta(days=RNG.randint(1, 4000),
                                                                         seconds=RNG.randint(1, 86000))
        try:
            if t is str:
                made = _decoy_text(value)
            elif t is bytes:
                made = _decoy_text(value.decode("latin-1")).encode("latin-1")
            elif t is bool:
                made = not value
            elif t is int:
                made = int(_decoy_text(str(abs(value)))) * (-1 if value < 0 else 1)
            elif t is float:
                made = (value + sign * (abs(value) * RNG.uniform(0.2, 3.0) + RNG.uniform(0.01, 9.0))
                        if math.isfinite(value) else RNG.uniform(-9.0, 9.0))
            elif t is decimal.Decimal:
                made = decimal.Decimal(_decoy_text(str(value), (string.digits,)) if value.is_finite() else "7")
            elif t is fractions.Fraction:
                made = value + sign * fractions.Fraction(RNG.randint(1, 97), RNG.randint(1, 89))
            elif t in (list, tuple):
                made = t(_decoy_or_same(v, depth) for v in value)
            elif t is dict:
                made = {k: _decoy_or_same(v, depth) for k, v in value.items()}
            elif t is datetime.date:
                made = value + datetime.timedelta(days=shift.days)
            elif t is datetime.datetime:
                made = value + shift
            else:
                raise TypeError(f"no decoy for a {t.__name__}")
        except OverflowError:  # a date near the ends of the calendar: the other way
            continue
        if type(made) is t and made != value:
            return made
    raise TypeError("no decoy found")


class Harness:
    """The tests' side of the pipes: handles for the worker's objects, local classes for its exceptions, and the
    test's own objects that the worker may call back."""

    def __init__(self, channel):
        self.channel = channel
        channel.serve = self.serve_callback
        self.handles, self.classes, self.refs, self.ref_ids = {}, {}, {}, {}
        #: an object the test built (by worker object number) -> the two decoys built with it
        self.decoys = {}
        #: comparisons the worker answered in a way no honest class does (equal to a decoy, both < and >=)
        self.rejected = []
        #: how the current test's comparisons of the repository's objects were decided: kind -> [false, true]
        self.decided = {}

    def count(self, kind, result):
        if type(result) is bool:
            self.decided.setdefault(kind, [0, 0])[result] += 1
        return result

    def construct(self, cls, args, kwargs):
        """``cls(*args, **kwargs)`` for a class of the repository, made together with decoys (the same class of
        arguments of the same shape, in a random order), two of which ``equal`` compares the object's partners
        with: an object the test builds to compare with is one of three the worker cannot tell apart. Four decoy
        argument sets are tried (a decoy date range may end before it starts), the first two that build are kept."""
        try:
            variants = [decoy((args, kwargs)) for _ in range(DECOY_TRIES)]
        except (TypeError, ValueError, ArithmeticError):
            return self.mark_built(self.ask("call", cls, *args, **kwargs))
        at = RNG.randrange(len(variants) + 1)
        variants.insert(at, (args, kwargs))
        raw = self.channel.request({"op": "construct", "args": self.encode([cls, [[list(a), k] for a, k in variants]]),
                                    "kwargs": self.encode({})})
        if isinstance(raw, dict) and "raise" in raw:
            return self.reply(raw)
        replies = raw.get("replies") if isinstance(raw, dict) else None
        if not (type(replies) is list and len(replies) == len(variants) and all(isinstance(r, dict) for r in replies)):
            raise WorkerGone("the repository's process answered out of protocol")
        made = [self.reply(r) if "value" in r else None for r in replies]
        result = self.reply(replies[at])  # raises the real construction's error
        decoys = [m for i, m in enumerate(made) if i != at and isinstance(m, Handle)][:2]
        if isinstance(result, Handle) and len(decoys) == 2:
            self.decoys[object.__getattribute__(result, "_hid")] = decoys
        return self.mark_built(result)

    def mark_built(self, result):
        """The object the test built, as a ``BuiltHandle`` of its own: a Python object only this construction
        returns (never cached by worker object number), so that a result the worker hands back under the same
        number (the test's expected object returned as a computed result) is a plain ``Handle``, a computed one."""
        if not isinstance(result, Handle):
            return result
        built = object.__new__(BuiltHandle)
        for slot in ("_hid", "_meta", "_harness"):
            object.__setattr__(built, slot, object.__getattribute__(result, slot))
        return built

    @staticmethod
    def is_built(handle):
        return type(handle) is BuiltHandle

    def equal(self, a, b):
        """``a == b`` for two objects of the repository: their classes' own equality, where one of them has
        decoys asked together with them (an object equal to a decoy too is equal to nothing)."""
        for left, right in ((a, b), (b, a)):
            decoys = self.decoys.get(object.__getattribute__(right, "_hid"))
            if decoys:
                return self.count("object == built", self.against_decoys(left, right, decoys, "eqmany"))
        # one the test built whose decoy arguments would not build (a made-up currency code) counts as built: the
        # counts must not depend on the decoys drawn, so that two gradings of one patch report the same
        built = self.is_built(a) or self.is_built(b)
        return self.count("object == built" if built else "object == object", self.ask("eq", a, b))

    def against_decoys(self, handle, value, decoys, op):
        at = RNG.randrange(3)
        results = self.ask(op, handle, decoys[:at] + [value] + decoys[at:])
        if not (type(results) is list and len(results) == 3 and all(type(r) is bool for r in results)):
            raise WorkerGone("the repository's process answered out of protocol")
        if results[at] and any(r for i, r in enumerate(results) if i != at):
            self.rejected.append(f"a {object.__getattribute__(handle, '_meta')['name']} object said it equals "
                                 "values the test never wrote")
            return False
        return results[at]

    def equal_to_value(self, handle, value):
        """``handle == value`` for a value the test wrote. A result the repository computed is never asked about a
        test's value (the value would reach the worker, which could answer as it likes): such an object is equal
        to no value, and a result that should be data must cross as data. Only an object the test built itself
        is compared with a test's value by its class's own equality (``Version(1, 2, 3) == "1.2.3"``: both sides
        are the test's, the equality is the code under test), asked together with two decoys of the value in a
        random order (an object equal to a decoy too is equal to nothing, and the run is rejected)."""
        if not self.is_built(handle):
            return self.count("computed == value", False)
        try:
            decoys = [decoy(value), decoy(value)]
        except (TypeError, ValueError, ArithmeticError):
            return NotImplemented
        return self.count("built == value", self.against_decoys(handle, value, decoys, "eqmany"))

    def ordered(self, handle, op, opposite, other):
        """An order comparison the worker answers, with its opposite (an object both < and >= something is
        rejected): between two objects of the repository, or an object the test built and a test's value. A
        result the repository computed is never ordered against a test's value (see ``equal_to_value``)."""
        if not isinstance(other, Handle) and not self.is_built(handle):
            self.count("computed order value", False)
            raise TypeError(f"the isolated grader does not order a {object.__getattribute__(handle, '_meta')['name']}"
                            " object the repository computed against a value the test wrote: compare data (the"
                            " result of a method that returns a built-in value)")
        kind = "object order object" if isinstance(other, Handle) else "built order value"
        result = self.count(kind, self.ask(op, handle, other))
        if result is True and self.ask(opposite, handle, other) is True:
            self.rejected.append(f"a {object.__getattribute__(handle, '_meta')['name']} object said both {op} and "
                                 f"{opposite}")
            return False
        return result

    # values the harness sends
    def encode(self, value):
        def other(v):
            if isinstance(v, Handle):
                return {"h": object.__getattribute__(v, "_hid")}
            hid = getattr(type(v), "_agentgym_hid", None) if isinstance(v, BASE_TYPES) else None
            if hid is not None:
                return {"h": hid}
            if isinstance(v, type) and v in self.classes.values():
                return {"h": v._agentgym_hid}
            if (isinstance(v, type) or callable(v)) and getattr(builtins, getattr(v, "__name__", ""), None) is v:
                return {"bt": v.__name__}
            rid = self.ref_ids.get(id(v))
            if rid is None:
                rid = self.ref_ids[id(v)] = len(self.refs) + 1
                self.refs[rid] = v
            tagged = {"r": rid}
            for name in ("__name__", "__qualname__", "__doc__", "__module__"):
                attr = getattr(v, name, None) if callable(v) else None
                if isinstance(attr, str):
                    tagged[name] = attr
            return tagged
        return encode_data(value, 0, other)

    def decode(self, obj):
        def other(tagged):
            if "builtin" in tagged or "exc" in tagged:
                return self.exception_class(tagged)
            if "base" in tagged:
                return self.base_copy(tagged)
            if "h" in tagged:
                return self.handle_for(tagged["h"], str(tagged.get("kind")), str(tagged.get("name")))
            if "r" in tagged and tagged["r"] in self.refs:
                return self.refs[tagged["r"]]
            raise ValueError("a malformed value")
        return decode_data(obj, 0, other)

    def handle_for(self, hid, kind="object", name="?"):
        """The one local handle of the worker's object number ``hid``."""
        if hid not in self.handles:
            handle = object.__new__(ModuleHandle if kind == "module" else Handle)
            object.__setattr__(handle, "_hid", hid)
            object.__setattr__(handle, "_meta", {"kind": kind, "name": name})
            object.__setattr__(handle, "_harness", self)
            self.handles[hid] = handle
        return self.handles[hid]

    def exception_class(self, tagged):
        """The local class for an exception class of the worker: a built-in one itself (exceptions only), a
        repository one made once over the local classes of its bases."""
        if "builtin" in tagged:
            cls = getattr(builtins, str(tagged["builtin"]), None)
            return cls if isinstance(cls, type) and issubclass(cls, Exception) else Exception
        hid = tagged["h"]
        if hid not in self.classes:
            bases = tuple(dict.fromkeys(self.exception_class(b) for b in tagged.get("bases", [])[:8])) or (Exception,)
            harness = self

            def getattr_(exc, name):
                obj = exc.__dict__.get("_agentgym_obj")
                if obj is None or name.startswith("__"):
                    raise AttributeError(name)
                return harness.ask("getattr", harness.handle_for(obj), name)

            namespace = {"__module__": str(tagged.get("module", "")), "_agentgym_hid": hid, "__getattr__": getattr_}
            try:
                cls = type(str(tagged["exc"]), bases, namespace)
            except TypeError:  # bases that cannot be combined (a layout conflict): the first alone
                cls = type(str(tagged["exc"]), bases[:1], namespace)
            self.classes[hid] = cls
        return self.classes[hid]

    def base_copy(self, tagged):
        """A built-in subclass's object from the worker: a local object of a local subclass of the same built-in
        type holding the built-in value (its equality is the built-in one); other attributes ask the worker."""
        base = {t.__name__: t for t in BASE_TYPES}[tagged["base"]]
        value = self.decode(tagged["value"])
        if type(value) is not base:
            raise ValueError("a base copy whose value is not of its base type")
        harness, hid = self, tagged["h"]

        def getattr_(self_, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return harness.ask("getattr", harness.handle_for(hid), name)

        cls = type(str(tagged.get("name", base.__name__)), (base,), {"__getattr__": getattr_, "_agentgym_hid": hid})
        return cls(value)

    def ask(self, op, *args, **kwargs):
        return self.reply(self.channel.request({"op": op, "args": self.encode(list(args)),
                                                "kwargs": self.encode(kwargs)}))

    def reply(self, reply):
        """The value of a reply, or its exception raised here."""
        if not isinstance(reply, dict):
            raise WorkerGone("the repository's process answered out of protocol")
        if reply.get("notimpl") is True:
            return NotImplemented
        if "raise" in reply:
            error = reply["raise"]
            cls = self.exception_class(error)
            try:
                args = self.decode(error.get("args", {"t": []}))
                exc = cls(*args) if isinstance(args, tuple) else cls(str(args))
            except Exception:  # noqa: BLE001 - arguments the class will not take: its message alone
                exc = cls("(an exception the grader could not rebuild)")
            if isinstance(error.get("obj"), int):
                exc._agentgym_obj = error["obj"]  # its other attributes (``e.lineno``) are the worker's
            raise exc
        if "value" not in reply:
            raise WorkerGone("the repository's process answered out of protocol")
        return self.decode(reply["value"])

    def serve_callback(self, request):
        """The worker uses one of the test's objects: call it, or read a public attribute."""
        try:
            target = self.refs[request["r"]]
            args = self.decode(request.get("args", {"l": []}))
            kwargs = self.decode(request.get("kwargs", {"d": []}))
            op = request["op"]
            if op == "getattr" and (not isinstance(args[0], str) or args[0].startswith("_")):
                raise AttributeError("the grader hands the repository public attributes only")
            actions = {"call": lambda: target(*args, **kwargs), "getattr": lambda: getattr(target, args[0]),
                       "iter": lambda: iter(target), "next": lambda: next(target), "len": lambda: len(target),
                       "getitem": lambda: target[args[0]], "contains": lambda: args[0] in target,
                       "bool": lambda: bool(target)}
            return {"value": self.encode(actions[op]())}
        except WorkerGone:
            raise
        except BaseException as e:  # noqa: BLE001 - the test's own error goes to the repository that called it
            hid = getattr(type(e), "_agentgym_hid", None)
            kind = {"h": hid} if hid is not None else {"builtin": type(e).__name__}
            try:
                args = self.encode(tuple(e.args))
            except (ValueError, RecursionError):
                args = {"t": [str(e)[:2000]]}
            return {"raise": {**kind, "args": args}}


def _ask(handle, op, *args):
    return object.__getattribute__(handle, "_harness").ask(op, handle, *args)


def _binary(op):
    def forward(self, other):
        return _ask(self, op, other)

    def reflected(self, other):
        return _ask(self, "r" + op, other)
    return forward, reflected


def _order(op, opposite):
    def compare(self, other):
        return object.__getattribute__(self, "_harness").ordered(self, op, opposite, other)
    return compare


class Handle:
    """An object of the repository's, living in the worker: every use is a request."""

    __slots__ = ("_hid", "_meta", "_harness", "__weakref__")

    def __getattr__(self, name):
        return _ask(self, "getattr", name)

    def __setattr__(self, name, value):
        _ask(self, "setattr", name, value)

    def __delattr__(self, name):
        _ask(self, "delattr", name)

    def __call__(self, *args, **kwargs):
        harness = object.__getattribute__(self, "_harness")
        if object.__getattribute__(self, "_meta")["kind"] == "class":
            return harness.construct(self, args, kwargs)
        return harness.ask("call", self, *args, **kwargs)

    def __eq__(self, other):
        # two repository objects: their classes' own equality; a value the test wrote: with decoys
        harness = object.__getattribute__(self, "_harness")
        return harness.equal(self, other) if isinstance(other, Handle) else harness.equal_to_value(self, other)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self):
        return _ask(self, "hash")

    def __repr__(self):
        return _ask(self, "repr")

    def __str__(self):
        return _ask(self, "str")

    def __format__(self, spec):
        return _ask(self, "format", spec)

    def __bool__(self):
        return _ask(self, "bool")

    def __len__(self):
        return _ask(self, "len")

    def __iter__(self):
        return _ask(self, "iter")

    def __next__(self):
        return _ask(self, "next")

    def __contains__(self, item):
        return _ask(self, "contains", item)

    def __getitem__(self, key):
        return _ask(self, "getitem", key)

    def __setitem__(self, key, value):
        _ask(self, "setitem", key, value)

    def __delitem__(self, key):
        _ask(self, "delitem", key)

    def __neg__(self):
        return _ask(self, "neg")

    def __pos__(self):
        return _ask(self, "pos")

    def __abs__(self):
        return _ask(self, "abs")

    def __invert__(self):
        return _ask(self, "invert")

    def __int__(self):
        return _ask(self, "int")

    def __float__(self):
        return _ask(self, "float")

    def __index__(self):
        return _ask(self, "index")

    def __round__(self, *args):
        return _ask(self, "round", *args)

    def __enter__(self):
        return _ask(self, "enter")

    def __exit__(self, *exc):
        return _ask(self, "exit", *(None if e is None else str(e) for e in exc))

    def __instancecheck__(self, instance):
        return _ask(self, "isinstance", instance)

    def __subclasscheck__(self, subclass):
        return _ask(self, "issubclass", subclass)

    def __dir__(self):
        return _ask(self, "dir")

    __add__, __radd__ = _binary("add")
    __sub__, __rsub__ = _binary("sub")
    __mul__, __rmul__ = _binary("mul")
    __truediv__, __rtruediv__ = _binary("truediv")
    __floordiv__, __rfloordiv__ = _binary("floordiv")
    __mod__, __rmod__ = _binary("mod")
    __pow__, __rpow__ = _binary("pow")
    __matmul__, __rmatmul__ = _binary("matmul")
    __and__, __rand__ = _binary("and")
    __or__, __ror__ = _binary("or")
    __xor__, __rxor__ = _binary("xor")
    __lshift__, __rlshift__ = _binary("lshift")
    __rshift__, __rrshift__ = _binary("rshift")
    __lt__ = _order("lt", "ge")
    __le__ = _order("le", "gt")
    __gt__ = _order("gt", "le")
    __ge__ = _order("ge", "lt")


class BuiltHandle(Handle):
    """An object the test built itself (``Harness.construct``): the one Python object its construction returned."""

    __slots__ = ()


class ModuleHandle(Handle):
    """A module of the repository reached as an attribute (``pkg.sub``)."""

    __slots__ = ()


class ProxyModule(types.ModuleType):
    """A module of the repository as the tests import it: its attributes are the worker's."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(self.__dict__["_agentgym_handle"], name)


class RepoFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on the tests' meta path: a module no trusted place has is the repository's, imported in the worker."""

    def __init__(self, harness):
        self.harness = harness

    def find_spec(self, name, path=None, target=None):
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        handle = self.harness.ask("import", spec.name)
        if not isinstance(handle, Handle):
            raise ImportError(f"the repository's {spec.name} is not a module")
        module = ProxyModule(spec.name)
        module.__dict__["_agentgym_handle"] = handle
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


class SourceFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The test modules, from the sources the harness was given (never from the working copy)."""

    def __init__(self, modules):
        self.modules = modules  # module name -> (path, source, is_package)

    def find_spec(self, name, path=None, target=None):
        if name not in self.modules:
            return None
        origin, _, package = self.modules[name]
        return importlib.machinery.ModuleSpec(name, self, origin=origin, is_package=package)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        origin, source, package = self.modules[module.__name__]
        module.__file__ = origin
        if package:
            module.__path__ = []
        exec(compile(source, origin, "exec"), module.__dict__)


def module_names(files):
    """pytest's module name of each test file (``prepend`` import mode): the path from the first directory up
    that is not a package. Packages (``__init__.py``) are modules too."""
    names = {}
    for path, source in files.items():
        parts = path.split("/")
        depth = len(parts) - 1
        while depth > 0 and "/".join(parts[:depth] + ["__init__.py"]) in files:
            depth -= 1
        name_parts = parts[depth:]
        package = name_parts[-1] == "__init__.py"
        name_parts = name_parts[:-1] if package else name_parts[:-1] + [name_parts[-1][:-3]]
        if name_parts:
            names[".".join(name_parts)] = (path, source, package)
    return names


def run_test(module, test_id, tmp_root, counter):
    """Run one test function (``file::name`` or ``file::Class::name``) of ``module``; its fixtures may be
    ``tmp_path`` only."""
    parts = test_id.split("::")[1:]
    target = module
    for part in parts[:-1]:
        target = getattr(target, part)
        if isinstance(target, type):
            target = target()
    function = getattr(target, parts[-1])
    kwargs = {}
    code = getattr(function, "__code__", None)
    names = code.co_varnames[:code.co_argcount] if code is not None else ()
    for name in names:
        if name == "self":
            continue
        if name != "tmp_path":
            raise RuntimeError(f"the isolated grader has no fixture {name!r}")
        counter[0] += 1
        path = pathlib.Path(tmp_root) / f"t{counter[0]}"
        path.mkdir()
        kwargs[name] = path
    function(**kwargs)


def main():
    libc = ctypes.CDLL(None)
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: the worker may not ptrace us or read our /proc files
    config = read_frame(0)
    to_worker_r, to_worker_w = os.pipe()
    to_harness_r, to_harness_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(to_worker_w)
        os.close(to_harness_r)
        try:
            worker_main(config, to_worker_r, to_harness_w)
        finally:
            os._exit(0)
    os.close(to_worker_r)
    os.close(to_harness_w)
    tests = read_frame(0)
    nonce = tests["nonce"]
    outcomes, errors, decided = {}, {}, {}
    channel = Channel(to_harness_r, to_worker_w, None, CALL_TIMEOUT_S)
    harness = Harness(channel)
    ready, _, _ = select.select([to_harness_r], [], [], CALL_TIMEOUT_S)
    try:
        hello = read_frame(to_harness_r) if ready else {}
    except (OSError, EOFError, ValueError):
        hello = {}
    if hello.get("ready") is not True:
        channel.alive = False
    modules = module_names(tests["files"])
    sys.meta_path[:] = [*sys.meta_path, SourceFinder(modules), RepoFinder(harness)]
    sys.path_importer_cache.clear()
    by_path = {path: name for name, (path, _, _) in modules.items()}
    tmp_root = tempfile.mkdtemp(prefix="agentgym-tests-")
    counter, loaded = [0], {}
    for test_id in tests["tests"]:
        path = test_id.split("::", 1)[0]
        harness.decided = decided[test_id] = {}
        try:
            if path not in loaded:
                try:
                    loaded[path] = __import__(by_path[path], fromlist=["_"])
                except BaseException as e:  # noqa: BLE001 - a test file that fails to import errs all its tests
                    loaded[path] = e
            if isinstance(loaded[path], BaseException):
                raise loaded[path]
            run_test(loaded[path], test_id, tmp_root, counter)
            outcomes[test_id] = "PASSED"
        except BaseException as e:  # noqa: BLE001 - whatever a test raised (pytest's skip too) is not a pass
            outcomes[test_id] = "FAILED"
            errors[test_id] = f"{type(e).__name__}: {e}"[:500]
    try:
        os.kill(pid, 9)
    except OSError:
        pass
    verdict = {"outcomes": outcomes, "errors": errors, "worker": "answering" if channel.alive else "gone",
               "rejected": harness.rejected[:20], "decided": decided}
    sys.stdout.write("\n" + MARK + " " + nonce + " " + json.dumps(verdict) + "\n")
    sys.stdout.flush()


main()
