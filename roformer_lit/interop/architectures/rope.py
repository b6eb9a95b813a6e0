"""``rope`` <-> ``RoFormerForMaskedLM``.

HF RoFormer rotates every query/key dimension at the unscaled base-10000 frequencies and
never rotates values; it has no position parameters (its sinusoid table is derived), and
its token-type row 0 is exported as zeros (we have no token types) and must be zero on
import (no absolute table to fold it into).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch

from roformer_lit.errors import ConfigError
from roformer_lit.interop._hf import require_transformers
from roformer_lit.interop.architectures.bert_layout import (
    BERT_LAYOUT_FLOOR,
    TOKEN_TYPES,
    BertLayout,
)

if TYPE_CHECKING:
    from torch import Tensor

    from roformer_lit.module import MaskedLM

HF_ROPE_BASE = 10000.0  # HF RoFormer hardcodes it (RoFormerSinusoidalPositionalEmbedding)


class RoFormerArchitecture(BertLayout):
    """Plain RoPE only: base 10000, every dimension, no scaling, no p-RoPE."""

    def check_export(self, model: MaskedLM) -> None:
        super().check_export(model)
        scheme = model.encoder.position
        if float(scheme.base) != HF_ROPE_BASE:
            raise ConfigError(
                f"cannot export rope base={scheme.base:g}: Hugging Face RoFormer hardcodes base "
                f"{HF_ROPE_BASE:g}"
            )
        partial = scheme.rotated != scheme.shape.head_size or scheme.unrotated_pairs
        if partial or scheme.scaling:
            raise ConfigError(
                "cannot export rope with rotary_fraction < 1 or scaling (or unrotated_fraction > "
                "0): Hugging Face RoFormer rotates every dimension at unscaled frequencies"
            )

    def config_kwargs(self, model: MaskedLM) -> dict[str, Any]:
        hidden = model.config.hidden_size
        return {
            **super().config_kwargs(model),
            "embedding_size": hidden,
            "rotary_value": False,
            "type_vocab_size": 1,
        }

    def check_import_config(self, config: Any) -> None:
        super().check_import_config(config)
        if config.rotary_value:
            self.refuse("rotary_value=True; our RoPE does not rotate values")

    def check_import_weights(self, state: Mapping[str, Tensor]) -> None:
        self.refuse_token_types(state)
        table = state[f"{self.prefix}.encoder.embed_positions.weight"]
        transformers = require_transformers()
        sinusoid = (
            transformers.models.roformer.modeling_roformer.RoFormerSinusoidalPositionalEmbedding
        )
        expected = sinusoid(*table.shape).create_weight().to(table.dtype)
        if not torch.allclose(table, expected, atol=1e-6):
            self.refuse(f"embed_positions is not the base-{HF_ROPE_BASE:g} sinusoid table")


ARCHITECTURE = RoFormerArchitecture(
    transformers_floor=BERT_LAYOUT_FLOOR,
    position="rope",
    model_type="roformer",
    model_class="RoFormerForMaskedLM",
    config_class="RoFormerConfig",
    prefix="roformer",
    qkv=("query", "key", "value"),
    position_links=(),
    derived=(TOKEN_TYPES, "encoder.embed_positions.weight"),
)
