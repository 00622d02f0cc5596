"""Training curves from a synthetic metrics.jsonl: gaps, nulls, eval rows, and the errors on a missing or bad file."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest

from agentgym.errors import ConfigError
from agentgym.trainer.plot import METRICS_FILE, PANELS, plot_run, read_metrics

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STEPS = 40


def _row(step: int) -> dict:
    row = {"step": step, "reward_mean": 0.2 + 0.01 * step + 0.05 * math.sin(step), "reward_std": 0.1,
           "success": step / STEPS, "entropy": 1.5 - 0.02 * step, "kl": None, "clip_ratio": 0.01 * (step % 3),
           "turns": 2 + step % 4, "tool_calls": step % 3, "tokens_model": 100 + step, "tokens_masked": 40,
           "step_time_s": 3.0 + 0.1 * (step % 5)}
    if step % 7 == 0:
        del row["entropy"]  # a gap
    if step < 5:
        row["reward_std"] = None  # the band starts later
    return row


def _write(run_dir: Path, rows: list[dict], *, tail: str = "") -> None:
    text = "".join(json.dumps(r) + "\n" for r in rows) + tail
    (run_dir / METRICS_FILE).write_text(text, encoding="utf-8")


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, path
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    rows = [_row(step) for step in range(1, STEPS + 1)]
    for step in (10, 20, 30, 40):  # eval rows, between train rows
        rows.insert(step + step // 10 - 1, {"step": step, "eval/success": 0.1 * step / 10, "eval/reward_mean": 0.5})
    _write(tmp_path, rows, tail='{"step": 41, "reward_me')  # a run still writing its last line
    return tmp_path


def test_plot_run_writes_valid_pngs(run_dir):
    written = plot_run(run_dir)
    names = [p.name for p in written]
    assert names[0] == "curves.png"
    assert set(names[1:]) == {"reward_mean.png", "success.png", "entropy.png", "clip_ratio.png", "turns.png",
                              "tool_calls.png", "tokens_model.png", "tokens_masked.png", "step_time_s.png"}
    assert "kl.png" not in names  # kl is null in every row: no panel, no file
    assert all(p.parent == run_dir / "plots" and p.is_file() for p in written)
    for path in written:
        width, height = _png_size(path)
        assert width >= 300 and height >= 200
        assert path.stat().st_size > 10_000  # drawn curves, not a blank canvas
    overview_width, overview_height = _png_size(written[0])
    single_width, _ = _png_size(run_dir / "plots" / "success.png")
    assert overview_width > single_width
    assert overview_height > 3 * 300  # 7 panels in 2 columns: 4 rows


def test_eval_only_metric_still_gets_a_panel(tmp_path):
    _write(tmp_path, [{"step": s, "reward_mean": 0.1 * s} for s in range(1, 4)] + [{"step": 3, "eval/success": 0.5}])
    names = {p.name for p in plot_run(tmp_path)}
    assert names == {"curves.png", "reward_mean.png", "success.png"}


def test_plot_run_overwrites_previous_plots(tmp_path):
    _write(tmp_path, [{"step": 1, "success": 0.0}])
    first = plot_run(tmp_path)
    _write(tmp_path, [{"step": 1, "success": 0.0}, {"step": 2, "success": 1.0}])
    before = first[1].read_bytes()
    assert plot_run(tmp_path) == first
    assert first[1].read_bytes() != before


def test_read_metrics_skips_only_a_partial_last_line(run_dir):
    rows = read_metrics(run_dir)
    assert len(rows) == STEPS + 4
    assert max(r["step"] for r in rows) == STEPS


def test_missing_metrics_file_says_what_was_expected(tmp_path):
    with pytest.raises(ConfigError, match=rf"No {tmp_path / METRICS_FILE}: expected a training run directory"):
        plot_run(tmp_path)
    assert not (tmp_path / "plots").exists()


@pytest.mark.parametrize(("text", "message"), [
    ("", "has no metrics rows yet"),
    ("\n\n", "has no metrics rows yet"),
    ('{"step": 1}\nnot json\n{"step": 2}\n', "line 2 is not JSON"),
    ('[1, 2]\n{"step": 2}\n', "line 1 is not a JSON object"),
    ('{"step": 1, "note": "no metric"}\n', "no numeric values for any plotted metric"),
])
def test_empty_or_malformed_metrics_are_config_errors(tmp_path, text, message):
    (tmp_path / METRICS_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        plot_run(tmp_path)


def test_every_panel_key_is_a_documented_metric():
    keys = [k for p in PANELS for k in p.keys]
    assert len(keys) == len(set(keys))
    assert set(keys) | {"reward_std"} == {"reward_mean", "reward_std", "success", "entropy", "kl", "clip_ratio",
                                          "turns", "tool_calls", "tokens_model", "tokens_masked", "step_time_s"}
