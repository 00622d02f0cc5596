"""``eval --rescore`` scores as the run did: the env's rubric over its own verdict, transcript parts on the stored
transcript, and episodes the judge failed completed once it answers."""

from __future__ import annotations

import json

from helpers.gates import requires_search, requires_server
from helpers.judge_server import judge

import agentgym
from agentgym.core.plugins import register
from agentgym.core.registry import env_info
from agentgym.eval.plan import plan_episodes
from agentgym.eval.rescore import rescore
from agentgym.eval.runner import run_plan
from agentgym.eval.suites import SuiteEntry
from agentgym.policies.base import OraclePolicy
from agentgym.rubric import Part, Rubric, tags_format

pytestmark = requires_search
SEARCH = "agentgym/SearchQA-v0"


def _cites(answer, task):
    return "[" in (answer or "")


def _run_and_rescore(tmp_path, env_id, rubric):
    register(env_id, env_info(SEARCH).entry_point, rubric=rubric)
    results = tmp_path / "r.jsonl"
    run_plan(plan_episodes([SuiteEntry(env_id, episodes=2)], seed=0), OraclePolicy, results_path=results)
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    return rows, rescore(results, {env_id: (env_id, {})})


def test_rescoring_with_the_runs_own_gate_changes_nothing(tmp_path):
    """A SearchQA run with a citation gate scored 0 (the oracle cites nothing); rescoring used to skip the rubric and
    gave 1.0."""
    rows, report = _run_and_rescore(tmp_path, "test-rescore/GatedSearch-v0",
                                    Rubric(Part("correct", "env"), Part("cites", _cites, gate=True)))
    assert [r["reward"] for r in rows] == [0.0, 0.0] and [r["error"] for r in rows] == [None, None]
    assert report.rescored == 2 and report.changed == 0 and report.new_mean == 0.0


def test_a_transcript_part_reads_the_stored_transcript(tmp_path):
    """A format part over the transcript: the run scored 1.0; rescoring used to see an empty transcript (0.5)."""
    rows, report = _run_and_rescore(tmp_path, "test-rescore/FormattedSearch-v0",
                                    Rubric(Part("correct", "env"), Part("format", tags_format, on="transcript")))
    assert [r["reward"] for r in rows] == [1.0, 1.0]
    assert report.rescored == 2 and report.changed == 0 and report.new_mean == 1.0


@requires_server
def test_an_episode_the_judge_failed_is_completed_by_a_later_rescore(tmp_path):
    answering = {"now": False}

    def reply(user, answers):
        return "SCORE: 8" if answering["now"] else "no verdict"

    with judge(reply=reply) as (url, _):
        rubric = Rubric(Part("correct", "env"), Part("judge", agentgym.JudgeRubric(criteria="c", model="j",
                                                                                   base_url=url, retries=0)))
        rows, report = _run_and_rescore(tmp_path, "test-rescore/JudgedSearch-v0", rubric)
        assert all(r["error"].startswith("JudgeError") for r in rows) and report.completed == 0
        assert all(r["answer"] and r["transcript"][-1]["role"] == "assistant" for r in rows)  # the answer kept
        assert report.copied == 2  # still failing: kept as they were
        answering["now"] = True
        report = rescore(tmp_path / "r.jsonl", {"test-rescore/JudgedSearch-v0": ("test-rescore/JudgedSearch-v0",
                                                                                   {})})
    assert report.completed == 2 and report.rescored == 2
    rescored = [json.loads(line) for line in report.path.read_text().splitlines()]
    assert [r["error"] for r in rescored] == [None, None]
    assert [r["reward"] for r in rescored] == [0.9, 0.9]  # (1.0 + 0.8) / 2: the env's verdict and the judge's
    assert all(r["rescored"]["error"].startswith("JudgeError") for r in rescored)
