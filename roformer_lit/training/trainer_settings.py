"""The trainer's settings that make a run what it is, and how the trainer holds each one.

Plain Python (no torch, no Lightning): the commands that resume a run, the sweep that skips
a finished one and ``compare`` that tables runs all read them from here.

* :data:`MEASURED_TRAINER_SETTINGS`: every trainer setting that changes what a run trains on
  or what its validation measures: its length and numerics, the batch limits and the
  validation schedule (the best val/loss and the last validation's metrics are taken where
  validation runs). Two runs that differ in one are two experiments: a finished run asked
  for again with another is not skipped by a sweep, and ``compare`` never tables them as
  seeds of one variant.
* :data:`RECORDED_TRAINER_SETTINGS`: what a checkpoint's ``trainer_settings`` record holds
  and a resumed ``fit`` compares: the same settings, so what identifies a run for
  ``compare`` and a sweep is what a resume keeps (a run's ``config.yaml`` is true for all
  of it).
* :func:`held`: a setting as the trainer holds it, so spellings of one value compare equal
  (``precision: 32`` is ``32-true``, ``limit_val_batches: null`` is ``1.0``,
  ``val_check_interval: null`` is ``1.0``, once an epoch), and a count of batches is never
  a fraction (``val_check_interval: 1``, every batch, is not ``1.0``). A
  ``val_check_interval`` given as a duration (validation on a clock: ``"DD:HH:MM:SS"``, a
  mapping of ``datetime.timedelta``'s arguments such as ``{minutes: 5}``, or a
  ``timedelta``, as Lightning takes it) is held as its seconds, ``"300.0 seconds"``
  (:func:`duration_seconds`): every spelling of one duration is one value, never a count of
  batches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

#: Every trainer setting that changes what a run trains on or measures: its length and
#: numerics, the batch limits (fewer validation batches is another validation set) and
#: when validation runs (its best val/loss and last metrics are of the steps it validated).
MEASURED_TRAINER_SETTINGS = (
    "max_steps",
    "max_epochs",
    "accumulate_grad_batches",
    "gradient_clip_val",
    "gradient_clip_algorithm",
    "precision",
    "limit_train_batches",
    "limit_val_batches",
    "overfit_batches",
    "val_check_interval",
    "check_val_every_n_epoch",
)
#: The trainer's settings a ``trainer_settings`` record holds (``RunModule`` writes them, in
#: this order, but for a setting the trainer does not hold as a value:
#: ``trainer_settings_record``): every one of :data:`MEASURED_TRAINER_SETTINGS`. Checkpoints
#: from before hold ``max_steps`` alone, or the first six; a resume compares what is there.
RECORDED_TRAINER_SETTINGS = MEASURED_TRAINER_SETTINGS


def _max_epochs_held(value: Any, trainer: Mapping[str, Any]) -> Any:
    """``max_epochs`` as Lightning resolves it: None is 1000 without a step or time limit,
    else -1 (no epoch limit)."""
    if value is not None:
        return value
    endless = trainer.get("max_steps") in (-1, None) and trainer.get("max_time") is None
    return 1000 if endless else -1


#: Precision flags Lightning reads as another (``32`` is ``32-true``; None its default).
_PRECISION_ALIASES = {"16": "16-mixed", "bf16": "bf16-mixed", "32": "32-true", "64": "64-true"}


def _limit(default: float) -> Callable[[Any, Mapping[str, Any]], Any]:
    """A batch limit (or the validation interval) as the trainer reads it: None is
    ``default`` (a fraction), an integer a count of batches, written ``"<n> batches"`` so
    that one batch (``1``) is never the whole set or epoch (``1.0``); no batches (``0``)
    are none (``0.0``)."""

    def hold(value: Any, _: Mapping[str, Any]) -> Any:
        if value is None:
            return default
        if value == 0 and not isinstance(value, bool):  # overfit_batches 0 is 0.0: off
            return 0.0
        if isinstance(value, int) and not isinstance(value, bool):
            return f"{value} batches"
        return value

    return hold


def duration_seconds(value: Any) -> float | None:
    """The seconds of a ``val_check_interval`` given as a duration, read as Lightning reads
    one (``"DD:HH:MM:SS"`` of integers, a mapping of ``timedelta``'s arguments, a
    ``timedelta``); None for anything else (a count or fraction of batches, or a duration
    Lightning refuses, which the trainer's construction reports)."""
    try:
        if isinstance(value, timedelta):
            return value.total_seconds()
        if isinstance(value, Mapping):
            return timedelta(**value).total_seconds()
        if isinstance(value, str):
            days, hours, minutes, seconds = (int(part) for part in value.split(":"))
            return timedelta(days, seconds, 0, 0, minutes, hours).total_seconds()
    except (TypeError, ValueError, OverflowError):
        return None
    return None


def _interval_held(value: Any, trainer: Mapping[str, Any]) -> Any:
    """``val_check_interval`` as the trainer holds it: a duration as its seconds
    (``"300.0 seconds"``), else a fraction of an epoch or a count of batches as the batch
    limits are held."""
    seconds = duration_seconds(value)
    if seconds is not None:
        return f"{seconds!r} seconds"
    return _limit(1.0)(value, trainer)


def _every_n_epochs_held(value: Any, trainer: Mapping[str, Any]) -> Any:
    """``check_val_every_n_epoch`` as Lightning holds it: a section that does not name it has
    the trainer's default, every epoch (1); a written None (validation counted in batches
    across epochs) is None."""
    return value if "check_val_every_n_epoch" in trainer else 1


#: A trainer setting -> its value as the trainer holds it, given the value and the
#: ``trainer`` section: what a checkpoint recorded (``trainer_settings_record``), what a
#: command gives and what a run's ``config.yaml`` says are compared so.
TRAINER_HOLDS: dict[str, Callable[[Any, Mapping[str, Any]], Any]] = {
    "max_epochs": _max_epochs_held,
    "gradient_clip_val": lambda value, _: 0.0 if value is None else value,
    "gradient_clip_algorithm": lambda value, _: "norm" if value is None else str(value).lower(),
    "precision": lambda value, _: (
        _PRECISION_ALIASES.get(str(value), str(value)) if value is not None else "32-true"
    ),
    "limit_train_batches": _limit(1.0),
    "limit_val_batches": _limit(1.0),
    "overfit_batches": _limit(0.0),
    # a fraction of an epoch, or a count of batches like the limits (None: once an epoch),
    # or a duration as its seconds
    "val_check_interval": _interval_held,
    "check_val_every_n_epoch": _every_n_epochs_held,
}


def held(key: str, trainer: Any) -> Any:
    """Trainer setting ``key`` of a ``trainer`` section as the trainer holds it
    (:data:`TRAINER_HOLDS`)."""
    trainer = trainer if trainer is not None else {}
    value = trainer.get(key)
    return TRAINER_HOLDS[key](value, trainer) if key in TRAINER_HOLDS else value


def measured_settings(trainer: Mapping[str, Any]) -> dict[str, Any]:
    """``trainer.<key>`` -> held value of every :data:`MEASURED_TRAINER_SETTINGS` of a
    ``trainer`` section (a run's ``config.yaml`` or a parsed command): the trainer's part
    of what identifies a run."""
    return {f"trainer.{key}": held(key, trainer) for key in MEASURED_TRAINER_SETTINGS}


__all__ = [
    "MEASURED_TRAINER_SETTINGS",
    "RECORDED_TRAINER_SETTINGS",
    "TRAINER_HOLDS",
    "duration_seconds",
    "held",
    "measured_settings",
]
