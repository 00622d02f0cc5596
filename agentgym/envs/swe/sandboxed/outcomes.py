"""pytest plugin of the SWE grader: each test's outcome, from pytest's own call records, one JSON line per test.

Loaded with ``-p`` under a name chosen at random per grading, so it is imported before any repository code
and a file of the patch cannot shadow it. The file it writes is named by ``AGENTGYM_OUTCOMES`` (removed from the
environment before a test runs) and opened at import. A phase's outcome comes from the ``CallInfo`` pytest hands
to ``pytest_runtest_makereport`` (the exception the test raised, if any), not from the report pytest builds from
it, so code that rewrites reports or prints a forged log does not change what this file says.
"""

import json
import os

import pytest

_PATH = os.environ.pop("AGENTGYM_OUTCOMES", "")
_OUT = open(_PATH, "a", buffering=1, encoding="utf-8") if _PATH else None
_PHASES = {}


def _phase(item, call):
    excinfo = call.excinfo
    xfail = item.get_closest_marker("xfail") if call.when == "call" else None
    if excinfo is None:
        if xfail is not None and xfail.kwargs.get("run", True):
            return "xpassed"
        return "passed"
    if excinfo.errisinstance(pytest.xfail.Exception):
        return "xfailed"
    if excinfo.errisinstance(pytest.skip.Exception):
        return "skipped"
    if xfail is not None:
        raises = xfail.kwargs.get("raises")
        return "xfailed" if raises is None or excinfo.errisinstance(raises) else "failed"
    return "failed"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item, call):
    phases = _PHASES.setdefault(item.nodeid, {})
    phases[call.when] = _phase(item, call)
    if call.when == "teardown" and _OUT is not None:
        setup, body = phases.get("setup", "missing"), phases.get("call", "missing")
        if setup != "passed":
            outcome = setup if setup in ("skipped", "xfailed") else "error"
        elif phases["teardown"] not in ("passed", "skipped"):
            outcome = "error"
        else:
            outcome = body
        _OUT.write(json.dumps({"test": item.nodeid, "outcome": outcome}) + "\n")
        del _PHASES[item.nodeid]
