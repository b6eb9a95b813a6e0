"""Callbacks every run gets from the CLI."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.trainer.states import TrainerFn
from lightning.pytorch.utilities.exceptions import SIGTERMException

from roformer_lit.errors import TrainingDiverged
from roformer_lit.training import startup_signals
from roformer_lit.training.checkpoint_io import share_checkpoint
from roformer_lit.training.divergence_record import write_divergence
from roformer_lit.training.lightning_compat import (
    accumulating,
    refresh_last_checkpoint,
    saves_on_train_epoch_end,
    stop_as_if_sigterm,
    validation_follows_batch,
    validation_seconds,
)
from roformer_lit.training.step_end_validation import check_validation_schedule
from roformer_lit.training.steps import total_steps


class LastCheckpointAtEnd(Callback):
    """Write ``last.ckpt`` when training ends, so it always holds the final step.

    ``ModelCheckpoint`` saves at validation; a run whose last step is not a validation step
    would otherwise leave ``last.ckpt`` behind the model it trained. Saved even when a
    validation at the last step already wrote it, because Lightning takes that checkpoint
    inside the step, before its loop has counted the step.
    """

    def on_train_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        for callback in trainer.checkpoint_callbacks:
            if isinstance(callback, ModelCheckpoint) and callback.save_last and callback.dirpath:
                last = (
                    Path(callback.dirpath)
                    / f"{callback.CHECKPOINT_NAME_LAST}{callback.FILE_EXTENSION}"
                )
                # Always, even if a validation at this step saved it: that save happened
                # inside the step (before the loop counted it), so resuming from it would
                # log the next step under the previous one's number.
                trainer.save_checkpoint(last, weights_only=False)
                callback.last_model_path = str(last)
                _share_best_with_last(trainer, callback, last)


def _share_best_with_last(trainer: Trainer, callback: ModelCheckpoint, last: Path) -> None:
    """When the best checkpoint is of the final step (the last validation was the best),
    ``best.ckpt`` becomes a hard link to the ``last.ckpt`` just written: the same weights
    (and the state after the step, the one a resume needs), stored once instead of twice."""
    best = Path(callback.best_model_path) if callback.best_model_path else None
    if best is None or best == last or not best.is_file() or trainer.world_size > 1:
        return
    if trainer.is_global_zero and checkpoint_step(best) == trainer.global_step:
        share_checkpoint(last, best)


class RunCheckpoint(ModelCheckpoint):
    """``ModelCheckpoint`` whose ``last.ckpt`` follows every validation.

    Lightning's own refreshes ``last.ckpt`` only when it also saved a top-k checkpoint at
    that step, i.e. when ``val/loss`` improved; a run killed after a stretch of
    non-improving validations then restarts from the best step and loses everything since.
    Here ``last.ckpt`` is written at every validation (and every epoch end that saves).
    A new run whose validation would fall inside an optimiser step, where its checkpoints
    could not be resumed, is refused at the start of training, once the epoch's batches
    are known (:mod:`~roformer_lit.training.step_end_validation`).

    It saves after validation, never at a training epoch's end (``save_on_train_epoch_end``
    defaults to False, where Lightning would pick the epoch's end for a validation once an
    epoch): Lightning's loops, restored from a checkpoint saved there, count the epoch's last
    step again, so the resumed run logged every step one late and trained on other numbers
    than the uninterrupted run, with exit 0; saved after the validation at the epoch's last
    batch, it resumes exactly.
    """

    def __init__(self, *args: Any, save_on_train_epoch_end: bool | None = False, **kwargs: Any):
        super().__init__(*args, save_on_train_epoch_end=save_on_train_epoch_end, **kwargs)

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        super().on_train_start(trainer, pl_module)
        if trainer.ckpt_path is not None or not trainer.enable_validation:
            return  # a resume keeps its own schedule
        seconds = validation_seconds(trainer)  # a duration: Lightning keeps only its seconds
        check_validation_schedule(
            trainer.num_training_batches,
            int(trainer.accumulate_grad_batches),
            None if seconds is not None else trainer.val_check_batch,
            trainer.check_val_every_n_epoch is not None,
            f"{seconds:g} s" if seconds is not None else trainer.val_check_interval,
        )

    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        super().on_validation_end(trainer, pl_module)
        if not saves_on_train_epoch_end(self, trainer):
            refresh_last_checkpoint(self, trainer)

    def on_train_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        super().on_train_epoch_end(trainer, pl_module)
        if saves_on_train_epoch_end(self, trainer):
            refresh_last_checkpoint(self, trainer)


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
    """SIGTERM or SIGUSR1 ends a ``fit`` cleanly: the current step (and its validation, if
    one is due) finishes, ``last.ckpt`` is written, and the run stops.

    Builds on Lightning's own handling, whose SIGTERM handler stays in place (it stops the
    loops with ``SIGTERMException`` and forwards the signal to DDP workers); this callback

    1. holds the signal until the current step ends -- after its validation when one is due
       (Lightning alone would abort that validation half-way) -- and then passes it on to
       Lightning's handler. A step is an optimiser step: under ``accumulate_grad_batches``
       the signal waits for the last batch of the accumulation (a run stopped after a batch
       that only accumulated would lose its gradients, and resume past a batch its weights
       never trained on), a validation in between included;
    2. outside SLURM auto-requeue makes SIGUSR1 mean the same as SIGTERM (under SLURM,
       Lightning's SIGUSR1 handler keeps saving ``hpc_ckpt_<k>.ckpt`` and requeueing the job),
       and so does a first Ctrl-C (SIGINT; a second one stops at once, saving nothing);
    3. saves ``last.ckpt`` at that point: at the end of the validation, or when Lightning
       stops the loop after a step without one. These are the two states Lightning itself
       checkpoints and restores (``ModelCheckpoint`` at validation end, ``last`` after a
       step), so a resumed run continues exactly;
    4. leaves a signal that comes during the run's last step to the run's own end: the run
       finishes (its final validation, ``last.ckpt`` at its end, exit 0), since a resume
       would have nothing left to train.

    The exception carries ``preemption = {"signal", "step", "checkpoint"}`` for the CLI,
    which prints one line and exits with ``EXIT_PREEMPTED``.
    """

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._trainer: Trainer | None = None
        self._forward: Any = None
        self._pending = False
        self._saved: tuple[int, str] | None = None

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
        startup_signals.hand_over()  # SIGTERM now means: finish the step, save, stop
        self._forward = current if callable(current) else None
        signal.signal(signal.SIGTERM, self._handle)
        if signal.getsignal(signal.SIGUSR1) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGUSR1, self._handle)
        if signal.getsignal(signal.SIGINT) in (
            signal.default_int_handler,
            startup_signals.on_sigint,
        ):
            signal.signal(signal.SIGINT, self._handle)  # Ctrl-C: save and stop, like SIGTERM
        # Lightning's teardown restores the handlers that were there before the run.

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT:
            if self._pending and self.signal_name == "SIGINT":
                raise KeyboardInterrupt  # a second Ctrl-C: stop now, without saving
            print(
                "\nCtrl-C: finishing this step and saving last.ckpt (press again to stop now)",
                file=sys.stderr,
                flush=True,
            )
        self.signal_name = signal.Signals(signum).name
        self._pending = True  # acted on at the end of the current step

    def _stop(self) -> None:
        """Pass the signal on to Lightning: the loop raises SIGTERMException after the step."""
        self._pending = False
        if self._forward is not None:
            self._forward(signal.SIGTERM, None)
        elif self._trainer is not None:
            stop_as_if_sigterm(self._trainer)

    def _save(self, trainer: Trainer) -> None:
        path = last_checkpoint_path(trainer)
        trainer.save_checkpoint(path, weights_only=False)
        self._saved = (trainer.global_step, str(path))

    def on_sanity_check_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._install(trainer)

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._install(trainer)

    def on_train_batch_end(
        self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if (
            self._pending
            and not accumulating(trainer)
            and not validation_follows_batch(trainer)
            and not _run_ends(trainer)
        ):
            self._stop()  # saved in on_exception, after the step

    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self._pending and not trainer.sanity_checking and trainer.state.fn == TrainerFn.FITTING:
            if _run_ends(trainer) or accumulating(trainer):
                return  # the run ends now anyway, or at the end of this optimiser step
            self._save(trainer)
            self._stop()

    def teardown(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        startup_signals.take_back()  # outside the loop SIGTERM stops at once again

    # -- the stop -------------------------------------------------------------------------
    def on_exception(
        self, trainer: Trainer, pl_module: LightningModule, exception: BaseException
    ) -> None:
        if not isinstance(exception, SIGTERMException):
            return
        if trainer.state.fn != TrainerFn.FITTING or trainer.sanity_checking:
            return
        if self._saved is None or self._saved[0] != trainer.global_step:
            if trainer.validating:  # stopped inside a validation: keep the last checkpoint
                path = last_checkpoint_path(trainer)
                self._saved = (checkpoint_step(path), str(path)) if path.is_file() else None
            else:
                self._save(trainer)
        if self._saved is not None:
            exception.preemption = {  # type: ignore[attr-defined]
                "signal": self.signal_name or "SIGTERM",
                "step": self._saved[0],
                "checkpoint": self._saved[1],
            }


def _run_ends(trainer: Trainer) -> bool:
    """Whether the step that just ended is the run's last
    (:func:`~roformer_lit.training.steps.total_steps`)."""
    total = total_steps(trainer)
    return total is not None and trainer.global_step >= total


def checkpoint_step(path: Path) -> int | None:
    """The ``global_step`` a checkpoint was saved at, or None if it cannot be read."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)["global_step"]
    except Exception:
        return None


class LastGoodCheckpoint(Callback):
    """On ``TrainingDiverged``, record in the run directory that the run diverged and
    where (:mod:`~roformer_lit.training.divergence_record`), and tell the CLI which
    checkpoint holds the last good weights (nothing is saved: the NaN step never reached
    the optimiser or a checkpoint)."""

    def on_exception(
        self, trainer: Trainer, pl_module: LightningModule, exception: BaseException
    ) -> None:
        if not isinstance(exception, TrainingDiverged):
            return
        log_dir = trainer.log_dir
        if trainer.is_global_zero and log_dir is not None and Path(log_dir).is_dir():
            write_divergence(log_dir, exception.step, str(exception))  # read by compare
        path = last_checkpoint_path(trainer)
        step = checkpoint_step(path) if path.is_file() else None
        if step is not None:  # unreadable: say nothing rather than something wrong
            exception.last_checkpoint = (str(path), step)  # type: ignore[attr-defined]
