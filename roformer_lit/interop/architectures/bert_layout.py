"""``BertLayout``: the post-LN architectures (BERT's block), whose per-layer names are
common; each differs in its model prefix, q/k/v names, position tensors and HF tensors
that are not ours.

Export needs BERT's block (gelu MLP, LayerNorm with bias, linear biases) and one scheme
with global attention in every layer; import needs exact GELU and a bidirectional encoder
whose embedding width is the hidden size, and no ``position_embedding_type`` other than
``absolute`` (transformers 4.x computes ``relative_key`` with distance embeddings, which
import would leave unread; 5.x no longer reads the key, but the checkpoint was made with
them). A ``Link`` with a ``slot`` selects a slice of
our fused ``qkv`` (query rows ``[0:H]``, key ``[H:2H]``, value ``[2H:3H]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from roformer_lit.errors import ConfigError
from roformer_lit.interop.architectures.base import HFArchitecture, Link
from roformer_lit.plan_identity import all_options

if TYPE_CHECKING:
    from torch import Tensor

    from roformer_lit.module import MaskedLM

TOKEN_TYPES = "embeddings.token_type_embeddings.weight"  # under the model prefix
#: transformers 4.47.0 added ``DebertaV2Config.legacy`` (written on export, read on import);
#: 4.48.0 is also the floor the package declares: no older release is claimed
BERT_LAYOUT_FLOOR = "4.48.0"

_HEAD = {
    # legacy BERT-style head: transform (dense, act, LayerNorm), decoder tied to E, bias
    "cls": (
        "cls.predictions.transform.dense",
        "cls.predictions.transform.LayerNorm",
        "cls.predictions.bias",
    ),
    # DeBERTa-v2 non-legacy head (import only): same maths, no decoder module
    "lm_predictions": (
        "lm_predictions.lm_head.dense",
        "lm_predictions.lm_head.LayerNorm",
        "lm_predictions.lm_head.bias",
    ),
}

_LAYER = (
    ("attention.out", "attention.output.dense"),
    ("attention_norm", "attention.output.LayerNorm"),
    ("ffn_in", "intermediate.dense"),
    ("ffn_out", "output.dense"),
    ("ffn_norm", "output.LayerNorm"),
)


@dataclass(frozen=True, kw_only=True)
class BertLayout(HFArchitecture):
    """A post-LN HF architecture with BERT's per-layer names."""

    pre_norm: bool = False
    prefix: str  # base-model attribute: roformer / deberta / bert
    qkv: tuple[str, str, str]  # names of the q/k/v Linears under ``attention.self``
    #: our scheme's own tensors (ours, theirs without the prefix)
    position_links: tuple[tuple[str, str], ...] = ()
    #: HF tensors (without the prefix) that are not ours: derived on export, checked on import
    derived: tuple[str, ...] = ()

    def head(self, config: Any) -> str:
        """``cls`` (BERT's head), or DeBERTa-v2's ``lm_predictions`` when not ``legacy``."""
        return "cls" if getattr(config, "legacy", True) else "lm_predictions"

    def links(self, config: Any) -> list[Link]:
        p = self.prefix
        dense, norm, bias = _HEAD[self.head(config)]
        pairs = [
            Link("encoder.word_embeddings.weight", f"{p}.embeddings.word_embeddings.weight"),
            Link("head.bias", bias),
        ]
        for suffix in ("weight", "bias"):
            pairs += [
                Link(f"encoder.embedding_norm.{suffix}", f"{p}.embeddings.LayerNorm.{suffix}"),
                Link(f"head.dense.{suffix}", f"{dense}.{suffix}"),
                Link(f"head.norm.{suffix}", f"{norm}.{suffix}"),
            ]
        pairs += [Link(ours, f"{p}.{theirs}") for ours, theirs in self.position_links]
        for i in range(config.num_hidden_layers):
            ours, theirs = f"encoder.layers.{i}", f"{p}.encoder.layer.{i}"
            for suffix in ("weight", "bias"):
                pairs += [
                    Link(
                        f"{ours}.attention.qkv.{suffix}",
                        f"{theirs}.attention.self.{name}.{suffix}",
                        slot,
                    )
                    for slot, name in enumerate(self.qkv)
                ]
                pairs += [Link(f"{ours}.{a}.{suffix}", f"{theirs}.{b}.{suffix}") for a, b in _LAYER]
        return pairs

    def tied(self, config: Any) -> dict[str, str]:
        if self.head(config) != "cls":
            return {}
        return {
            "cls.predictions.decoder.weight": f"{self.prefix}.embeddings.word_embeddings.weight",
            "cls.predictions.decoder.bias": "cls.predictions.bias",
        }

    def unused(self) -> tuple[str, ...]:
        return (f"{self.prefix}.pooler.", "cls.seq_relationship.")

    def read_without_link(self, config: Any) -> set[str]:
        derived = {f"{self.prefix}.{name}" for name in self.derived}
        return super().read_without_link(config) | derived

    # -- export -------------------------------------------------------------------------
    def check_export(self, model: MaskedLM) -> None:
        config = model.config
        # each layer's options read over the class's defaults (all_options), as layers share
        # a scheme: a config holds position_kwargs without them (c2p: true is no option),
        # its layers as written (an import writes every option)
        plain = (
            config.position,
            all_options("position", config.position, config.position_kwargs or {}),
        )
        if any(
            spec.window is not None
            or (spec.position, all_options("position", spec.position, spec.position_kwargs))
            != plain
            for spec in config.layer_specs
        ):
            raise ConfigError(
                f"cannot export model.layer_plan: Hugging Face {self.model_class} has one "
                "position scheme and global attention in every layer; export needs a plan "
                "without windows or per-layer position settings (or layer_plan null)"
            )
        changed = config.block_options.changed()
        if changed:
            listed = ", ".join(f"{key}={value}" for key, value in changed.items())
            raise ConfigError(
                f"cannot export model.block {listed}: Hugging Face {self.model_class} has "
                "BERT's block only (gelu MLP, LayerNorm with bias, linear biases); export "
                "needs block null"
            )

    def config_kwargs(self, model: MaskedLM) -> dict[str, Any]:
        return {"hidden_act": "gelu"}  # exact (erf) GELU, as torch.nn.functional.gelu

    def derive_export_weights(self, state: dict[str, Tensor]) -> None:
        key = f"{self.prefix}.{TOKEN_TYPES}"
        if TOKEN_TYPES in self.derived:  # HF always adds token-type row 0; we have none
            state[key] = torch.zeros_like(state[key])

    # -- import -------------------------------------------------------------------------
    def check_import_config(self, config: Any) -> None:
        if config.hidden_act != "gelu":
            self.refuse(f"hidden_act={config.hidden_act!r}; only 'gelu' (exact GELU) is supported")
        kind = getattr(config, "position_embedding_type", "absolute")
        if kind != "absolute":  # transformers 4.x reads it (distance embeddings); 5.x ignores it
            self.refuse(
                f"position_embedding_type={kind!r}; only 'absolute' (relative_key and "
                "relative_key_query add distance embeddings our encoder does not compute)"
            )
        if getattr(config, "is_decoder", False) or getattr(config, "add_cross_attention", False):
            self.refuse("is_decoder / add_cross_attention set; only bidirectional encoders")
        embedding_size = getattr(config, "embedding_size", None)
        if embedding_size not in (None, config.hidden_size):
            self.refuse(f"embedding_size={embedding_size} != hidden_size={config.hidden_size}")

    def import_settings(self, config: Any) -> dict[str, Any]:
        return {"position_kwargs": self.import_position_kwargs(config)}

    def import_position_kwargs(self, config: Any) -> dict[str, Any]:
        """``MaskedLM(position_kwargs=...)`` equal to the HF config's scheme settings."""
        return {}

    def refuse_token_types(self, state: Mapping[str, Tensor]) -> None:
        """Refuse a non-zero token-type row 0: HF adds it to every token, and without an
        absolute position table there is nothing to fold it into."""
        token_types = state.get(f"{self.prefix}.{TOKEN_TYPES}")
        if token_types is not None and token_types[0].any():
            self.refuse(
                "token_type_embeddings row 0 is non-zero and there is no absolute position "
                "table to fold it into"
            )
