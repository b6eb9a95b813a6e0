"""``deberta`` <-> ``DebertaV2ForMaskedLM`` in the v3 layout.

Disentangled attention with log-bucketed relative positions, the q/k projections shared
with the position keys, and a layer-normed relative table; no absolute positions and no
token types. Export writes the legacy ``cls.predictions`` head; import also takes the new
``lm_predictions`` head (same maths).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from roformer_lit.interop.architectures.bert_layout import BERT_LAYOUT_FLOOR, BertLayout

if TYPE_CHECKING:
    from torch import Tensor

    from roformer_lit.module import MaskedLM


class DebertaV2Architecture(BertLayout):
    """The DeBERTa-v3 settings our ``deberta`` scheme computes exactly, both ways."""

    def config_kwargs(self, model: MaskedLM) -> dict[str, Any]:
        scheme = model.encoder.position
        return {
            **super().config_kwargs(model),
            "relative_attention": True,
            "position_buckets": scheme.position_buckets,
            "max_relative_positions": scheme.max_relative_positions,
            "norm_rel_ebd": "layer_norm",
            "share_att_key": True,
            "pos_att_type": [t for t, on in (("p2c", scheme.p2c), ("c2p", scheme.c2p)) if on],
            "position_biased_input": False,
            "type_vocab_size": 0,
            "legacy": True,
        }

    def check_import_config(self, config: Any) -> None:
        super().check_import_config(config)
        head_size = getattr(config, "attention_head_size", None)
        pos_att_type = list(config.pos_att_type or [])
        if not getattr(config, "relative_attention", False):
            self.refuse("relative_attention=False; import needs the disentangled attention")
        elif getattr(config, "position_biased_input", True):
            self.refuse("position_biased_input=True; our deberta has no absolute positions")
        elif getattr(config, "position_buckets", -1) <= 0:
            self.refuse("position_buckets <= 0; our deberta always log-buckets")
        elif not getattr(config, "share_att_key", False):
            self.refuse("share_att_key=False; our deberta shares the q/k projections")
        elif getattr(config, "norm_rel_ebd", "none").replace(" ", "").lower() != "layer_norm":
            self.refuse(f"norm_rel_ebd={config.norm_rel_ebd!r}; only 'layer_norm'")
        elif not pos_att_type or set(pos_att_type) - {"c2p", "p2c"}:
            self.refuse(f"pos_att_type={pos_att_type!r}; need a non-empty subset of c2p, p2c")
        elif getattr(config, "conv_kernel_size", 0) > 0:
            self.refuse("conv_kernel_size > 0; our encoder has no convolution layer")
        elif head_size not in (None, config.hidden_size // config.num_attention_heads):
            self.refuse(f"attention_head_size={head_size} != hidden_size / num_heads")

    def import_position_kwargs(self, config: Any) -> dict[str, Any]:
        max_relative = config.max_relative_positions
        pos_att_type = set(config.pos_att_type)
        return {
            "position_buckets": config.position_buckets,
            "max_relative_positions": (
                max_relative if max_relative >= 1 else config.max_position_embeddings
            ),
            "c2p": "c2p" in pos_att_type,
            "p2c": "p2c" in pos_att_type,
        }

    def import_sources(self) -> dict[str, str]:
        return {
            "position_kwargs.position_buckets": "position_buckets",
            "position_kwargs.max_relative_positions": "max_relative_positions",
            "position_kwargs.c2p": "pos_att_type",
            "position_kwargs.p2c": "pos_att_type",
        }

    def check_import_weights(self, state: Mapping[str, Tensor]) -> None:
        self.refuse_token_types(state)


ARCHITECTURE = DebertaV2Architecture(
    transformers_floor=BERT_LAYOUT_FLOOR,
    position="deberta",
    model_type="deberta-v2",
    model_class="DebertaV2ForMaskedLM",
    config_class="DebertaV2Config",
    prefix="deberta",
    qkv=("query_proj", "key_proj", "value_proj"),
    position_links=(
        ("encoder.position.rel_embeddings.weight", "encoder.rel_embeddings.weight"),
        ("encoder.position.rel_norm.weight", "encoder.LayerNorm.weight"),
        ("encoder.position.rel_norm.bias", "encoder.LayerNorm.bias"),
    ),
    derived=(),
)
