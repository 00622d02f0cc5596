"""Training curves: draw a run directory's ``metrics.jsonl`` as PNGs in ``<run_dir>/plots/``, or several runs
on one figure.

``metrics.jsonl`` holds one JSON object per optimizer step (``step``,
``reward_mean``, ``kl`` ...); any key may be missing or null in a row, and eval
rows carry ``eval/``-prefixed keys, drawn as markers on the matching panel.
``plot_runs`` draws the ``COMPARE_PANELS`` (reward, success, tool-call rate,
masked-token share) of several runs, one line and legend entry per run (the
masking ablation against its recipe, two seeds).
Figures are drawn with matplotlib's Agg renderer, without pyplot's global state.
"""

from __future__ import annotations

import importlib.util
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError, DependencyNotInstalled

__all__ = ["COMPARE_PANELS", "METRICS_FILE", "PANELS", "Panel", "plot_run", "plot_runs", "read_metrics"]

METRICS_FILE = "metrics.jsonl"
EVAL_PREFIX = "eval/"
#: a moving average is drawn over a series of at least this many points
SMOOTH_MIN_POINTS = 20


@dataclass(frozen=True)
class Panel:
    """One subplot: ``keys`` drawn as lines; ``band`` (a key) shades ±band around the first key."""

    title: str
    keys: tuple[str, ...]
    band: str | None = None


PANELS: tuple[Panel, ...] = (
    Panel("reward (mean ± std)", ("reward_mean",), band="reward_std"),
    Panel("success", ("success",)),
    Panel("entropy", ("entropy",)),
    Panel("KL to reference", ("kl",)),
    Panel("clip ratio", ("clip_ratio",)),
    Panel("turns & tool calls", ("turns", "tool_calls")),
    Panel("tool-call rate (episodes with a call)", ("tool_call_rate",)),
    Panel("tokens (model / observation)", ("tokens_model", "tokens_masked")),
    Panel("masked-token share (out of the loss)", ("masked_share",)),
    Panel("loss", ("loss",)),
    Panel("step time (s)", ("step_time_s",)),
)
#: what ``plot_runs`` draws for each run
COMPARE_PANELS: tuple[Panel, ...] = (
    Panel("reward (mean)", ("reward_mean",)),
    Panel("success", ("success",)),
    Panel("tool-call rate (episodes with a call)", ("tool_call_rate",)),
    Panel("masked-token share (out of the loss)", ("masked_share",)),
)

Series = tuple[list[float], list[float]]


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    """The rows of ``run_dir/metrics.jsonl``; a half-written last line (a run still writing) is left out."""
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        raise ConfigError(f"No {path}: expected a training run directory holding {METRICS_FILE} "
                          "(one JSON object per optimizer step), as the trainer writes it.")
    lines = [(number, line) for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if line.strip()]
    rows = []
    for index, (number, line) in enumerate(lines):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            if index == len(lines) - 1:
                continue
            raise ConfigError(f"{path} line {number} is not JSON ({e}); each line must be one JSON object.") from e
        if not isinstance(row, dict):
            raise ConfigError(f"{path} line {number} is not a JSON object; each line must be one object.")
        rows.append(row)
    if not rows:
        raise ConfigError(f"{path} has no metrics rows yet: it is filled in as the run takes optimizer steps.")
    return rows


def plot_run(run_dir: str | Path) -> list[Path]:
    """Write ``plots/curves.png`` (every panel with data) and ``plots/<metric>.png`` per metric; return their paths."""
    if importlib.util.find_spec("matplotlib") is None:
        raise DependencyNotInstalled("matplotlib (for training plots)", "pip install matplotlib")
    rows = read_metrics(run_dir)
    panels = [p for p in PANELS if any(_series(rows, k)[0] or _series(rows, EVAL_PREFIX + k)[0] for k in p.keys)]
    if not panels:
        known = ", ".join(k for p in PANELS for k in p.keys)
        raise ConfigError(f"{Path(run_dir) / METRICS_FILE} has no numeric values for any plotted metric ({known}).")
    out = Path(run_dir) / "plots"
    out.mkdir(exist_ok=True)
    written = [_save(_overview(rows, panels), out / "curves.png")]
    for panel in panels:
        for key in panel.keys:
            if not (_series(rows, key)[0] or _series(rows, EVAL_PREFIX + key)[0]):
                continue
            single = Panel(key, (key,), band=panel.band if key == panel.keys[0] else None)
            figure = _figure(1, 1, width_in=6.4, height_in=3.6)
            _draw(figure.axes[0], rows, single)
            written.append(_save(figure, out / f"{key}.png"))
    return written


def plot_runs(run_dirs: list[str | Path], out: str | Path | None = None) -> Path:
    """Draw several runs on one figure: the ``COMPARE_PANELS``, one line per run, labelled with its directory's
    name (its path when names repeat). Written to ``out`` [default: ``<first run>/plots/compare.png``]."""
    if importlib.util.find_spec("matplotlib") is None:
        raise DependencyNotInstalled("matplotlib (for training plots)", "pip install matplotlib")
    if not run_dirs:
        raise ConfigError("plot_runs needs at least one run directory.")
    paths = [Path(d) for d in run_dirs]
    names = [p.name for p in paths]
    labels = names if len(set(names)) == len(names) else [str(p) for p in paths]
    runs = [(label, read_metrics(path)) for label, path in zip(labels, paths)]
    figure = _figure(2, 2, width_in=12.0, height_in=7.0)
    for axes, panel in zip(figure.axes, COMPARE_PANELS):
        [key] = panel.keys
        for index, (label, rows) in enumerate(runs):
            _draw_key(axes, rows, key, color=f"C{index}", label=label)
        _finish(axes, panel.title)
    target = Path(out) if out is not None else paths[0] / "plots" / "compare.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    return _save(figure, target)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def _series(rows: list[dict[str, Any]], key: str) -> Series:
    """(steps, values) of the rows where both ``step`` and ``key`` are finite numbers, in step order."""
    points = sorted((step, value) for row in rows
                    if (step := _number(row.get("step"))) is not None and (value := _number(row.get(key))) is not None)
    return [step for step, _ in points], [value for _, value in points]


def _moving_average(values: list[float], window: int) -> list[float]:
    """Trailing mean over up to ``window`` points (fewer at the start)."""
    averages, total = [], 0.0
    for i, value in enumerate(values):
        total += value - (values[i - window] if i >= window else 0.0)
        averages.append(total / min(i + 1, window))
    return averages


def _figure(rows: int, cols: int, *, width_in: float, height_in: float) -> Any:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width_in, height_in), layout="constrained")
    figure.subplots(rows, cols, squeeze=False)
    return figure


def _overview(rows: list[dict[str, Any]], panels: list[Panel]) -> Any:
    cols = 2 if len(panels) > 1 else 1
    grid = math.ceil(len(panels) / cols)
    figure = _figure(grid, cols, width_in=6.0 * cols, height_in=3.0 * grid)
    for axes, panel in zip(figure.axes, panels):
        _draw(axes, rows, panel)
    for axes in figure.axes[len(panels):]:
        axes.set_visible(False)
    return figure


def _draw(axes: Any, rows: list[dict[str, Any]], panel: Panel) -> None:
    for index, key in enumerate(panel.keys):
        color = f"C{index}"
        _draw_key(axes, rows, key, color=color, label=key)
        if panel.band and index == 0:
            _draw_band(axes, rows, key, panel.band, color)
    _finish(axes, panel.title)


def _draw_key(axes: Any, rows: list[dict[str, Any]], key: str, *, color: str, label: str) -> None:
    """``key``'s line (with a moving average over a long series) and its eval markers, named ``label``."""
    steps, values = _series(rows, key)
    if steps:
        axes.plot(steps, values, color=color, linewidth=1.2, label=label)
        if len(values) >= SMOOTH_MIN_POINTS:
            window = max(5, len(values) // 20)
            axes.plot(steps, _moving_average(values, window), color=color, alpha=0.6, linestyle="--", linewidth=1.2,
                      label=f"{label} (avg of {window})")
    eval_steps, eval_values = _series(rows, EVAL_PREFIX + key)
    if eval_steps:
        axes.plot(eval_steps, eval_values, linestyle="none", marker="o", markersize=5, color=color,
                  markeredgecolor="black", label=f"{label} ({EVAL_PREFIX}{key})" if label != key else EVAL_PREFIX + key)


def _finish(axes: Any, title: str) -> None:
    axes.set_title(title)
    axes.set_xlabel("step")
    axes.grid(alpha=0.3)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize="small")


def _draw_band(axes: Any, rows: list[dict[str, Any]], key: str, band: str, color: str) -> None:
    """Shade mean ± spread at the steps that have both."""
    points = sorted(numbers for row in rows
                    if None not in (numbers := tuple(_number(row.get(k)) for k in ("step", key, band))))
    if points:
        axes.fill_between([step for step, _, _ in points], [mean - spread for _, mean, spread in points],
                          [mean + spread for _, mean, spread in points], color=color, alpha=0.2, linewidth=0,
                          label=f"± {band}")


def _save(figure: Any, path: Path) -> Path:
    figure.savefig(path, dpi=100, format="png")
    return path
