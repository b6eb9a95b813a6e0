"""A checkpoint's training settings, sealed by a digest written with them.

A resumed ``fit`` takes the run's training settings from its checkpoint: the optimiser and
schedule in ``hyper_parameters`` (``learning_rate``, ``warmup_steps``, ``min_lr_ratio``,
``lr_schedule``, ...) and the trainer's in its ``trainer_settings`` record
(:mod:`roformer_lit.commands.checkpoint_settings`). The architecture fields of
``hyper_parameters`` are sealed by :mod:`~roformer_lit.training.architecture_digest`; the
rest were not: a hand edit (``warmup_steps`` 2 -> 50, ``learning_rate`` 1e-3 -> 0.5)
resumed with exit 0, the schedule rebuilt from the edited value (another run than the one
that trained) or the run's ``config-resumed-<k>.yaml`` recording a rate the optimiser never
used. So every checkpoint a :class:`~roformer_lit.training.lifecycle.RunModule` writes
holds :data:`SETTINGS_DIGEST_KEY`, the SHA-256 of :func:`settings_record`, and the one
reader of checkpoints (:func:`~roformer_lit.training.checkpoint_io.read_checkpoint`)
refuses a mismatch in one line (:func:`check_settings_digest`). A checkpoint written
before the digest (none recorded) is read as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roformer_lit.encoder_config import ENCODER_FIELDS
from roformer_lit.errors import ConfigError
from roformer_lit.training.architecture_digest import record_digest
from roformer_lit.validation import as_data

#: The checkpoint key of the training settings' digest.
SETTINGS_DIGEST_KEY = "training_settings_digest"
#: The checkpoint records sealed beside ``hyper_parameters``' training settings: the
#: trainer's settings and the schedule's planned steps (``checkpoint_io``'s keys).
SEALED_RECORDS = ("trainer_settings", "schedule_steps")


def settings_record(checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    """The training settings of ``checkpoint`` as plain data: every ``hyper_parameters``
    entry that is not an architecture field, and the :data:`SEALED_RECORDS` it holds."""
    saved = checkpoint.get("hyper_parameters")
    settings = saved if isinstance(saved, Mapping) else {}
    record: dict[str, Any] = {
        "hyper_parameters": {
            str(k): as_data(v) for k, v in settings.items() if k not in ENCODER_FIELDS
        }
    }
    for key in SEALED_RECORDS:
        if key in checkpoint:
            record[key] = as_data(checkpoint[key])
    return record


def settings_digest(checkpoint: Mapping[str, Any]) -> str:
    """:func:`~roformer_lit.training.architecture_digest.record_digest` of
    :func:`settings_record`."""
    return record_digest(settings_record(checkpoint))


def check_settings_digest(checkpoint: Mapping[str, Any], path: Any) -> None:
    """Refuse, in one ConfigError line naming the checkpoint, one whose training settings
    are not the ones its :data:`SETTINGS_DIGEST_KEY` was written for; nothing where it
    records no digest (written before it)."""
    recorded = checkpoint.get(SETTINGS_DIGEST_KEY)
    if recorded is None or settings_digest(checkpoint) == recorded:
        return
    raise ConfigError(
        f"checkpoint {path} is damaged: its training settings (hyper_parameters, "
        f"{', '.join(SEALED_RECORDS)}) do not match what was saved with them "
        f"({SETTINGS_DIGEST_KEY}): they were edited after it was written, and a resume "
        "would train or record another run than the one it holds; use a checkpoint as fit "
        "wrote it"
    )


__all__ = ["SETTINGS_DIGEST_KEY", "check_settings_digest", "settings_digest", "settings_record"]
