"""Every bundled instance proved on each backend, and a user's SWE-bench file graded in a real container."""

from __future__ import annotations

import pytest
from helpers.gates import requires_docker, requires_swe
from helpers.tiny_instance import write_instance

from agentgym.envs.swe.commands import grade_predictions, validate_instances
from agentgym.envs.swe.env import SWEBenchEnv

pytestmark = requires_swe

BACKENDS = [pytest.param("bwrap", id="bwrap"),
            pytest.param("docker", id="docker", marks=[pytest.mark.docker, requires_docker])]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_bundled_instance_is_valid(backend):
    """F2P fail and P2P pass before the gold patch, everything passes after: oracle 100 %, empty patch 0 %."""
    env = SWEBenchEnv(backend=backend)
    try:
        checks = validate_instances(env)
    finally:
        env.close()
    assert len(checks) >= 20
    assert [c.problems for c in checks if not c.ok] == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_users_swe_bench_file_is_graded_through_swebench(tmp_path, backend):
    instance = write_instance(tmp_path / "data")
    env = SWEBenchEnv(data_dir=tmp_path / "data", backend=backend)
    try:
        report = grade_predictions(env, [
            {"instance_id": instance["instance_id"], "model_patch": instance["patch"], "model_name_or_path": "gold"},
        ])
        assert report["resolved_ids"] == [instance["instance_id"]]
        details = report["instances"][instance["instance_id"]]
        assert details["fail_to_pass"]["success"] == ["tests/test_ops.py::test_mean", "tests/test_ops.py::test_mean_empty"]
        empty = grade_predictions(env, [{"instance_id": instance["instance_id"], "model_patch": ""},
                                        {"instance_id": "nope__nope-1", "model_patch": ""}])
        assert empty["unresolved_ids"] == [instance["instance_id"]] and empty["error_ids"] == ["nope__nope-1"]
        # an episode on this backend: reset, the oracle, a resolved verdict
        env.reset(seed=0)
        done = False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.oracle_action())
            done = terminated or truncated
        assert terminated and reward == 1.0
    finally:
        env.close()
