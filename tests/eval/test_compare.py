"""``agentgym compare``: two runs paired by task, B - A with a paired bootstrap interval and a sign-flip test."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentgym.errors import ConfigError
from agentgym.eval.compare import compare_runs, paired_test, task_means


def rows(outcomes, env="e", error_at=()):
    return [{"env_id": env, "task_id": f"t{i}", "correct": bool(c), "reward": float(c),
             "error": "boom" if i in error_at else None} for i, c in enumerate(outcomes)]


def test_the_sign_flip_p_is_the_exact_one_and_the_interval_covers_the_difference():
    # 3 tasks, each +1: of the 2^3 sign patterns, 2 reach |mean| >= 1, so p = 1/4; 5 tasks: 1/16
    assert paired_test([1.0] * 3, resamples=20_000)["p_value"] == pytest.approx(0.25, abs=0.02)
    five = paired_test([1.0] * 5, resamples=20_000)
    assert five["p_value"] == pytest.approx(1 / 16, abs=0.01) and five["significant"] is False
    mixed = paired_test([1, 0, 0, 1, -1, 0, 1, 1, 0, 1] * 3)
    low, high = mixed["interval"]
    assert mixed["difference"] == pytest.approx(0.4) and mixed["tasks"] == 30
    assert low < mixed["difference"] < high
    assert paired_test([0.0] * 40)["p_value"] == 1.0


def test_pairing_by_task_finds_what_two_means_cannot():
    """B solves every task A solves and 8 more of 40: the means (0.5 vs 0.7) have wide intervals, but paired by
    task every difference is >= 0: significant. The same outcomes shuffled across tasks: not."""
    a = [1] * 20 + [0] * 20
    b = [1] * 28 + [0] * 12
    result = compare_runs(rows(a), rows(b))
    assert result["difference"] == pytest.approx(0.2) and result["significant"] and result["interval"][0] > 0
    shuffled = [1, 0] * 14 + [0] * 12
    assert not compare_runs(rows(a), rows(shuffled))["significant"]


def test_repeats_count_once_at_their_mean_and_unpaired_or_errored_episodes_are_left_out():
    a = rows([1, 0, 1]) + rows([1, 1, 1])  # each task twice: means 1, 0.5, 1
    assert task_means(a) == {("e", "t0"): 1.0, ("e", "t1"): 0.5, ("e", "t2"): 1.0}
    b = rows([1, 1, 1, 1], error_at=(0,))  # t0 errored: not scored; t3 only in B
    result = compare_runs(a, b)
    assert (result["tasks"], result["only_a"], result["only_b"]) == (2, 1, 1)
    assert result["a_mean"] == 0.75 and result["b_mean"] == 1.0
    with pytest.raises(ConfigError, match="no task was scored in both runs"):
        compare_runs(rows([1]), rows([1], env="other"))
    with pytest.raises(ConfigError, match="metric"):
        compare_runs(a, b, metric="accuracy")


def test_several_envs_are_compared_together_and_each_alone():
    a, b = rows([0] * 10, env="x") + rows([1] * 10, env="y"), rows([1] * 10, env="x") + rows([1] * 10, env="y")
    result = compare_runs(a, b)
    assert result["tasks"] == 20 and result["difference"] == 0.5
    assert result["envs"]["x"]["significant"] and result["envs"]["y"]["difference"] == 0.0


@pytest.mark.slow
def test_the_command_on_real_runs_says_significant_or_not_and_writes_json(tmp_path):
    """The oracle against the random policy on MathTool: significant; the oracle against a second run of itself
    (the same settings): not; exit 0 either way; a missing file or a bad level: exit 2 with one line."""
    def cli(*args, check=True):
        done = subprocess.run([sys.executable, "-m", "agentgym.cli", *args], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path)
        assert not check or done.returncode == 0, done.stderr
        return done

    for name, policy in (("oracle", "oracle"), ("oracle2", "oracle"), ("random", "random")):
        cli("eval", "--env", "agentgym/MathTool-v0", "--policy", policy, "--episodes", "12", "--results",
            f"{name}.jsonl")
    done = cli("compare", "random.jsonl", "oracle.jsonl", "--json", "better.json")
    better = json.loads((tmp_path / "better.json").read_text())
    assert better["significant"] is True and better["difference"] == 1.0 and better["interval"] == [1.0, 1.0]
    assert "B - A +1.000 [+1.000, +1.000]" in done.stdout and "significant at 0.05" in done.stdout
    done = cli("compare", "oracle.jsonl", "oracle2.jsonl", "--json", "same.json")
    same = json.loads((tmp_path / "same.json").read_text())
    assert same["significant"] is False and same["difference"] == 0.0 and "not significant" in done.stdout
    for bad, message in ((["oracle.jsonl", "missing.jsonl"], "no such results file"),
                         (["oracle.jsonl", "random.jsonl", "--level", "5"], "--level must be between 0 and 1")):
        done = cli("compare", *bad, check=False)
        assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1, done.stderr
