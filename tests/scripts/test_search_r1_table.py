"""scripts/search_r1_table.py: the Search-R1 recipe's held-out table from real eval results files."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from agentgym.eval.plan import plan_episodes
from agentgym.eval.runner import run_plan
from agentgym.eval.suites import SuiteEntry
from agentgym.policies import make_policy

ROOT = Path(__file__).resolve().parents[2]


def _play(path: Path, policy: str, **env_kwargs) -> None:
    plan = plan_episodes([SuiteEntry("agentgym/SearchQA-v0", split="test", episodes=6, env_kwargs=env_kwargs)], seed=0)
    run_plan(plan, lambda: make_policy(policy, seed=0), results_path=path)


def test_table_counts_exact_match_searches_types_and_pairs(tmp_path, capsys):
    _play(tmp_path / "oracle.jsonl", "oracle")
    _play(tmp_path / "nosearch.jsonl", "oracle", search=False)
    _play(tmp_path / "empty.jsonl", "empty")
    main = runpy.run_path(str(ROOT / "scripts" / "search_r1_table.py"))["main"]
    main([f"empty={tmp_path / 'empty.jsonl'}", f"oracle={tmp_path / 'oracle.jsonl'}",
          f"nosearch={tmp_path / 'nosearch.jsonl'}"])
    rows = {line.split(" | ")[0].lstrip("| "): line for line in capsys.readouterr().out.splitlines()[2:]}
    assert "| 0/6 = 0.0% " in rows["empty"] and "| 0/6 |" in rows["empty"] and rows["empty"].endswith("+0 / -0 |")
    assert "| 6/6 = 100.0% " in rows["oracle"] and "| 6/6 |" in rows["oracle"]  # every oracle episode searches
    assert all("| 0/6 | +" in row for row in rows.values())  # no episode writes retrieved text
    assert rows["oracle"].endswith("+6 / -0 |")
    assert "| 6/6 = 100.0% " in rows["nosearch"] and "| 0/6 |" in rows["nosearch"]  # the oracle answers at once
    with pytest.raises(SystemExit, match="usage"):
        main(["no-equals-sign"])
    main(["--tasks=2:5", f"oracle={tmp_path / 'oracle.jsonl'}", f"empty={tmp_path / 'empty.jsonl'}"])
    rows = {line.split(" | ")[0].lstrip("| "): line for line in capsys.readouterr().out.splitlines()[2:]}
    assert "| 3/3 = 100.0% " in rows["oracle"] and "| 0/3 = 0.0% " in rows["empty"]  # the split's tasks 2, 3, 4
    assert rows["empty"].endswith("+0 / -3 |")
    with pytest.raises(SystemExit, match=r"usage: --tasks=A:B"):
        main(["--tasks=200-400", f"oracle={tmp_path / 'oracle.jsonl'}"])


def test_writing_retrieved_text_is_seen_in_the_models_turns_only():
    writes = runpy.run_path(str(ROOT / "scripts" / "search_r1_table.py"))["writes_passages"]
    passage = "Doc 1 (Title: Kushinagar) Kushinagar is a city of India. It has a population of 274,403."
    task = {"role": "user", "content": "Question: Kushinagar is a city of India. It has a population of what?"}
    shown = [task, {"role": "assistant", "content": "<search>Kushinagar</search>"},
             {"role": "tool", "content": f"<information>{passage}</information>"}]
    assert not writes(shown + [{"role": "assistant", "content": "<answer>India</answer>"}])
    assert writes(shown + [{"role": "assistant", "content": "<search>is a city of India. It has a population "
                                                             "of</search>"}])  # 8 words of the passage
    assert writes(shown + [{"role": "assistant", "content": "<information>Lima</information>"}])  # the tool's tags
    assert writes([task, {"role": "assistant", "content": "Doc 2 (Title: Lima) Lima is the capital"}])
    # an observation that is no passage (a format error's text) is not retrieved text
    error = {"role": "tool", "content": "No valid action found in your output. Write exactly one action per turn."}
    assert not writes([task, {"role": "assistant", "content": "Lima"}, error,
                       {"role": "assistant", "content": "No valid action found in your output. Write exactly one"}])
    # the task's own words are no observation: repeating the question is not copying retrieved text
    assert not writes([task, {"role": "assistant", "content": "<search>Kushinagar is a city of India. It has a "
                                                              "population of</search>"}])
