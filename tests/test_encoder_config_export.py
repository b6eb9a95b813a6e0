"""Hugging Face export and import read the architecture from ``EncoderConfig``: every field
is mapped to an HF config key or handled by name, a field added later is refused at export
unless it has its default, and import reads the mapped keys back."""

from __future__ import annotations

import dataclasses

import pytest

from roformer_lit.encoder_config import ENCODER_FIELDS, EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.interop import export as bert_layout
from roformer_lit.interop import modernbert
from roformer_lit.module import MaskedLM

pytest.importorskip("transformers")

from roformer_lit.interop import import_hf, to_hf_model  # noqa: E402

SIZES = {
    "vocab_size": 61,
    "hidden_size": 24,
    "num_layers": 3,
    "num_heads": 2,
    "intermediate_size": 40,
    "max_positions": 48,
    "layer_norm_eps": 1e-6,
}
MODERNBERT = {
    "position": "rope",
    "pre_norm": True,
    "block": {"mlp": "geglu", "first_norm": False, "linear_bias": False},
    "layer_plan": {"pattern": ["local", "global", "global"], "types": {"local": {"window": 8}}},
}


@pytest.mark.parametrize("where", [bert_layout, modernbert], ids=["bert-layout", "modernbert"])
def test_every_field_is_mapped_or_handled_once(where):
    keys = getattr(where, "HF_CONFIG_KEYS", None) or where.MODERNBERT_CONFIG_KEYS
    assert not set(keys) & set(where.HANDLED_FIELDS)
    assert set(keys) | set(where.HANDLED_FIELDS) == set(ENCODER_FIELDS)


def test_export_writes_and_import_reads_every_mapped_field():
    model = MaskedLM(
        position="learned", position_kwargs={}, dropout=0.15, attention_dropout=0.05, **SIZES
    )
    hf = to_hf_model(model)
    for name, key in bert_layout.HF_CONFIG_KEYS.items():
        assert getattr(hf.config, key) == getattr(model.config, name), name
    assert hf.config.attention_probs_dropout_prob == 0.05
    assert import_hf(hf).config == model.config


def test_modernbert_export_writes_and_import_reads_every_mapped_field():
    model = MaskedLM(**MODERNBERT, dropout=0.15, attention_dropout=0.05, **SIZES)
    hf = to_hf_model(model)
    for name, key in modernbert.MODERNBERT_CONFIG_KEYS.items():
        assert getattr(hf.config, key) == getattr(model.config, name), name
    back = import_hf(hf).config
    for name in [*modernbert.MODERNBERT_CONFIG_KEYS, "dropout", "attention_dropout"]:
        assert getattr(back, name) == getattr(model.config, name), name
    assert back.block_options == model.config.block_options
    windows = [spec.window for spec in back.layer_specs]
    assert windows == [spec.window for spec in model.config.layer_specs] == [8, None, None]


#: The config with a field added after export was written.
Extended = dataclasses.make_dataclass(
    "Extended", [("new_setting", int, 0)], bases=(EncoderConfig,), frozen=True
)


@pytest.mark.parametrize(
    ("settings", "check"),
    [
        ({"position": "learned"}, lambda model: bert_layout._check_exportable(model)),
        (MODERNBERT, lambda model: modernbert.modernbert_config_kwargs(model)),
    ],
    ids=["bert-layout", "modernbert"],
)
def test_a_field_export_does_not_know_is_refused_unless_default(settings, check):
    model = MaskedLM(**settings, **SIZES)
    model.config = Extended(**model.config.as_dict(), new_setting=0)
    check(model)  # at its default: nothing to carry
    model.config = Extended(**model.config.as_dict() | {"new_setting": 3})
    with pytest.raises(ConfigError) as info:
        check(model)
    message = str(info.value)
    assert "\n" not in message and "model.new_setting=3" in message
