"""The isolated SWE grader (agentgym.envs.swe.isolation): what tests can do across the boundary, and what the
repository's code cannot do to the verdict. A tiny repository of our own exercises each kind of value."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers.gates import requires_swe
from helpers.tiny_instance import file_diff, write_files_instance

from agentgym.envs.swe.isolation import isolation_blocker, read_verdict

pytestmark = requires_swe

CORE = '''import os
from decimal import Decimal


class KitError(ValueError):
    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


class Box:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Box) and other.value == self.value

    def __hash__(self):
        return hash(self.value)

    def __lt__(self, other):
        return self.value < (other.value if isinstance(other, Box) else other)

    def __ge__(self, other):
        return not self < other

    def __add__(self, other):
        return Box(self.value + (other.value if isinstance(other, Box) else other))

    def __repr__(self):
        return "Box(%r)" % (self.value,)


class Label(str):
    def shout(self):
        return self.upper() + "!"


REGISTRY = {"a": Box(1)}


def get(name):
    return REGISTRY[name]


def twice(fn, x):
    return fn(x)


def fail(code):
    raise KitError("bad thing", code)


def label(text):
    return Label(text)


def read(path):
    with open(path) as f:
        return f.read()


def total(amounts):
    return sum(Decimal(a) for a in amounts)
'''
FILES = {"kit/__init__.py": "from kit.core import *  # noqa: F401,F403\nfrom kit.core import KitError  # noqa: F401\n",
         "kit/core.py": CORE,
         "tests/test_kit.py": "from kit import get\n\n\ndef test_get():\n    assert get('a') is get('a')\n"}
FIXED = CORE.replace("def twice(fn, x):\n    return fn(x)", "def twice(fn, x):\n    return fn(fn(x))")
TESTS = FILES["tests/test_kit.py"] + '''

def test_twice_calls_back_twice():
    from kit import twice
    calls = []

    def double(x):
        calls.append(x)
        return x * 2

    assert twice(double, 3) == 12 and calls == [3, 6]


def test_objects_identity_and_equality():
    from kit import Box, get
    assert get("a") == Box(1) and get("a") != Box(2) and Box(1) < Box(2) and Box(1) + 1 == Box(2)
    assert repr(Box(3)) == "Box(3)" and {get("a"): 1}[get("a")] == 1


def test_exceptions_cross_as_classes_with_attributes():
    import pytest
    from kit import KitError, fail
    with pytest.raises(KitError, match="bad") as info:
        fail(7)
    assert info.value.code == 7
    with pytest.raises(ValueError):
        fail(1)


def test_builtin_subclasses_cross_as_values():
    from kit import label
    text = label("hi")
    assert text == "hi" and isinstance(text, str) and text.shout() == "HI!"


def test_files_and_decimals(tmp_path):
    from decimal import Decimal
    from kit import read, total
    (tmp_path / "f.txt").write_text("x")
    assert read(tmp_path / "f.txt") == "x" and total(["1.10", "2.20"]) == Decimal("3.30")
'''
F2P = ["tests/test_kit.py::test_twice_calls_back_twice"]
P2P = ["tests/test_kit.py::test_get", "tests/test_kit.py::test_objects_identity_and_equality",
       "tests/test_kit.py::test_exceptions_cross_as_classes_with_attributes",
       "tests/test_kit.py::test_builtin_subclasses_cross_as_values", "tests/test_kit.py::test_files_and_decimals"]


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    from agentgym.envs.swe.env import SWEBenchEnv

    data = tmp_path_factory.mktemp("kit")
    write_files_instance(data, instance_id="kit__kit-1", files=FILES, fixed={"kit/core.py": FIXED},
                         tests={"tests/test_kit.py": TESTS}, fail_to_pass=F2P, pass_to_pass=P2P)
    env = SWEBenchEnv(data_dir=data, test_timeout_s=20)
    yield env, env.tasks.tasks("test")[0]
    env.close()


def patched(core: str) -> str:
    return file_diff(FILES, "kit/core.py", core)


def test_gold_resolves_and_every_kind_of_value_crosses(kit):
    env, task = kit
    gold = env.grade(task, task.gold["patch"])
    assert gold.reward == 1.0 and gold.details["isolation"] == "isolated", gold.details
    assert gold.details["pass_to_pass"]["success"] == P2P and not gold.details["tampered"]
    empty = env.grade(task, "")
    assert empty.reward == 0.0 and empty.details["fail_to_pass"]["failure"] == F2P
    assert empty.details["pass_to_pass"]["failure"] == [] and not empty.details["tampered"]


def test_an_object_equal_to_everything_is_rejected(kit):
    env, task = kit
    lying = FIXED.replace("        return isinstance(other, Box) and other.value == self.value", "        return True")
    score = env.grade(task, patched(lying))
    assert score.reward == 0.0 and score.details["tampered"], score.details
    assert "never wrote" in " ".join(score.details["integrity"]["evidence"])


def test_a_result_that_lies_about_equality_compares_by_its_built_in_value(kit):
    env, task = kit
    lying = CORE.replace("def twice(fn, x):\n    return fn(x)", "class Yes(int):\n    def __eq__(self, other):\n"
                         "        return True\n\n    __hash__ = int.__hash__\n\n\ndef twice(fn, x):\n"
                         "    return Yes(fn(x))")
    score = env.grade(task, patched(lying))
    assert score.reward == 0.0 and score.details["fail_to_pass"]["failure"] == F2P, score.details


def test_a_computed_object_is_never_asked_about_a_test_value(kit):
    """A result the repository computed is equal to no value the test wrote and is ordered against none: the
    value never reaches the worker (it could pick it out among decoys), so a result that should be data must
    cross as data. The lying object below notes every value it is asked about; it is asked about none."""
    env, task = kit
    lying = FIXED.replace("def twice(fn, x):\n    return fn(fn(x))", (
        "class Yes:\n    def __init__(self, value):\n        self.value = value\n\n"
        "    def __eq__(self, other):\n        with open('/work/asked.txt', 'a') as f:\n"
        "            f.write(repr(other) + '\\n')\n        return True\n\n    __hash__ = object.__hash__\n\n"
        "    def __lt__(self, other):\n        return True\n\n\n"
        "def twice(fn, x):\n    return Yes(fn(fn(x)))"))
    score = env.grade(task, patched(lying))
    assert score.reward == 0.0 and score.details["fail_to_pass"]["failure"] == F2P, score.details
    assert score.details["comparisons"]["computed == value"] == {"false": 1, "true": 0, "tests": 1}
    code, asked = env._grader.shell("cat /work/asked.txt 2>/dev/null || true")
    assert asked.strip() == ""
    # the honest gold run: what decided its comparisons, per kind (the objects the test built are compared by
    # their class's equality, with decoys; a test value with an object the test built likewise)
    gold = env.grade(task, task.gold["patch"]).details["comparisons"]
    assert gold["object == built"]["true"] >= 2 and gold["object order object"]["true"] >= 1, gold


def test_a_result_handed_back_as_the_tests_own_object_is_still_a_computed_one():
    """What the test built is told apart by the Python object its construction returned, never by the worker's
    object number: a worker that returns a test-built object (number 5) as a function's result gives the harness
    a plain handle, which is asked about no test value."""
    script = (
        "from agentgym.envs.swe.isolation import HARNESS\n"
        "ns = {'__name__': 'harness'}\n"
        "exec(compile(HARNESS.rstrip()[:-len('main()')], '<harness>', 'exec'), ns)\n"
        "harness = ns['Harness'].__new__(ns['Harness'])\n"
        "harness.handles, harness.decided = {}, {}\n"
        "made = harness.mark_built(harness.handle_for(5, 'object', 'Version'))\n"
        "returned = harness.handle_for(5, 'object', 'Version')\n"
        "assert harness.is_built(made) and not harness.is_built(returned)\n"
        "assert harness.equal_to_value(returned, '1.2.3') is False\n"
        "assert harness.decided == {'computed == value': [1, 0]}\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_worker_that_exits_fails_the_tests_after_it(kit):
    env, task = kit
    crash = FIXED.replace("def twice(fn, x):\n", "def twice(fn, x):\n    os._exit(0)\n")
    score = env.grade(task, patched(crash))
    assert score.reward == 0.0 and score.details["integrity"]["worker"] == "gone", score.details
    assert "stopped answering" in score.details["errors"][F2P[0]]
    assert score.details["pass_to_pass"]["failure"] == P2P  # they run after it, and nothing answers them
    assert "gone" in score.details["errors"][P2P[0]]


def test_a_worker_that_hangs_is_stopped_by_the_sandbox_and_fails(kit):
    env, task = kit
    # blocked, not spinning: the sandbox's time limit (the kit's 20 s) stops it either way, and a spinning worker
    # would hold a whole CPU for those 20 s, away from the tests running beside this one
    hang = FIXED.replace("def twice(fn, x):\n", "def twice(fn, x):\n    import time\n    while True:\n"
                         "        time.sleep(60)\n")
    score = env.grade(task, patched(hang))
    assert score.reward == 0.0 and score.details["integrity"]["timed_out"] is True, score.details


def test_a_verdict_needs_this_gradings_nonce():
    line = '@@agentgym-isolated@@ %s {"outcomes": {"t::a": "PASSED"}}'
    assert read_verdict("noise\n" + line % ("a" * 32), "a" * 32) == {"outcomes": {"t::a": "PASSED"}}
    assert read_verdict(line % ("0" * 32), "a" * 32) is None
    assert read_verdict("nothing printed", "a" * 32) is None


@pytest.mark.parametrize(("test_text", "reason"), [
    ("import pytest\n\n\n@pytest.mark.parametrize('n', [1])\ndef test_x(n):\n    assert n\n", "parametrize"),
    ("def test_x(monkeypatch):\n    assert monkeypatch\n", "fixtures"),
    ("import pytest\n\n\n@pytest.fixture\ndef thing():\n    return 1\n\n\ndef test_x():\n    assert 1\n", "fixture"),
])
def test_tests_the_harness_cannot_run_as_pytest_would_go_in_process(test_text, reason):
    instance = {"instance_id": "x", "FAIL_TO_PASS": ["tests/test_x.py::test_x"], "PASS_TO_PASS": []}
    assert reason in isolation_blocker(instance, {"tests/test_x.py": test_text}, in_image=False)
    plain = {"tests/test_x.py": "def test_x(tmp_path):\n    assert tmp_path\n"}
    assert isolation_blocker(instance, plain, in_image=False) is None
    assert "conftest" in isolation_blocker(instance, {**plain, "tests/conftest.py": "import os\n"}, in_image=False)
    assert "image" in isolation_blocker(instance, plain, in_image=True)


def test_an_honest_comparison_never_fails_at_random():
    """The decoys a test value is compared with beside the real one: a one-digit int's decoy once became '5x' (1 in
    10) and raised, so an honest object compared with it was unequal in about 19% of comparisons. 10,000 decoys of
    each one-digit int, and of one-character texts, in the harness's own code (a fresh interpreter)."""
    import json
    import subprocess
    import sys

    script = (
        "import json, sys\n"
        "from agentgym.envs.swe.isolation import HARNESS\n"
        "ns = {'__name__': 'harness'}\n"
        "exec(compile(HARNESS.rstrip()[:-len('main()')], '<harness>', 'exec'), ns)\n"
        "import datetime, fractions\n"
        "failed, same = 0, 0\n"
        "for value in [*range(-9, 10), 'a', 'Z', '7', b'q']:\n"
        "    for _ in range(10_000):\n"
        "        try:\n"
        "            made = ns['decoy'](value)\n"
        "        except Exception:\n"
        "            failed += 1\n"
        "            continue\n"
        "        same += type(made) is not type(value) or made == value\n"
        "later = {}\n"  # numbers and dates move either way: the real value is not told by being the smallest
        "for value in [datetime.date(2024, 2, 29), datetime.datetime(2020, 1, 1, 12), fractions.Fraction(1, 3),"
        " 2.5, -0.0]:\n"
        "    later[repr(value)] = sum(ns['decoy'](value) > value for _ in range(1000))\n"
        "print(json.dumps([failed, same, later]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    failed, same, later = json.loads(done.stdout.strip().splitlines()[-1])
    assert (failed, same) == (0, 0)
    assert all(350 < n < 650 for n in later.values()), later
