"""Every ``fit`` ends with one line: where it stopped, its last validation, where the run is.

Position-task configs turn the progress display off, and Lightning's own last words
("``max_steps=1500`` reached") say nothing of the result; :class:`RunReport` prints, on the
main process, whatever the display::

    finished at step 1500/1500 | val/loss 0.0123 | val/acc 0.9981 | val/exact 0.9700 | run runs/probes/rope-softmax-seed0-copy

``N/M``: the optimiser step it stopped at and the one its run ends at, by steps or by epochs
(:func:`~roformer_lit.training.steps.total_steps`, the end ``compare`` judges a run finished
by); ``stopped`` replaces ``finished`` when the run ended before that end (early stopping,
a time limit, a run of epochs stopped mid-way). The metrics are the last validation's (Lightning's
``callback_metrics``), as the module logged them (``val/exact`` only for position tasks). A run that ends by a signal or an error reports through
its own exit path instead (:mod:`roformer_lit.training.callbacks`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.utilities import rank_zero_only

from roformer_lit.training.steps import total_steps

#: The metrics that lead the line, in this order; the others follow by name.
FIRST = ("val/loss", "val/acc", "val/exact")


def summary_line(
    step: int,
    end: int | None,
    metrics: Mapping[str, float],
    run: str | None,
) -> str:
    """The one line (see the module doc); ``end``: the step the run ends at, None unknown."""
    finished = end is None or end <= 0 or step >= end
    head = f"{'finished' if finished else 'stopped'} at step {step}"
    if end is not None and end > 0:
        head += f"/{end}"
    parts = [head]
    order = {name: i for i, name in enumerate(FIRST)}
    for name in sorted(metrics, key=lambda n: (order.get(n, len(order)), n)):
        if name.startswith("val/") and math.isfinite(metrics[name]):
            parts.append(f"{name} {metrics[name]:.4f}")
    if len(parts) == 1:
        parts.append("no validation")
    if run is not None:
        parts.append(f"run {run}")
    return " | ".join(parts)


def _scalars(metrics: Mapping[str, Any]) -> dict[str, float]:
    out = {}
    for name, value in metrics.items():
        try:
            out[name] = float(value)
        except (TypeError, ValueError):
            continue
    return out


def _run_dir(trainer: Trainer) -> str | None:
    logger = trainer.logger
    directory = getattr(logger, "log_dir", None) if logger is not None else None
    if directory is None:
        return None
    path = Path(directory)
    try:
        return os.path.relpath(path) if path.resolve().is_relative_to(Path.cwd()) else str(path)
    except (OSError, ValueError):
        return str(path)


class RunReport(Callback):
    """Print :func:`summary_line` when ``fit`` ends normally."""

    @rank_zero_only
    def on_fit_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        line = summary_line(
            trainer.global_step,
            total_steps(trainer),
            _scalars(trainer.callback_metrics),
            _run_dir(trainer),
        )
        print(line, flush=True)
