"""What interop reads of an :class:`~roformer_lit.encoder_config.EncoderConfig`'s class:
the fields' defaults (the config's typed views, ``block_options``, ``layer_specs`` and
``attention_dropout_value``, are read from the config itself)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from roformer_lit.encoder_config import EncoderConfig


def field_defaults(config: EncoderConfig) -> dict[str, Any]:
    """``{field: default}`` of ``config``'s class (a subclass may add fields)."""
    return {f.name: f.default for f in dataclasses.fields(type(config))}
