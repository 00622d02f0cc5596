"""pass@k (Chen et al. 2021), mean@k and per-task success over several samples of each task."""

from math import comb

import pytest

from agentgym.eval.stats import pass_at_k, sample_metrics, summarize


@pytest.mark.parametrize(("n", "c", "k", "expected"), [
    (4, 1, 1, 1 / 4),  # pass@1 is the plain success rate
    (4, 1, 2, 1 - 3 / 6),  # 1 - C(3,2)/C(4,2)
    (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2) = 0.7
    (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
    (4, 0, 4, 0.0),
    (4, 4, 4, 1.0),
    (5, 2, 4, 1.0),  # n - c < k: every draw of 4 holds a correct one
])
def test_pass_at_k_hand_computed(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)
    assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 0), (3, 1, 4), (3, -1, 1)])
def test_pass_at_k_rejects_impossible_counts(n, c, k):
    with pytest.raises(ValueError, match="pass@k needs"):
        pass_at_k(n, c, k)


def rollout(episode, sample, correct, error=None):
    return {"episode": episode, "sample": sample, "correct": correct, "reward": float(correct), "error": error}


def test_sample_metrics_over_tasks():
    # task 0: 1 of 4 correct, task 1: 4 of 4, task 2: 0 of 4
    rows = [rollout(0, j, j == 2) for j in range(4)] + [rollout(1, j, True) for j in range(4)]
    rows += [rollout(2, j, False) for j in range(4)]
    m = sample_metrics(rows)
    assert (m["k"], m["tasks"], m["tasks_short"]) == (4, 3, 0)
    assert m["pass_at_k"] == pytest.approx((1 + 1 + 0) / 3)  # pass@4 with n = k: solved at least once
    assert m["mean_at_k"] == pytest.approx((0.25 + 1 + 0) / 3)
    s = summarize(rows)
    assert s["per_task"] == {"0": [1, 4], "1": [4, 4], "2": [0, 4]} and s["samples"] == 4
    assert s["success_rate"] == pytest.approx(5 / 12)


def test_an_errored_sample_is_excluded_and_its_task_left_out_of_pass_at_k():
    rows = [rollout(0, 0, True), rollout(0, 1, False, error="PolicyError: 503"), rollout(1, 0, False),
            rollout(1, 1, True)]
    m = sample_metrics(rows)
    assert (m["k"], m["tasks_short"]) == (2, 1)
    assert m["pass_at_k"] == 1.0  # only task 1 has both samples scored; pass@2 of 1 in 2 = 1
    assert m["mean_at_k"] == pytest.approx((1.0 + 0.5) / 2)
    s = summarize(rows)
    assert (s["episodes"], s["scored"], s["errors"], s["success_rate"]) == (4, 3, 1, pytest.approx(2 / 3))


def test_one_sample_per_task_gives_pass_at_1_equal_to_success():
    rows = [rollout(i, 0, i % 2 == 0) for i in range(6)]
    s = summarize(rows)
    assert s["samples"] == 1 and s["pass_at_k"] == s["mean_at_k"] == s["success_rate"] == 0.5
