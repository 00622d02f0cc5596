"""A local model plays many episodes at once: one batched generation per turn, results written as episodes end."""

from __future__ import annotations

import json

import pytest
from helpers.gates import requires_server, requires_smollm2
from rich.console import Console

from agentgym.eval.batched import BatchProgress
from agentgym.eval.command import EvalRequest, summary_table
from agentgym.eval.episode import EpisodeResult
from agentgym.eval.leaderboard import make_submission
from agentgym.eval.plan import plan_episodes
from agentgym.eval.results import load_results
from agentgym.eval.runner import run_plan
from agentgym.eval.suites import SuiteEntry
from agentgym.lm.compute import cpu_model, kernel_path
from agentgym.policies import Sampling
from agentgym.policies.hf import make_model_policy

pytestmark = requires_smollm2


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def policy():
    return make_model_policy("smollm2", sampling=Sampling(max_tokens=16))


def _count_generate(monkeypatch):
    from agentgym.lm.rollout import TransformersGenerator

    calls = []
    original = TransformersGenerator.generate

    def counting(self, contexts, **kwargs):
        calls.append(len(contexts))
        return original(self, contexts, **kwargs)

    monkeypatch.setattr(TransformersGenerator, "generate", counting)
    return calls


def test_a_model_plays_its_episodes_in_lockstep(monkeypatch, policy, tmp_path):
    plan = plan_episodes([SuiteEntry("agentgym/SearchQA-v0", "test", 5, {"max_turns": 2})], seed=0)
    calls = _count_generate(monkeypatch)
    progress: list[BatchProgress] = []
    written: list[EpisodeResult] = []
    results = run_plan(plan, lambda: policy, batch_size=3, results_path=tmp_path / "run.jsonl",
                       on_episode=written.append, on_progress=progress.append)
    # 5 episodes of at most 2 turns, 3 at a time: at most 4 generate calls, never one per episode and turn
    assert calls and len(calls) <= 4 and max(calls) == 3 and sum(calls) <= 10
    assert [r.episode for r in results] == [0, 1, 2, 3, 4] and len(written) == 5
    stored = load_results(tmp_path / "run.jsonl")
    assert sorted(r["key"] for r in stored) == sorted(p.key(policy) for p in plan)
    for result in results:
        assert result.error is None and result.model == policy.model and result.policy == "smollm2"
        assert result.transcript[0]["role"] == "user" and result.transcript[1]["role"] == "assistant"
        assert 1 <= result.turns <= 2 and result.completion_tokens > 0 and result.prompt_tokens > 100
        assert result.entry == "agentgym/SearchQA-v0" and result.split == "test"
        assert result.verification and "correct" in result.verification
        # where its time went: the env's work (reset, steps, verification) and the batch's generations
        assert 0 < result.env_s < result.wall_s and 0 < result.generate_s <= result.wall_s
    assert all(r["env_s"] > 0 and r["generate_s"] > 0 for r in stored)
    # live progress: the env, the episodes in flight, tokens within the turn
    assert any(p.tokens > 0 for p in progress)
    assert progress[0].describe().startswith("SearchQA-v0 · episodes 1-3 (3 playing) · turn 1 · ")


def test_greedy_episodes_repeat_in_their_batch_and_record_its_kernel_path(policy):
    """Greedy text is the same for the same batch on the same machine, and each episode records what it may
    depend on beyond that (the batch, the kernel path): an AMD EPYC wrote other text for an episode in a batch
    of 3 than alone, so no test here compares text across batches or machines (agentgym.lm.compute)."""
    plan = plan_episodes([SuiteEntry("agentgym/MathTool-v0", "test", 3, {"max_turns": 1})], seed=0)
    together = run_plan(plan, lambda: policy, batch_size=3)
    again = run_plan(plan, lambda: policy, batch_size=3)
    assert [r.transcript for r in together] == [r.transcript for r in again]
    assert len({r.transcript[1]["content"] for r in together}) > 1  # three episodes, not one replayed
    alone = run_plan(plan[:1], lambda: policy, batch_size=1)
    import torch

    model, _ = policy.load()
    dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
    path = {"kernel": kernel_path(), "dtype": dtype, "batch_size": 3}
    assert [r.compute for r in together] == [{**path, "batch": 3}] * 3
    assert alone[0].compute == {**path, "batch_size": 1, "batch": 1}
    assert path["kernel"].split()[1:3] == [cpu_model()[0] or "unknown-vendor", torch.backends.cpu.get_cpu_capability()]
    # a run whose episodes took one path can be reproducible; one that mixes batch sizes cannot
    records = [r.as_dict() for r in together]
    common = {"suite": "s", "suite_version": "1", "policy": "smollm2", "model": policy.model,
              "sampling": {"temperature": 0.0}, "date": "2026-11-29", "agentgym_version": "0", "git_commit": "abc"}
    one = make_submission(records, **common)
    assert one["flags"]["reproducible"] and one["compute"] == [path]
    mixed = make_submission([alone[0].as_dict(), *records[1:]], **common)
    assert not mixed["flags"]["reproducible"] and [c["batch_size"] for c in mixed["compute"]] == [1, 3]


def test_errored_episodes_are_replayed_and_superseded(policy, tmp_path):
    plan = plan_episodes([SuiteEntry("agentgym/SearchQA-v0", "test", 2, {"max_turns": 1})], seed=0)
    path = tmp_path / "run.jsonl"
    first = run_plan(plan, lambda: policy, results_path=path)
    broken = {**first[1].as_dict(), "error": "RemoteEnvError: connection refused", "reward": 0.0}
    with open(path, "a") as f:
        f.write(json.dumps(broken) + "\n")
    kept = run_plan(plan, lambda: policy, results_path=path, retry_errors=False)
    assert kept[1].error == "RemoteEnvError: connection refused"
    replayed: list[EpisodeResult] = []
    again = run_plan(plan, lambda: policy, results_path=path, on_episode=replayed.append)
    assert [r.episode for r in replayed] == [1] and again[1].error is None
    assert again[1].transcript == first[1].transcript
    assert len(load_results(path)) == 4  # the replay is appended; the latest line of a key wins


def test_the_summary_fits_an_80_column_terminal():
    rows = [EpisodeResult("agentgym/WebShopBrowser-v0", "t", "test", i, "smollm2", 0.5, i % 2 == 0, 3, 1, 0, False,
                          {}, 1.0, entry="agentgym/WebShopBrowser-v0") for i in range(30)]
    rows += [EpisodeResult("agentgym/MathTool-v0", "t", "test", i, "smollm2", 1.0, True, 1, 0, 0, False, {}, 1.0,
                           entry="agentgym/MathTool-v0[arithmetic]", error="boom" if i == 0 else None)
             for i in range(30)]
    request = EvalRequest(policy="hf:/some/long/path/to/a/trained/model/final")
    table, summaries = summary_table(request, request.selection(), rows)
    console = Console(width=80, record=True)
    console.print(table)
    text = console.export_text()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    assert "MathTool-v0[arithmetic]" in text and set(summaries) == {"agentgym/WebShopBrowser-v0",
                                                                      "agentgym/MathTool-v0[arithmetic]"}
    assert summaries["agentgym/MathTool-v0[arithmetic]"]["errors"] == 1


@requires_server
def test_a_judge_failure_keeps_the_answer_on_the_batched_path(monkeypatch, policy, tmp_path):
    """As on the one-episode path: a JudgeError episode records the answer the judge could not score (and the turn
    that gave it), so a later ``eval --rescore`` with a working judge completes it. The model's turn is scripted (its
    text must be an answer); the batched loop, env, rubric and judge server are the real ones."""
    from helpers.judge_server import judge
    from helpers.scripted_generator import ScriptedGenerator

    import agentgym
    from agentgym.core.plugins import register
    from agentgym.core.registry import env_info
    from agentgym.lm.rollout import TransformersGenerator
    from agentgym.rubric import Part, Rubric

    scripted = ScriptedGenerator(policy.load()[1], ["<answer>Paris</answer>"] * 2)
    monkeypatch.setattr(TransformersGenerator, "generate",
                        lambda self, contexts, **kw: scripted.generate(contexts, **kw))
    with judge(reply=lambda user, answers: "no verdict") as (url, _):
        rubric = Rubric(Part("correct", "env"), Part("judge", agentgym.JudgeRubric(criteria="c", model="j",
                                                                                   base_url=url, retries=0)))
        register("test-batched/JudgedSearch-v0", env_info("agentgym/SearchQA-v0").entry_point, rubric=rubric)
        plan = plan_episodes([SuiteEntry("test-batched/JudgedSearch-v0", "test", 2, {"max_turns": 1})], seed=0)
        results = run_plan(plan, lambda: policy, batch_size=2, results_path=tmp_path / "run.jsonl")
    assert all(r.error.startswith("JudgeError") for r in results), [r.error for r in results]
    assert [r.answer for r in results] == ["Paris", "Paris"]
    assert all(r.transcript[-1] == {"role": "assistant", "content": "<answer>Paris</answer>"} for r in results)
