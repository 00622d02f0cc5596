"""The pieces of SWE grading that do not need a sandbox: canaries, the outcome channel's verdict, the trusted
pytest configuration and the hardened eval script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gates import requires_swe

from agentgym.envs.swe.integrity import canary_manifest, check_run, read_canaries, read_outcomes

CANARIES = Path(__file__).parents[3] / "agentgym" / "envs" / "swe" / "sandboxed" / "canaries.py"
OUTCOMES = CANARIES.with_name("outcomes.py")
TEST_FILE = '''import pytest

from shapes import area


def square(n):
    return n * n


def test_square_of_three():
    assert area(3) == 9


@pytest.mark.parametrize("n", [1, 2])
def test_square_is_positive(n):
    assert area(n) > 0


class TestNames:
    def test_name_kept(self):
        assert "square" == "square"


def test_zero_area():
    assert area(0) == 0
'''


def write_canaries(tmp_path, text=TEST_FILE):
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "test_shapes.py").write_text(text)
    (tmp_path / "shapes.py").write_text("def area(n):\n    return n * n\n")
    proc = subprocess.run([sys.executable, "-I", str(CANARIES), "tests/test_shapes.py"], cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    return read_canaries(proc.stdout + "\n>>>>> Start Test Output\n", ">>>>> Start Test Output")


def run_pytest(tmp_path, *extra):
    report = tmp_path / "outcomes.jsonl"
    plugin = tmp_path / "plugin"
    plugin.mkdir(exist_ok=True)
    (plugin / "_agentgym_outcomes_test.py").write_text(OUTCOMES.read_text())
    env = {"PYTHONPATH": str(plugin), "AGENTGYM_OUTCOMES": str(report), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-rA", "--tb=no", "-q", "-p", "no:cacheprovider",
                           "-p", "_agentgym_outcomes_test", *extra, "tests/test_shapes.py"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, check=False)
    return proc.stdout, report.read_text()


def test_canaries_are_written_among_the_files_own_tests_under_names_made_of_its_own_words(tmp_path):
    manifest = write_canaries(tmp_path)
    text = (tmp_path / "tests" / "test_shapes.py").read_text()
    compile(text, "test_shapes.py", "exec")
    names = [c["test"].split("::")[1] for c in manifest]
    assert len(names) == 3 == len(set(names)) and [c["must_pass"] for c in manifest].count(True) == 1
    words = {"square", "of", "three", "is", "positive", "name", "kept", "zero", "area"}
    assert all(n.startswith("test_") and set(n[5:].split("_")) <= words for n in names), names
    assert all(f"def {n}(" in text for n in names)
    assert not text.rstrip().endswith(tuple(names))  # not simply appended
    assert "def test_square_of_three():" in text and "def test_name_kept(self):" in text  # originals untouched


@requires_swe
def test_canaries_fail_and_pass_as_written_and_both_channels_report_them(tmp_path):
    manifest = write_canaries(tmp_path)
    log, outcomes = run_pytest(tmp_path)
    from swebench.harness.log_parsers.python import parse_log_pytest

    status = parse_log_pytest(log, None)
    verdict = check_run(status, outcomes, manifest, ["tests/test_shapes.py::test_square_of_three"],
                        ["tests/test_shapes.py::test_zero_area", "tests/test_shapes.py::TestNames::test_name_kept"],
                        finished=True)
    assert not verdict.tampered and verdict.failed == set(), verdict.evidence
    assert verdict.canaries == 3


def test_a_file_that_does_not_compile_gets_no_canaries_and_is_left_as_it_was(tmp_path):
    broken = TEST_FILE + "\ndef test_broken(:\n    pass\n"
    assert write_canaries(tmp_path, broken) == []
    assert (tmp_path / "tests" / "test_shapes.py").read_text() == broken


@requires_swe
def test_the_plugin_reports_what_the_test_raised_not_what_a_rewritten_report_says(tmp_path):
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n")
    write_canaries(tmp_path, TEST_FILE.replace("area(0) == 0", "area(0) == 1"))
    log, outcomes = run_pytest(tmp_path)
    plugin, evidence = read_outcomes(outcomes)
    assert "PASSED tests/test_shapes.py::test_zero_area" in log  # the rewritten report
    assert plugin["tests/test_shapes.py::test_zero_area"] == "failed" and evidence == []


@requires_swe
def test_tests_count_only_when_both_channels_agree_and_wrong_canaries_are_evidence():
    canary = [{"test": "t.py::test_c", "must_pass": False}, {"test": "t.py::test_p", "must_pass": True}]
    honest = "\n".join(json.dumps({"test": t, "outcome": o}) for t, o in
                       [("t.py::test_a", "passed"), ("t.py::test_c", "failed"), ("t.py::test_p", "passed")])
    log = {"t.py::test_a": "PASSED", "t.py::test_c": "FAILED", "t.py::test_p": "PASSED"}
    assert not check_run(log, honest, canary, ["t.py::test_a"], [], finished=True).tampered
    forged_log = {**log, "t.py::test_c": "PASSED"}
    verdict = check_run(forged_log, honest, canary, ["t.py::test_a"], [], finished=True)
    assert verdict.tampered and "canary t.py::test_c must fail" in verdict.evidence[0]
    one_channel = check_run({**log, "t.py::test_b": "PASSED"}, honest, canary, ["t.py::test_b"], [], finished=True)
    assert one_channel.failed == {"t.py::test_b"} and not one_channel.tampered  # only in the log: failed
    missing = check_run({"t.py::test_a": "PASSED"}, honest, canary, ["t.py::test_a"], [], finished=True)
    assert missing.tampered and "missing from the log" in missing.evidence[0]
    assert not check_run({"t.py::test_a": "PASSED"}, honest, canary, ["t.py::test_a"], [], finished=False).tampered
    twice = honest + "\n" + json.dumps({"test": "t.py::test_a", "outcome": "failed"})
    assert check_run(log, twice, canary, ["t.py::test_a"], [], finished=True).tampered


@requires_swe
def test_skipped_counts_for_pass_to_pass_only_as_in_swebench():
    outcomes = json.dumps({"test": "t.py::test_s", "outcome": "skipped"})
    log = {"t.py::test_s": "SKIPPED"}
    assert check_run(log, outcomes, [], [], ["t.py::test_s"], finished=True).failed == set()
    assert check_run(log, outcomes, [], ["t.py::test_s"], [], finished=True).failed == {"t.py::test_s"}


def test_only_a_canary_manifest_printed_before_the_tests_started_with_this_runs_nonce_counts():
    marker, nonce = ">>>>> Start Test Output", "n0nce"
    one = 'AGENTGYM-CANARIES n0nce [{"test": "a", "must_pass": true}]\n'
    assert read_canaries(f"{marker}\n{one}", marker, nonce) is None  # printed by the tests
    assert canary_manifest(one + marker, marker, nonce) == ([{"test": "a", "must_pass": True}], [])
    # a forged line without the nonce (a file path printed by an earlier step) counts for nothing
    forged = "removed: notes\nAGENTGYM-CANARIES - []\n"
    assert canary_manifest(forged + one + marker, marker, nonce) == ([{"test": "a", "must_pass": True}], [])
    assert canary_manifest(forged + marker, marker, nonce) == (None, [])
    # an empty manifest (no test file readable) and a repeated one are tampering
    _, empty = canary_manifest(f"AGENTGYM-CANARIES n0nce []\n{marker}", marker, nonce)
    assert "empty canary manifest" in empty[0]
    _, twice = canary_manifest(one + one + marker, marker, nonce)
    assert "2 canary manifests" in twice[0]


def test_the_trusted_configuration_is_the_base_commits_with_an_absolute_pythonpath():
    from agentgym.envs.swe.grader import trusted_config

    pyproject = '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\nxfail_strict = true\n'
    ini = trusted_config({"pyproject.toml": pyproject, "setup.cfg": "[tool:pytest]\naddopts = -x\n"}, "/work/repo")
    assert ini == "[pytest]\ntestpaths = \n    tests\npythonpath = \n    /work/repo\nxfail_strict = true\n"
    assert trusted_config({"setup.cfg": "[tool:pytest]\naddopts = -x\n"}, "/r") == "[pytest]\naddopts = -x\n"
    assert trusted_config({"pytest.ini": "", "setup.cfg": "[tool:pytest]\naddopts = -x\n"}, "/r") == "[pytest]\n"
    assert trusted_config({}, "/r") == "[pytest]\n"


@requires_swe
def test_the_hardened_eval_script_sets_its_protections_before_the_test_command():
    from agentgym.envs.swe.env import SWEBenchEnv
    from agentgym.envs.swe.grader import harden, swebench_spec
    from agentgym.errors import DataError

    instance = next(iter(SWEBenchEnv(backend="bwrap").tasks.tasks("test"))).gold
    script = harden(swebench_spec(instance).eval_script, instance=instance, repo_dir="/work/repo", plugin="_p1")
    setup, test = script.split("echo '>>>>> Start Test Output'")
    assert "-c /work/.agentgym-grader/pytest.ini --rootdir=/work/repo" in setup and "-p _p1" in setup
    assert "canaries.py tests/" in setup and "pytest" in test
    official = swebench_spec(instance).eval_script.replace("echo '>>>>> Start", ": '>>>>> Start")
    assert "canaries.py" in harden(official, instance=instance, repo_dir="/testbed", plugin="_p1").split(
        ": '>>>>> Start")[0]  # swebench's own scripts mark the start with a no-op
    with pytest.raises(DataError, match="Start Test Output"):
        harden("pytest tests\n", instance=instance, repo_dir="/work/repo", plugin="_p1")
