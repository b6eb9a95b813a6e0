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
before layer 0, more than one window or one base per layer kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from roformer_lit.blocks import BlockOptions
from roformer_lit.errors import ConfigError
from roformer_lit.interop._hf import require_transformers
from roformer_lit.layer_plan import resolve_plan

if TYPE_CHECKING:
    from torch import Tensor

    from roformer_lit.module import MaskedLM

MODEL_CLASS = "ModernBertForMaskedLM"
_ACTIVATION = {"geglu": "gelu", "swiglu": "silu"}
_DEFAULT_BASE = 10000.0  # our RotaryPosition's default base


def _refuse(setting: str) -> None:
    raise ConfigError(f"cannot export {setting}: Hugging Face {MODEL_CLASS} cannot express it")


def _rope_base(position: str, kwargs: dict[str, Any], where: str) -> float:
    if position != "rope":
        _refuse(f"position {position!r} in {where} (ModernBERT has RoPE in every layer)")
    extra = sorted(set(kwargs) - {"base"})
    if extra:
        _refuse(f"rope option(s) {', '.join(extra)} in {where} (ModernBERT takes the base only)")
    return float(kwargs.get("base", _DEFAULT_BASE))


def modernbert_config_kwargs(model: MaskedLM) -> dict[str, Any]:
    """The ``ModernBertConfig`` arguments of ``model``, or a one-line ConfigError for what
    ModernBERT cannot express."""
    hp = model.hparams
    if hp.attention != "softmax":
        _refuse(f"attention={hp.attention!r} (ModernBERT computes softmax attention)")
    block = BlockOptions.from_config(hp.get("block"), hp.pre_norm)
    if not hp.pre_norm or block.first_norm:
        _refuse(
            "a block with a norm before layer 0's attention (set pre_norm true, first_norm false)"
        )
    if block.mlp not in _ACTIVATION or block.norm != "layernorm":
        _refuse(
            f"block mlp={block.mlp}, norm={block.norm} (valid: mlp geglu or swiglu, norm layernorm)"
        )
    specs = resolve_plan(hp.get("layer_plan"), hp.num_layers, hp.position, hp.position_kwargs)
    windows = {spec.window for spec in specs if spec.window is not None}
    if len(windows) > 1:
        _refuse(f"windows {sorted(windows)} (ModernBERT has one local_attention)")
    window = windows.pop() if windows else None
    if window is not None and window % 2:
        _refuse(f"window {window} (ModernBERT's local_attention is even: 2 x its half-width)")
    bases: dict[str, set[float]] = {"full_attention": set(), "sliding_attention": set()}
    layer_types = []
    for index, spec in enumerate(specs):
        kind = "full_attention" if spec.window is None else "sliding_attention"
        layer_types.append(kind)
        bases[kind].add(_rope_base(spec.position, dict(spec.position_kwargs), f"layer {index}"))
    for kind, found in bases.items():
        if len(found) > 1:
            _refuse(f"RoPE bases {sorted(found)} among {kind} layers (one base per layer kind)")
    rope = {
        kind: {"rope_type": "default", "rope_theta": found.pop() if found else _DEFAULT_BASE}
        for kind, found in bases.items()
    }
    norm_bias = True if block.norm_bias is None else block.norm_bias
    dropout = hp.dropout
    return {
        "vocab_size": hp.vocab_size,
        "hidden_size": hp.hidden_size,
        "intermediate_size": hp.intermediate_size,
        "num_hidden_layers": hp.num_layers,
        "num_attention_heads": hp.num_heads,
        "hidden_activation": _ACTIVATION[block.mlp],
        "classifier_activation": "gelu",
        "max_position_embeddings": hp.max_positions,
        "initializer_range": hp.init_std,
        "norm_eps": hp.layer_norm_eps,
        "norm_bias": norm_bias,
        "attention_bias": block.linear_bias,
        "mlp_bias": block.linear_bias,
        "classifier_bias": block.linear_bias,
        "decoder_bias": True,
        "embedding_dropout": dropout,
        "mlp_dropout": dropout,
        "attention_dropout": dropout if hp.attention_dropout is None else hp.attention_dropout,
        "layer_types": layer_types,
        "rope_parameters": rope,
        "local_attention": window if window is not None else 128,
        "pad_token_id": None,
        "bos_token_id": None,
        "eos_token_id": None,
        "cls_token_id": None,
        "sep_token_id": None,
        "tie_word_embeddings": True,
    }


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
    parts = tensor.view(3, heads, head_size, *tensor.shape[1:]).clone()
    parts[:2] = parts[:2, :, perm]
    return parts.view(tensor.shape)


def _names(num_layers: int) -> list[tuple[str, str]]:
    """(ours, theirs) for every tensor but the fused QKV ones."""
    pairs = [
        ("encoder.word_embeddings.weight", "model.embeddings.tok_embeddings.weight"),
        ("encoder.embedding_norm", "model.embeddings.norm"),
        ("encoder.final_norm", "model.final_norm"),
        ("head.dense", "head.dense"),
        ("head.norm", "head.norm"),
        ("head.bias", "decoder.bias"),
    ]
    for n in range(num_layers):
        ours, theirs = f"encoder.layers.{n}.", f"model.layers.{n}."
        pairs += [
            (ours + "attention_norm", theirs + "attn_norm"),
            (ours + "attention.out", theirs + "attn.Wo"),
            (ours + "ffn_norm", theirs + "mlp_norm"),
            (ours + "ffn_in", theirs + "mlp.Wi"),
            (ours + "ffn_out", theirs + "mlp.Wo"),
        ]
    return pairs


def _their_name(ours: str, num_layers: int) -> str | None:
    if ".attention.qkv." in ours:
        layer = ours.split(".")[2]
        return f"model.layers.{layer}.attn.Wqkv.{ours.rsplit('.', 1)[1]}"
    for prefix, theirs in _names(num_layers):
        if ours == prefix:
            return theirs
        if ours.startswith(prefix + "."):
            return theirs + ours[len(prefix) :]
    return None


def to_modernbert(model: MaskedLM, dtype: torch.dtype = torch.float32) -> Any:
    """An in-memory ``ModernBertForMaskedLM`` (CPU, eval mode, ``dtype``) equal to
    ``model``; a one-line ConfigError if ModernBERT cannot express it."""
    transformers = require_transformers()
    config = transformers.ModernBertConfig(**modernbert_config_kwargs(model))
    config._attn_implementation = "sdpa"
    hf = transformers.ModernBertForMaskedLM(config).to(dtype)
    state = hf.state_dict()
    heads, layers = model.hparams.num_heads, model.hparams.num_layers
    for name, tensor in model.named_parameters():
        theirs = _their_name(name, layers)
        if theirs is None or theirs not in state:
            raise RuntimeError(f"ModernBERT mapping error: {name} -> {theirs}")
        tensor = tensor.detach().to(device="cpu", dtype=dtype)
        if ".attention.qkv." in name:
            tensor = _qkv_to_halves(tensor, heads)
        if state[theirs].shape != tensor.shape:
            raise RuntimeError(f"ModernBERT mapping error: {name} {tuple(tensor.shape)}")
        state[theirs] = tensor.clone()
    state["decoder.weight"] = state["model.embeddings.tok_embeddings.weight"]
    hf.load_state_dict(state)
    return hf.eval()


def _import_refuse(setting: str) -> None:
    raise ConfigError(f"cannot import this {MODEL_CLASS}: {setting}")


def _layer_plan(config: Any) -> dict[str, Any]:
    """The plan of ``config.layer_types``: the shortest repeating pattern, global layers
    with the full-attention RoPE base, local ones with the window and the sliding base."""
    names = {"full_attention": "global", "sliding_attention": "local"}
    kinds = list(config.layer_types)
    unknown = sorted(set(kinds) - set(names))
    if unknown:
        _import_refuse(f"layer_types {unknown}; valid: {', '.join(names)}")
    types: dict[str, Any] = {}
    for kind in dict.fromkeys(kinds):
        rope = config.rope_parameters[kind]
        if rope.get("rope_type", "default") != "default":
            _import_refuse(f"rope_type {rope.get('rope_type')!r} in {kind} layers; only 'default'")
        settings: dict[str, Any] = {"position_kwargs": {"base": float(rope["rope_theta"])}}
        if kind == "sliding_attention":
            settings["window"] = int(config.local_attention)
        types[names[kind]] = settings
    layers = [names[kind] for kind in kinds]
    period = next(
        p
        for p in range(1, len(layers) + 1)
        if len(layers) % p == 0 and layers == layers[:p] * (len(layers) // p)
    )
    return {"pattern": layers[:period], "types": types}


def from_modernbert(hf: Any) -> MaskedLM:
    """A ``MaskedLM`` (eval mode) equal to a ``ModernBertForMaskedLM``: pre-norm, its GLU,
    norms, biases and plan; a one-line ConfigError for what our encoder cannot compute."""
    from roformer_lit.module import MaskedLM

    config = hf.config
    activation = {value: key for key, value in _ACTIVATION.items()}.get(config.hidden_activation)
    if activation is None:
        _import_refuse(f"hidden_activation {config.hidden_activation!r}; valid: gelu, silu")
    if config.classifier_activation != "gelu":
        _import_refuse(f"classifier_activation {config.classifier_activation!r}; only 'gelu'")
    biases = {config.attention_bias, config.mlp_bias, config.classifier_bias}
    if len(biases) > 1:
        _import_refuse(
            "attention_bias, mlp_bias and classifier_bias differ; our linear_bias sets all three"
        )
    if getattr(config, "sparse_prediction", False):
        _import_refuse("sparse_prediction true")
    model = MaskedLM(
        position="rope",
        attention="softmax",
        vocab_size=config.vocab_size,
        hidden_size=config.hidden_size,
        num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size,
        max_positions=config.max_position_embeddings,
        dropout=float(config.mlp_dropout),
        attention_dropout=float(config.attention_dropout),
        layer_norm_eps=config.norm_eps,
        pre_norm=True,
        init_std=config.initializer_range,
        block={
            "mlp": activation,
            "norm": "layernorm",
            "norm_bias": None if config.norm_bias else False,
            "linear_bias": biases.pop(),
            "first_norm": False,
        },
        layer_plan=_layer_plan(config),
    )
    state = {k: v.detach().to(device="cpu") for k, v in hf.state_dict().items()}
    if not torch.equal(state["decoder.weight"], state["model.embeddings.tok_embeddings.weight"]):
        _import_refuse("its decoder is not tied to the token embeddings")
    state.setdefault("decoder.bias", torch.zeros(config.vocab_size))  # decoder_bias false
    model = model.to(state["decoder.weight"].dtype)  # the HF model's precision
    heads, layers = config.num_attention_heads, config.num_hidden_layers
    with torch.no_grad():
        for name, param in model.named_parameters():
            theirs = _their_name(name, layers)
            if theirs not in state:
                raise RuntimeError(f"ModernBERT mapping error: {theirs} missing")
            tensor = state[theirs]
            if ".attention.qkv." in name:
                tensor = _qkv_to_halves(tensor, heads, inverse=True)
            param.copy_(tensor)
    return model.eval()
