"""A run's record that it diverged: ``<run>/diverged.json``.

A ``fit`` stopped by a non-finite loss or gradient (:class:`~roformer_lit.errors.
TrainingDiverged`, exit 3) leaves its run directory as an unfinished run leaves it (no
checkpoint past its last good one), so nothing there told the two apart: ``compare``
called it ``unfinished: no validation yet``. The leading process writes this record where
the run stops (:class:`~roformer_lit.training.callbacks.LastGoodCheckpoint`); ``compare``
reads it (:func:`read_divergence`) and names the run as diverged, never as a seed of its
variant.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

#: The record's file name in a run directory.
DIVERGED_FILE = "diverged.json"


@dataclass(frozen=True)
class Divergence:
    """Where a run diverged: its optimiser ``step`` (None: not recorded) and the line the
    run ended with."""

    step: int | None
    message: str


def write_divergence(run_dir: str | Path, step: int | None, message: str) -> None:
    """Write ``run_dir``'s record (replacing an earlier one: a resumed run that diverged
    again)."""
    path = Path(run_dir) / DIVERGED_FILE
    path.write_text(json.dumps({"step": step, "message": message}) + "\n", encoding="utf-8")


def read_divergence(run_dir: str | Path) -> Divergence | None:
    """``run_dir``'s record; None where it has none. A record that cannot be read as one
    (damaged, hand-edited) still says the run diverged, at an unknown step."""
    path = Path(run_dir) / DIVERGED_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return Divergence(None, "")
    if not isinstance(data, dict):
        return Divergence(None, "")
    step = data.get("step")
    step = step if isinstance(step, int) and not isinstance(step, bool) and step >= 0 else None
    message = data.get("message")
    return Divergence(step, message if isinstance(message, str) else "")
