"""Block options (``model.block``): a float64 oracle of the whole encoder written from the
formulas in ``roformer_lit/blocks.py``'s docstring, for every combination of options; the
defaults are BERT's block; bad options are refused in one line."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from model_factory import random_ids, small_model

from roformer_lit.blocks import BLOCK_RULES, MLPS, NORMS
from roformer_lit.errors import ConfigError


@pytest.fixture(autouse=True)
def double_precision():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def _norm(x, state, prefix, kind, eps):
    weight, bias = state[f"{prefix}.weight"], state.get(f"{prefix}.bias")
    if kind == "rmsnorm":
        y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)
    else:
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        y = (x - mean) / torch.sqrt(var + eps)
    y = y * weight
    return y if bias is None else y + bias


def _linear(x, state, prefix):
    y = x @ state[f"{prefix}.weight"].T
    bias = state.get(f"{prefix}.bias")
    return y if bias is None else y + bias


def _gelu(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def oracle_encoder(model, ids, mask, mlp, norm, pre_norm, first_norm):
    """The encoder (position ``nope``) from its state dict, one formula at a time."""
    state = {k: v.to(torch.float64) for k, v in model.state_dict().items()}
    eps, heads = model.hparams.layer_norm_eps, model.hparams.num_heads
    x = _norm(
        state["encoder.word_embeddings.weight"][ids], state, "encoder.embedding_norm", norm, eps
    )
    batch, length, hidden = x.shape
    d = hidden // heads
    for n in range(model.hparams.num_layers):
        p = f"encoder.layers.{n}"
        has_attention_norm = f"{p}.attention_norm.weight" in state

        def attend(h, p=p):
            qkv = _linear(h, state, f"{p}.attention.qkv").view(batch, length, 3, heads, d)
            q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
            scores = q @ k.transpose(-1, -2) / math.sqrt(d)
            scores = scores.masked_fill(~mask[:, None, None, :], -math.inf)
            out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, length, hidden)
            return _linear(out, state, f"{p}.attention.out")

        def ffn(h, p=p):
            a = _linear(h, state, f"{p}.ffn_in")
            if mlp == "gelu":
                inner = _gelu(a)
            else:
                first, gate = a[..., : a.shape[-1] // 2], a[..., a.shape[-1] // 2 :]
                act = _gelu(first) if mlp == "geglu" else first * torch.sigmoid(first)
                inner = act * gate
            return _linear(inner, state, f"{p}.ffn_out")

        if pre_norm:
            assert has_attention_norm == (first_norm or n > 0)
            h = _norm(x, state, f"{p}.attention_norm", norm, eps) if has_attention_norm else x
            x = x + attend(h)
            x = x + ffn(_norm(x, state, f"{p}.ffn_norm", norm, eps))
        else:
            x = _norm(x + attend(x), state, f"{p}.attention_norm", norm, eps)
            x = _norm(x + ffn(x), state, f"{p}.ffn_norm", norm, eps)
    if pre_norm:
        x = _norm(x, state, "encoder.final_norm", norm, eps)
    return x


COMBINATIONS = [
    dict(mlp=mlp, norm=norm, norm_bias=norm_bias, linear_bias=linear_bias, first_norm=first)
    for mlp, norm, norm_bias, linear_bias, first in itertools.product(
        MLPS, NORMS, [None, False], [True, False], [True, False]
    )
]


@pytest.mark.parametrize(
    "block,pre_norm",
    # first_norm false needs pre_norm (refused below)
    [(b, pre) for b in COMBINATIONS for pre in (True, False) if b["first_norm"] or pre],
    ids=lambda v: "-".join(map(str, v.values())) if isinstance(v, dict) else f"pre_norm={v}",
)
def test_every_block_option_matches_its_formula(block, pre_norm):
    model = small_model("nope", block=block, pre_norm=pre_norm).double()
    ids = random_ids(2, 11)
    mask = torch.ones(2, 11, dtype=torch.bool)
    mask[1, 7:] = False
    with torch.no_grad():
        got = model.encoder(ids, mask)
    want = oracle_encoder(
        model, ids, mask, block["mlp"], block["norm"], pre_norm, block["first_norm"]
    )
    torch.testing.assert_close(got[mask], want[mask], atol=1e-10, rtol=1e-10)
    params = dict(model.named_parameters())
    has_bias = any(name.endswith(".bias") and ".attention." in name for name in params)
    assert has_bias == block["linear_bias"]
    assert ("head.dense.bias" in params) == block["linear_bias"]
    assert "head.bias" in params  # the output bias stays
    glu = 2 if block["mlp"] != "gelu" else 1
    assert (
        params["encoder.layers.0.ffn_in.weight"].shape[0] == glu * model.hparams.intermediate_size
    )
    norm_biases = [n for n in params if n.endswith("norm.bias")]
    assert bool(norm_biases) == (block["norm"] == "layernorm" and block["norm_bias"] is None)


def test_defaults_are_the_bert_block_bit_for_bit():
    """Explicit defaults build the very model no ``block`` builds (names, init, outputs)."""
    ids = random_ids(2, 9)
    plain = small_model("rope", pre_norm=True)
    explicit = small_model(
        "rope",
        pre_norm=True,
        block={"mlp": "gelu", "norm": "layernorm", "linear_bias": True, "first_norm": True},
    )
    assert list(plain.state_dict()) == list(explicit.state_dict())
    for name, value in plain.state_dict().items():
        assert torch.equal(value, explicit.state_dict()[name]), name
    with torch.no_grad():
        assert torch.equal(plain.encoder(ids), explicit.encoder(ids))
    layer = plain.encoder.layers[0]
    assert isinstance(layer.attention_norm, torch.nn.LayerNorm)
    assert layer.ffn_in.out_features == plain.hparams.intermediate_size


@pytest.mark.parametrize("position", ["deberta", "xl", "rope", "t5"])
def test_bias_free_blocks_run_with_schemes_that_read_the_projection(position):
    model = small_model(position, block={"linear_bias": False, "mlp": "swiglu"})
    with torch.no_grad():
        out = model.encoder(random_ids(2, 8))
    assert torch.isfinite(out).all()


@pytest.mark.parametrize(
    "block,pre_norm,expected",
    [
        ({"mlp": "relu"}, False, "model.block.mlp must be one of gelu, geglu, swiglu"),
        ({"norm": "batchnorm"}, False, "model.block.norm must be one of layernorm, rmsnorm"),
        ({"act": "gelu"}, False, f"valid: {', '.join(BLOCK_RULES)}"),
        ({"linear_bias": 0}, False, "model.block.linear_bias must be true or false"),
        ({"norm": "rmsnorm", "norm_bias": True}, False, "rmsnorm has no bias"),
        ({"first_norm": False}, False, "needs model.pre_norm true"),
        ([1], False, "model.block must be null or a mapping"),
    ],
)
def test_bad_block_options_are_one_line(block, pre_norm, expected):
    with pytest.raises(ConfigError) as error:
        small_model("rope", block=block, pre_norm=pre_norm)
    message = str(error.value)
    assert "\n" not in message and expected in message, message
