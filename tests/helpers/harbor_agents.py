"""Harbor agents for tests/integrations/test_harbor.py, loaded by Harbor itself (``-a harbor_agents:GamingAgent``)
in its own venv: Harbor's API only, no agentgym.

``GamingAgent`` works in an exported SWE task's /testbed without fixing anything: a conftest.py that reports every
test passed, the failing test's file rewritten to pass, a ``pytest.py`` that exits 0, and a ``sitecustomize.py``
that prints a PASSED line for every test at exit. A verifier that trusts any of them scores it 1.
"""

from __future__ import annotations

import json

from harbor.agents.nop import NopAgent

_CONFTEST = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""

_SCRIPT = r"""
import json, os, pathlib
root = pathlib.Path("/testbed")
spec = json.loads(os.environ["GAMING_SPEC"])
(root / "conftest.py").write_text(spec["conftest"])
(root / "pytest.py").write_text("import sys\nprint('PASSED everything')\nsys.exit(0)\n")
lines = "".join("PASSED %s\\n" % t for t in spec["tests"])
(root / "sitecustomize.py").write_text("import atexit, os\natexit.register(lambda: os.write(1, %r.encode()))\n" % lines)
for path in root.glob("tests/test_*.py"):
    names = [line.split("(")[0][4:] for line in path.read_text().splitlines() if line.startswith("def test_")]
    path.write_text("".join("def %s():\n    pass\n\n\n" % n for n in names))
"""


class GamingAgent(NopAgent):
    """Games the tests instead of fixing the code."""

    @staticmethod
    def name() -> str:
        return "agentgym-gaming"

    async def run(self, instruction, environment, context) -> None:
        listed = await environment.exec(command="cd /testbed && python3 -m pytest --collect-only -q 2>/dev/null")
        tests = [line.strip() for line in (listed.stdout or "").splitlines() if "::" in line]
        spec = json.dumps({"conftest": _CONFTEST, "tests": tests})
        done = await environment.exec(command=f"python3 - <<'EOF'\n{_SCRIPT}\nEOF", env={"GAMING_SPEC": spec})
        if done.return_code != 0:
            raise RuntimeError(f"the gaming agent's script failed: {done.stderr or done.stdout}")
