"""The verifier budget: a verification past its time or memory budget is a failed Score, never a hang;
bad gold still raises; the caller's threads are never signalled; workers are replaced after an overrun."""

import threading
import time
from pathlib import Path

import pytest
from helpers.gates import requires_math_verify

from helpers import verifier_helpers
from agentgym.errors import ConfigError, VerifierError
from agentgym.eval.stats import summarize
from agentgym.verifiers import verify_math
from agentgym.verifiers.budget import OVER_BUDGET, budget_seconds, over_budget, run_budgeted, shutdown_workers

SLACK_S = 10.0  # a loaded CI machine: starting a replacement worker imports sympy


@pytest.fixture
def helpers_on_worker_path(monkeypatch):
    """Workers started from here can import tests/verifier_helpers.py."""
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[1]))
    shutdown_workers()
    yield
    shutdown_workers()


def test_a_verification_past_its_budget_fails_in_time(helpers_on_worker_path):
    start = time.perf_counter()
    score = run_budgeted(verifier_helpers.big_integer, 10**9, budget_s=1.0, verifier="slow")
    elapsed = time.perf_counter() - start
    assert (score.reward, score.correct) == (0.0, False)
    assert score.details == {"reason": OVER_BUDGET, "budget_exceeded": True, "budget_s": 1.0, "verifier": "slow"}
    assert elapsed < 1.0 + SLACK_S, elapsed
    assert over_budget(score.as_dict())
    # the worker was killed and replaced: the next verification gets an answer
    assert run_budgeted(verifier_helpers.quick, "after", budget_s=30).details["value"] == "after"


def test_memory_past_the_budget_is_a_failure(helpers_on_worker_path, monkeypatch):
    monkeypatch.setenv("AGENTGYM_VERIFIER_MEMORY_MB", "1024")
    shutdown_workers()
    score = run_budgeted(verifier_helpers.allocate, 2048, budget_s=30)
    assert score.reward == 0.0 and score.details["reason"] == "verifier memory budget exceeded"
    assert run_budgeted(verifier_helpers.allocate, 16, budget_s=30).correct  # the worker lives on


def test_a_crashed_worker_is_a_failure_and_is_replaced(helpers_on_worker_path):
    score = run_budgeted(verifier_helpers.crash, budget_s=30)
    assert score.reward == 0.0 and score.details["reason"] == "the verifier process crashed (exit code 3)"
    assert run_budgeted(verifier_helpers.quick, "x", budget_s=30).correct


def test_workers_are_reused_between_verifications(helpers_on_worker_path, monkeypatch):
    monkeypatch.setenv("AGENTGYM_VERIFIER_WORKERS", "1")
    pids = {run_budgeted(verifier_helpers.quick, str(i), budget_s=30).details["pid"] for i in range(20)}
    assert len(pids) == 1


def test_budgets_hold_on_many_threads_without_signals(helpers_on_worker_path, monkeypatch):
    """Slow and quick verifications from 8 threads: the slow ones fail at their budget, the quick ones pass."""
    monkeypatch.setenv("AGENTGYM_VERIFIER_WORKERS", "2")
    results: dict[int, tuple[float, float]] = {}

    def verify(i: int) -> None:
        start = time.perf_counter()
        if i % 2:
            score = run_budgeted(verifier_helpers.big_integer, 10**9, budget_s=1.0)
        else:
            score = run_budgeted(verifier_helpers.quick, str(i), budget_s=30)
        results[i] = (score.reward, time.perf_counter() - start)

    threads = [threading.Thread(target=verify, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert {i: r for i, (r, _) in results.items()} == {i: float(i % 2 == 0) for i in range(8)}
    # 4 overruns of 1 s on 2 workers, plus replacements: far below 4 x 5 s, and nothing hung
    assert max(s for _, s in results.values()) < 4 + 2 * SLACK_S


def test_budget_off_runs_in_the_calling_process(monkeypatch):
    monkeypatch.setenv("AGENTGYM_VERIFIER_BUDGET_S", "off")
    local = []

    def not_importable(x):  # a worker could not import this: it must run here
        local.append(x)
        return verifier_helpers.quick(x)

    assert run_budgeted(not_importable, "here").correct and local == ["here"]


@pytest.mark.parametrize("value, expected", [(None, 5.0), (2, 2.0), (0, None), (0.5, 0.5)])
def test_budget_seconds(value, expected):
    assert budget_seconds(value) == expected


@pytest.mark.parametrize("value", [-1, float("nan"), "5", True])
def test_a_bad_budget_is_a_config_error(value):
    with pytest.raises(ConfigError, match="budget"):
        budget_seconds(value)


def test_a_bad_budget_in_the_environment_is_a_config_error(monkeypatch):
    monkeypatch.setenv("AGENTGYM_VERIFIER_BUDGET_S", "soon")
    with pytest.raises(ConfigError, match="AGENTGYM_VERIFIER_BUDGET_S"):
        budget_seconds()


@requires_math_verify
def test_bad_gold_still_raises_through_the_worker():
    with pytest.raises(VerifierError, match="gold"):
        verify_math("5", "#@!")


@requires_math_verify
def test_a_real_slow_math_verification_is_cut_at_its_budget():
    """sympy spends minutes (260 s measured) comparing these sets; the budget ends it."""
    start = time.perf_counter()
    score = verify_math(r"\{(a+b+c+d)^{40}, 1\}", r"\{(a+b+c+d+1)^{40}, 1\}", budget_s=1.0)
    assert score.details["reason"] == OVER_BUDGET and score.reward == 0.0
    assert time.perf_counter() - start < 1.0 + SLACK_S
    assert verify_math("5", "5").correct


@requires_math_verify
def test_an_env_reports_an_overrun_in_its_info_and_the_eval_counts_it(tmp_path):
    import gymnasium as gym

    data = tmp_path / "test.jsonl"
    data.write_text('{"problem": "Expand it.", "answer": "\\\\{(a+b+c+d+1)^{40}, 1\\\\}"}\n')
    env = gym.make("agentgym/MathTool-v0", files={"test": str(data)}, verifier_budget_s=1.0)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(r"<answer>\{(a+b+c+d)^{40}, 1\}</answer>")
    env.close()
    assert terminated and reward == 0.0 and over_budget(info["verification"])
    row = {"reward": 0.0, "correct": False, "turns": 1, "verification": info["verification"]}
    assert summarize([row, {**row, "verification": {"details": {}}}])["verifier_over_budget"] == 1


@requires_math_verify
def test_an_env_rejects_a_bad_budget_when_made():
    import gymnasium as gym

    with pytest.raises(ConfigError, match="budget"):
        gym.make("agentgym/MathTool-v0", verifier_budget_s=-1)
