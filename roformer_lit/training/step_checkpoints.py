"""``StepCheckpoints``: keep the weights of chosen optimiser steps, ``checkpoints/step=N.ckpt``.

    trainer:
      callbacks:
        - class_path: roformer_lit.training.step_checkpoints.StepCheckpoints
          init_args: {steps: [1500, 3000, 6000]}

(or ``--trainer.callbacks+=roformer_lit.training.step_checkpoints.StepCheckpoints
--trainer.callbacks.steps='[1500, 3000]'``). After optimiser step ``N`` of ``steps`` the
run's checkpoint is written beside ``last.ckpt`` as ``step=N.ckpt`` (its ``global_step`` is
``N``); ``extrapolate`` evaluates such files like any checkpoint and its ``--budget`` puts
``N`` in the ``step`` column, which gives accuracy against training steps from one run.
That is an honest budget curve only with a learning-rate schedule that does not depend on
the total step count (``model.lr_schedule: constant``; see ``docs/guide/runs.md``).
A resumed run writes the steps it has not passed yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lightning.pytorch import Callback, LightningModule, Trainer

from roformer_lit.errors import ConfigError
from roformer_lit.training.callbacks import last_checkpoint_path


class StepCheckpoints(Callback):
    """Save ``step=N.ckpt`` after each optimiser step ``N`` of ``steps``."""

    def __init__(self, steps: Sequence[int]) -> None:
        bad = [s for s in steps if not isinstance(s, int) or isinstance(s, bool) or s < 1]
        if bad or not steps:
            raise ConfigError(
                f"StepCheckpoints steps must be a non-empty list of positive integers, got "
                f"{list(steps)!r}"
            )
        self.steps = sorted(set(steps))

    def on_train_batch_end(
        self,
        trainer: Trainer,
        pl_module: LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        step = trainer.global_step  # optimiser steps done
        if step in self.steps:
            trainer.save_checkpoint(
                last_checkpoint_path(trainer).parent / f"step={step}.ckpt", weights_only=False
            )
