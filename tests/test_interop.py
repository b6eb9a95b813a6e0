"""Hugging Face interop: export to / import from RoFormer, DeBERTa-v2 and BERT MLMs.

Every model is small, built from a config with random weights (no download), and pushed
off its initialisation (noise on every weight, bias and LayerNorm) so that a zero-init
bias or unit LayerNorm cannot hide a mapping error.
"""

from __future__ import annotations

import os
import sys

import pytest
import torch

transformers = pytest.importorskip("transformers")

import roformer_lit  # noqa: E402
from roformer_lit import ConfigError, MaskedLM  # noqa: E402
from roformer_lit.interop import ARCHITECTURES, import_hf  # noqa: E402

VOCAB = 100
LENGTH = 40  # longer than every deberta bucket count / max_relative_positions below
ATOL = 1e-4

#: (position, hidden, heads, layers, intermediate, position_kwargs)
CASES = [
    ("rope", 48, 3, 2, 64, {}),  # d = 16
    ("rope", 40, 5, 3, 80, {}),  # d = 8
    ("learned", 36, 3, 2, 72, {}),  # d = 12
    ("learned", 40, 5, 3, 64, {}),  # d = 8
    ("deberta", 48, 3, 2, 64, {"position_buckets": 8, "max_relative_positions": 32}),
    ("deberta", 40, 5, 3, 80, {"position_buckets": 8, "max_relative_positions": 32, "p2c": False}),
    ("deberta", 36, 3, 2, 72, {"position_buckets": 16, "max_relative_positions": 24, "c2p": False}),
    ("deberta", 40, 5, 2, 64, {}),  # defaults: 256 buckets, max_relative_positions = 64
]


def _id(case: tuple) -> str:
    position, hidden, heads, layers, _, kwargs = case
    extra = "-".join(f"{k}={v}" for k, v in kwargs.items())
    return f"{position}-h{hidden}x{heads}-L{layers}" + (f"-{extra}" if extra else "")


@pytest.fixture(autouse=True, scope="module")
def _quiet_transformers():
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    yield
    transformers.utils.logging.enable_progress_bar()


def _perturb(module: torch.nn.Module, seed: int, scale: float = 0.1) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in module.parameters():
            if param.requires_grad:  # skips HF RoFormer's frozen sinusoid table
                param.add_(scale * torch.randn(param.shape, generator=generator))


def _model(position, hidden, heads, layers, intermediate, kwargs, seed=0, **extra) -> MaskedLM:
    torch.manual_seed(seed)
    model = MaskedLM(
        position=position,
        vocab_size=VOCAB,
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        intermediate_size=intermediate,
        max_positions=64,
        dropout=0.1,
        attention_dropout=0.05,
        layer_norm_eps=1e-6,
        position_kwargs=kwargs,
        **extra,
    )
    _perturb(model, seed)
    return model.eval()


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Three rows: full, right-padded, left-padded (pads hold token id 0)."""
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(1, VOCAB, (3, LENGTH), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, 27:] = 0
    mask[2, :9] = 0
    return ids.masked_fill(mask == 0, 0), mask


def _hf_logits(hf, ids, mask) -> torch.Tensor:
    with torch.no_grad():
        return hf(input_ids=ids, attention_mask=mask).logits


def _ours(model, ids, mask) -> torch.Tensor:
    with torch.no_grad():
        return model(ids, mask)


def _assert_close_at_real(a: torch.Tensor, b: torch.Tensor, mask: torch.Tensor) -> None:
    real = mask.bool()
    torch.testing.assert_close(a[real], b[real], atol=ATOL, rtol=0)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_export_loads_in_hf_and_round_trips(case, tmp_path):
    model = _model(*case)
    ids, mask = _batch()
    expected = _ours(model, ids, mask)

    out = roformer_lit.export_hf(model, tmp_path / "hf")
    assert out == str(tmp_path / "hf")
    assert "config.json" in os.listdir(out)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]  # no staging left
    hf = transformers.AutoModelForMaskedLM.from_pretrained(out, attn_implementation="eager")
    assert type(hf).__name__ == ARCHITECTURES[case[0]].model_class
    assert not hf.training
    _assert_close_at_real(_hf_logits(hf, ids, mask), expected, mask)

    for source in (out, hf):
        back = import_hf(source)
        assert not back.training
        for key in ("position", "hidden_size", "num_heads", "num_layers", "intermediate_size"):
            assert back.hparams[key] == model.hparams[key]
        assert back.hparams.dropout == pytest.approx(0.1)
        assert back.hparams.attention_dropout == pytest.approx(0.05)
        assert back.hparams.layer_norm_eps == pytest.approx(1e-6)
        _assert_close_at_real(_ours(back, ids, mask), expected, mask)


def test_exported_config_values(tmp_path):
    model = _model("deberta", 48, 3, 2, 64, {"position_buckets": 8, "max_relative_positions": 32})
    config = transformers.AutoConfig.from_pretrained(roformer_lit.export_hf(model, tmp_path / "d"))
    assert config.model_type == "deberta-v2"
    assert config.relative_attention and config.share_att_key and config.legacy
    assert not config.position_biased_input
    assert (config.position_buckets, config.max_relative_positions) == (8, 32)
    assert config.norm_rel_ebd == "layer_norm" and config.type_vocab_size == 0
    assert sorted(config.pos_att_type) == ["c2p", "p2c"]
    assert config.layer_norm_eps == pytest.approx(1e-6)
    assert config.hidden_dropout_prob == pytest.approx(0.1)
    assert config.attention_probs_dropout_prob == pytest.approx(0.05)

    rope = _model("rope", 48, 3, 2, 64, {})
    hf = transformers.AutoModelForMaskedLM.from_pretrained(
        roformer_lit.export_hf(rope, tmp_path / "r")
    )
    assert hf.config.embedding_size == 48 and not hf.config.rotary_value
    assert hf.config.max_position_embeddings == 64 and hf.config.hidden_act == "gelu"
    assert not hf.roformer.embeddings.token_type_embeddings.weight.any()


def _hf_model(position: str, seed: int = 3, **overrides):
    common = dict(
        vocab_size=VOCAB,
        hidden_size=40,
        num_hidden_layers=2,
        num_attention_heads=5,
        intermediate_size=72,
        max_position_embeddings=64,
        layer_norm_eps=1e-7,
    )
    if position == "rope":
        config = transformers.RoFormerConfig(**common, type_vocab_size=2)
        cls = transformers.RoFormerForMaskedLM
    elif position == "learned":
        config = transformers.BertConfig(**common, type_vocab_size=2)
        cls = transformers.BertForMaskedLM
    else:
        config = transformers.DebertaV2Config(
            **common,
            relative_attention=True,
            position_buckets=8,
            max_relative_positions=32,
            norm_rel_ebd="layer_norm",
            share_att_key=True,
            pos_att_type="p2c|c2p",
            position_biased_input=False,
            type_vocab_size=0,
        )
        cls = transformers.DebertaV2ForMaskedLM
    for key, value in overrides.items():
        setattr(config, key, value)
    torch.manual_seed(seed)
    hf = cls._from_config(config, attn_implementation="eager")
    _perturb(hf, seed)
    if position == "rope":  # no absolute table to fold token types into: row 0 must be 0
        with torch.no_grad():
            hf.roformer.embeddings.token_type_embeddings.weight[0] = 0
    return hf.eval()


@pytest.mark.parametrize(
    "position, overrides",
    [("rope", {}), ("learned", {}), ("deberta", {}), ("deberta", {"legacy": False})],
    ids=["roformer", "bert-token-types-folded", "deberta-v3", "deberta-v3-new-head"],
)
def test_import_of_a_random_hf_model_matches_hf(position, overrides):
    hf = _hf_model(position, **overrides)
    if position == "learned":
        assert hf.bert.embeddings.token_type_embeddings.weight[0].abs().min() > 0
    ids, mask = _batch()
    model = import_hf(hf)
    assert model.hparams.position == position
    _assert_close_at_real(_ours(model, ids, mask), _hf_logits(hf, ids, mask), mask)


@pytest.mark.parametrize("position", ["nope", "xl", "sinusoidal"])
def test_export_of_a_scheme_without_hf_counterpart_names_the_exportable_ones(position, tmp_path):
    model = MaskedLM(position=position, vocab_size=VOCAB, hidden_size=32, num_layers=1, num_heads=2)
    with pytest.raises(ConfigError, match=r"deberta, learned, rope") as info:
        roformer_lit.export_hf(model, tmp_path / "out")
    assert "\n" not in str(info.value) and position in str(info.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"position": "rope", "attention": "linear"}, "attention='linear'"),
        ({"position": "learned", "attention": "linear"}, "softmax"),
        ({"position": "rope", "pre_norm": True}, "pre_norm"),
        ({"position": "rope", "position_kwargs": {"base": 500.0}}, "base=500"),
    ],
)
def test_export_refuses_settings_hf_cannot_represent(kwargs, pattern, tmp_path):
    model = MaskedLM(vocab_size=VOCAB, hidden_size=32, num_layers=1, num_heads=2, **kwargs)
    with pytest.raises(ConfigError, match=pattern):
        roformer_lit.export_hf(model, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_never_writes_into_a_non_empty_directory_or_a_file(tmp_path):
    model = _model("rope", 48, 3, 1, 64, {})
    target = tmp_path / "work"
    target.mkdir()
    (target / "config.json").write_text("precious")
    before = os.stat(target / "config.json")
    with pytest.raises(ConfigError, match=r"non-empty directory.*work|work.*non-empty directory"):
        roformer_lit.export_hf(model, target)
    assert os.listdir(target) == ["config.json"]
    assert (target / "config.json").read_text() == "precious"
    assert os.stat(target / "config.json").st_mtime_ns == before.st_mtime_ns

    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(ConfigError, match="existing file"):
        roformer_lit.export_hf(model, a_file)
    assert a_file.read_text() == "x"

    empty = tmp_path / "empty"
    empty.mkdir()
    assert roformer_lit.export_hf(model, empty) == str(empty)
    assert (empty / "config.json").exists()


@pytest.mark.parametrize(
    "position, overrides, pattern",
    [
        ("rope", {"rotary_value": True}, "rotary_value"),
        ("rope", {"hidden_act": "relu"}, "hidden_act='relu'"),
        ("learned", {"is_decoder": True}, "is_decoder"),
        ("deberta", {"position_biased_input": True}, "position_biased_input"),
        ("deberta", {"relative_attention": False}, "relative_attention"),
        ("deberta", {"share_att_key": False}, "share_att_key"),
        ("deberta", {"position_buckets": -1}, "position_buckets"),
        ("deberta", {"norm_rel_ebd": "none"}, "norm_rel_ebd"),
        ("deberta", {"pos_att_type": ["c2p", "p2p"]}, "pos_att_type"),
    ],
)
def test_import_refuses_configs_it_cannot_represent(position, overrides, pattern):
    hf = _hf_model(position)
    for key, value in overrides.items():
        setattr(hf.config, key, value)
    with pytest.raises(ConfigError, match=pattern):
        import_hf(hf)


def test_import_refuses_weights_it_cannot_represent(tmp_path):
    hf = _hf_model("rope")
    with torch.no_grad():
        hf.roformer.embeddings.token_type_embeddings.weight[0] = 0.5
    with pytest.raises(ConfigError, match="token_type_embeddings row 0"):
        import_hf(hf)

    hf = _hf_model("rope")
    with torch.no_grad():
        hf.roformer.encoder.embed_positions.weight.mul_(2)
    with pytest.raises(ConfigError, match="embed_positions"):
        import_hf(hf)

    with pytest.raises(ConfigError, match="cannot import a Linear"):
        import_hf(torch.nn.Linear(2, 2))
    with pytest.raises(ConfigError, match="local Hugging Face model directory"):
        import_hf(tmp_path / "missing")


def test_missing_transformers_is_a_config_error(monkeypatch, tmp_path):
    model = _model("rope", 48, 3, 1, 64, {})
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ConfigError, match=r"pip install roformer-lit\[hf\]"):
        roformer_lit.export_hf(model, tmp_path / "out")
    with pytest.raises(ConfigError, match=r"pip install roformer-lit\[hf\]"):
        roformer_lit.import_hf(tmp_path)
