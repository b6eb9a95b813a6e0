"""The one place that silences what libraries print without a user asking for it.

* Lightning's advertisement for its cloud logger (printed on every run), its
  "Detected KeyboardInterrupt, attempting graceful shutdown" line and its "[rank: 0]
  Received SIGTERM: 15" (the CLI prints its own one line for each,
  :func:`roformer_lit.commands.pretrain.main` and the preemption callback);
* PyTorch's ``isinstance(treespec, LeafSpec)`` deprecation warning, raised from inside
  Lightning, which a user cannot act on;
* on ``validate``/``test``, Lightning's "The dirpath has changed from ..." about the
  checkpoint directory of the evaluated run (an evaluation writes no checkpoint);
* Lightning's "Checkpoint directory <run>/checkpoints exists and is not empty", printed
  with its source line on every resume: a resume writes into its own run's checkpoints,
  and a new run claims a directory of its own (:mod:`roformer_lit.training.run_dir`), so it
  never meets another run's;
* the traceback a background thread prints when it fails (TensorBoard's event writer after
  the disk filled or the run directory was deleted): the failure is kept
  (:func:`background_failures`) and the CLI reports it in its one line; the writer raises
  the same error in the main thread at its next flush anyway;
* the ``FLOPs`` column and ``Total FLOPs: 0`` of Lightning's model summary: it counts FLOPs
  only for a module with an ``example_input_array``, so for ours it always printed 0
  (:class:`SummaryWithoutFlops` prints the same table without them).
"""

from __future__ import annotations

import logging
import threading
import warnings
from typing import Any

from lightning.pytorch.callbacks import ModelSummary
from lightning.pytorch.utilities.model_summary.model_summary import (
    get_formatted_model_size,
    get_human_readable_count,
)

#: Substrings of Lightning log lines dropped from the console.
DROPPED_LOG_LINES = (
    "try installing [litlogger]",
    "Detected KeyboardInterrupt",
    "Received SIGTERM",
    "Bypassing SIGTERM",
    "Trainer already configured with model summary callbacks",
)


class _DropLines(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text in DROPPED_LOG_LINES)


_FILTER = _DropLines()


_background_failures: list[BaseException] = []


def _keep_thread_failure(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is not None:
        _background_failures.append(args.exc_value)


def background_failures() -> list[BaseException]:
    """The exceptions background threads died of since :func:`install`, oldest first."""
    return list(_background_failures)


def install() -> None:
    """Apply the filters (idempotent): on the loggers Lightning writes these lines to, and
    as the hook for exceptions of background threads."""
    threading.excepthook = _keep_thread_failure
    warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\).*")
    # validate/test restore a checkpoint callback's state into a run that saves nothing
    warnings.filterwarnings("ignore", message=r"The dirpath has changed from")
    # a resume writes into its own run's checkpoints (a new run's directory is new)
    warnings.filterwarnings("ignore", message=r"Checkpoint directory .* exists and is not empty")
    for name in (
        "lightning_utilities.core.rank_zero",
        "lightning.pytorch",
        "lightning.pytorch.utilities.rank_zero",
        "lightning.fabric",
    ):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
        for handler in logger.handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)


class SummaryWithoutFlops(ModelSummary):
    """Lightning's model summary (name, type, parameters, mode) without the FLOPs it cannot
    count for this model."""

    @staticmethod
    def summarize(
        summary_data: list[tuple[str, list[str]]],
        total_parameters: int,
        trainable_parameters: int,
        model_size: float,
        total_training_modes: dict[str, int],
        total_flops: int,
        **summarize_kwargs: Any,
    ) -> None:
        columns = [(name, values) for name, values in summary_data if name != "FLOPs"]
        rows = [[name.strip() for name, _ in columns]]  # the first column is the index
        rows += [[values[i] for _, values in columns] for i in range(len(columns[0][1]))]
        widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
        lines = [
            " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows
        ]
        lines.insert(1, "-" * len(lines[0]))
        lines += [
            "-" * len(lines[0]),
            f"{get_human_readable_count(trainable_parameters)} trainable params, "
            f"{get_human_readable_count(total_parameters - trainable_parameters).strip()} "
            "non-trainable, "
            f"{get_formatted_model_size(model_size)} MB",
        ]
        print("\n".join(lines), flush=True)
