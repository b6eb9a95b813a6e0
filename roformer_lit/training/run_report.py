"""Every ``fit`` ends with one line: where it stopped, its last validation, where the run is.

Position-task configs turn the progress display off, and Lightning's own last words
("``max_steps=1500`` reached") say nothing of the result; :class:`RunReport` prints, on the
main process, whatever the display::

    finished at step 1500/1500 | val/loss 0.0123 | val/acc 0.9981 | val/exact 0.9700 | run runs/probes/rope-softmax-seed0-copy

``stopped`` replaces ``finished`` when the run ended before its step limit (early stopping,
a limit on epochs or time). The metrics are the last validation's (Lightning's
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

#: The metrics that lead the line, in this order; the others follow by name.
FIRST = ("val/loss", "val/acc", "val/exact")


def summary_line(
    step: int,
    max_steps: int | None,
    metrics: Mapping[str, float],
    run: str | None,
) -> str:
    """The one line (see the module doc)."""
    finished = max_steps is None or max_steps <= 0 or step >= max_steps
    head = f"{'finished' if finished else 'stopped'} at step {step}"
    if max_steps is not None and max_steps > 0:
        head += f"/{max_steps}"
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
        max_steps = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else None
        line = summary_line(
            trainer.global_step,
            max_steps,
            _scalars(trainer.callback_metrics),
            _run_dir(trainer),
        )
        print(line, flush=True)
