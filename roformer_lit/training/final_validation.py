"""Every ``fit`` ends with a validation at its last step: :class:`ValidateAtEnd`.

Lightning validates every ``val_check_interval`` training batches; a run whose last step
is not a multiple of it ends on steps nobody validated, and one with ``max_steps`` below
the interval never validates at all (no ``val/*`` scalars, no ``best.ckpt``). This callback
adds one validation after the last step when the schedule has none there, and says so in
one line when training starts. The extra validation comes after the last optimiser step,
so training itself is unchanged.

It also logs that last step when training starts, as the scalar
:data:`~roformer_lit.run_files.TOTAL_STEPS_TAG` (the run's steps to its end, by steps or by
epochs: :func:`~roformer_lit.training.steps.total_steps`; nothing for a run without a known
end): what a reader of the run's logs (``compare``) tells a finished run by, a run limited
by epochs too (a validation logged there), where the run's settings alone do not say how
many steps an epoch has.
"""

from __future__ import annotations

import math
from typing import Any

from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.utilities import rank_zero_info

from roformer_lit.run_files import TOTAL_STEPS_TAG
from roformer_lit.training.lightning_compat import (
    can_stop_early,
    ready_batches_reached,
    validates_after_batch,
    validates_by_time,
)
from roformer_lit.training.steps import total_steps


class ValidateAtEnd(Callback):
    """Validate after the last training step unless the schedule already does."""

    def __init__(self) -> None:
        self._forced = False
        self._total: int | None = None

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._forced = False
        self._total = total_steps(trainer)
        if self._total is not None:  # the step this run validates at last: its end
            for logger in trainer.loggers:
                logger.log_metrics({TOTAL_STEPS_TAG: float(self._total)}, step=trainer.global_step)
        message = schedule_gap(trainer)
        if message is not None:
            rank_zero_info(message)

    def on_train_batch_end(
        self,
        trainer: Trainer,
        pl_module: LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        if trainer.should_stop or not _is_last_batch_of_run(trainer, self._total):
            return
        scheduled = validates_after_batch(trainer)
        if scheduled is None or scheduled:
            return  # validation off, the schedule validates here anyway, or internals gone
        if not can_stop_early(trainer):
            return  # min_steps/min_epochs not met: the loop will not stop here
        # Lightning validates after a batch when the run was asked to stop (its early
        # stopping path); the loop ends here anyway, at max_steps or its last epoch.
        trainer.should_stop = True
        self._forced = True

    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self._forced:
            trainer.should_stop = False  # the loop ends on its own limit; leave no trace
            self._forced = False


def _is_last_batch_of_run(trainer: Trainer, total: int | None) -> bool:
    """Whether the training batch that just ended is the run's last one (``total``: the
    run's steps, :func:`~roformer_lit.training.steps.total_steps`)."""
    if total is not None and trainer.global_step >= total:
        return True
    max_epochs = trainer.max_epochs if trainer.max_epochs is not None else -1
    if max_epochs < 0 or trainer.current_epoch + 1 < max_epochs:
        return False
    return ready_batches_reached(trainer)


def schedule_gap(trainer: Trainer) -> str | None:
    """The line to print when a step-limited run's validation schedule misses its last step
    (None when it does not, or when the schedule is not a fixed number of batches)."""
    max_steps = trainer.max_steps if trainer.max_steps is not None else -1
    total = total_steps(trainer) if max_steps > 0 else None
    every = trainer.val_check_batch
    if (
        total is None
        or trainer.global_step >= total
        or trainer.check_val_every_n_epoch is not None
        or validates_by_time(trainer)
        or not isinstance(every, int | float)
        or not math.isfinite(every)
        or not trainer.enable_validation
    ):
        return None
    accumulate = max(int(trainer.accumulate_grad_batches), 1)
    batches = total * accumulate
    every = int(every)
    if every <= 0 or batches % every == 0:
        return None
    interval = trainer.val_check_interval
    # the steps: max_steps, or the epochs' fewer steps when they end the run first
    steps = f"trainer.max_steps={max_steps}" if total == max_steps else f"the run's {total} steps"
    if every > batches:
        return (
            f"trainer.val_check_interval={interval} is beyond {steps}: validating once, "
            f"after the last step ({total})"
        )
    last = (batches // every) * every // accumulate
    return (
        f"trainer.val_check_interval={interval} does not divide {steps} (last scheduled "
        f"validation at step {last}): validating after the last step ({total}) too"
    )
