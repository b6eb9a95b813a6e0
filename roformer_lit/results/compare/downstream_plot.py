"""Downstream metric per pretraining variant, with error bars: ``downstream.png``.

One panel per task, its main metric (``val/<metric>`` of the best validation) on the y axis,
one position per row (variant) on the x axis: the dot is the mean over pretraining seeds of
the per-checkpoint means; the thick bar is ± the std over pretraining seeds, the thin
bar beside it ± the std over fine-tuning seeds (definitions:
:mod:`roformer_lit.results.compare.downstream`); small grey dots are the per-checkpoint means.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from matplotlib.figure import Figure

from roformer_lit.results.compare.downstream import DownstreamRow
from roformer_lit.results.compare.plot_labels import plot_labels

PLOT_FILE = "downstream.png"
_OFFSET = 0.15
_TICK_WIDTH = 28  # characters per line of a variant's label under the axis


def downstream_figure(rows: Sequence[DownstreamRow]) -> Figure:
    """The figure described in the module docstring (an empty one without rows)."""
    tasks = list(dict.fromkeys(row.task for row in rows)) or ["(none)"]
    width = max(6.0, 1.1 * max((sum(r.task == t for r in rows) for t in tasks), default=1) + 2)
    fig = Figure(figsize=(width, 4.2 * len(tasks)), dpi=110, layout="constrained")
    for i, task in enumerate(tasks):
        ax = fig.add_subplot(len(tasks), 1, i + 1)
        members = [r for r in rows if r.task == task]
        metric = members[0].main_metric if members else "?"
        for x, row in enumerate(members):
            finetune, pretrain = row.stats[metric]
            if finetune.mean is None:
                continue
            ax.errorbar(
                x,
                finetune.mean,
                yerr=pretrain.std or 0.0,
                fmt="o",
                color="C0",
                capsize=6,
                linewidth=2.2,
                label="± std over pretraining seeds" if x == 0 else None,
            )
            ax.errorbar(
                x + _OFFSET,
                finetune.mean,
                yerr=finetune.std or 0.0,
                fmt="none",
                color="C1",
                capsize=3,
                linewidth=1.2,
                label="± std over fine-tuning seeds" if x == 0 else None,
            )
            means = _checkpoint_means(row, metric)
            ax.scatter(
                [x - _OFFSET] * len(means),
                means,
                s=12,
                color="0.55",
                zorder=3,
                label="per-checkpoint mean" if x == 0 else None,
            )
        labels = plot_labels([r.variant for r in members], width=_TICK_WIDTH)
        ax.set_xticks(range(len(members)), labels, rotation=20, ha="right", fontsize=8)
        ax.set_ylabel(f"val/{metric} (best validation)")
        ax.set_title(f"{task}: val/{metric} per pretraining variant", fontsize=11)
        ax.grid(True, axis="y", alpha=0.3)
        if members:
            ax.legend(loc="best", fontsize=8, framealpha=0.85)
    return fig


def _checkpoint_means(row: DownstreamRow, metric: str) -> list[float]:
    groups: dict[str, list[float]] = {}
    for result in row.results:
        value = result.metrics.get(metric)
        if value is not None:
            groups.setdefault(result.checkpoint_key, []).append(value)
    return [statistics.fmean(g) for g in groups.values()]
