"""scripts/tool_call_rate.py: the base model's tool-call rate on a recipe, through the trainer's rollout code."""

from __future__ import annotations

import json
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gates import requires_smollm2, requires_train

pytestmark = [requires_smollm2, requires_train, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def test_the_tool_use_recipe_base_model_calls_the_tool_on_a_held_out_problem(tmp_path):
    """Greedy, the default model with the recipe's worked-example system prompt solves held-out problem 0
    (1497 * 3340) through the tool; without the system prompt it never calls the tool. No model text is compared
    with text recorded elsewhere (it differs between CPUs): the report must agree with its own episodes, and the
    interpreter's observation must be what the model's own code prints."""
    main = runpy.run_path(str(ROOT / "scripts" / "tool_call_rate.py"))["main"]
    recipe = str(ROOT / "docs" / "training" / "mathtool-tooluse.yaml")
    out = tmp_path / "episodes.jsonl"
    report = main(["--config", recipe, "--split", "test", "--tasks", "1", "--samples", "2", "--temperature", "0",
                   "--episodes-out", str(out)])
    episodes = [json.loads(line) for line in out.read_text().splitlines()]
    assert report["episodes"] == len(episodes) == 2 and report["groups"] == 1
    assert report["tool_call_rate"] == sum(e["tool_calls"] > 0 for e in episodes) / 2
    assert report["success"] == sum(e["reward"] == 1.0 for e in episodes) / 2
    assert report["tool_call_rate"] == report["success"] == report["success_with_tool"] == 1.0
    first = episodes[0]
    code = re.fullmatch(r"\s*<code>(.*?)</code>\s*", first["turns"][0], re.S)
    assert code, first["turns"][0]  # the first turn is one tool call
    printed = subprocess.run([sys.executable, "-c", code.group(1)], capture_output=True, text=True, timeout=60)
    assert printed.stdout.strip() and printed.stdout.strip() in first["observations"][0]
    assert "4999980" in first["observations"][0]  # 1497 * 3340, computed by the interpreter
    bare = main(["--config", recipe, "--split", "test", "--tasks", "1", "--samples", "1", "--temperature", "0",
                 "--no-system-prompt"])
    assert bare["tool_call_rate"] == bare["success"] == 0.0
