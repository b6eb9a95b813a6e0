"""Callbacks every run gets from the CLI."""

from __future__ import annotations

from pathlib import Path

from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint


class LastCheckpointAtEnd(Callback):
    """Write ``last.ckpt`` when training ends, so it always holds the final step.

    ``ModelCheckpoint`` saves at validation; a run whose last step is not a validation step
    would otherwise leave ``last.ckpt`` behind the model it trained.
    """

    def on_train_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        for callback in trainer.checkpoint_callbacks:
            if isinstance(callback, ModelCheckpoint) and callback.save_last and callback.dirpath:
                last = (
                    Path(callback.dirpath)
                    / f"{callback.CHECKPOINT_NAME_LAST}{callback.FILE_EXTENSION}"
                )
                if callback._last_global_step_saved != trainer.global_step or not last.exists():
                    trainer.save_checkpoint(last)
                    callback.last_model_path = str(last)
