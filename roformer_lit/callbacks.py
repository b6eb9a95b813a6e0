"""Callbacks every run gets from the CLI."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.trainer.states import TrainerFn
from lightning.pytorch.utilities.exceptions import SIGTERMException


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


def last_checkpoint_path(trainer: Trainer) -> Path:
    """Where ``last.ckpt`` of this run goes: the ModelCheckpoint's directory, or
    ``<log_dir>/checkpoints`` when there is none."""
    for callback in trainer.checkpoint_callbacks:
        if isinstance(callback, ModelCheckpoint) and callback.dirpath:
            return Path(callback.dirpath) / (
                f"{callback.CHECKPOINT_NAME_LAST}{callback.FILE_EXTENSION}"
            )
    root = trainer.log_dir or trainer.default_root_dir
    return Path(root) / "checkpoints" / "last.ckpt"


class Preemption(Callback):
    """SIGTERM or SIGUSR1 ends a ``fit`` cleanly: the current step (and a validation that is
    under way) finishes, ``last.ckpt`` is written, and the run stops.

    Builds on Lightning's own handling: Lightning's SIGTERM handler (which stops the loops
    with ``SIGTERMException`` and forwards the signal to DDP workers) stays in place; this
    callback (1) defers it while validation runs, so the checkpoint never captures a
    half-finished validation, (2) outside SLURM auto-requeue makes SIGUSR1 mean the same as
    SIGTERM (under SLURM, Lightning's SIGUSR1 handler saves ``hpc_ckpt_<k>.ckpt`` and
    requeues the job, as before), and (3) saves ``last.ckpt`` when the stop arrives. The
    exception carries ``preemption = {"signal", "step", "checkpoint"}`` for the CLI, which
    prints one line and exits with ``EXIT_PREEMPTED``.
    """

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._trainer: Trainer | None = None
        self._forward: Any = None
        self._deferred: Any = None

    # -- signal handling ------------------------------------------------------------------
    def _install(self, trainer: Trainer) -> None:
        """Wrap Lightning's SIGTERM handler (registered just before the sanity check / the
        training loop) and claim SIGUSR1 if nobody (Lightning's SLURM requeue) has it."""
        if threading.current_thread() is not threading.main_thread():
            return
        current = signal.getsignal(signal.SIGTERM)
        if current == self._handle:
            return
        self._trainer = trainer
        self._forward = current if callable(current) else None
        self._deferred = None
        signal.signal(signal.SIGTERM, self._handle)
        if signal.getsignal(signal.SIGUSR1) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGUSR1, self._handle)
        # Lightning's teardown restores the handlers that were there before the run.

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.signal_name = signal.Signals(signum).name
        trainer = self._trainer
        if trainer is not None and (trainer.validating or trainer.sanity_checking):
            self._deferred = frame or True  # released when validation ends
            return
        self._stop(frame)

    def _stop(self, frame: FrameType | None) -> None:
        if self._forward is not None:  # Lightning's handler: sets trainer.received_sigterm
            self._forward(signal.SIGTERM, frame)
        elif self._trainer is not None:
            self._trainer._signal_connector.received_sigterm = True

    def _release(self) -> None:
        if self._deferred is not None:
            frame = self._deferred if isinstance(self._deferred, FrameType) else None
            self._deferred = None
            self._stop(frame)

    def on_sanity_check_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._install(trainer)

    def on_sanity_check_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._release()

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._install(trainer)

    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._release()

    # -- the stop -------------------------------------------------------------------------
    def on_exception(
        self, trainer: Trainer, pl_module: LightningModule, exception: BaseException
    ) -> None:
        if not isinstance(exception, SIGTERMException):
            return
        if trainer.state.fn != TrainerFn.FITTING or trainer.sanity_checking:
            return
        path = last_checkpoint_path(trainer)
        trainer.save_checkpoint(path)
        exception.preemption = {  # type: ignore[attr-defined]
            "signal": self.signal_name or "SIGTERM",
            "step": trainer.global_step,
            "checkpoint": str(path),
        }


class LastGoodCheckpoint(Callback):
    """On ``TrainingDiverged``, tell the CLI which checkpoint holds the last good weights
    (nothing is saved: the NaN step never reached the optimiser or a checkpoint)."""

    def on_exception(
        self, trainer: Trainer, pl_module: LightningModule, exception: BaseException
    ) -> None:
        from roformer_lit.module import TrainingDiverged

        if not isinstance(exception, TrainingDiverged):
            return
        for callback in trainer.checkpoint_callbacks:
            if isinstance(callback, ModelCheckpoint) and callback.last_model_path:
                exception.last_checkpoint = (  # type: ignore[attr-defined]
                    callback.last_model_path,
                    callback._last_global_step_saved,
                )
                return
