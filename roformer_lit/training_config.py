"""``TrainingConfig``: how a :class:`~roformer_lit.module.MaskedLM` is trained, in one typed,
checked object, beside the architecture's :class:`~roformer_lit.encoder_config.EncoderConfig`.

AdamW with warm-up then the schedule ``lr_schedule`` (:func:`roformer_lit.training.lifecycle.lr_factor`):

    lr(t) = learning_rate * factor(t),   factor: linear warm-up over ``warmup_steps``, then
            ``linear`` decay to ``min_lr_ratio``, ``constant`` 1, or ``wsd`` (stable, then a
            linear decay over the last ``decay_fraction`` of the steps after warm-up)

The fields are written once, here; what each accepts once, in
:data:`~roformer_lit.validation.TRAINING_RULES` (a test fails when a field has no rule). A
``TrainingConfig`` is checked when it is made: one :class:`~roformer_lit.errors.ConfigError`
line naming ``model.<field>``, the value and the valid ones.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from roformer_lit.errors import refuse_unknown_fields
from roformer_lit.training.lifecycle import OptimizerSettings
from roformer_lit.validation import check_training_arguments


@dataclass(frozen=True)
class TrainingConfig:
    """The training settings of a masked-LM run (see the module).

    Attributes:
        learning_rate: AdamW's peak learning rate.
        weight_decay: AdamW's decoupled weight decay (not on biases, norms or embeddings'
            position tables; :meth:`~roformer_lit.training.lifecycle.RunModule.configure_optimizers`).
        betas: AdamW's moment coefficients.
        warmup_steps: optimiser steps of linear warm-up from 0.
        min_lr_ratio: the decay ends at ``min_lr_ratio * learning_rate``; the decay runs to
            ``trainer.max_steps`` (or the trainer's estimate).
        position_lr_scale: the position scheme's parameters train at this multiple of
            ``learning_rate`` (1: one rate). Learned biases that start at zero (T5, FIRE)
            move about one learning rate per AdamW step, so a short run leaves them near
            uniform; a larger scale lets a short study tell such schemes apart.
        lr_schedule: ``linear`` (warm-up, then linear decay to ``trainer.max_steps``: the
            default), ``constant`` (warm-up, then ``learning_rate``: independent of the step
            count, so checkpoints at several steps serve several budgets) or ``wsd`` (warm-up,
            stable, then linear decay over the last ``decay_fraction`` of the steps after
            warm-up).
        decay_fraction: the share of post-warm-up steps ``wsd`` decays over, in (0, 1].
        init_std: standard deviation of the normal initialisation.
        compile: wrap the encoder in ``torch.compile``.
        skip_nonfinite: skip (no optimiser step) a batch whose loss or gradient is NaN/inf and
            count it in ``train/skipped_batches``, instead of stopping the run with
            ``TrainingDiverged`` (which still stops it after ``MAX_CONSECUTIVE_SKIPS`` such
            batches in a row).
    """

    learning_rate: float = 5e-4
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.98)
    warmup_steps: int = 100
    min_lr_ratio: float = 0.0
    position_lr_scale: float = 1.0
    lr_schedule: str = "linear"
    decay_fraction: float = 0.2
    init_std: float = 0.02
    compile: bool = False
    skip_nonfinite: bool = False

    def __new__(cls, *args: Any, **fields: Any) -> TrainingConfig:
        # TrainingConfig(lr=1e-3) is one ConfigError line naming the fields, as
        # EncoderConfig's: not Python's TypeError naming none
        refuse_unknown_fields(cls, fields, [f.name for f in dataclasses.fields(cls)])
        return super().__new__(cls)

    def __post_init__(self) -> None:
        check_training_arguments(self.as_dict())  # checked now, once
        # a pair however it was spelled (YAML and checkpoints give a list)
        object.__setattr__(self, "betas", tuple(self.betas))

    @property
    def optimizer_settings(self) -> OptimizerSettings:
        """What :class:`~roformer_lit.training.lifecycle.RunModule` builds AdamW and the
        schedule from."""
        return OptimizerSettings(
            learning_rate=self.learning_rate,
            weight_decay=self.weight_decay,
            betas=self.betas,
            min_lr_ratio=self.min_lr_ratio,
            lr_schedule=self.lr_schedule,
            decay_fraction=self.decay_fraction,
            position_lr_scale=self.position_lr_scale,
        )

    def as_dict(self) -> dict[str, Any]:
        """``{field: value}`` in field order."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


#: The fields of :class:`TrainingConfig`, in order: the ``model.*`` keys of training.
TRAINING_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(TrainingConfig))
