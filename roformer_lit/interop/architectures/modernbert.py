"""A pre-norm RoPE model <-> transformers' ``ModernBertForMaskedLM``.

ModernBERT is our encoder with ``pre_norm: true``, ``block.first_norm: false`` (layer 0 has
no norm before its attention), a GLU MLP (``mlp: geglu``: its ``hidden_activation gelu``;
``swiglu``: ``silu``), LayerNorms with or without bias (``norm_bias``), linear layers with
or without bias (``linear_bias`` = its ``attention_bias`` = ``mlp_bias`` =
``classifier_bias``), RoPE in every layer and a plan of at most two layer types: global
layers (``full_attention``, one RoPE base) and windowed ones (``sliding_attention``, one
window ``local_attention`` and one RoPE base). The names map one to one
(``word_embeddings`` -> ``tok_embeddings``, ``qkv`` -> ``Wqkv``, ``ffn_in`` -> ``Wi``, ...);
the one change is RoPE's layout: we rotate interleaved pairs ``(2t, 2t+1)``, ModernBERT
rotates halves ``(t, t + d/2)`` at the same frequencies, so the query and key rows of each
head are permuted (``q . k`` is unchanged by a permutation applied to both).

What ModernBERT cannot express is refused in one line naming the setting: another scheme
in any layer, RoPE options other than ``base``, post-norm, BERT's MLP, RMSNorm, a norm
before layer 0, more than one window or one base per layer kind, window 1. An odd window
``2k + 1`` builds the layer ``2k`` builds (:func:`~roformer_lit.plan_identity.built_window`)
and is exported as ``local_attention`` ``2k``.

``layer_types`` and a RoPE base per layer kind (``rope_parameters``) are what
transformers 5.0.0 added to ``ModernBertConfig``; 4.x reads neither (it would rebuild a
global layer every third with its own bases), hence this architecture's floor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from roformer_lit.errors import ConfigError
from roformer_lit.interop.architectures.base import HFArchitecture, Link
from roformer_lit.plan_identity import built_window

if TYPE_CHECKING:
    from torch import Tensor

    from roformer_lit.module import MaskedLM

_ACTIVATION = {"geglu": "gelu", "swiglu": "silu"}
_DEFAULT_BASE = 10000.0  # our RotaryPosition's default base
_KINDS = {"full_attention": "global", "sliding_attention": "local"}  # HF layer type -> ours


def rope_halves(head_size: int) -> Tensor:
    """``perm`` with ``theirs = ours[perm]`` per head: interleaved pairs -> halves."""
    return torch.cat([torch.arange(0, head_size, 2), torch.arange(1, head_size, 2)])


def _qkv_to_halves(tensor: Tensor, heads: int, inverse: bool = False) -> Tensor:
    """Permute the query and key rows of a fused ``[3H, ...]`` projection head by head."""
    hidden = tensor.shape[0] // 3
    head_size = hidden // heads
    perm = rope_halves(head_size)
    if inverse:
        perm = torch.argsort(perm)
    parts = tensor.reshape(3, heads, head_size, *tensor.shape[1:]).clone()
    parts[:2] = parts[:2, :, perm]
    return parts.reshape(tensor.shape)


@dataclass(frozen=True)
class _Plan:
    """A model's plan as ModernBERT holds it."""

    layer_types: list[str]
    rope_parameters: dict[str, dict[str, Any]]
    window: int | None


@dataclass(frozen=True, kw_only=True)
class ModernBertArchitecture(HFArchitecture):
    """RoPE in every layer, pre-LN, GLU MLP, first layer without a norm."""

    def _refuse_export(self, setting: str) -> None:
        raise ConfigError(
            f"cannot export {setting}: Hugging Face {self.model_class} cannot express it"
        )

    def _rope_base(self, position: str, kwargs: Mapping[str, Any], where: str) -> float:
        if position != "rope":
            self._refuse_export(
                f"position {position!r} in {where} (ModernBERT has RoPE in every layer)"
            )
        extra = sorted(set(kwargs) - {"base"})
        if extra:
            self._refuse_export(
                f"rope option(s) {', '.join(extra)} in {where} (ModernBERT takes the base only)"
            )
        return float(kwargs.get("base", _DEFAULT_BASE))

    def _plan(self, model: MaskedLM) -> _Plan:
        specs = model.config.layer_specs
        # each window as the layer it builds: 2k + 1 reads the keys 2k reads (window // 2
        # each side, ModernBERT's convention too), so it exports as local_attention 2k
        windows = {built_window(spec.window) for spec in specs if spec.window is not None}
        if len(windows) > 1:
            self._refuse_export(f"windows {sorted(windows)} (ModernBERT has one local_attention)")
        window = windows.pop() if windows else None
        if window is not None and window % 2:
            self._refuse_export(
                f"window {window} (ModernBERT's local_attention is even: 2 x its half-width, "
                "and window 1 reads the query alone)"
            )
        bases: dict[str, set[float]] = {kind: set() for kind in _KINDS}
        layer_types = []
        for index, spec in enumerate(specs):
            kind = "full_attention" if spec.window is None else "sliding_attention"
            layer_types.append(kind)
            bases[kind].add(self._rope_base(spec.position, spec.position_kwargs, f"layer {index}"))
        for kind, found in bases.items():
            if len(found) > 1:
                self._refuse_export(
                    f"RoPE bases {sorted(found)} among {kind} layers (one base per layer kind)"
                )
        rope = {
            kind: {"rope_type": "default", "rope_theta": found.pop() if found else _DEFAULT_BASE}
            for kind, found in bases.items()
        }
        return _Plan(layer_types, rope, window)

    # -- export -------------------------------------------------------------------------
    def check_export(self, model: MaskedLM) -> None:
        block = model.config.block_options
        if not model.config.pre_norm or block.first_norm:
            self._refuse_export(
                f"pre_norm={model.config.pre_norm}, block.first_norm={block.first_norm} (the "
                "pre-norm architecture, ModernBERT, has no norm before layer 0's attention: it "
                "needs pre_norm true and block.first_norm false; a post-norm model exports as "
                "its scheme's BERT-style architecture)"
            )
        if block.mlp not in _ACTIVATION or block.norm != "layernorm":
            self._refuse_export(
                f"block mlp={block.mlp}, norm={block.norm} (valid: mlp geglu or swiglu, norm "
                "layernorm)"
            )
        self._plan(model)

    def config_kwargs(self, model: MaskedLM) -> dict[str, Any]:
        block = model.config.block_options
        plan = self._plan(model)
        return {
            "hidden_activation": _ACTIVATION[block.mlp],
            "classifier_activation": "gelu",
            "norm_bias": True if block.norm_bias is None else block.norm_bias,
            "attention_bias": block.linear_bias,
            "mlp_bias": block.linear_bias,
            "classifier_bias": block.linear_bias,
            "decoder_bias": True,
            "embedding_dropout": model.config.dropout,
            "layer_types": plan.layer_types,
            "rope_parameters": plan.rope_parameters,
            "local_attention": plan.window if plan.window is not None else 128,
            "bos_token_id": None,
            "eos_token_id": None,
            "cls_token_id": None,
            "sep_token_id": None,
        }

    def to_hf(self, link: Link, tensor: Tensor, num_heads: int) -> Tensor:
        return _qkv_to_halves(tensor, num_heads) if ".attn.Wqkv." in link.theirs else tensor

    # -- both ---------------------------------------------------------------------------
    def links(self, config: Any) -> list[Link]:
        norm = ("weight", "bias") if config.norm_bias else ("weight",)

        def linear(bias: bool) -> tuple[str, ...]:
            return ("weight", "bias") if bias else ("weight",)

        pairs = [
            ("encoder.word_embeddings", "model.embeddings.tok_embeddings", ("weight",)),
            ("encoder.embedding_norm", "model.embeddings.norm", norm),
            ("encoder.final_norm", "model.final_norm", norm),
            ("head.dense", "head.dense", linear(config.classifier_bias)),
            ("head.norm", "head.norm", norm),
        ]
        for n in range(config.num_hidden_layers):
            ours, theirs = f"encoder.layers.{n}.", f"model.layers.{n}."
            if n > 0:  # layer 0 has no norm before its attention
                pairs.append((ours + "attention_norm", theirs + "attn_norm", norm))
            pairs += [
                (ours + "attention.qkv", theirs + "attn.Wqkv", linear(config.attention_bias)),
                (ours + "attention.out", theirs + "attn.Wo", linear(config.attention_bias)),
                (ours + "ffn_norm", theirs + "mlp_norm", norm),
                (ours + "ffn_in", theirs + "mlp.Wi", linear(config.mlp_bias)),
                (ours + "ffn_out", theirs + "mlp.Wo", linear(config.mlp_bias)),
            ]
        links = [Link(f"{a}.{s}", f"{b}.{s}") for a, b, suffixes in pairs for s in suffixes]
        if config.decoder_bias:  # else our output bias is zero (fold_import_weights)
            links.append(Link("head.bias", "decoder.bias"))
        return links

    def tied(self, config: Any) -> dict[str, str]:
        return {"decoder.weight": "model.embeddings.tok_embeddings.weight"}

    # -- import -------------------------------------------------------------------------
    def check_import_settings(self, settings: Mapping[str, Any]) -> None:
        kinds = settings.get("layer_types")
        if kinds is not None:
            if not isinstance(kinds, list):
                self.refuse(f"layer_types {kinds!r}; valid: a list of {', '.join(_KINDS)}")
            unknown = sorted({str(kind) for kind in kinds} - set(_KINDS))
            if unknown:
                self.refuse(f"layer_types {unknown}; valid: {', '.join(_KINDS)}")
        window = settings.get("local_attention", 128)
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0 or window % 2:
            self.refuse(
                f"local_attention {window!r}; valid: a positive even integer (the window, "
                "2 x its half-width)"
            )

    def check_import_config(self, config: Any) -> None:
        if config.hidden_activation not in _ACTIVATION.values():
            self.refuse(
                f"hidden_activation {config.hidden_activation!r}; valid: "
                f"{', '.join(_ACTIVATION.values())}"
            )
        if config.classifier_activation != "gelu":
            self.refuse(f"classifier_activation {config.classifier_activation!r}; only 'gelu'")
        if len({config.attention_bias, config.mlp_bias, config.classifier_bias}) > 1:
            self.refuse(
                "attention_bias, mlp_bias and classifier_bias differ; our linear_bias sets "
                "all three"
            )
        if getattr(config, "sparse_prediction", False):
            self.refuse("sparse_prediction true")
        head_size = config.hidden_size // config.num_attention_heads
        if getattr(config, "head_dim", None) not in (None, head_size):
            self.refuse(  # our heads are hidden_size / num_attention_heads wide
                f"head_dim {config.head_dim}; only hidden_size / num_attention_heads = {head_size}"
            )
        for kind in dict.fromkeys(config.layer_types):
            rope = config.rope_parameters[kind]
            if rope.get("rope_type", "default") != "default":
                self.refuse(f"rope_type {rope.get('rope_type')!r} in {kind} layers; only 'default'")

    def import_settings(self, config: Any) -> dict[str, Any]:
        activation = {value: key for key, value in _ACTIVATION.items()}[config.hidden_activation]
        return {
            "block": {
                "mlp": activation,
                "norm": "layernorm",
                "norm_bias": None if config.norm_bias else False,
                "linear_bias": config.attention_bias,
                "first_norm": False,
            },
            "layer_plan": _layer_plan(config),
        }

    def import_sources(self) -> dict[str, str]:
        plan = {
            f"layer_plan.types.{ours}.position_kwargs.base": f"rope_parameters.{kind}.rope_theta"
            for kind, ours in _KINDS.items()
        }
        return {
            **plan,
            "layer_plan.types.local.window": "local_attention",
            "layer_plan": "layer_types",
            "block.mlp": "hidden_activation",
            "block.norm_bias": "norm_bias",
            "block.linear_bias": "attention_bias",
        }

    def to_ours(self, link: Link, tensor: Tensor, num_heads: int) -> Tensor:
        if ".attn.Wqkv." in link.theirs:
            return _qkv_to_halves(tensor, num_heads, inverse=True)
        return tensor

    def fold_import_weights(self, values: dict[str, Tensor], state: Mapping[str, Tensor]) -> None:
        if "head.bias" not in values:  # decoder_bias false: no output bias
            words = values["encoder.word_embeddings.weight"]
            values["head.bias"] = torch.zeros(words.shape[0], dtype=words.dtype)


def _layer_plan(config: Any) -> dict[str, Any]:
    """The plan of ``config.layer_types``: the shortest repeating pattern, global layers
    with the full-attention RoPE base, local ones with the window and the sliding base."""
    kinds = list(config.layer_types)
    types: dict[str, Any] = {}
    for kind in dict.fromkeys(kinds):
        settings: dict[str, Any] = {
            "position_kwargs": {"base": float(config.rope_parameters[kind]["rope_theta"])}
        }
        if kind == "sliding_attention":
            settings["window"] = int(config.local_attention)
        types[_KINDS[kind]] = settings
    layers = [_KINDS[kind] for kind in kinds]
    period = next(
        p
        for p in range(1, len(layers) + 1)
        if len(layers) % p == 0 and layers == layers[:p] * (len(layers) // p)
    )
    return {"pattern": layers[:period], "types": types}


ARCHITECTURE = ModernBertArchitecture(
    position="rope",
    pre_norm=True,
    model_type="modernbert",
    model_class="ModernBertForMaskedLM",
    config_class="ModernBertConfig",
    transformers_floor="5.0.0",
    renamed_keys=(
        ("layer_norm_eps", "norm_eps"),
        ("dropout", "mlp_dropout"),
        ("attention_dropout", "attention_dropout"),
    ),
)
