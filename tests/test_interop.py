"""Hugging Face interop: export to / import from RoFormer, DeBERTa-v2 and BERT MLMs.

Every model is small, built from a config with random weights (no download), and pushed
off its initialisation (noise on every weight, bias and LayerNorm) so that a zero-init
bias or unit LayerNorm cannot hide a mapping error.
"""

from __future__ import annotations

import ast
import inspect
import os
import sys

import pytest
import torch

transformers = pytest.importorskip("transformers")

from tokenizer_factory import tiny_tokenizer, word  # noqa: E402

import roformer_lit  # noqa: E402
from roformer_lit import ConfigError, MaskedLM  # noqa: E402
from roformer_lit.interop import (  # noqa: E402
    ARCHITECTURES,
    config_keys,
    export,
    import_hf,
    load,
    verify,
    weights,
)
from roformer_lit.interop.architectures.base import HFArchitecture  # noqa: E402
from roformer_lit.interop.mapping import architecture_for  # noqa: E402

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

    out = roformer_lit.export_hf(model, tmp_path / "hf", tiny_tokenizer(VOCAB))
    assert out == str(tmp_path / "hf")
    assert {"config.json", "tokenizer.json", "tokenizer_config.json"} <= set(os.listdir(out))
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]  # no staging left
    hf = transformers.AutoModelForMaskedLM.from_pretrained(out, attn_implementation="eager")
    assert type(hf).__name__ == architecture_for(case[0], False).model_class
    assert not hf.training
    _assert_close_at_real(_hf_logits(hf, ids, mask), expected, mask)
    _assert_fill_mask_matches(out, model)

    for source in (out, hf):
        back = import_hf(source)
        assert not back.training
        for key in ("position", "hidden_size", "num_heads", "num_layers", "intermediate_size"):
            assert back.hparams[key] == model.hparams[key]
        assert back.hparams.dropout == pytest.approx(0.1)
        assert back.hparams.attention_dropout == pytest.approx(0.05)
        assert back.hparams.layer_norm_eps == pytest.approx(1e-6)
        _assert_close_at_real(_ours(back, ids, mask), expected, mask)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_export_then_import_gives_back_an_equal_config(case):
    """The model imported from its export is the model's config: equal, one hash, one
    checkpoint digest; DeBERTa's max_relative_positions left null (derived from the other
    sizes, a number in the HF config) comes back null (roformer_lit.interop.spelling)."""
    from roformer_lit.interop import to_hf_model
    from roformer_lit.training.architecture_digest import architecture_digest

    model = _model(*case)
    back = import_hf(to_hf_model(model))
    assert back.config == model.config
    assert hash(back.config) == hash(model.config)
    assert architecture_digest(back.config.as_dict()) == architecture_digest(model.config.as_dict())


MASK_ID, SEP_ID = 4, 3  # tiny_tokenizer's ids, as a trained tokenizer's


def _assert_fill_mask_matches(out: str, model: MaskedLM, top_k: int = 5) -> None:
    """``pipeline("fill-mask", model=out)`` ranks and scores the candidates for ``[MASK]``
    as our model does on the ids the text stands for by construction (``w<i>`` is id ``i``)
    in the training framing (``tokens [SEP]``, see roformer_lit.data.packing)."""
    generator = torch.Generator().manual_seed(7)
    words = torch.randint(5, VOCAB, (11,), generator=generator).tolist()
    text = " ".join([*(word(i) for i in words[:6]), "[MASK]", *(word(i) for i in words[6:])])
    ids = torch.tensor([[*words[:6], MASK_ID, *words[6:], SEP_ID]])
    assert transformers.AutoTokenizer.from_pretrained(out)(text)["input_ids"] == ids[0].tolist()
    probs = _ours(model, ids, torch.ones_like(ids))[0, 6].softmax(-1)
    expected = probs.topk(top_k)
    fill = transformers.pipeline("fill-mask", model=out, top_k=top_k)
    got = fill(text)
    assert [r["token"] for r in got] == expected.indices.tolist()
    torch.testing.assert_close(
        torch.tensor([r["score"] for r in got]), expected.values, atol=1e-5, rtol=1e-4
    )


def test_exported_config_values(tmp_path):
    model = _model("deberta", 48, 3, 2, 64, {"position_buckets": 8, "max_relative_positions": 32})
    exported = roformer_lit.export_hf(model, tmp_path / "d", tiny_tokenizer(VOCAB))
    config = transformers.AutoConfig.from_pretrained(exported)
    assert config.model_type == "deberta-v2"
    assert config.relative_attention and config.share_att_key and config.legacy
    assert not config.position_biased_input
    assert (config.position_buckets, config.max_relative_positions) == (8, 32)
    assert config.norm_rel_ebd == "layer_norm" and config.type_vocab_size == 0
    assert sorted(config.pos_att_type) == ["c2p", "p2c"]
    assert config.layer_norm_eps == pytest.approx(1e-6)
    assert config.pad_token_id == 0  # the tokenizer's [PAD]
    assert config.hidden_dropout_prob == pytest.approx(0.1)
    assert config.attention_probs_dropout_prob == pytest.approx(0.05)

    rope = _model("rope", 48, 3, 2, 64, {})
    hf = transformers.AutoModelForMaskedLM.from_pretrained(
        roformer_lit.export_hf(rope, tmp_path / "r", tiny_tokenizer(VOCAB))
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
        ({"position": "rope", "block": {"mlp": "geglu"}}, "model.block mlp=geglu"),
        ({"position": "rope", "block": {"linear_bias": False}}, "linear_bias=False"),
        (
            {"position": "rope", "layer_plan": {"pattern": ["g"], "types": {"g": {"window": 8}}}},
            "model.layer_plan",
        ),
        (  # a RoFormer with position-free layers never exports as plain RoFormer
            {
                "position": "rope",
                "layer_plan": {"layers": ["r", "n"], "types": {"n": {"position": "nope"}}},
                "num_layers": 2,
            },
            "model.layer_plan",
        ),
    ],
)
def test_export_refuses_settings_hf_cannot_represent(kwargs, pattern, tmp_path):
    kwargs = {"num_layers": 1, **kwargs}
    model = MaskedLM(vocab_size=VOCAB, hidden_size=32, num_heads=2, **kwargs)
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
    assert roformer_lit.export_hf(model, empty, tiny_tokenizer(VOCAB)) == str(empty)
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


def test_export_needs_a_tokenizer_unless_told_otherwise(tmp_path):
    model = _model("learned", 36, 3, 1, 72, {})
    with pytest.raises(ConfigError, match="needs the model's tokenizer.*require_tokenizer=False"):
        roformer_lit.export_hf(model, tmp_path / "a" / "hf")
    assert os.listdir(tmp_path) == []  # not even the parent
    out = roformer_lit.export_hf(model, tmp_path / "bare", require_tokenizer=False)
    assert sorted(os.listdir(out)) == ["config.json", "model.safetensors"]
    assert transformers.AutoModelForMaskedLM.from_pretrained(out) is not None


def test_export_refuses_a_tokenizer_that_does_not_fit(tmp_path):
    model = _model("rope", 48, 3, 1, 64, {})
    with pytest.raises(ConfigError, match=r"tokenizer has 103 tokens.*vocab_size is 100"):
        roformer_lit.export_hf(model, tmp_path / "hf", tiny_tokenizer(VOCAB + 3))
    no_mask = tiny_tokenizer(VOCAB)
    path = tmp_path / "no_mask.json"
    no_mask.save(str(path))
    path.write_text(path.read_text().replace("[MASK]", "[MSK]"))
    with pytest.raises(ConfigError, match=r"lacks required special token\(s\) \[MASK\]"):
        roformer_lit.export_hf(model, tmp_path / "hf", path)
    with pytest.raises(ConfigError, match="tokenizers.Tokenizer or a tokenizer.json path"):
        roformer_lit.export_hf(model, tmp_path / "hf", 42)
    assert sorted(os.listdir(tmp_path)) == ["no_mask.json"]


def test_export_takes_a_tokenizer_json_path_and_leaves_the_given_tokenizer_alone(tmp_path):
    model = _model("deberta", 40, 5, 1, 64, {"position_buckets": 8, "max_relative_positions": 32})
    tok = tiny_tokenizer(VOCAB)
    before = tok.to_str()
    tok.save(str(tmp_path / "tokenizer.json"))
    out = roformer_lit.export_hf(model, tmp_path / "hf", tmp_path / "tokenizer.json")
    assert tok.to_str() == before  # the [SEP] framing went to a copy
    hf_tok = transformers.AutoTokenizer.from_pretrained(out)
    assert type(hf_tok).__name__ in ("PreTrainedTokenizerFast", "TokenizersBackend")
    assert hf_tok.model_max_length == 64
    assert (hf_tok.pad_token, hf_tok.unk_token, hf_tok.cls_token) == ("[PAD]", "[UNK]", "[CLS]")
    assert (hf_tok.sep_token, hf_tok.mask_token) == ("[SEP]", "[MASK]")
    assert hf_tok("w5 w6", "w7")["input_ids"] == [5, 6, SEP_ID, 7, SEP_ID]
    assert "token_type_ids" not in hf_tok("w5")
    padded = hf_tok(["w5 w6 w7", "w8"], padding=True)
    assert padded["input_ids"][1] == [8, SEP_ID, 0, 0] and padded["attention_mask"][1] == [
        1,
        1,
        0,
        0,
    ]


@pytest.mark.parametrize("fault", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_export_leaves_nothing_behind(fault, tmp_path, monkeypatch):
    model = _model("rope", 48, 3, 1, 64, {})
    real_write_text = type(tmp_path).write_text

    def fail_on_tokenizer(self, *args, **kwargs):
        if self.name.startswith("tokenizer"):  # after the weights were written
            assert any(p.name.endswith(".safetensors") for p in self.parent.iterdir())
            raise fault
        return real_write_text(self, *args, **kwargs)

    monkeypatch.setattr(type(tmp_path), "write_text", fail_on_tokenizer)
    expected = ConfigError if isinstance(fault, OSError) else KeyboardInterrupt
    with pytest.raises(expected, match="No space left" if expected is ConfigError else None):
        roformer_lit.export_hf(model, tmp_path / "new" / "deep" / "hf", tiny_tokenizer(VOCAB))
    assert os.listdir(tmp_path) == []  # no export, no staging, no parents it created


@pytest.mark.parametrize(
    "position_kwargs",
    [
        {"rotary_fraction": 0.5},
        {"scaling": {"type": "linear", "factor": 2}},
        {"scaling": {"type": "yarn", "factor": 4}},
        {"unrotated_fraction": 0.25},  # p-RoPE: the lowest frequencies do not rotate
    ],
    ids=["partial", "linear-scaling", "yarn-scaling", "p-rope"],
)
def test_export_refuses_rope_variants_hf_roformer_cannot_compute(position_kwargs, tmp_path):
    model = MaskedLM(
        position="rope",
        vocab_size=VOCAB,
        hidden_size=32,
        num_layers=1,
        num_heads=2,
        position_kwargs=position_kwargs,
    )
    with pytest.raises(ConfigError, match="rotates every dimension at unscaled") as info:
        roformer_lit.export_hf(model, tmp_path / "out", tiny_tokenizer(VOCAB))
    assert "\n" not in str(info.value)
    assert not (tmp_path / "out").exists()


def _string_constants(module) -> set[str]:
    tree = ast.parse(inspect.getsource(module))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def test_export_and_import_name_no_architecture_only_its_hooks():
    """What is particular to one architecture lives in its ``ARCHITECTURES`` entry (a
    subclass overriding the hooks), never in a branch of the generic export/import code."""
    names = set()
    for model_type, arch in ARCHITECTURES.items():
        assert arch.model_type == model_type
        assert type(arch) is not HFArchitecture and isinstance(arch, HFArchitecture)
        names |= {arch.position, model_type, arch.model_class, arch.config_class}
        names |= {getattr(arch, "prefix", model_type)}
    for module in (export, load, weights, verify, config_keys):
        assert not names & _string_constants(module), module.__name__


def test_a_plan_that_silently_swaps_the_scheme_is_refused_before_export():
    """One type everywhere that is not the model's scheme would export as the wrong
    architecture: it is refused when the model is built, in one line."""
    with pytest.raises(ConfigError, match="no layer of model.layer_plan uses model.position"):
        MaskedLM(
            vocab_size=VOCAB,
            hidden_size=32,
            num_heads=2,
            num_layers=1,
            position="rope",
            layer_plan={"pattern": ["a"], "types": {"a": {"position": "alibi"}}},
        )


def _modernbert_with_base(tmp_path, base: float):
    from hf_models import small_model

    roformer_lit.export_hf(small_model("modernbert"), tmp_path, require_tokenizer=False)
    hf = transformers.AutoModelForMaskedLM.from_pretrained(tmp_path)
    hf.config.rope_parameters["full_attention"]["rope_theta"] = base
    return hf


@pytest.mark.parametrize(
    "build, line",
    [
        (
            lambda _: _hf_model("deberta", position_buckets=32, max_relative_positions=16),
            "its config's max_relative_positions=16 is refused: deberta max_relative_positions "
            "must be null or an integer >= 18 (position_buckets // 2 + 2: past the exact offsets), "
            "got 16",
        ),
        (
            lambda _: _hf_model("learned", layer_norm_eps=-1.0),
            "its config's layer_norm_eps=-1.0 is refused: layer_norm_eps must be in",
        ),
        (
            lambda tmp_path: _modernbert_with_base(tmp_path, -5.0),
            "its config's rope_parameters.full_attention.rope_theta=-5.0 is refused: rope base "
            "must be > 1",
        ),
    ],
    ids=["deberta-max-relative", "bert-layer-norm-eps", "modernbert-rope-theta"],
)
def test_an_import_our_rules_refuse_names_the_hf_config_field(build, line, tmp_path):
    """HF accepts these configs; our rules do not, and the line names the field and value
    as the HF config has them (not our model.* setting) and what we accept."""
    with pytest.raises(ConfigError) as info:
        import_hf(build(tmp_path))
    assert line in str(info.value)
    assert "model." not in str(info.value)
