"""The one table between :class:`~roformer_lit.encoder_config.EncoderConfig` and every HF
config, and the one check that no field is lost on export.

Each field is either mapped (:data:`CONFIG_KEYS`: written as it is under one HF key, read
back from it; an architecture may name a key otherwise, ``renamed_keys``) or handled by
name (:data:`HANDLED_FIELDS`): the scheme and block layout pick the architecture
(``position``, ``pre_norm``), the architecture's hooks carry the scheme's options, the
plan and the block, softmax attention is required, and the kernel's options choose how
softmax attention is computed, not what it computes. ``attention_dropout`` is written as
the dropout in effect and read back as None where it equals ``dropout``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roformer_lit.encoder_config import EncoderConfig, encoder_defaults
from roformer_lit.errors import ConfigError

if TYPE_CHECKING:
    from roformer_lit.interop.architectures.base import HFArchitecture
    from roformer_lit.module import MaskedLM

#: field -> its key in BERT's config; an architecture renames some (``renamed_keys``)
CONFIG_KEYS: dict[str, str] = {
    "vocab_size": "vocab_size",
    "hidden_size": "hidden_size",
    "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads",
    "intermediate_size": "intermediate_size",
    "max_positions": "max_position_embeddings",
    "layer_norm_eps": "layer_norm_eps",
    "dropout": "hidden_dropout_prob",
    "attention_dropout": "attention_probs_dropout_prob",
}
#: the fields handled by name (see the module)
HANDLED_FIELDS: tuple[str, ...] = (
    "position",
    "position_kwargs",
    "attention",
    "attention_kwargs",
    "layer_plan",
    "block",
    "pre_norm",
)


def hf_keys(arch: HFArchitecture) -> dict[str, str]:
    """field -> HF config key in ``arch``'s config class."""
    return {**CONFIG_KEYS, **dict(arch.renamed_keys)}


def check_every_field_exports(config: EncoderConfig, arch: HFArchitecture) -> None:
    """A field neither mapped nor handled (one added after this) is refused unless it has
    its default: no HF setting would carry it."""
    defaults = encoder_defaults(type(config))  # a subclass may add fields
    for name, value in config.as_dict().items():
        if name in CONFIG_KEYS or name in HANDLED_FIELDS or value == defaults[name]:
            continue
        raise ConfigError(
            f"cannot export model.{name}={value!r}: no Hugging Face {arch.model_class} setting "
            f"holds it; export needs model.{name}={defaults[name]!r}"
        )


def hf_config_kwargs(model: MaskedLM, arch: HFArchitecture) -> dict[str, Any]:
    """The HF config of ``model``: the mapped fields (:func:`hf_keys`, the attention
    dropout in effect), then what ``arch.config_kwargs`` adds."""
    config = model.config
    values = config.as_dict() | {"attention_dropout": config.attention_dropout_value}
    kwargs: dict[str, Any] = {key: values[name] for name, key in hf_keys(arch).items()}
    kwargs.update(
        {
            "initializer_range": model.hparams.init_std,
            "pad_token_id": None,  # the model does not know it; export_hf sets the tokenizer's
            "tie_word_embeddings": True,
        }
    )
    kwargs.update(arch.config_kwargs(model))
    return kwargs
