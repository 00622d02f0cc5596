"""Whether a run of an instance's tests can be believed: canaries and the outcome channel against the log.

The grader (``agentgym.envs.swe.grader``) runs pytest with its own configuration, its outcome plugin loaded
before any repository code, and canary tests written into the FAIL_TO_PASS tests' files. This module reads what
came back and decides, per test, what counts:

- a test passes only if the log (swebench's parser) and the plugin's outcome file both say it passed; a test
  whose outcome appears in only one of them, or differently, counts as failed;
- every canary must have the outcome it was written to have, in both channels: a must-fail canary that passed,
  or any canary missing from a run that finished, means code in the test process changed what pytest reports
  or prints. The run is then tampered with: reward 0, whatever else it says.

Code under test runs in the pytest process and can do anything there, so neither channel is trusted alone:
rewriting reports or outcomes for every test also rewrites the canaries', and forging lines after the fact
disagrees with the other channel. See docs/envs/swe.md for what this does and does not cover.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CANARY_LINE", "PASSING", "Integrity", "canary_manifest", "check_run", "read_canaries", "read_outcomes"]

CANARY_LINE = "AGENTGYM-CANARIES "
PASSING = frozenset({"PASSED", "XFAIL"})  # swebench's passing statuses
_PLUGIN_PASSING = frozenset({"passed", "xfailed"})
_MAX_EVIDENCE = 20


def canary_manifest(log: str, start_marker: str, nonce: str | None = None) -> tuple[list[dict[str, Any]] | None,
                                                                                list[str]]:
    """The canary manifest the canary writer printed before the tests started (None: it did not run), and
    evidence of tampering: more than one manifest line, or an empty manifest (a writer that could read no test
    file). Only lines before ``start_marker`` count (what the tests print comes after it), and with ``nonce`` only
    lines that carry it (``AGENTGYM-CANARIES <nonce> <json>``): a forged line cannot know it."""
    head = log.split(start_marker, 1)[0]
    found: list[list[dict[str, Any]] | None] = []
    for line in head.splitlines():
        if not line.startswith(CANARY_LINE):
            continue
        token, _, body = line[len(CANARY_LINE):].partition(" ")
        if nonce is not None and token != nonce:
            continue
        try:
            manifest = json.loads(body)
        except ValueError:
            manifest = None
        found.append(manifest if isinstance(manifest, list) else None)
    if not found:
        return None, []
    evidence = []
    if len(found) > 1:
        evidence.append(f"{len(found)} canary manifests before the tests; the writer prints one")
    if found[0] is not None and not found[0]:
        evidence.append("an empty canary manifest: the canary writer could read none of the test files")
    return found[0], evidence


def read_canaries(log: str, start_marker: str, nonce: str | None = None) -> list[dict[str, Any]] | None:
    """The canary manifest alone (see ``canary_manifest``)."""
    return canary_manifest(log, start_marker, nonce)[0]


def read_outcomes(text: str) -> tuple[dict[str, str], list[str]]:
    """The plugin's outcome per test, and evidence of lines it could not have written (malformed, or a test
    reported twice with different outcomes)."""
    outcomes: dict[str, str] = {}
    evidence: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            test, outcome = record["test"], record["outcome"]
        except (ValueError, KeyError, TypeError):
            evidence.append(f"a line the outcome plugin does not write: {line[:200]!r}")
            continue
        if not isinstance(test, str) or not isinstance(outcome, str):
            evidence.append(f"a line the outcome plugin does not write: {line[:200]!r}")
        elif test in outcomes and outcomes[test] != outcome:
            evidence.append(f"{test} reported twice by the outcome plugin: {outcomes[test]}, then {outcome}")
        else:
            outcomes[test] = outcome
    return outcomes, evidence


@dataclass
class Integrity:
    """The verdict on one run: the tests that failed in either channel, and whether (and why) the run was
    tampered with."""

    failed: set[str] = field(default_factory=set)
    tampered: bool = False
    evidence: list[str] = field(default_factory=list)
    canaries: int = 0

    def details(self) -> dict[str, Any]:
        return {"tampered": self.tampered, "evidence": self.evidence[:_MAX_EVIDENCE], "canaries": self.canaries,
                "channels": "log+plugin"}


def _lookup(case: str, outcomes: Mapping[str, str]) -> str | None:
    """The plugin's outcome for ``case``, matched as swebench matches log ids (a truncated parametrized id by
    its prefix when every match agrees)."""
    if case in outcomes:
        return outcomes[case]
    if case.count("[") > case.count("]"):
        found = {outcomes[k] for k in outcomes if k.startswith(case)}
        if len({o in _PLUGIN_PASSING for o in found}) == 1:
            return found.pop()
    return None


def check_run(log_status: Mapping[str, str], outcomes_text: str, manifest: list[dict[str, Any]],
              fail_to_pass: list[str], pass_to_pass: list[str], *, finished: bool) -> Integrity:
    """Which of the instance's tests failed in either channel, and the canaries' verdict.

    ``log_status`` is swebench's per-test status parsed from the log; ``outcomes_text`` the plugin's file;
    ``manifest`` the canaries (``{"test", "must_pass"}``); ``finished``: the run was not cut off by its time
    limit (a run that was cannot be blamed for missing outcomes). FAIL_TO_PASS tests must pass (or xfail) in
    both; PASS_TO_PASS tests may also be skipped in both, as in swebench."""
    from swebench.harness.grading import test_maintained, test_passed

    outcomes, evidence = read_outcomes(outcomes_text)
    verdict = Integrity(evidence=list(evidence), canaries=len(manifest))
    for tests, allowed, in_log_ok in ((fail_to_pass, _PLUGIN_PASSING, test_passed),
                                      (pass_to_pass, _PLUGIN_PASSING | {"skipped"}, test_maintained)):
        for test in tests:
            log_ok, in_plugin = in_log_ok(test, log_status), _lookup(test, outcomes)
            plugin_ok = in_plugin in allowed
            if not (log_ok and plugin_ok):
                verdict.failed.add(test)
            if log_ok and in_plugin is not None and not plugin_ok:
                verdict.evidence.append(f"{test}: the log says {log_status.get(test)}, the outcome plugin says "
                                        f"{in_plugin}")
    for canary in manifest:
        test, must_pass = str(canary["test"]), bool(canary["must_pass"])
        in_log, in_plugin = log_status.get(test), outcomes.get(test)
        if in_log is None or in_plugin is None:
            if finished:
                verdict.evidence.append(f"canary {test} (must {'pass' if must_pass else 'fail'}) is missing from "
                                        f"the {'log' if in_log is None else 'outcome plugin'}")
            continue
        if (in_log in PASSING) != must_pass or (in_plugin in _PLUGIN_PASSING) != must_pass:
            verdict.evidence.append(f"canary {test} must {'pass' if must_pass else 'fail'}: the log says {in_log}, "
                                    f"the outcome plugin says {in_plugin}")
    verdict.tampered = bool(verdict.evidence)
    return verdict
