"""Ray: a plan run on a local Ray cluster gives the same episodes as the local runner, and resumes."""

from __future__ import annotations

import pytest
from helpers.gates import requires_ray

from agentgym.eval.distributed import run_plan_on_ray
from agentgym.policies import make_policy
from agentgym.eval.plan import plan_episodes
from agentgym.eval.results import load_results
from agentgym.eval.runner import run_plan
from agentgym.eval.suites import SuiteEntry

pytestmark = requires_ray

ENTRIES = [SuiteEntry("agentgym/SearchQA-v0", "test", 5), SuiteEntry("agentgym/MathTool-v0", "test", 4)]


def content(results):
    return [{k: v for k, v in r.as_dict().items() if k not in ("wall_s", "env_s", "generate_s")} for r in results]


@pytest.fixture(scope="module")
def ray_cluster():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["oracle", "random"])
def test_ray_run_matches_the_local_run(ray_cluster, policy, tmp_path):
    plan = plan_episodes(ENTRIES, seed=3)
    local = run_plan(plan, lambda: make_policy(policy, seed=3))
    on_ray = run_plan_on_ray(plan, policy, seed=3, results_path=tmp_path / "ray.jsonl")
    assert len(on_ray) == len(plan)
    assert content(on_ray) == content(local)
    assert [r["key"] for r in load_results(tmp_path / "ray.jsonl")] != []


@pytest.mark.slow
def test_ray_run_resumes_a_results_file(ray_cluster, tmp_path):
    plan = plan_episodes(ENTRIES, seed=0)
    path = tmp_path / "run.jsonl"
    run_plan(plan[:4], lambda: make_policy("random", seed=0), results_path=path)
    seen = []
    results = run_plan_on_ray(plan, "random", seed=0, results_path=path, on_episode=seen.append)
    assert len(seen) == len(plan) - 4
    keys = [r["key"] for r in load_results(path)]
    assert len(keys) == len(set(keys)) == len(plan)
    assert [r.key for r in results] == [p.key(make_policy("random", seed=0)) for p in plan]


@pytest.mark.slow
def test_cli_ray_flag(ray_cluster, tmp_path):
    import json

    from typer.testing import CliRunner

    from agentgym.cli import app

    out = tmp_path / "s.json"
    result = CliRunner().invoke(app, ["eval", "--policy", "oracle", "--env", "agentgym/PyCode-v0", "--episodes", "3",
                                      "--ray", "local", "--results", str(tmp_path / "r.jsonl"),
                                      "--summary-json", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["agentgym/PyCode-v0"]["success_rate"] == 1.0
