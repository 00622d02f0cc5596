"""Official SWE-bench instances: a 5.x dataset row with no bundled repository runs in its own instance image.

The image is built here with swebench's layout (see ``swebench_image``); the episode
works on ``/testbed`` in the image's ``testbed`` env as an unprivileged uid, and its
verdicts are checked against swebench's own ``run_instance`` on the same image.
"""

from __future__ import annotations

import json

import pytest
from helpers.gates import import_or_skip, requires_docker, requires_swe
from helpers.swebench_image import build_image, write_official_row

from agentgym.envs.swe.commands import grade_predictions
from agentgym.envs.swe.env import SWEBenchEnv
from agentgym.envs.swe.grader import swebench_spec
from agentgym.errors import ConfigError, DataError

docker = import_or_skip("docker", "swe")  # the Docker SDK
pytestmark = [pytest.mark.docker, requires_docker, requires_swe]

IMAGE = "swebench/sweb.eval.x86_64.calc_1776_calc-1:latest"  # the name swebench derives for calc__calc-1


@pytest.fixture(scope="module")
def image():
    return build_image(IMAGE)


@pytest.fixture
def env(tmp_path, image):
    write_official_row(tmp_path / "data", image)
    env = SWEBenchEnv(data_dir=tmp_path / "data", backend="docker")
    yield env
    env.close()


def tool(name: str, **arguments) -> dict:
    return {"tool": name, "arguments": arguments}


def test_an_episode_works_on_testbed_in_the_images_env(env):
    obs, _ = env.reset(seed=0)
    assert "repository at /testbed" in obs
    shell = env.workspace.shell("pwd; id -u; command -v python; touch /usr/owned 2>&1; touch /testbed/new && echo ok")[1]
    cwd, uid, python, denied, ok = shell.splitlines()
    assert cwd == "/testbed" and int(uid) != 0 and ok == "ok"
    assert python == "/opt/miniconda3/envs/testbed/bin/python"  # the instance's env, activated for every call
    assert "Permission denied" in denied  # only /testbed was handed over
    env.workspace.shell("rm /testbed/new")
    assert "sum(values) / (len(values) - 1)" in env.step(tool("view", path="calc/ops.py"))[0]
    obs = env.step(tool("edit", path="calc/ops.py", old="(len(values) - 1)", new="len(values)"))[0]
    assert "Edited calc/ops.py" in obs
    obs = env.step(tool("bash", command="python -c 'from calc import mean; print(mean([1, 2, 3]))'"))[0]
    assert "2.0" in obs
    _, reward, terminated, _, info = env.step(tool("submit"))
    # mean([]) still raises ZeroDivisionError: one F2P test fails, so not resolved
    details = info["verification"]["details"]
    assert terminated and reward == 0.0
    assert details["fail_to_pass"] == {"success": ["tests/test_ops.py::test_mean"],
                                       "failure": ["tests/test_ops.py::test_mean_empty"]}
    assert "-    return sum(values) / (len(values) - 1)" in details["model_patch"]


def test_each_episode_gets_a_fresh_container(env):
    env.reset(seed=0)
    env.step(tool("bash", command="echo junk > calc/ops.py"))
    first = env.workspace.sandbox
    env.reset(seed=0)
    assert env.workspace.sandbox is not first
    assert "def mean" in env.step(tool("view", path="calc/ops.py"))[0]


def test_oracle_resolves_and_empty_patch_does_not(env):
    env.reset(seed=0)
    done = False
    while not done:
        _, reward, terminated, truncated, info = env.step(env.oracle_action())
        done = terminated or truncated
    assert terminated and reward == 1.0 and info["verification"]["details"]["resolved"]
    env.reset(seed=0)
    _, reward, _, _, info = env.step(tool("submit"))
    details = info["verification"]["details"]
    assert reward == 0.0 and details["model_patch"] == "" and len(details["fail_to_pass"]["failure"]) == 2


def test_verdicts_match_swebench_run_instance(env, tmp_path, monkeypatch):
    """Our grading and the swebench harness's own ``run_instance`` agree, test by test, on the same image."""
    from swebench.harness.run_evaluation import run_instance

    monkeypatch.chdir(tmp_path)  # run_instance writes logs/ under the working directory
    instance = env.tasks.tasks("test")[0].gold  # the row (no episode: its container would go unused)
    broken = instance["patch"].replace("len(values)\n", "len(values) + 1\n")
    predictions = [{"instance_id": instance["instance_id"], "model_patch": patch, "model_name_or_path": name}
                   for name, patch in (("gold", instance["patch"]), ("empty", ""), ("broken", broken))]
    ours = {p["model_name_or_path"]: grade_predictions(env, [p])["instances"][instance["instance_id"]]
            for p in predictions}
    client = docker.from_env()
    for prediction in predictions[::2]:  # the harness cannot apply an empty patch (an error, not a report)
        _, report = run_instance(swebench_spec(instance), prediction, client, run_id=prediction["model_name_or_path"],
                                 timeout=120)
        theirs = report[instance["instance_id"]]
        mine = ours[prediction["model_name_or_path"]]
        assert mine["resolved"] == theirs["resolved"], prediction["model_name_or_path"]
        for kind in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            for outcome in ("success", "failure"):
                assert sorted(mine[kind.lower()][outcome]) == sorted(theirs["tests_status"][kind][outcome])
    assert [ours[n]["resolved"] for n in ("gold", "empty", "broken")] == [True, False, False]


def test_official_rows_need_docker_and_an_eval_script(tmp_path, image):
    row = write_official_row(tmp_path / "data", image)
    env = SWEBenchEnv(data_dir=tmp_path / "data")  # bwrap: no image to run the instance in
    with pytest.raises(ConfigError, match="backend='docker'.*" + IMAGE.split("/")[1].split(":")[0]):
        env.reset(seed=0)
    env.close()
    row.pop("eval_script")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "test.jsonl").write_text(json.dumps(row) + "\n")
    env = SWEBenchEnv(data_dir=tmp_path / "other", backend="docker")
    with pytest.raises(DataError, match="eval_script"):
        env.reset(seed=0)
    env.close()


def test_cli_validates_and_grades_an_official_row(tmp_path, image):
    from typer.testing import CliRunner

    from agentgym.cli import app

    row = write_official_row(tmp_path / "data", image)
    runner = CliRunner()
    result = runner.invoke(app, ["swe", "validate", "--data", str(tmp_path / "data"), "--backend", "docker"])
    assert result.exit_code == 0, result.output
    assert "1/1 instances valid on docker" in result.output
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"instance_id": row["instance_id"], "model_patch": row["patch"]}) + "\n")
    result = runner.invoke(app, ["swe", "grade", "--predictions", str(predictions), "--data", str(tmp_path / "data"),
                                 "--backend", "docker"])
    assert result.exit_code == 0 and "resolved 1/1" in result.output, result.output
