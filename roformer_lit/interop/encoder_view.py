"""What interop reads of an :class:`~roformer_lit.encoder_config.EncoderConfig` beyond its
fields, in one place: the block's options with their defaults, each layer's scheme,
options and window, the fields' defaults and the attention dropout in effect.

Export and import read a config only through its field names, ``as_dict()`` and
``from_settings()``, and through the functions here.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from roformer_lit.blocks import BlockOptions
from roformer_lit.layer_plan import LayerSpec, resolve_plan

if TYPE_CHECKING:
    from roformer_lit.encoder_config import EncoderConfig


def block_options(config: EncoderConfig) -> BlockOptions:
    """``config.block`` with every option, defaults filled in (None: BERT's block)."""
    return BlockOptions.from_config(config.block, config.pre_norm)


def layer_specs(config: EncoderConfig) -> list[LayerSpec]:
    """Each layer's scheme, scheme options and window (``layer_plan`` resolved)."""
    return resolve_plan(
        config.layer_plan, config.num_layers, config.position, config.position_kwargs
    )


def field_defaults(config: EncoderConfig) -> dict[str, Any]:
    """``{field: default}`` of ``config``'s class (a subclass may add fields)."""
    return {f.name: f.default for f in dataclasses.fields(type(config))}


def attention_dropout(config: EncoderConfig) -> float:
    """The attention probabilities' dropout: ``attention_dropout``, else ``dropout``."""
    return config.dropout if config.attention_dropout is None else config.attention_dropout
