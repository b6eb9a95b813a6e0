"""Validation-loss curves per variant: mean over seeds with a min–max band.

``val_loss_figure(rows, x="step" | "time")`` returns a matplotlib ``Figure`` (no pyplot
state, Agg-safe); ``save_plots(rows, out_dir)`` writes ``val_loss_vs_step.png`` and
``val_loss_vs_time.png``. At each validation step the line is the mean over the seeds that
logged it and the band spans their min and max; on the time axis a point sits at the mean
elapsed wall time (since each run's training started) of those seeds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from roformer_lit.results.compare.aggregate import VariantRow
from roformer_lit.results.compare.plot_labels import plot_labels

Axis = Literal["step", "time"]
PLOT_FILES: dict[Axis, str] = {"step": "val_loss_vs_step.png", "time": "val_loss_vs_time.png"}
_MANY = 6  # more variants than this: legend outside the axes


@dataclass
class Curve:
    """One variant's val/loss: x (steps or seconds), mean, min and max over seeds."""

    x: list[float]
    mean: list[float]
    low: list[float]
    high: list[float]


def variant_curve(row: VariantRow, x: Axis = "step") -> Curve:
    """Mean/min/max of val/loss over the row's seeds at every validation step."""
    by_step: dict[int, list[tuple[float, float]]] = {}
    for run in row.runs:
        last_per_step = {step: (seconds, value) for step, seconds, value in run.val_loss_series}
        for step, point in last_per_step.items():
            by_step.setdefault(step, []).append(point)
    curve = Curve([], [], [], [])
    for step in sorted(by_step):
        points = by_step[step]
        values = [v for _, v in points]
        # steps done (the 0-based logged step + 1), as the table's ``steps`` column counts
        curve.x.append(step + 1 if x == "step" else sum(t for t, _ in points) / len(points))
        curve.mean.append(sum(values) / len(values))
        curve.low.append(min(values))
        curve.high.append(max(values))
    return curve


def val_loss_figure(rows: Sequence[VariantRow], x: Axis = "step") -> Figure:
    """val/loss against training step or wall time, one labelled line per variant."""
    if x not in PLOT_FILES:
        raise ValueError(f"x must be 'step' or 'time', got {x!r}")
    curves = [variant_curve(row, x) for row in rows]
    scale, unit = _time_unit(curves) if x == "time" else (1.0, "")
    many = len(rows) > _MANY
    labels = plot_labels([row.variant for row in rows])  # a long one wrapped, or cut
    # tall enough for the legend's lines (9 pt, about 0.16 in each, and a gap per entry)
    lines = sum(label.count("\n") + 1 for label in labels)
    height = max(5.0, 1.0 + 0.16 * lines + 0.08 * len(labels))
    fig = Figure(figsize=(10.5 if many else 8, height), dpi=110, layout="constrained")
    ax = fig.add_subplot()
    colors = colormaps["tab10" if len(rows) <= 10 else "tab20"].colors
    for i, (row, curve) in enumerate(zip(rows, curves, strict=True)):
        xs = [v / scale for v in curve.x]
        color = colors[i % len(colors)]
        style = {"marker": "o", "markersize": 3.5} if len(xs) <= 30 else {}
        ax.plot(xs, curve.mean, color=color, linewidth=1.8, label=labels[i], **style)
        if row.n > 1:
            ax.fill_between(xs, curve.low, curve.high, color=color, alpha=0.18, linewidth=0)
    values = [v for c in curves for v in c.low + c.high if v > 0]
    if values and max(values) / min(values) > 10:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(_plain_number))  # 1, not 10^0
        ax.yaxis.set_minor_formatter(FuncFormatter(_minor_label))
    ax.set_xlabel(
        "optimizer steps done (as the table's steps column)"
        if x == "step"
        else f"wall time since run start ({unit})"
    )
    ax.set_ylabel("val/loss (masked-LM cross-entropy, nats)")
    seeds = sorted({row.n for row in rows})
    band = "band: min–max over seeds" if max(seeds, default=1) > 1 else "one seed each"
    ax.set_title(
        f"Validation loss vs {'training step' if x == 'step' else 'wall time'}\n"
        f"line: mean over seeds (n={'/'.join(map(str, seeds))}); {band}",
        fontsize=11,
    )
    ax.grid(True, alpha=0.3)
    if rows:
        if many:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
        else:
            ax.legend(loc="best", fontsize=9, framealpha=0.85)
    return fig


def plot_files(rows: Sequence[VariantRow]) -> dict[str, Callable[[Path], None]]:
    """Each PNG's file name -> the function that draws it at a given path."""
    return {
        name: lambda path, axis=axis: val_loss_figure(rows, axis).savefig(path)
        for axis, name in PLOT_FILES.items()
    }


def save_plots(rows: Sequence[VariantRow], out_dir: str | Path) -> list[Path]:
    """Write both PNGs into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, draw in plot_files(rows).items():
        draw(out / name)
        paths.append(out / name)
    return paths


def _time_unit(curves: Sequence[Curve]) -> tuple[float, str]:
    longest = max((v for c in curves for v in c.x), default=0.0)
    if longest >= 2 * 3600:
        return 3600.0, "h"
    if longest >= 5 * 60:
        return 60.0, "min"
    return 1.0, "s"


def _plain_number(value: float, _: int | None = None) -> str:
    return f"{value:g}"


def _minor_label(value: float, _: int | None = None) -> str:
    """Label log-axis minor ticks at 2, 3, 4 and 6 times a power of ten only."""
    if value <= 0:
        return ""
    leading = round(value / 10 ** math.floor(math.log10(value)))
    return f"{value:g}" if leading in (2, 3, 4, 6) else ""
