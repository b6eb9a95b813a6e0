"""``EncoderConfig``: the encoder's architecture, in one typed, checked object.

Every setting that defines the network -- its scheme and kernel, sizes, dropouts, norms,
block and layer plan -- is one field here, and everything that needs the architecture
reads it from an ``EncoderConfig``: the :class:`~roformer_lit.model.Encoder` and its
MLM head, :class:`~roformer_lit.module.MaskedLM` (``model.config``), the pre-launch check
(``commands/prelaunch.py``), what ``--ckpt_path`` takes from a checkpoint
(``commands/checkpoint_settings.py``), fine-tuning's encoder (``finetune/pretrained.py``)
and Hugging Face export and import (``interop/``). A new field is one line here and one
rule in :data:`roformer_lit.validation.MODEL_RULES`; ``tests/test_encoder_config.py``
fails until every one of those places has it.

The command line keeps its flat keys (``--model.hidden_size``, ``--model.position rope``):
``MaskedLM`` takes the fields as flat, typed keyword arguments -- what jsonargparse turns
into keys and help, and what Lightning saves as the checkpoint's flat ``hyper_parameters``,
so checkpoints of every version load unchanged -- and builds the ``EncoderConfig`` from
them once. The optimiser and schedule (``learning_rate``, ``warmup_steps``, ...) are
training settings, not architecture: they stay ``MaskedLM``'s own.

An ``EncoderConfig`` is checked once, when it is made: the field rules of ``MODEL_RULES``,
the cross rules of :data:`~roformer_lit.validation.CROSS_RULES` over its fields, the
block's options and the layer plan's form; each failure is one
:class:`~roformer_lit.errors.ConfigError` line naming ``model.<field>``, the value and the
valid ones. What needs the scheme and kernel registries (their names and options, which
scheme goes with which kernel or window) is checked by the ``Encoder`` built from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from roformer_lit.blocks import BlockOptions
from roformer_lit.layer_plan import LayerSpec, resolve_plan
from roformer_lit.validation import CROSS_RULES, MODEL_RULES, PREFIX, check_arguments


@dataclass(frozen=True)
class EncoderConfig:
    """The encoder's architecture (see the module).

    Attributes:
        position: a key of ``POSITION_SCHEMES``.
        attention: a key of ``ATTENTION_KERNELS``.
        vocab_size: the tokenizer's vocabulary (linked from the data module by the CLI).
        hidden_size, num_layers, num_heads, intermediate_size: the encoder's dimensions.
        max_positions: size of position tables (a hard limit only for ``learned``).
        dropout: hidden dropout.
        attention_dropout: dropout of the attention probabilities; None: ``dropout``
            (:attr:`attention_dropout_value`).
        layer_norm_eps: the norms' epsilon everywhere.
        pre_norm: pre-LN blocks instead of BERT's post-LN.
        position_kwargs, attention_kwargs: options of the scheme / kernel.
        block: the block's options (:mod:`roformer_lit.blocks`); None: BERT's block.
        layer_plan: each layer's scheme, options and window (:mod:`roformer_lit.layer_plan`);
            None: every layer global with ``position``.
    """

    position: str = "rope"
    attention: str = "softmax"
    vocab_size: int = 8192
    hidden_size: int = 256
    num_layers: int = 4
    num_heads: int = 4
    intermediate_size: int = 1024
    max_positions: int = 512
    dropout: float = 0.1
    attention_dropout: float | None = None
    layer_norm_eps: float = 1e-12
    pre_norm: bool = False
    position_kwargs: dict[str, Any] | None = None
    attention_kwargs: dict[str, Any] | None = None
    block: dict[str, Any] | None = None
    layer_plan: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        check_encoder_settings(self.as_dict())
        _ = self.block_options, self.layer_specs  # checked now, once

    @cached_property
    def block_options(self) -> BlockOptions:
        """``block``, checked (:meth:`BlockOptions.from_config`)."""
        return BlockOptions.from_config(self.block, self.pre_norm)

    @cached_property
    def layer_specs(self) -> list[LayerSpec]:
        """Each layer's scheme, options and window: ``layer_plan`` resolved
        (:func:`~roformer_lit.layer_plan.resolve_plan`; no plan: every layer the model's)."""
        return resolve_plan(self.layer_plan, self.num_layers, self.position, self.position_kwargs)

    @property
    def model_layer(self) -> LayerSpec:
        """The model's own scheme and options, as a layer without a window."""
        return LayerSpec("", self.position, dict(self.position_kwargs or {}), None)

    @property
    def attention_dropout_value(self) -> float:
        """The attention probabilities' dropout: ``attention_dropout``, else ``dropout``."""
        return self.dropout if self.attention_dropout is None else self.attention_dropout

    def as_dict(self) -> dict[str, Any]:
        """``{field: value}`` in field order (the values themselves, not copies)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], **overrides: Any) -> EncoderConfig:
        """The config of the fields among ``settings`` (a checkpoint's flat
        ``hyper_parameters``, a parsed ``model`` section, ``MaskedLM``'s arguments), then
        ``overrides``; other keys (training settings) are ignored, and a field missing
        from both (a checkpoint older than the field) takes its default."""
        values = {name: settings[name] for name in ENCODER_FIELDS if name in settings}
        return cls(**{**values, **overrides})

    def replace(self, **changes: Any) -> EncoderConfig:
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)


#: The fields of :class:`EncoderConfig`, in order: the ``model.*`` keys of the architecture.
ENCODER_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(EncoderConfig))


def encoder_defaults(config_class: type[EncoderConfig] = EncoderConfig) -> dict[str, Any]:
    """``{field: default}`` of every field of ``config_class``."""
    return {f.name: f.default for f in dataclasses.fields(config_class)}


def check_encoder_settings(settings: Mapping[str, Any]) -> None:
    """The rules of :data:`MODEL_RULES` for the fields among ``settings``, then each cross
    rule of :data:`CROSS_RULES` whose settings are all fields given: the one check of an
    architecture (``EncoderConfig`` runs it when it is made)."""
    given = {name: value for name, value in settings.items() if name in MODEL_RULES}
    check_arguments(given, MODEL_RULES, PREFIX)
    for needed, cross_check in CROSS_RULES:
        if all(name in given for name in needed):
            cross_check(given)
