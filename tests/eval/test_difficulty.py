"""Difficulty cards (``agentgym difficulty``): per task, the pass rate of reference policies, levels by the
reference model's, the card's JSON and histogram, and ``--show``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers.gates import requires_code, requires_smollm2

from agentgym.eval.difficulty import LEVELS, Card, card_path, measure, render

SEARCH, MATH = "agentgym/SearchQA-v0", "agentgym/MathTool-v0"


def _card(rates: dict[str, float], reference: str = "model") -> Card:
    return Card(env_id=SEARCH, env_version="v0", env_digest="d" * 16, split="test", tasks=list(rates),
                pass_rates={"oracle": dict.fromkeys(rates, 1.0), reference: rates},
                samples={"oracle": 1, reference: 4}, reference=reference, temperature=1.0, seed=0)


def test_levels_are_set_by_the_reference_models_pass_rate():
    card = _card({"a": 0.0, "b": 0.2, "c": 0.25, "d": 0.5, "e": 0.74, "f": 0.75, "g": 1.0})
    assert card.levels() == {"easy": ["f", "g"], "medium": ["c", "d", "e"], "hard": ["a", "b"]}
    assert set(LEVELS) == {"easy", "medium", "hard"}
    again = Card.from_json(json.loads(json.dumps(card.to_json())))
    assert again == card and again.to_json()["mean_pass_rate"]["oracle"] == 1.0


def test_oracle_and_random_measured_on_real_episodes(tmp_path):
    played = []
    card = measure(SEARCH, tasks=4, samples=2, policies=("oracle", "random"),
                   on_play=lambda name, done, of: played.append((name, done, of)))
    assert played == [("oracle", 1, 1), ("random", 1, 2), ("random", 2, 2)]
    assert card.split == "test" and len(card.tasks) == 4 and card.samples == {"oracle": 1, "random": 2}
    assert set(card.pass_rates["oracle"].values()) == {1.0}  # the oracle solves every task
    assert set(card.pass_rates["random"].values()) == {0.0}
    assert card.reference == "random" and card.levels()["hard"] == card.tasks  # no model named: the last policy
    path, png = card.write(tmp_path)
    assert path == card_path(tmp_path, SEARCH) and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert Card.from_json(json.loads(path.read_text())) == card
    text = render(card)
    assert "oracle" in text and "hard 4" in text


@requires_smollm2
@requires_code
def test_the_default_model_sets_the_levels_and_show_prints_the_card(tmp_path):
    done = subprocess.run([sys.executable, "-m", "agentgym.cli", "difficulty", MATH, "--tasks", "1", "--samples", "2",
                           "--policy", "oracle", "--policy", "smollm2", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, env=_offline())
    assert done.returncode == 0, done.stdout + done.stderr
    card = Card.from_json(json.loads(card_path(tmp_path, MATH).read_text()))
    assert card.reference == "smollm2" and card.samples == {"oracle": 1, "smollm2": 2}
    assert all(rate in (0.0, 0.5, 1.0) for rate in card.pass_rates["smollm2"].values())
    shown = subprocess.run([sys.executable, "-m", "agentgym.cli", "difficulty", MATH, "--show", "--out",
                            str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "levels by smollm2's pass rate" in shown.stdout


def test_show_without_a_card_says_how_to_make_one(tmp_path):
    shown = subprocess.run([sys.executable, "-m", "agentgym.cli", "difficulty", "agentgym/PyCode-v0", "--show",
                            "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 2 and "agentgym difficulty agentgym/PyCode-v0" in shown.stderr + shown.stdout


@pytest.mark.parametrize(("tasks", "samples"), [(0, 1), (1, 0)])
def test_bad_counts_are_a_clear_error(tasks, samples):
    from agentgym.errors import ConfigError

    with pytest.raises(ConfigError, match="must be >= 1"):
        measure(SEARCH, tasks=tasks, samples=samples, policies=("oracle",))


def _offline() -> dict[str, str]:
    import os

    return {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
