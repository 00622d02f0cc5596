"""Difficulty cards (``agentgym difficulty``): per task, the pass rate of reference policies, levels by the
reference model's, the card's JSON and histogram, and ``--show``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers.gates import requires_code, requires_extra, requires_smollm2

from agentgym.errors import ConfigError
from agentgym.eval.difficulty import (BUNDLED, LEVELS, Card, card_path, find_card, measure, render, select_tasks,
                                      task_digests)

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
    plugin = tmp_path / "capitals.py"
    plugin.write_text(CAPITALS_PLUGIN)
    shown = subprocess.run([sys.executable, "-m", "agentgym.cli", "difficulty", "byo/Capitals-v0", "--show",
                            "--out", str(tmp_path)], capture_output=True, text=True, timeout=120,
                           env={**_offline(), "AGENTGYM_IMPORT": str(plugin)})
    assert shown.returncode == 2 and "agentgym difficulty byo/Capitals-v0" in shown.stderr + shown.stdout


CAPITALS_PLUGIN = """import agentgym
from agentgym import Task, ToolEnv


def make(**kwargs):
    tasks = [Task(id="fr", prompt="Capital of France?", gold="Paris", split="test")]
    return ToolEnv(tasks=tasks, tools=[], verifier=lambda answer, task: float(answer == task.gold), **kwargs)


agentgym.register("byo/Capitals-v0", make)
"""


@pytest.mark.parametrize(("tasks", "samples"), [(0, 1), (1, 0)])
def test_bad_counts_are_a_clear_error(tasks, samples):
    from agentgym.errors import ConfigError

    with pytest.raises(ConfigError, match="must be >= 1"):
        measure(SEARCH, tasks=tasks, samples=samples, policies=("oracle",))


def _offline() -> dict[str, str]:
    import os

    return {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


# ---- selecting tasks by a card: eval --difficulty, train's difficulty ----------------------------------------------

def _search_card(tmp_path, rates_by_index: list[float]) -> tuple[Card, list]:
    """A card of SearchQA's first tasks of ``test`` with these reference pass rates, written to ``tmp_path``."""
    from agentgym.core.registry import make

    env = make(SEARCH)
    try:
        tasks = list(env.unwrapped.tasks.tasks("test"))[: len(rates_by_index)]
    finally:
        env.close()
    rates = {t.id: r for t, r in zip(tasks, rates_by_index)}
    card = Card(env_id=SEARCH, env_version="v0", env_digest="d" * 16, split="test", tasks=list(rates),
                pass_rates={"oracle": dict.fromkeys(rates, 1.0), "smollm2": rates},
                samples={"oracle": 1, "smollm2": 4}, reference="smollm2", temperature=1.0, seed=0,
                task_digests=task_digests(tasks))
    card.write(tmp_path)
    return card, tasks


def test_select_tasks_by_level_or_range_and_refuse_what_does_not_hold(tmp_path):
    card, tasks = _search_card(tmp_path, [1.0, 0.0, 0.5, 0.75, 0.25, 0.0])
    ids = [t.id for t in tasks]
    assert select_tasks(SEARCH, "easy", tasks, "test", card=tmp_path) == [ids[0], ids[3]]
    assert select_tasks(SEARCH, "medium", tasks, "test", card=tmp_path) == [ids[2], ids[4]]
    assert select_tasks(SEARCH, "hard", tasks, "test", card=card_path(tmp_path, SEARCH)) == [ids[1], ids[5]]
    assert select_tasks(SEARCH, "0.25-0.75", tasks, "test", card=tmp_path) == [ids[2], ids[3], ids[4]]
    assert select_tasks(SEARCH, "hard", tasks[1:3], "test", card=tmp_path) == [ids[1]]  # an env with fewer tasks
    with pytest.raises(ConfigError, match="split 'test', not 'train'"):
        select_tasks(SEARCH, "easy", tasks, "train", card=tmp_path)
    with pytest.raises(ConfigError, match="easy, medium, hard or a pass-rate range"):
        select_tasks(SEARCH, "trivial", tasks, "test", card=tmp_path)
    with pytest.raises(ConfigError, match="No task of .* is 0.9-0.95 .* 2 easy, 2 medium, 2 hard"):
        select_tasks(SEARCH, "0.9-0.95", tasks, "test", card=tmp_path)
    with pytest.raises(ConfigError, match="agentgym difficulty agentgym/SearchQA-v0"):
        select_tasks(SEARCH, "easy", tasks, "test", card=tmp_path / "elsewhere")
    # the card's data, changed: its first task's gold is another answer here
    from dataclasses import replace

    changed = [replace(tasks[0], gold={"answers": ["somewhere else"]}), *tasks[1:]]
    with pytest.raises(ConfigError, match="measured on other data: 1 of its tasks differ"):
        select_tasks(SEARCH, "easy", changed, "test", card=tmp_path)


def test_eval_difficulty_plays_only_the_selected_tasks_and_keeps_them_apart_from_a_whole_run(tmp_path):
    from typer.testing import CliRunner

    from agentgym.cli import app

    _, tasks = _search_card(tmp_path / "cards", [1.0, 0.0, 0.5, 0.8, 0.0])
    results = tmp_path / "results.jsonl"
    runner = CliRunner()
    common = ["eval", "--policy", "oracle", "--env", SEARCH, "--split", "test", "--results", str(results)]
    whole = runner.invoke(app, [*common, "--episodes", "2"])
    assert whole.exit_code == 0, whole.output
    easy = runner.invoke(app, [*common, "--difficulty", "easy", "--difficulty-card", str(tmp_path / "cards")])
    assert easy.exit_code == 0, easy.output
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["task_id"] for r in rows] == [tasks[0].id, tasks[1].id, tasks[0].id, tasks[3].id]
    assert len({r["key"] for r in rows}) == 4  # episode 1 of the easy run is not episode 1 of the whole run
    bad = runner.invoke(app, [*common, "--difficulty-card", str(tmp_path / "cards")])
    assert isinstance(bad.exception, ConfigError) and "only with --difficulty" in str(bad.exception)


def test_train_selects_its_tasks_by_the_card_of_its_split(tmp_path):
    from agentgym.trainer.grpo import TrainConfig, task_specs

    _, tasks = _search_card(tmp_path, [0.0, 0.5, 1.0, 0.5])
    config = TrainConfig(env=[SEARCH], split="test", difficulty="medium", difficulty_card=str(tmp_path),
                         output_dir=str(tmp_path / "run"))
    assert [s.task_id for s in task_specs(config)] == [tasks[1].id, tasks[3].id]
    with pytest.raises(ConfigError, match="split 'test', not 'train'"):
        task_specs(TrainConfig(env=[SEARCH], difficulty="medium", difficulty_card=str(tmp_path)))
    with pytest.raises(ConfigError, match="pass-rate range"):
        TrainConfig(env=[SEARCH], difficulty="impossible")


@requires_extra("code", "swe", "alfworld", "webshop", "browser")
def test_every_bundled_env_ships_a_card_of_its_current_tasks():
    """A card names the tasks it measured by digest: regenerated data without a new card fails here."""
    from agentgym.core.registry import env_ids, env_info, make

    # agentgym's own envs (other tests in this process may have registered envs of their own)
    bundled = [e for e in env_ids() if e.startswith("agentgym/") and str(env_info(e).entry_point).startswith(
        "agentgym.envs.")]
    assert len(bundled) == 7
    for env_id in bundled:
        card = find_card(env_id)
        assert card.env_id == env_id and len(card.tasks) >= 10 and card.reference == "smollm2"
        assert set(card.pass_rates) == {"oracle", "random", "smollm2"}
        env = make(env_id, **card.env_kwargs)
        try:
            tasks = list(env.unwrapped.tasks.tasks(card.split))
        finally:
            env.close()
        have = task_digests(tasks)
        assert {t: have.get(t) for t in card.tasks} == card.task_digests, env_id
        assert (BUNDLED / card_path(BUNDLED, env_id).with_suffix(".png").name).is_file()
