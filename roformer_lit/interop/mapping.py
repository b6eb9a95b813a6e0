"""One name-mapping table per HF architecture, shared by export and import.

Every architecture here uses BERT's post-LN block, so the per-layer names are common; what
differs is the model prefix, the q/k/v names, the MLM head names and the position tensors.
A ``Link`` pairs one of our parameters with one HF tensor; ``rows`` selects a slice of our
fused ``qkv`` (query rows ``[0:H]``, key ``[H:2H]``, value ``[2H:3H]``).
"""

from __future__ import annotations

from dataclasses import dataclass

from roformer_lit.errors import ConfigError


@dataclass(frozen=True)
class Link:
    """``ours`` (a ``MaskedLM`` parameter name) <-> ``theirs`` (an HF state-dict key)."""

    ours: str
    theirs: str
    slot: int | None = None  # 0/1/2: query/key/value rows of our fused qkv


@dataclass(frozen=True)
class HFArchitecture:
    """How one of our position schemes is laid out in one HF ``*ForMaskedLM`` class."""

    position: str  # our scheme name
    model_type: str  # HF ``config.model_type``
    model_class: str  # HF ``*ForMaskedLM`` class name
    config_class: str
    prefix: str  # base-model attribute: roformer / deberta / bert
    qkv: tuple[str, str, str]  # names of the q/k/v Linears under ``attention.self``
    #: our scheme's own tensors (ours, theirs without the prefix)
    position_links: tuple[tuple[str, str], ...]
    #: HF tensors that are not ours but derived on export / checked on import
    derived: tuple[str, ...]


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

ARCHITECTURES: dict[str, HFArchitecture] = {
    arch.position: arch
    for arch in (
        HFArchitecture(
            position="rope",
            model_type="roformer",
            model_class="RoFormerForMaskedLM",
            config_class="RoFormerConfig",
            prefix="roformer",
            qkv=("query", "key", "value"),
            position_links=(),
            derived=("embeddings.token_type_embeddings.weight", "encoder.embed_positions.weight"),
        ),
        HFArchitecture(
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
        ),
        HFArchitecture(
            position="learned",
            model_type="bert",
            model_class="BertForMaskedLM",
            config_class="BertConfig",
            prefix="bert",
            qkv=("query", "key", "value"),
            position_links=(
                ("encoder.position.table.weight", "embeddings.position_embeddings.weight"),
            ),
            derived=("embeddings.token_type_embeddings.weight",),
        ),
    )
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
