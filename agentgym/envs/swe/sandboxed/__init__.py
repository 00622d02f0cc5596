"""Programs the SWE grader runs inside the sandbox, shipped as files, never imported by agentgym.

``canaries.py`` writes the canary tests into the test files before the tests run; ``outcomes.py`` is the pytest
plugin that reports each test's outcome outside the log. Both use only the standard library (and pytest), and
run on Python 3.6 and newer: an instance image's own interpreter may be that old.
"""
