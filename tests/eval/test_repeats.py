"""``agentgym eval --repeats R``: every task played R times, per-task flip rates and the run's noise floor."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from agentgym.eval.stats import repeat_noise

FLAKY = textwrap.dedent('''
    import itertools

    import agentgym

    CALLS = itertools.count()
    TASKS = [{"question": f"Say {w}.", "answer": w} for w in ("red", "green", "blue", "gold")]
    # a verifier that pays every other call: the same answer passes, then fails, then passes
    agentgym.register("byo/Flaky-v0", agentgym.ToolEnv, tasks=TASKS,
                      verifier=lambda answer, task: next(CALLS) % 2 == 0)
''')


def test_flip_rates_and_the_noise_floor_by_hand():
    rows = [{"task_id": t, "episode": i, "sample": j, "correct": c, "error": None}
            for i, (t, outcomes) in enumerate([("a", [1, 1, 1, 1]), ("b", [1, 0, 1, 0]), ("c", [0, 0, 0, 1])])
            for j, c in enumerate(outcomes)]
    rows.append({"task_id": "c", "episode": 2, "sample": 4, "correct": True, "error": "boom"})  # not scored
    noise = repeat_noise(rows)
    assert noise["per_task_flip"] == {"0": 0.0, "1": 0.5, "2": 0.25} and noise["flipped_tasks"] == 2 / 3
    # the run's success in repeats 0..3: 2/3, 1/3, 2/3, 2/3
    assert noise["repeat_success"] == [2 / 3, 1 / 3, 2 / 3, 2 / 3] and round(noise["noise_floor"], 4) == 0.1667
    assert repeat_noise(rows[:1])["noise_floor"] is None


def test_the_command_reports_flips_and_resumes(tmp_path):
    (tmp_path / "flaky.py").write_text(FLAKY)
    command = [sys.executable, "-m", "agentgym.cli", "eval", "--import", "flaky.py", "--env", "byo/Flaky-v0",
               "--policy", "oracle", "--episodes", "4", "--repeats", "3", "--summary-json", "s.json",
               "--results", "r.jsonl"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "flipped" in done.stdout and "noise" in done.stdout
    summary = json.loads((tmp_path / "s.json").read_text())["byo/Flaky-v0"]
    assert (summary["episodes"], summary["tasks"], summary["repeats"]) == (12, 4, 3)
    assert summary["flipped_tasks"] == 1.0 and summary["flip_rate"] == 1 / 3  # each task 2 of 3 one way
    assert len(summary["per_task_flip"]) == 4 and summary["noise_floor"] is not None
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert sorted((r["episode"], r["sample"]) for r in rows) == [(i, j) for i in range(4) for j in range(3)]
    again = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert again.returncode == 0 and len((tmp_path / "r.jsonl").read_text().splitlines()) == 12  # resumed
    both = subprocess.run([*command, "--samples", "2"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert both.returncode == 2 and "--repeats and --samples together" in both.stderr
