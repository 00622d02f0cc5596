"""Training curves from a synthetic metrics.jsonl: gaps, nulls, eval rows, and the errors on a missing or bad file."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest

from agentgym.errors import ConfigError
from agentgym.trainer.plot import COMPARE_PANELS, METRICS_FILE, PANELS, plot_run, plot_runs, read_metrics

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
                                          "turns", "tool_calls", "tool_call_rate", "tokens_model", "tokens_masked",
                                          "masked_share", "loss", "step_time_s"}
    assert [k for p in COMPARE_PANELS for k in p.keys] == ["reward_mean", "success", "tool_call_rate", "masked_share"]
    assert {k for p in COMPARE_PANELS for k in p.keys} <= set(keys)


def _run(run_dir: Path, *, masked: bool, steps: int = 30) -> Path:
    run_dir.mkdir(parents=True)
    rows = [{"step": s, "reward_mean": 0.01 * s, "success": 0.01 * s, "tool_call_rate": min(1.0, 0.05 * s),
             "masked_share": 0.4 if masked else 0.0, "entropy": 1.0} for s in range(1, steps + 1)]
    if not masked:
        rows.insert(0, {"step": 0, "warning": "observation_masking_off", "message": "..."})
    _write(run_dir, rows)
    return run_dir


def _legends(figure) -> list[list[str]]:
    return [[t.get_text() for t in axes.get_legend().get_texts()] for axes in figure.axes]


def test_plot_runs_draws_every_run_on_one_figure(tmp_path, monkeypatch):
    """Several runs (the recipe and its masking ablation): four panels, one line and legend entry per run each."""
    from agentgym.trainer import plot as plot_module

    drawn = []
    save = plot_module._save
    monkeypatch.setattr(plot_module, "_save", lambda figure, path: drawn.append(figure) or save(figure, path))
    masked, ablation = _run(tmp_path / "masked", masked=True), _run(tmp_path / "unmasked", masked=False)
    path = plot_runs([masked, ablation])
    assert path == masked / "plots" / "compare.png"
    width, height = _png_size(path)
    assert width >= 1000 and height >= 600 and path.stat().st_size > 20_000
    [figure] = drawn
    assert [axes.get_title() for axes in figure.axes] == [p.title for p in COMPARE_PANELS]
    for axes, legend in zip(figure.axes, _legends(figure)):
        assert legend == ["masked", "masked (avg of 5)", "unmasked", "unmasked (avg of 5)"]
        # the masked-token panel: 0.4 for the recipe, 0 for the ablation (the warning row draws nothing)
        if axes.get_title().startswith("masked-token"):
            assert [set(line.get_ydata()) for line in axes.get_lines()[::2]] == [{0.4}, {0.0}]


def test_plot_runs_names_runs_by_path_when_their_names_repeat(tmp_path, monkeypatch):
    from agentgym.trainer import plot as plot_module

    drawn = []
    monkeypatch.setattr(plot_module, "_save", lambda figure, path: drawn.append(figure) or path)
    first, second = _run(tmp_path / "seed0" / "run", masked=True, steps=3), _run(tmp_path / "seed1" / "run",
                                                                                  masked=True, steps=3)
    out = tmp_path / "figures" / "both.png"
    assert plot_runs([first, second], out) == out
    assert _legends(drawn[0])[0] == [str(first), str(second)]


def test_plot_runs_needs_readable_runs(tmp_path):
    with pytest.raises(ConfigError, match="at least one run directory"):
        plot_runs([])
    with pytest.raises(ConfigError, match="No .*metrics.jsonl"):
        plot_runs([_run(tmp_path / "a", masked=True), tmp_path / "missing"])


def test_agentgym_plot_takes_several_run_directories(tmp_path):
    from typer.testing import CliRunner

    from agentgym.cli import app

    runner = CliRunner()
    first, second = _run(tmp_path / "a", masked=True, steps=3), _run(tmp_path / "b", masked=False, steps=3)
    out = tmp_path / "compare.png"
    result = runner.invoke(app, ["plot", str(first), str(second), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 runs" in result.output and _png_size(out)[0] >= 1000
    result = runner.invoke(app, ["plot", str(first), "--out", str(out)])
    assert isinstance(result.exception, ConfigError) and "--out is for several runs" in str(result.exception)
    result = runner.invoke(app, ["plot", str(first)])
    assert result.exit_code == 0 and (first / "plots" / "curves.png").is_file()
