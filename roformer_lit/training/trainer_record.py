"""The ``trainer_settings`` record a checkpoint carries: the trainer's settings that make its
run what it is, as the trainer holds them
(:data:`~roformer_lit.training.trainer_settings.RECORDED_TRAINER_SETTINGS`), which a
resumed ``fit`` compares with its own (:mod:`roformer_lit.commands.checkpoint_settings`).

A setting is left out where the trainer does not hold it as the run's value, so a resume
compares nothing for it (as for a checkpoint from before it was recorded): the
``limit_train_batches`` and ``limit_val_batches`` of a run with ``overfit_batches``, which
Lightning replaces by the ``overfit_batches`` count (recorded).

A ``val_check_interval`` given as a duration (validation on a clock) is held by the trainer
as its seconds, not as the setting: it is recorded as a duration Lightning takes,
``{"seconds": N}`` (with ``"microseconds"`` where it has a fraction of a second), so a
resumed run is given it back and a resume with another duration (however spelled:
:func:`~roformer_lit.training.trainer_settings.duration_seconds`) is refused like any other
validation schedule.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from roformer_lit.training.lightning_compat import validation_seconds
from roformer_lit.training.trainer_settings import RECORDED_TRAINER_SETTINGS


def _limit(value: Any) -> Any:
    """A batch limit as plain data: a count of batches (int) or a fraction (float)."""
    if value is None or isinstance(value, int):
        return value
    return float(value)


def _duration(seconds: float) -> dict[str, int]:
    """``seconds`` as ``timedelta`` arguments Lightning takes for ``val_check_interval``
    (integers: the CLI's type for them)."""
    span = timedelta(seconds=seconds)
    whole = {"seconds": span.days * 86_400 + span.seconds}
    return {**whole, "microseconds": span.microseconds} if span.microseconds else whole


def _values(trainer: Any) -> dict[str, Any]:
    """Every recorded setting the trainer holds as the run's value (see the module)."""
    algorithm = getattr(trainer, "gradient_clip_algorithm", None)
    clip = getattr(trainer, "gradient_clip_val", None)
    epochs = getattr(trainer, "max_epochs", None)
    every = getattr(trainer, "check_val_every_n_epoch", 1)
    values = {
        "max_steps": int(trainer.max_steps),
        "max_epochs": None if epochs is None else int(epochs),
        "accumulate_grad_batches": int(getattr(trainer, "accumulate_grad_batches", 1)),
        "gradient_clip_val": None if clip is None else float(clip),
        "gradient_clip_algorithm": None
        if algorithm is None
        else str(getattr(algorithm, "value", algorithm)),
        "precision": str(getattr(trainer, "precision", "32-true")),
        "overfit_batches": _limit(getattr(trainer, "overfit_batches", 0.0)),
        "check_val_every_n_epoch": None if every is None else int(every),
    }
    if not values["overfit_batches"]:  # else Lightning holds the overfit count in both
        values["limit_train_batches"] = _limit(getattr(trainer, "limit_train_batches", 1.0))
        values["limit_val_batches"] = _limit(getattr(trainer, "limit_val_batches", 1.0))
    seconds = validation_seconds(trainer)
    if seconds is None:
        values["val_check_interval"] = _limit(getattr(trainer, "val_check_interval", 1.0))
    else:
        values["val_check_interval"] = _duration(seconds)
    return values


def trainer_settings_record(trainer: Any) -> dict[str, Any]:
    """The trainer's settings that shape its run, as the trainer holds them, in the order of
    :data:`~roformer_lit.training.trainer_settings.RECORDED_TRAINER_SETTINGS`: its length
    (``max_steps``; ``max_epochs``, which Lightning resolves from None to 1000 or -1),
    ``accumulate_grad_batches``, gradient clipping (``gradient_clip_val``;
    ``gradient_clip_algorithm``, None for Lightning's default, the norm), ``precision``
    (``32-true``, ``bf16-mixed``...), the batch limits (a count of batches or a fraction)
    and the validation schedule (``val_check_interval``, a duration as ``{"seconds": N}``;
    ``check_val_every_n_epoch``), but for the settings the module leaves out. Plain data: a
    checkpoint is read ``weights_only``."""
    values = _values(trainer)
    return {key: values[key] for key in RECORDED_TRAINER_SETTINGS if key in values}


__all__ = ["trainer_settings_record"]
