"""An export's import gives back the config it was given, however its settings were
written (roformer_lit.interop.spelling): DeBERTa's derived ``max_relative_positions`` left
null, a ModernBERT plan written ``pattern: [g, l, l]`` or ``layers:``, a RoPE base on the
model rather than on each type. A record that would build another model than the HF
config's fields is not taken."""

from __future__ import annotations

import json

import pytest
import torch

pytest.importorskip("transformers")

from roformer_lit import MaskedLM  # noqa: E402
from roformer_lit.interop import export_hf, import_hf, to_hf_model  # noqa: E402
from roformer_lit.training.architecture_digest import architecture_digest  # noqa: E402

MODERNBERT_BLOCK = {"mlp": "geglu", "norm_bias": False, "linear_bias": False, "first_norm": False}

#: (model settings beyond the sizes, as an author writes them)
SPELLINGS = {
    "modernbert-short-names": dict(
        position="rope",
        pre_norm=True,
        block=MODERNBERT_BLOCK,
        layer_plan={
            "pattern": ["g", "l", "l"],
            "types": {"g": {"position_kwargs": {"base": 160000.0}}, "l": {"window": 8}},
        },
    ),
    "modernbert-layers-base-on-the-model": dict(
        position="rope",
        pre_norm=True,
        block=MODERNBERT_BLOCK,
        position_kwargs={"base": 500.0},
        layer_plan={"layers": ["g", "l", "l"], "types": {"l": {"window": 8}}},
    ),
    "modernbert-as-import-writes-it": dict(
        position="rope",
        pre_norm=True,
        block=MODERNBERT_BLOCK,
        layer_plan={
            "pattern": ["global", "local", "local"],
            "types": {
                "global": {"position_kwargs": {"base": 160000.0}},
                "local": {"window": 8, "position_kwargs": {"base": 10000.0}},
            },
        },
    ),
    "roformer": dict(position="rope"),
    "deberta-derived-max-relative-positions": dict(position="deberta"),
    "deberta-pinned-at-the-derived-value": dict(
        position="deberta", position_kwargs={"max_relative_positions": 256}
    ),
}


def _model(**settings) -> MaskedLM:
    torch.manual_seed(0)
    sizes = dict(vocab_size=100, hidden_size=48, num_layers=3, num_heads=3, intermediate_size=64)
    return MaskedLM(max_positions=64, **sizes, **settings).eval()


def _assert_same_config(back: MaskedLM, model: MaskedLM) -> None:
    assert back.config == model.config, (back.config, model.config)
    assert hash(back.config) == hash(model.config)
    assert architecture_digest(back.config.as_dict()) == architecture_digest(model.config.as_dict())


@pytest.mark.parametrize("name", SPELLINGS)
def test_an_export_imports_as_the_config_it_was_given(name):
    model = _model(**SPELLINGS[name])
    _assert_same_config(import_hf(to_hf_model(model)), model)


@pytest.mark.parametrize(
    "name", ["modernbert-short-names", "deberta-derived-max-relative-positions"]
)
def test_an_exported_directory_imports_as_the_config_it_was_given(name, tmp_path):
    model = _model(**SPELLINGS[name])
    out = export_hf(model, tmp_path / "out", require_tokenizer=False)
    _assert_same_config(import_hf(out), model)


def _edited(out: str, edit) -> None:
    """Rewrite ``out``'s ``config.json`` through ``edit`` (in place on the parsed JSON)."""
    path = f"{out}/config.json"
    with open(path) as file:
        config = json.load(file)
    edit(config)
    with open(path, "w") as file:
        json.dump(config, file)


@pytest.mark.parametrize(
    ("name", "record"),
    [
        # a window the weights' HF config does not have: another network
        (
            "modernbert-short-names",
            {"layer_plan": {"pattern": ["g", "l", "l"], "types": {"l": {"window": 16}}}},
        ),
        # a RoPE base moved off the global layers
        (
            "modernbert-short-names",
            {"layer_plan": {"pattern": ["g", "l", "l"], "types": {"l": {"window": 8}}}},
        ),
        # a max_relative_positions the HF config does not give
        (
            "deberta-derived-max-relative-positions",
            {"position_kwargs": {"max_relative_positions": 128}},
        ),
        # not a record of ours
        ("deberta-derived-max-relative-positions", "max_relative_positions=null"),
        # a block RoFormer cannot hold: its HF config says nothing of it
        ("roformer", {"block": {"mlp": "swiglu"}}),
        ("roformer", {"block": {"norm": "rmsnorm", "norm_bias": None}}),
        ("deberta-derived-max-relative-positions", {"attention": "linear"}),
    ],
)
def test_a_record_that_builds_another_model_is_not_taken(name, record, tmp_path):
    """The import is then what the HF config's fields give, as for an HF model from
    elsewhere (the record removed)."""
    from roformer_lit.interop.spelling import SPELLING_KEY

    model = _model(**SPELLINGS[name])
    edited = export_hf(model, tmp_path / "edited", require_tokenizer=False)
    bare = export_hf(model, tmp_path / "bare", require_tokenizer=False)
    _edited(
        edited,
        lambda config: config.update(
            {
                SPELLING_KEY: {**config[SPELLING_KEY], **record}
                if isinstance(record, dict)
                else record
            }
        ),
    )
    _edited(bare, lambda config: config.pop(SPELLING_KEY))
    from_fields = import_hf(bare)
    if name != "roformer":  # the record is what makes the spelling
        assert from_fields.config != model.config
    assert import_hf(edited).config == from_fields.config


@pytest.mark.parametrize(
    "position_kwargs",
    [None, {"position_buckets": 8, "max_relative_positions": 32}, {"c2p": True}],
    ids=["defaults", "options", "a-default-written"],
)
def test_an_imported_deberta_model_exports_again_with_the_same_weights(position_kwargs):
    """An HF DeBERTa from elsewhere (no record) imports with every option written out, so
    its layers hold them while its config holds none at the default: export refused it
    ('cannot export model.layer_plan ...', with no plan). Its layers are read over the
    scheme's defaults now, as layers share a scheme."""
    model = _model(position="deberta", position_kwargs=position_kwargs)
    hf = to_hf_model(model)
    from roformer_lit.interop.spelling import SPELLING_KEY

    delattr(hf.config, SPELLING_KEY)  # an HF model from elsewhere
    back = import_hf(hf)
    again = to_hf_model(back)
    for name, tensor in hf.state_dict().items():
        torch.testing.assert_close(again.state_dict()[name], tensor, rtol=0, atol=0)
