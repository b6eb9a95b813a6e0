"""``configs/recipes/modernbert.yaml`` is transformers' ``ModernBertForMaskedLM``: a small
random model built from the recipe's model section and its ModernBERT export give the same
logits at lengths past the window, with padding (no download); what ModernBERT cannot
express is refused in one line."""

from __future__ import annotations

import copy

import pytest
import torch
import yaml
from cli_helpers import CONFIGS
from model_factory import VOCAB, random_ids

from roformer_lit import MaskedLM
from roformer_lit.errors import ConfigError
from roformer_lit.interop import to_hf_model

pytest.importorskip("transformers")

RECIPE = yaml.safe_load((CONFIGS / "recipes" / "modernbert.yaml").read_text(encoding="utf-8"))
WINDOW = 8
SMALL = dict(vocab_size=VOCAB, hidden_size=32, num_heads=2, intermediate_size=48, max_positions=64)


def recipe_model(dtype: torch.dtype = torch.float64, **changes) -> MaskedLM:
    """The recipe's model section at a small size (window 8), randomly perturbed."""
    settings = copy.deepcopy(RECIPE["model"])
    settings["layer_plan"]["types"]["local"]["window"] = WINDOW
    settings.update(SMALL)
    settings.update(changes)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        torch.manual_seed(0)
        model = MaskedLM(**settings)
        with torch.no_grad():
            for param in model.parameters():
                param.add_(0.05 * torch.randn_like(param))
    finally:
        torch.set_default_dtype(previous)
    return model.eval()


# float64: both sides build RoPE's cos/sin tables in float32 (ours by design, see
# positions/rope.py), which bounds the agreement near 1e-9 (1.4e-9 measured), not at 1e-12
@pytest.mark.parametrize("dtype,tolerance", [(torch.float64, 1e-8), (torch.float32, 1e-4)])
@pytest.mark.parametrize("length", [3 * WINDOW + 5])
def test_the_recipe_equals_modernbert_for_masked_lm(dtype, tolerance, length):
    model = recipe_model(dtype)
    hf = to_hf_model(model, dtype)
    assert type(hf).__name__ == "ModernBertForMaskedLM"
    assert hf.config.layer_types[:3] == ["full_attention", "sliding_attention", "sliding_attention"]
    ids = random_ids(2, length)
    mask = torch.ones(2, length, dtype=torch.long)
    mask[1, length - 7 :] = 0
    with torch.no_grad():
        ours = model(ids, mask)
        theirs = hf(input_ids=ids, attention_mask=mask).logits
    real = mask.bool()
    torch.testing.assert_close(ours[real], theirs[real], atol=tolerance, rtol=tolerance)


def test_export_writes_a_directory_automodel_loads_as_modernbert(tmp_path):
    from tokenizer_factory import tiny_tokenizer
    from transformers import AutoModelForMaskedLM

    import roformer_lit

    model = recipe_model(torch.float32)
    out = roformer_lit.export_hf(model, tmp_path / "hf", tiny_tokenizer(VOCAB))
    hf = AutoModelForMaskedLM.from_pretrained(out)
    assert type(hf).__name__ == "ModernBertForMaskedLM"
    assert hf.config.local_attention == WINDOW
    assert hf.config.rope_parameters["full_attention"]["rope_theta"] == 160000.0
    assert hf.config.rope_parameters["sliding_attention"]["rope_theta"] == 10000.0
    length = 3 * WINDOW + 1
    ids = random_ids(2, length)
    mask = torch.ones(2, length, dtype=torch.long)
    mask[0, length - 4 :] = 0
    with torch.no_grad():
        ours, theirs = model(ids, mask), hf.eval()(input_ids=ids, attention_mask=mask).logits
    real = mask.bool()
    torch.testing.assert_close(ours[real], theirs[real], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize(
    "changes,expected",
    [
        ({"block": {"mlp": "gelu", "linear_bias": False, "first_norm": False}}, "mlp=gelu"),
        ({"block": {"mlp": "geglu", "first_norm": True}}, "norm before layer 0"),
        ({"block": {"mlp": "geglu", "norm": "rmsnorm", "first_norm": False}}, "norm=rmsnorm"),
        (  # a RoPE encoder with position-free global layers is not ModernBERT
            {
                "layer_plan": {
                    "pattern": ["g", "l"],
                    "types": {"g": {"position": "nope"}, "l": {"window": 8}},
                }
            },
            "position 'nope' in layer 0",
        ),
        (
            {
                "layer_plan": {
                    "layers": ["a", "b", "c", "a", "b", "c"],
                    "types": {"a": {"window": 4}, "b": {"window": 8}},
                }
            },
            "windows [4, 8]",
        ),
        (
            {
                "layer_plan": {
                    "pattern": ["a", "b", "c"],
                    "types": {"a": {"position_kwargs": {"base": 500.0}}},
                }
            },
            "RoPE bases [500.0, 10000.0] among full_attention layers",
        ),
        ({"position_kwargs": {"rotary_fraction": 0.5}, "layer_plan": None}, "rotary_fraction"),
        ({"layer_plan": {"pattern": ["l"], "types": {"l": {"window": 1}}}}, "window 1"),
    ],
)
def test_what_modernbert_cannot_express_is_refused_in_one_line(changes, expected):
    model = recipe_model(torch.float32, **changes)
    with pytest.raises(ConfigError) as error:
        to_hf_model(model)
    message = str(error.value)
    assert "\n" not in message and expected in message, message
    assert "ModernBertForMaskedLM cannot express it" in message


@pytest.mark.parametrize("windows", [(7,), (9,), (8, 9)], ids=["7", "9", "8 and 9"])
def test_an_odd_window_exports_as_the_even_window_it_builds(windows):
    """A window ``2k + 1`` reads the keys within ``k`` each side, as ``2k`` does
    (:func:`~roformer_lit.plan_identity.built_window`): exported as local_attention ``2k``,
    with the same logits past the window and with padding."""
    types = {f"local{n}": {"window": window} for n, window in enumerate(windows)}
    plan = {"pattern": ["global", *types], "types": types}
    model = recipe_model(torch.float64, layer_plan=plan)
    hf = to_hf_model(model, torch.float64)
    assert hf.config.local_attention == windows[-1] // 2 * 2
    length = 3 * max(windows) + 2
    ids = random_ids(2, length)
    mask = torch.ones(2, length, dtype=torch.long)
    mask[1, length - 5 :] = 0
    with torch.no_grad():
        ours, theirs = model(ids, mask), hf(input_ids=ids, attention_mask=mask).logits
    real = mask.bool()
    torch.testing.assert_close(ours[real], theirs[real], atol=1e-8, rtol=1e-8)


def hf_modernbert(dtype: torch.dtype = torch.float64, **changes):
    """A random ``ModernBertForMaskedLM`` built by transformers alone (our code plays no
    part): 6 layers, a global layer every third, window 8, perturbed weights."""
    from transformers import ModernBertConfig, ModernBertForMaskedLM

    settings = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=6,
        num_attention_heads=2,
        max_position_embeddings=64,
        local_attention=WINDOW,
        pad_token_id=0,
        bos_token_id=None,
        eos_token_id=None,
        cls_token_id=None,
        sep_token_id=None,
    )
    settings.update(changes)
    torch.manual_seed(1)
    hf = ModernBertForMaskedLM(ModernBertConfig(**settings)).to(dtype)
    with torch.no_grad():
        for param in hf.parameters():
            param.add_(0.05 * torch.randn_like(param))
    return hf.eval()


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"norm_bias": True, "attention_bias": True, "mlp_bias": True, "classifier_bias": True},
        {"hidden_activation": "silu", "num_hidden_layers": 4},
    ],
    ids=["base", "biases", "swiglu"],
)
def test_an_hf_modernbert_imports_with_the_same_logits(changes, tmp_path):
    import roformer_lit

    hf = hf_modernbert(**changes)
    model = roformer_lit.import_hf(hf)
    assert model.hparams.layer_plan["pattern"][0] == "global"
    length = 3 * WINDOW + 2
    ids = random_ids(2, length)
    mask = torch.ones(2, length, dtype=torch.long)
    mask[1, length - 5 :] = 0
    with torch.no_grad():
        ours, theirs = model(ids, mask), hf(input_ids=ids, attention_mask=mask).logits
    real = mask.bool()
    torch.testing.assert_close(ours[real], theirs[real], atol=1e-8, rtol=1e-8)
    hf.float().save_pretrained(tmp_path / "hf")  # and from a directory
    from_dir = roformer_lit.import_hf(tmp_path / "hf")
    assert from_dir.hparams.layer_plan == model.hparams.layer_plan


def test_export_then_import_gives_back_the_same_model():
    """The config imported is the one exported: equal, one checkpoint digest (the
    recipe's block written out in full and its attention dropout equal to its dropout
    are the config the import reads back, which writes neither so)."""
    import roformer_lit
    from roformer_lit.training.architecture_digest import architecture_digest

    model = recipe_model(torch.float32)
    back = roformer_lit.import_hf(to_hf_model(model))
    assert back.config == model.config
    assert architecture_digest(back.config.as_dict()) == architecture_digest(model.config.as_dict())
    assert back.config.block_options == model.config.block_options
    ids = random_ids(2, 3 * WINDOW)
    with torch.no_grad():
        assert torch.equal(back(ids), model(ids))
