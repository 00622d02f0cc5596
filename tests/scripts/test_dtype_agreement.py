"""scripts/dtype_agreement.py: episode-by-episode agreement of two runs of the same plan."""

from __future__ import annotations

import runpy
from pathlib import Path

from agentgym.eval.plan import plan_episodes
from agentgym.eval.results import load_results
from agentgym.eval.runner import run_plan
from agentgym.eval.suites import SuiteEntry
from agentgym.policies import make_policy

ROOT = Path(__file__).resolve().parents[2]


def _play(path: Path, policy: str) -> list[dict]:
    entries = [SuiteEntry("agentgym/SearchQA-v0", split="test", episodes=3),
               SuiteEntry("agentgym/MathTool-v0", split="test", episodes=2)]
    run_plan(plan_episodes(entries, seed=0), lambda: make_policy(policy, seed=0), results_path=path)
    return list(load_results(path))


def test_agreement_is_counted_per_entry_and_episode(tmp_path):
    compare = runpy.run_path(str(ROOT / "scripts" / "dtype_agreement.py"))["compare"]
    oracle, again, empty = (_play(tmp_path / f"{name}.jsonl", policy)
                            for name, policy in (("a", "oracle"), ("b", "oracle"), ("c", "empty")))
    same = compare(oracle, again)
    assert same["total"] == {"episodes": 5, "same_transcript": 5, "same_first_turn": 5, "same_reward": 5,
                             "correct_fp32": 5, "correct_bf16": 5}
    assert same["entries"]["agentgym/MathTool-v0"]["episodes"] == 2
    apart = compare(oracle, empty)["total"]
    assert apart["episodes"] == 5 and apart["same_transcript"] == apart["same_first_turn"] == 0
    assert apart["same_reward"] == 0 and apart["correct_bf16"] == 0
    assert compare(oracle, empty[:2])["total"]["episodes"] == 2  # only episodes both runs played
