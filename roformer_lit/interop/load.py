"""``import_hf``: build a ``MaskedLM`` from a Hugging Face ``*ForMaskedLM`` directory or model.

Only configurations our encoder computes exactly are accepted; anything else is a
ConfigError naming the setting. Token types: HF adds ``token_type_embeddings[0]`` to every
token. For BERT it is folded into the learned position table (``P[i] + T[0]``, exact);
RoFormer and DeBERTa have no absolute table to fold it into, so a non-zero row 0 is refused.
Rows other than 0 are only reachable through ``token_type_ids``, which our model has none of.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from roformer_lit.errors import ConfigError
from roformer_lit.interop._hf import require_transformers
from roformer_lit.interop.export import HF_ROPE_BASE
from roformer_lit.interop.mapping import ARCHITECTURES, BY_MODEL_TYPE, HFArchitecture, links
from roformer_lit.module import MaskedLM


def _supported() -> str:
    return ", ".join(f"{a.model_class} ({a.model_type})" for a in ARCHITECTURES.values())


def _load(path_or_model: Any) -> tuple[Any, HFArchitecture]:
    transformers = require_transformers()
    if isinstance(path_or_model, (str, os.PathLike)):
        path = Path(path_or_model)
        if not path.is_dir():
            raise ConfigError(
                f"import_hf needs a local Hugging Face model directory, got {str(path)!r}"
            )
        config = transformers.AutoConfig.from_pretrained(path, local_files_only=True)
        arch = BY_MODEL_TYPE.get(config.model_type)
        if arch is None:
            raise ConfigError(
                f"cannot import model_type {config.model_type!r} from {str(path)!r}; "
                f"supported: {_supported()}"
            )
        cls = getattr(transformers, arch.model_class)
        return cls.from_pretrained(path, config=config, local_files_only=True), arch
    for arch in ARCHITECTURES.values():
        if isinstance(path_or_model, getattr(transformers, arch.model_class)):
            return path_or_model, arch
    raise ConfigError(f"cannot import a {type(path_or_model).__name__}; supported: {_supported()}")


def _refuse(arch: HFArchitecture, setting: str) -> None:
    raise ConfigError(f"cannot import this {arch.model_class}: {setting}")


def _check_config(config: Any, arch: HFArchitecture) -> None:
    if config.hidden_act != "gelu":
        _refuse(arch, f"hidden_act={config.hidden_act!r}; only 'gelu' (exact GELU) is supported")
    if getattr(config, "is_decoder", False) or getattr(config, "add_cross_attention", False):
        _refuse(arch, "is_decoder / add_cross_attention set; only bidirectional encoders")
    embedding_size = getattr(config, "embedding_size", None)
    if embedding_size not in (None, config.hidden_size):
        _refuse(arch, f"embedding_size={embedding_size} != hidden_size={config.hidden_size}")
    if arch.position == "rope" and config.rotary_value:
        _refuse(arch, "rotary_value=True; our RoPE does not rotate values")
    if arch.position == "deberta":
        head_size = getattr(config, "attention_head_size", None)
        pos_att_type = list(config.pos_att_type or [])
        if not getattr(config, "relative_attention", False):
            _refuse(arch, "relative_attention=False; import needs the disentangled attention")
        elif getattr(config, "position_biased_input", True):
            _refuse(arch, "position_biased_input=True; our deberta has no absolute positions")
        elif getattr(config, "position_buckets", -1) <= 0:
            _refuse(arch, "position_buckets <= 0; our deberta always log-buckets")
        elif not getattr(config, "share_att_key", False):
            _refuse(arch, "share_att_key=False; our deberta shares the q/k projections")
        elif getattr(config, "norm_rel_ebd", "none").replace(" ", "").lower() != "layer_norm":
            _refuse(arch, f"norm_rel_ebd={config.norm_rel_ebd!r}; only 'layer_norm'")
        elif not pos_att_type or set(pos_att_type) - {"c2p", "p2c"}:
            _refuse(arch, f"pos_att_type={pos_att_type!r}; need a non-empty subset of c2p, p2c")
        elif getattr(config, "conv_kernel_size", 0) > 0:
            _refuse(arch, "conv_kernel_size > 0; our encoder has no convolution layer")
        elif head_size not in (None, config.hidden_size // config.num_attention_heads):
            _refuse(arch, f"attention_head_size={head_size} != hidden_size / num_heads")


def _model_kwargs(config: Any, arch: HFArchitecture) -> dict[str, Any]:
    position_kwargs: dict[str, Any] = {}
    if arch.position == "deberta":
        max_relative = config.max_relative_positions
        pos_att_type = set(config.pos_att_type)
        position_kwargs = {
            "position_buckets": config.position_buckets,
            "max_relative_positions": (
                max_relative if max_relative >= 1 else config.max_position_embeddings
            ),
            "c2p": "c2p" in pos_att_type,
            "p2c": "p2c" in pos_att_type,
        }
    dropout = float(config.hidden_dropout_prob)
    attention_dropout = float(config.attention_probs_dropout_prob)
    return {
        "position": arch.position,
        "attention": "softmax",
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "num_layers": config.num_hidden_layers,
        "num_heads": config.num_attention_heads,
        "intermediate_size": config.intermediate_size,
        "max_positions": config.max_position_embeddings,
        "dropout": dropout,
        "attention_dropout": None if attention_dropout == dropout else attention_dropout,
        "layer_norm_eps": config.layer_norm_eps,
        "init_std": config.initializer_range,
        "position_kwargs": position_kwargs,
    }


def _check_weights(state: dict[str, torch.Tensor], arch: HFArchitecture, head: str) -> None:
    p = arch.prefix
    words = state[f"{p}.embeddings.word_embeddings.weight"]
    if head == "cls":
        decoder = state.get("cls.predictions.decoder.weight")
        if decoder is not None and not torch.equal(decoder, words):
            _refuse(arch, "its MLM decoder is not tied to the word embeddings")
        decoder_bias = state.get("cls.predictions.decoder.bias")
        if decoder_bias is not None and not torch.equal(
            decoder_bias, state["cls.predictions.bias"]
        ):
            _refuse(arch, "its MLM decoder bias differs from cls.predictions.bias")
    token_types = state.get(f"{p}.embeddings.token_type_embeddings.weight")
    if arch.position != "learned" and token_types is not None and token_types[0].any():
        _refuse(
            arch,
            "token_type_embeddings row 0 is non-zero and there is no absolute position table "
            "to fold it into",
        )
    if arch.position == "rope":
        table = state[f"{p}.encoder.embed_positions.weight"]
        transformers = require_transformers()
        sinusoid = (
            transformers.models.roformer.modeling_roformer.RoFormerSinusoidalPositionalEmbedding
        )
        expected = sinusoid(*table.shape).create_weight()
        if not torch.allclose(table, expected, atol=1e-6):
            _refuse(arch, f"embed_positions is not the base-{HF_ROPE_BASE:g} sinusoid table")


def import_hf(path_or_model: Any) -> MaskedLM:
    """A ``MaskedLM`` (eval mode) equal to an HF MLM given as a directory or a model instance.

    ``RoFormerForMaskedLM`` -> ``rope``, ``DebertaV2ForMaskedLM`` -> ``deberta``,
    ``BertForMaskedLM`` -> ``learned``, softmax attention, post-LN. A directory is read
    with ``local_files_only=True`` (never downloads). Raises ConfigError for a config or
    weights our encoder cannot represent exactly.
    """
    hf, arch = _load(path_or_model)
    config = hf.config
    _check_config(config, arch)
    head = "cls" if getattr(config, "legacy", True) else "lm_predictions"
    state = {
        k: v.detach().to(device="cpu", dtype=torch.float32) for k, v in hf.state_dict().items()
    }
    _check_weights(state, arch, head)
    model = MaskedLM(**_model_kwargs(config, arch))
    ours = dict(model.named_parameters())
    table = links(arch, config.num_hidden_layers, head)
    fused: dict[str, list[torch.Tensor | None]] = {}
    values: dict[str, torch.Tensor] = {}
    for link in table:
        if link.theirs not in state:
            raise RuntimeError(f"interop mapping error: {link.theirs} missing")
        if link.slot is None:
            values[link.ours] = state[link.theirs]
        else:
            fused.setdefault(link.ours, [None, None, None])[link.slot] = state[link.theirs]
    values.update({name: torch.cat(parts) for name, parts in fused.items()})
    if arch.position == "learned":
        token_types = state.get(f"{arch.prefix}.embeddings.token_type_embeddings.weight")
        if token_types is not None:
            name = "encoder.position.table.weight"
            values[name] = values[name] + token_types[0]
    if set(values) != set(ours):
        raise RuntimeError(
            f"interop mapping error: unmatched parameters {sorted(set(values) ^ set(ours))}"
        )
    with torch.no_grad():
        for name, param in ours.items():
            param.copy_(values[name])
    return model.eval()
