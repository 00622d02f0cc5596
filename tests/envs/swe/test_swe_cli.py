"""`agentgym swe validate` and `agentgym swe grade` on a SWE-bench file and predictions the test writes."""

from __future__ import annotations

import json

from helpers.gates import requires_swe
from helpers.tiny_instance import write_instance
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.errors import DataError

pytestmark = requires_swe


def test_validate_and_grade(tmp_path):
    instance = write_instance(tmp_path / "data")
    runner = CliRunner()
    trust = tmp_path / "trust.json"
    result = runner.invoke(app, ["swe", "validate", "--data", str(tmp_path / "data"), "--trust", str(trust)])
    assert result.exit_code == 0, result.output
    assert "ok   calc__calc-1" in result.output and "1/1 instances valid on bwrap" in result.output
    # what the gold verdict rests on: the tiny instance's tests compare plain results only
    table = json.loads(trust.read_text())["calc__calc-1"]
    assert table["isolation"] == "isolated" and table["on_repository_equality"] == 0
    assert table["on_data"] == table["tests"] > 0 and "tests on data" in result.output

    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"instance_id": "calc__calc-1", "model_patch": instance["patch"],
                                       "model_name_or_path": "gold"}) + "\n")
    report = tmp_path / "report.json"
    result = runner.invoke(app, ["swe", "grade", "--predictions", str(predictions), "--data", str(tmp_path / "data"),
                                 "--report", str(report)])
    assert result.exit_code == 0, result.output
    assert "resolved 1/1" in result.output
    assert json.loads(report.read_text())["resolved_ids"] == ["calc__calc-1"]


def test_validate_fails_on_a_broken_instance(tmp_path):
    instance = write_instance(tmp_path / "data")
    instance["FAIL_TO_PASS"] = json.dumps(["tests/test_ops.py::test_add"])  # passes before the fix: invalid
    (tmp_path / "data" / "instances.jsonl").write_text(json.dumps(instance) + "\n")
    result = CliRunner().invoke(app, ["swe", "validate", "--data", str(tmp_path / "data")])
    assert result.exit_code == 1
    assert "FAIL calc__calc-1" in result.output and "pass without the fix" in result.output


def test_grade_rejects_a_file_that_is_not_predictions(tmp_path):
    write_instance(tmp_path / "data")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": 1}) + "\n")
    result = CliRunner().invoke(app, ["swe", "grade", "--predictions", str(bad), "--data", str(tmp_path / "data")])
    # `agentgym` (cli.main) prints an AgentGymError as one line and exits 2; the app itself raises it
    assert isinstance(result.exception, DataError) and "needs 'instance_id' and 'model_patch'" in str(result.exception)


def test_validate_repeats_lists_an_instance_whose_gold_does_not_pass_every_replica(tmp_path):
    """A gold patch that fixes mean() only on half of its runs (os.urandom decides): graded 12 times, it passes
    some and fails some (all 12 alike: 2 in 4,096), and the instance is listed with its count; the sound instance
    passes every replica."""
    from helpers.tiny_instance import FILES, FIXED_OPS, _diff

    instance = write_instance(tmp_path / "sound")
    assert instance["instance_id"] == "calc__calc-1"
    flaky_ops = FIXED_OPS.replace("    return sum(values) / len(values)\n",
                                  "    import os\n    return sum(values) / (len(values) + os.urandom(1)[0] % 2)\n")
    flaky = write_instance(tmp_path / "flaky")
    flaky["patch"] = _diff("calc/ops.py", FILES["calc/ops.py"], flaky_ops)
    (tmp_path / "flaky" / "instances.jsonl").write_text(json.dumps(flaky) + "\n")
    runner = CliRunner()
    sound = runner.invoke(app, ["swe", "validate", "--data", str(tmp_path / "sound"), "--repeats", "3"])
    assert sound.exit_code == 0 and "gold graded 3 times each: 0 instances did not pass every replica" in sound.output
    result = runner.invoke(app, ["swe", "validate", "--data", str(tmp_path / "flaky"), "--repeats", "12"])
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "0/1 instances valid" in said and "1 instances did not pass every replica: calc__calc-1 (" in said
    assert "replicas (a flaky verdict)" in said or "does not resolve it" in said
    bad = runner.invoke(app, ["swe", "validate", "--data", str(tmp_path / "sound"), "--repeats", "0"])
    assert bad.exit_code != 0 and "--repeats must be >= 1" in str(bad.exception)  # main() prints it, exit 2
