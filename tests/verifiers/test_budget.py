"""The verifier budget: a verification past its time or memory budget is a failed Score, never a hang;
bad gold still raises; the caller's threads are never signalled; workers are replaced after an overrun; a
verification that cannot start within its budget is an infrastructure error, and one client cannot hold
every worker."""

import json
import pickle
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers.gates import requires_math_verify

from helpers import verifier_helpers
from agentgym.errors import ConfigError, RolloutError, VerifierError
from agentgym.eval.stats import summarize
from agentgym.verifiers import verify_math
from agentgym.verifiers.budget import (
    OVER_BUDGET,
    VerifierUnavailable,
    budget_seconds,
    over_budget,
    run_budgeted,
    shutdown_workers,
    verifying_for,
)

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
    # the worker's start (sympy's import) is in it too: 6-8 s on 2 busy cores, 12.8 s at load 5; the verification
    # alone would run for minutes
    assert elapsed < 1.0 + 3 * SLACK_S, elapsed
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
    """Slow and quick verifications from 8 threads: a slow one fails at its budget, or could not start within it
    (4 of 1 s on 2 workers); the quick ones, with a budget that covers the wait, pass."""
    monkeypatch.setenv("AGENTGYM_VERIFIER_WORKERS", "2")
    results: dict[int, tuple[object, float]] = {}

    def verify(i: int) -> None:
        start = time.perf_counter()
        try:
            if i % 2:
                outcome: object = run_budgeted(verifier_helpers.big_integer, 10**9, budget_s=1.0).details["reason"]
            else:
                outcome = run_budgeted(verifier_helpers.quick, str(i), budget_s=30).reward
        except VerifierUnavailable:
            outcome = "unavailable"
        results[i] = (outcome, time.perf_counter() - start)

    threads = [threading.Thread(target=verify, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(results) == list(range(8))
    assert all(results[i][0] == 1.0 for i in range(0, 8, 2))
    assert all(results[i][0] in (OVER_BUDGET, "unavailable") for i in range(1, 8, 2))
    assert any(results[i][0] == OVER_BUDGET for i in range(1, 8, 2))
    # overruns of 1 s on 2 workers, plus replacements: far below 4 x 5 s, and nothing hung
    assert max(s for _, s in results.values()) < 4 + 2 * SLACK_S


def _in_background(fn, *args, **kwargs) -> Future:
    pool = ThreadPoolExecutor(1)
    future = pool.submit(fn, *args, **kwargs)
    pool.shutdown(wait=False)
    return future


def _as_client(client, fn, *args, **kwargs):
    with verifying_for(client):
        return fn(*args, **kwargs)


@pytest.fixture
def one_worker(helpers_on_worker_path, monkeypatch):
    """One verifier worker, already started (its start-up is outside every timing)."""
    monkeypatch.setenv("AGENTGYM_VERIFIER_WORKERS", "1")
    assert run_budgeted(verifier_helpers.quick, "warm", budget_s=120).correct


def test_a_verification_that_cannot_start_within_its_budget_is_an_infrastructure_error(one_worker):
    holder = _in_background(run_budgeted, verifier_helpers.sleep, 3.0, budget_s=30)
    time.sleep(0.5)  # the holder has the only worker
    start = time.perf_counter()
    with pytest.raises(VerifierUnavailable, match="could not start within its 0.5 s budget") as caught:
        run_budgeted(verifier_helpers.quick, "x", budget_s=0.5, verifier="quick")
    waited = time.perf_counter() - start
    assert 0.5 <= waited < 0.5 + 2.0, waited
    # never a Score: a RolloutError, which fails its episode instead of scoring it 0
    assert isinstance(caught.value, VerifierError) and isinstance(caught.value, RolloutError)
    assert caught.value.retry_after_s == 0.5
    assert pickle.loads(pickle.dumps(caught.value)).retry_after_s == 0.5  # crosses a Ray actor's boundary
    assert holder.result(timeout=60).correct  # the verification holding the worker was not disturbed
    assert run_budgeted(verifier_helpers.quick, "y", budget_s=0.5).correct  # the worker is free again


def test_a_verification_that_waited_still_has_its_whole_budget_to_run(one_worker):
    """The budget bounds the wait to start and, once started, the run: the verdict does not depend on the load."""
    holder = _in_background(run_budgeted, verifier_helpers.sleep, 1.5, budget_s=30)
    time.sleep(0.2)
    start = time.perf_counter()
    score = run_budgeted(verifier_helpers.sleep, 1.2, budget_s=2.0)  # waits ~1.3 s, then runs 1.2 s
    assert time.perf_counter() - start > 2.0  # longer than the budget in all
    assert score.correct and not over_budget(score.as_dict())
    assert holder.result(timeout=60).correct


def test_one_client_holds_all_workers_but_one(helpers_on_worker_path, monkeypatch):
    """A client's slow verifications run on one of 2 workers, one at a time; another client's verification
    starts at once. This process's own callers (no client) are not limited: 2 of them run together."""
    monkeypatch.setenv("AGENTGYM_VERIFIER_WORKERS", "2")
    for seconds in (0.5, 3.0):  # the first round starts both workers (sympy's import), the second is timed
        start = time.perf_counter()
        both = [_in_background(run_budgeted, verifier_helpers.sleep, seconds, budget_s=120) for _ in range(2)]
        assert all(f.result(timeout=120).correct for f in both)
    both_s = time.perf_counter() - start
    start = time.perf_counter()
    hog = [_in_background(_as_client, "hog", run_budgeted, verifier_helpers.sleep, 6.0, budget_s=30)
           for _ in range(2)]
    time.sleep(0.3)
    other_start = time.perf_counter()
    assert _as_client("other", run_budgeted, verifier_helpers.quick, "x", budget_s=30).correct
    other_s = time.perf_counter() - other_start
    assert all(f.result(timeout=60).correct for f in hog)
    hog_s = time.perf_counter() - start
    # bounds with room for a machine 5x slower, each well under what the other outcome would take
    assert other_s < 3.0, other_s  # on the worker the hog may not take, not after one of its 6 s verifications
    assert hog_s >= 12.0, hog_s  # one at a time
    assert both_s < 5.0, both_s  # at once (one after the other: 6 s)


def test_an_episode_whose_verifier_cannot_start_is_an_error_not_a_wrong_answer(one_worker, tmp_path):
    """In process, the env's step raises: the eval records the episode as an error (and a trainer as failed,
    leaving it out of training); it is never a verification with reward 0. (Gold answers past the in-process
    bounds, so that the verification goes to the worker.)"""
    import agentgym
    from agentgym.eval.episode import run_episode
    from agentgym.policies import make_policy

    qa = tmp_path / "test.jsonl"
    qa.write_text(json.dumps({"question": "What is the capital of Peru?", "golden_answers": ["Lima", "x" * 9000]}))
    env = agentgym.make("agentgym/SearchQA-v0", qa_files={"test": str(qa)}, verifier_budget_s=0.5)
    holder = _in_background(run_budgeted, verifier_helpers.sleep, 4.0, budget_s=30)
    time.sleep(0.5)
    result = run_episode(env, make_policy("oracle"), seed=0)
    assert result.error is not None and result.error.startswith("VerifierUnavailable: "), result.error
    assert result.verification == {} and not over_budget(result.verification)
    assert summarize([result])["errors"] == 1
    assert holder.result(timeout=60).correct
    solved = run_episode(env, make_policy("oracle"), seed=0)  # the worker is free: the same episode scores
    assert solved.error is None and solved.reward == 1.0
    env.close()


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


def _started_workers(monkeypatch) -> list[int]:
    """The pids of the verifier workers started from now on."""
    from agentgym.verifiers import budget

    started: list[int] = []

    class Counted(budget._Worker):
        def __init__(self, memory_mb: int) -> None:
            super().__init__(memory_mb)
            started.append(self.process.pid)

    monkeypatch.setattr(budget, "_Worker", Counted)
    return started


def _wait_for(predicate, timeout_s: float = 60 + SLACK_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_prewarm_starts_the_pools_workers_in_the_background(helpers_on_worker_path, monkeypatch):
    from agentgym.verifiers import budget

    monkeypatch.setenv("AGENTGYM_VERIFIER_WORKERS", "2")
    started = _started_workers(monkeypatch)
    start = time.perf_counter()
    budget.prewarm_workers()
    assert time.perf_counter() - start < 0.5  # the caller goes on at once
    _wait_for(lambda: len(started) == 2 and not budget._POOL._warming)
    assert run_budgeted(verifier_helpers.quick, "x", budget_s=30).details["pid"] in started  # no start: a warm one
    budget.prewarm_workers()  # the pool is full: nothing more starts
    _wait_for(lambda: not budget._POOL._warming)
    assert len(started) == 2


def test_a_verification_during_a_prewarm_waits_for_its_worker_rather_than_starting_one(helpers_on_worker_path,
                                                                                       monkeypatch):
    from agentgym.verifiers import budget

    monkeypatch.setenv("AGENTGYM_VERIFIER_WORKERS", "1")
    started = _started_workers(monkeypatch)
    budget.prewarm_workers()
    score = run_budgeted(verifier_helpers.quick, "x", budget_s=30)  # the worker is still starting
    assert score.correct and started == [score.details["pid"]]


@pytest.mark.parametrize("setting", ["local", "off", "bad"])
def test_no_prewarm_where_nothing_verifies_here(helpers_on_worker_path, monkeypatch, setting):
    from agentgym.verifiers import budget

    started = _started_workers(monkeypatch)
    if setting == "off":
        monkeypatch.setenv("AGENTGYM_VERIFIER_BUDGET_S", "off")
    if setting == "bad":  # the first verification says what is wrong, as without a pre-warm
        monkeypatch.setenv("AGENTGYM_VERIFIER_WORKERS", "many")
    budget.prewarm_workers(local=setting != "local")
    time.sleep(0.5)
    assert started == [] and not budget._POOL._warming
