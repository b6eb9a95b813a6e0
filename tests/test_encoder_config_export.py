"""Hugging Face export and import read the architecture from ``EncoderConfig`` through one
table (``interop.config_keys``): every field is mapped to an HF config key or handled by
name, a field added later is refused at export unless it has its default, and import
reads the mapped keys back -- for every registered architecture."""

from __future__ import annotations

import dataclasses

import pytest
from hf_models import MODELS, SIZES

from roformer_lit.encoder_config import ENCODER_FIELDS, EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.module import MaskedLM

pytest.importorskip("transformers")

from roformer_lit.interop import ARCHITECTURES, export, import_hf, to_hf_model  # noqa: E402
from roformer_lit.interop.config_keys import CONFIG_KEYS, HANDLED_FIELDS, hf_keys  # noqa: E402


def test_every_architecture_has_a_model_here():
    assert set(MODELS) == set(ARCHITECTURES)


def test_every_field_is_mapped_or_handled_once():
    assert not set(CONFIG_KEYS) & set(HANDLED_FIELDS)
    assert set(CONFIG_KEYS) | set(HANDLED_FIELDS) == set(ENCODER_FIELDS)


@pytest.mark.parametrize("model_type", sorted(ARCHITECTURES))
def test_renamed_keys_only_rename_mapped_fields(model_type):
    arch = ARCHITECTURES[model_type]
    assert set(dict(arch.renamed_keys)) <= set(CONFIG_KEYS)
    keys = list(hf_keys(arch).values())
    assert len(keys) == len(set(keys))  # two fields never share one HF key


@pytest.mark.parametrize("model_type", sorted(ARCHITECTURES))
def test_export_writes_and_import_reads_every_mapped_field(model_type):
    model = MaskedLM(**MODELS[model_type], dropout=0.15, attention_dropout=0.05, **SIZES)
    hf = to_hf_model(model)
    assert hf.config.model_type == model_type
    values = model.config.as_dict()
    for name, key in hf_keys(ARCHITECTURES[model_type]).items():
        assert getattr(hf.config, key) == values[name], name
    back = import_hf(hf).config.as_dict()
    for name in [*CONFIG_KEYS, "position", "pre_norm", "attention"]:
        assert back[name] == values[name], name


@pytest.mark.parametrize("model_type", sorted(ARCHITECTURES))
def test_an_attention_dropout_equal_to_dropout_reads_back_as_none(model_type):
    model = MaskedLM(**MODELS[model_type], dropout=0.15, **SIZES)
    assert import_hf(to_hf_model(model)).config.attention_dropout is None


#: The config with a field added after export was written.
Extended = dataclasses.make_dataclass(
    "Extended", [("new_setting", int, 0)], bases=(EncoderConfig,), frozen=True
)


@pytest.mark.parametrize("model_type", sorted(ARCHITECTURES))
def test_a_field_export_does_not_know_is_refused_unless_default(model_type):
    model = MaskedLM(**MODELS[model_type], **SIZES)
    model.config = Extended(**model.config.as_dict(), new_setting=0)
    assert export._check_exportable(model) is ARCHITECTURES[model_type]  # default: nothing lost
    model.config = Extended(**model.config.as_dict() | {"new_setting": 3})
    with pytest.raises(ConfigError) as info:
        export._check_exportable(model)
    message = str(info.value)
    assert "\n" not in message and "model.new_setting=3" in message
    assert ARCHITECTURES[model_type].model_class in message
