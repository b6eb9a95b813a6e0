"""How many optimiser steps a run takes: :func:`total_steps`, the one count every part of
a run uses -- the learning-rate schedule (:meth:`RunModule.total_steps
<roformer_lit.training.lifecycle.RunModule.total_steps>`), the progress display
(:mod:`~roformer_lit.training.progress`) and the validation after the last step
(:mod:`~roformer_lit.training.final_validation`).

    T = max_steps                                   when the run is limited by steps only
    T = max_epochs * ceil(B / accumulate_grad_batches)   when it is limited by epochs only
    T = min(the two)                                when both are set (Lightning stops at
                                                    whichever comes first)

with ``B`` the training batches of one epoch: the data module's ``train_batches`` when it
has them (cut to ``limit_train_batches``), since Lightning's ``estimated_stepping_batches``
builds the training loader, which a resumed run must not do before it restores its
position; else Lightning's estimate. None when the run has no end (no step limit, endless
epochs) or the length cannot be known.
"""

from __future__ import annotations

import math
from typing import Any


def total_steps(trainer: Any) -> int | None:
    """The optimiser step the run of ``trainer`` ends at (module docstring); None: unknown."""
    max_steps = trainer.max_steps if trainer.max_steps is not None else -1
    epochs = trainer.max_epochs
    if max_steps > 0 and (epochs is None or epochs < 0):
        return max_steps
    by_epochs = _epoch_steps(trainer)
    if max_steps > 0:
        return max_steps if by_epochs is None else min(max_steps, by_epochs)
    return by_epochs


def _epoch_steps(trainer: Any) -> int | None:
    """``max_epochs`` times the optimiser steps of one epoch; None when unknown."""
    epochs = trainer.max_epochs
    if epochs is None or epochs < 0:
        return None
    batches = getattr(trainer.datamodule, "train_batches", None)
    if batches is None:
        try:
            estimate = trainer.estimated_stepping_batches
        except Exception:  # no training loader, or no length to estimate from
            return None
        return int(estimate) if math.isfinite(estimate) else None
    limit = trainer.limit_train_batches
    if limit is not None:
        batches = min(batches, limit) if isinstance(limit, int) else int(batches * limit)
    return max(1, math.ceil(batches / trainer.accumulate_grad_batches) * epochs)
