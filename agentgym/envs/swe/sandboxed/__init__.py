"""Programs the SWE grader runs inside the sandbox, shipped as files, never imported by agentgym.

``isolated_wire.py``, ``isolated_worker.py`` and ``isolated.py`` (joined after ``agentgym/sandbox/harness_prelude.py``)
are the isolated grader's harness and worker (``agentgym.envs.swe.isolation``; standard library and pytest, the
interpreter of the grading sandbox). ``canaries.py`` writes the canary tests into the test files before the tests run; ``outcomes.py`` is the pytest
plugin that reports each test's outcome outside the log. Both use only the standard library (and pytest), and
run on Python 3.6 and newer: an instance image's own interpreter may be that old.
"""
