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

from roformer_lit.encoder_config import EncoderConfig, encoder_defaults
from roformer_lit.errors import ConfigError
from roformer_lit.interop._hf import require_transformers

if TYPE_CHECKING:
    from torch import Tensor

    from roformer_lit.module import MaskedLM

MODEL_CLASS = "ModernBertForMaskedLM"
_ACTIVATION = {"geglu": "gelu", "swiglu": "silu"}
_DEFAULT_BASE = 10000.0  # our RotaryPosition's default base


#: The fields of :class:`~roformer_lit.encoder_config.EncoderConfig` ``ModernBertConfig``
#: holds as they are, and its key for each (import reads them back through it).
MODERNBERT_CONFIG_KEYS: dict[str, str] = {
    "vocab_size": "vocab_size",
    "hidden_size": "hidden_size",
    "intermediate_size": "intermediate_size",
    "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads",
    "max_positions": "max_position_embeddings",
    "layer_norm_eps": "norm_eps",
}
#: The other fields, each handled by name: RoPE in every layer (``position``, its options
#: and the plan's), the plan's windows, softmax attention, the block (GLU, norms, biases),
#: pre-norm, the dropouts (``embedding_dropout`` = ``mlp_dropout``, ``attention_dropout``);
#: the kernel's options choose how softmax attention is computed, not what it computes.
HANDLED_FIELDS = (
    "position",
    "position_kwargs",
    "layer_plan",
    "attention",
    "attention_kwargs",
    "block",
    "pre_norm",
    "dropout",
    "attention_dropout",
)


def _check_every_field_exports(config: EncoderConfig) -> None:
    """A field neither mapped nor handled (one added after this) is refused unless it has
    its default: no ModernBERT setting would carry it."""
    defaults = encoder_defaults(type(config))
    for name, value in config.as_dict().items():
        if name in MODERNBERT_CONFIG_KEYS or name in HANDLED_FIELDS or value == defaults[name]:
            continue
        _refuse(f"model.{name}={value!r} (no ModernBERT setting holds it)")


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
    config = model.config
    _check_every_field_exports(config)
    if config.attention != "softmax":
        _refuse(f"attention={config.attention!r} (ModernBERT computes softmax attention)")
    block = config.block_options
    if not config.pre_norm or block.first_norm:
        _refuse(
            f"pre_norm={config.pre_norm}, block.first_norm={block.first_norm} (the pre-norm "
            "architecture, ModernBERT, has no norm before layer 0's attention: it needs "
            "pre_norm true and block.first_norm false; a post-norm model exports as its "
            "scheme's BERT-style architecture)"
        )
    if block.mlp not in _ACTIVATION or block.norm != "layernorm":
        _refuse(
            f"block mlp={block.mlp}, norm={block.norm} (valid: mlp geglu or swiglu, norm layernorm)"
        )
    specs = config.layer_specs
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
    dropout = config.dropout
    return {
        **{key: getattr(config, name) for name, key in MODERNBERT_CONFIG_KEYS.items()},
        "hidden_activation": _ACTIVATION[block.mlp],
        "classifier_activation": "gelu",
        "initializer_range": model.hparams.init_std,
        "norm_bias": norm_bias,
        "attention_bias": block.linear_bias,
        "mlp_bias": block.linear_bias,
        "classifier_bias": block.linear_bias,
        "decoder_bias": True,
        "embedding_dropout": dropout,
        "mlp_dropout": dropout,
        "attention_dropout": config.attention_dropout_value,
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
    heads, layers = model.config.num_heads, model.config.num_layers
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
    settings = {name: getattr(config, key) for name, key in MODERNBERT_CONFIG_KEYS.items()}
    architecture = EncoderConfig.from_settings(
        settings,
        position="rope",
        attention="softmax",
        dropout=float(config.mlp_dropout),
        attention_dropout=float(config.attention_dropout),
        pre_norm=True,
        block={
            "mlp": activation,
            "norm": "layernorm",
            "norm_bias": None if config.norm_bias else False,
            "linear_bias": biases.pop(),
            "first_norm": False,
        },
        layer_plan=_layer_plan(config),
    )
    model = MaskedLM.from_config(architecture, init_std=config.initializer_range)
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
