"""One name-mapping table per HF architecture, shared by export and import, and the
registry of the architectures (:data:`ARCHITECTURES`, one module each in
:mod:`roformer_lit.interop.architectures`).

Every architecture here uses BERT's post-LN block, so the per-layer names are common; what
differs is the model prefix, the q/k/v names, the MLM head names and the position tensors.
A ``Link`` pairs one of our parameters with one HF tensor; ``slot`` selects a slice of our
fused ``qkv`` (query rows ``[0:H]``, key ``[H:2H]``, value ``[2H:3H]``).
"""

from __future__ import annotations

from dataclasses import dataclass

from roformer_lit.errors import ConfigError
from roformer_lit.interop.architectures import deberta, learned, rope
from roformer_lit.interop.architectures.base import HFArchitecture

__all__ = ["ARCHITECTURES", "BY_MODEL_TYPE", "HFArchitecture", "Link", "architecture_for", "links"]


@dataclass(frozen=True)
class Link:
    """``ours`` (a ``MaskedLM`` parameter name) <-> ``theirs`` (an HF state-dict key)."""

    ours: str
    theirs: str
    slot: int | None = None  # 0/1/2: query/key/value rows of our fused qkv


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

#: our scheme -> its HF architecture (one module each in ``interop.architectures``)
ARCHITECTURES: dict[str, HFArchitecture] = {
    arch.position: arch for arch in (rope.ARCHITECTURE, deberta.ARCHITECTURE, learned.ARCHITECTURE)
}

BY_MODEL_TYPE: dict[str, HFArchitecture] = {a.model_type: a for a in ARCHITECTURES.values()}


def architecture_for(position: str) -> HFArchitecture:
    """The HF layout of scheme ``position``, or a ConfigError naming the exportable ones."""
    if position not in ARCHITECTURES:
        raise ConfigError(
            f"position {position!r} has no Hugging Face counterpart; exportable schemes: "
            f"{', '.join(sorted(ARCHITECTURES))}"
        )
    return ARCHITECTURES[position]


def links(arch: HFArchitecture, num_layers: int, head: str = "cls") -> list[Link]:
    """Every (ours, theirs) pair for a model with ``num_layers`` layers."""
    p = arch.prefix
    dense, norm, bias = _HEAD[head]
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
    pairs += [Link(ours, f"{p}.{theirs}") for ours, theirs in arch.position_links]
    for i in range(num_layers):
        ours, theirs = f"encoder.layers.{i}", f"{p}.encoder.layer.{i}"
        for suffix in ("weight", "bias"):
            pairs += [
                Link(
                    f"{ours}.attention.qkv.{suffix}",
                    f"{theirs}.attention.self.{name}.{suffix}",
                    slot,
                )
                for slot, name in enumerate(arch.qkv)
            ]
            pairs += [Link(f"{ours}.{a}.{suffix}", f"{theirs}.{b}.{suffix}") for a, b in _LAYER]
    return pairs
