"""``import_hf``: build a ``MaskedLM`` from a Hugging Face ``*ForMaskedLM`` directory or model.

Only configurations our encoder computes exactly are accepted; anything else is a
ConfigError naming the setting. The checks common to every architecture live here; what
is particular to one (its config settings, position options, weights we cannot hold, HF
tensors folded into ours such as BERT's token-type row 0) is that architecture's hooks in
:mod:`roformer_lit.interop.architectures`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.interop._hf import require_transformers
from roformer_lit.interop.export import HF_CONFIG_KEYS
from roformer_lit.interop.mapping import ARCHITECTURES, BY_MODEL_TYPE, HFArchitecture, links
from roformer_lit.interop.modernbert import MODEL_CLASS, from_modernbert
from roformer_lit.module import MaskedLM


def _supported() -> str:
    listed = [f"{a.model_class} ({a.model_type})" for a in ARCHITECTURES.values()]
    return ", ".join([*listed, f"{MODEL_CLASS} (modernbert)"])


def _load(path_or_model: Any) -> tuple[Any, HFArchitecture | None]:
    """The HF model and its architecture (None: ModernBERT, :mod:`.modernbert`)."""
    transformers = require_transformers()
    if isinstance(path_or_model, (str, os.PathLike)):
        path = Path(path_or_model)
        if not path.is_dir():
            raise ConfigError(
                f"import_hf needs a local Hugging Face model directory, got {str(path)!r}"
            )
        config = transformers.AutoConfig.from_pretrained(path, local_files_only=True)
        if config.model_type == "modernbert":
            cls = getattr(transformers, MODEL_CLASS)
            return cls.from_pretrained(path, config=config, local_files_only=True), None
        arch = BY_MODEL_TYPE.get(config.model_type)
        if arch is None:
            raise ConfigError(
                f"cannot import model_type {config.model_type!r} from {str(path)!r}; "
                f"supported: {_supported()}"
            )
        cls = getattr(transformers, arch.model_class)
        return cls.from_pretrained(path, config=config, local_files_only=True), arch
    if isinstance(path_or_model, getattr(transformers, MODEL_CLASS)):
        return path_or_model, None
    for arch in ARCHITECTURES.values():
        if isinstance(path_or_model, getattr(transformers, arch.model_class)):
            return path_or_model, arch
    raise ConfigError(f"cannot import a {type(path_or_model).__name__}; supported: {_supported()}")


def _check_config(config: Any, arch: HFArchitecture) -> None:
    if config.hidden_act != "gelu":
        arch.refuse(f"hidden_act={config.hidden_act!r}; only 'gelu' (exact GELU) is supported")
    if getattr(config, "is_decoder", False) or getattr(config, "add_cross_attention", False):
        arch.refuse("is_decoder / add_cross_attention set; only bidirectional encoders")
    embedding_size = getattr(config, "embedding_size", None)
    if embedding_size not in (None, config.hidden_size):
        arch.refuse(f"embedding_size={embedding_size} != hidden_size={config.hidden_size}")
    arch.check_import_config(config)


def encoder_config(config: Any, arch: HFArchitecture) -> EncoderConfig:
    """Our architecture of the HF ``config``: the fields of :data:`HF_CONFIG_KEYS` read
    back, the scheme and its options from ``arch``, softmax attention, BERT's block."""
    settings = {name: getattr(config, key) for name, key in HF_CONFIG_KEYS.items()}
    settings["dropout"] = float(settings["dropout"])
    attention_dropout = float(config.attention_probs_dropout_prob)
    return EncoderConfig.from_settings(
        settings,
        position=arch.position,
        attention="softmax",
        attention_dropout=None if attention_dropout == settings["dropout"] else attention_dropout,
        position_kwargs=arch.import_position_kwargs(config),
    )


def _check_weights(state: dict[str, torch.Tensor], arch: HFArchitecture, head: str) -> None:
    p = arch.prefix
    words = state[f"{p}.embeddings.word_embeddings.weight"]
    if head == "cls":
        decoder = state.get("cls.predictions.decoder.weight")
        if decoder is not None and not torch.equal(decoder, words):
            arch.refuse("its MLM decoder is not tied to the word embeddings")
        decoder_bias = state.get("cls.predictions.decoder.bias")
        if decoder_bias is not None and not torch.equal(
            decoder_bias, state["cls.predictions.bias"]
        ):
            arch.refuse("its MLM decoder bias differs from cls.predictions.bias")
    arch.check_import_weights(state)


def import_hf(path_or_model: Any) -> MaskedLM:
    """A ``MaskedLM`` (eval mode) equal to an HF MLM given as a directory or a model instance.

    The scheme is the one whose ``ARCHITECTURES`` entry names the HF class
    (:mod:`roformer_lit.interop`); softmax attention, post-LN. A directory is read
    with ``local_files_only=True`` (never downloads). Raises ConfigError for a config or
    weights our encoder cannot represent exactly.
    """
    hf, arch = _load(path_or_model)
    if arch is None:  # ModernBERT: pre-norm, its own layout (interop/modernbert.py)
        return from_modernbert(hf)
    config = hf.config
    _check_config(config, arch)
    head = "cls" if getattr(config, "legacy", True) else "lm_predictions"
    state = {
        k: v.detach().to(device="cpu", dtype=torch.float32) for k, v in hf.state_dict().items()
    }
    _check_weights(state, arch, head)
    model = MaskedLM.from_config(encoder_config(config, arch), init_std=config.initializer_range)
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
    arch.fold_import_weights(values, state)
    if set(values) != set(ours):
        raise RuntimeError(
            f"interop mapping error: unmatched parameters {sorted(set(values) ^ set(ours))}"
        )
    with torch.no_grad():
        for name, param in ours.items():
            param.copy_(values[name])
    return model.eval()
