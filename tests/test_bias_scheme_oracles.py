"""ALiBi, KERPLE, T5 buckets, FIRE and RoPE's options against float64 oracles of their papers.

Each oracle is written here from the formula, by loops over heads and positions, without
the code under test; the registry-wide properties (padding, compile, gradients, kernels)
run on these schemes from tests/test_model_properties.py and tests/test_compile.py.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from cli_helpers import fit_args
from model_factory import random_ids, small_model

from roformer_lit.commands import main
from roformer_lit.errors import ConfigError
from roformer_lit.positions import POSITION_SCHEMES, EncoderShape
from roformer_lit.positions import fire as fire_module


@pytest.fixture
def double_precision():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def scheme_bias(model, length: int, layer: int = 0) -> torch.Tensor:
    """The additive bias layer ``layer`` of ``model`` (float64) adds at ``length`` tokens."""
    scheme = model.encoder.position
    ctx = scheme.prepare(length, torch.device("cpu"), torch.float64)
    q = torch.randn(2, model.hparams.num_heads, length, 8, dtype=torch.float64)
    score = scheme.layer(layer).score(q, q, ctx, model.encoder.layers[layer].attention)
    assert score.scale == pytest.approx(
        1 / math.sqrt(model.hparams.hidden_size // model.hparams.num_heads)
    )
    return score.bias


# -- ALiBi ------------------------------------------------------------------------------------


def paper_slopes(n: int) -> list[float]:
    """Press et al.: for 2^k heads the sequence starts at 2^(-8/n) with that ratio; other
    counts take the closest power of two and then interleave the extra slopes of 2n."""
    if n & (n - 1) == 0:
        start = 2 ** (-8 / n)
        return [start * start**i for i in range(n)]
    p = 2 ** int(math.log2(n))
    extra = paper_slopes(2 * p)
    return paper_slopes(p) + [extra[i] for i in range(0, 2 * p, 2)][: n - p]


def test_alibi_slopes_are_the_papers():
    from roformer_lit.positions.alibi import alibi_slopes

    assert alibi_slopes(8) == pytest.approx([1 / 2**k for k in range(1, 9)], rel=1e-15)
    # 12 heads: the 8-head slopes, then 2^-0.5, 2^-1.5, ..., 2^-3.5 (odd steps of 16 heads)
    twelve = [1 / 2**k for k in range(1, 9)] + [2 ** (-(k + 0.5)) for k in range(4)]
    assert alibi_slopes(12) == pytest.approx(twelve, rel=1e-15)
    for n in (1, 2, 3, 5, 6, 12, 16, 20):
        assert alibi_slopes(n) == pytest.approx(paper_slopes(n), rel=1e-12)


@pytest.mark.parametrize("learnable", [False, True])
def test_alibi_bias_equals_formula(learnable, double_precision):
    model = small_model(
        "alibi", hidden_size=48, num_heads=6, position_kwargs={"learnable_slopes": learnable}
    ).double()
    length = 11
    bias = scheme_bias(model, length)
    assert bias.shape == (1, 6, length, length)  # shared by the batch, never [B, h, L, L]
    own = [n for n, _ in model.named_parameters() if n.startswith("encoder.position")]
    if learnable:  # small_model perturbed the learned slopes: the oracle reads them
        assert own == ["encoder.position.log_slopes"]
        slopes = model.encoder.position.log_slopes.exp().tolist()
    else:
        assert own == []
        slopes = paper_slopes(6)
    expected = torch.zeros(1, 6, length, length)
    for h in range(6):
        for i in range(length):
            for j in range(length):
                expected[0, h, i, j] = -slopes[h] * abs(i - j)
    torch.testing.assert_close(bias, expected)


def test_learnable_alibi_slopes_start_at_the_papers():
    shape = EncoderShape(hidden_size=48, num_heads=12, num_layers=1, max_positions=8)
    scheme = POSITION_SCHEMES["alibi"](shape, learnable_slopes=True)
    assert scheme.slopes().tolist() == pytest.approx(paper_slopes(12), rel=1e-6)


def test_alibi_has_no_checkpoint_state():
    model = small_model("alibi")
    assert not [k for k in model.state_dict() if k.startswith("encoder.position")]


# -- every new bias scheme ---------------------------------------------------------------------

NEW_BIAS_SCHEMES = [p for p in ("alibi", "kerple", "t5", "fire") if p in POSITION_SCHEMES]


@pytest.mark.parametrize("position", NEW_BIAS_SCHEMES)
def test_bias_schemes_refuse_the_linear_kernel_naming_softmax(position):
    with pytest.raises(ConfigError, match=f"valid attention kernels for '{position}': softmax$"):
        small_model(position, "linear")


@pytest.mark.parametrize("position", NEW_BIAS_SCHEMES)
@pytest.mark.trainer
def test_two_training_steps_through_the_cli(position, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(fit_args("rope.yaml", 2, "--model.position", position)) == 0
    (run,) = (p for p in (tmp_path / "runs").glob("*/*") if p.is_dir())
    assert run.name.startswith(f"{position}-softmax")
    checkpoint = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)
    assert checkpoint["global_step"] == 2


def test_a_bias_shared_by_the_batch_gives_each_example_its_own_logits():
    """Batching does not mix examples (the [1, h, L, L] bias broadcasts), with and
    without padding."""
    for position in NEW_BIAS_SCHEMES:
        model = small_model(position)
        ids = random_ids(3, 9)
        mask = torch.ones_like(ids, dtype=torch.bool)
        mask[2, 6:] = False
        with torch.no_grad():
            together = model(ids, mask)
            alone = model(ids[2:, :6])
        torch.testing.assert_close(together[2, :6], alone[0], atol=1e-5, rtol=1e-5)


def test_shape_check():
    shape = EncoderShape(hidden_size=16, num_heads=2, num_layers=1, max_positions=8)
    with pytest.raises(ConfigError, match="alibi learnable_slopes must be true or false"):
        POSITION_SCHEMES["alibi"](shape, learnable_slopes="yes")


# -- KERPLE ------------------------------------------------------------------------------------


@pytest.mark.parametrize("per_layer", [True, False])
def test_kerple_bias_equals_formula(per_layer, double_precision):
    model = small_model("kerple", position_kwargs={"per_layer": per_layer}).double()
    scheme, length = model.encoder.position, 10
    assert (scheme.layer(1) is scheme.layer(0)) == (not per_layer)
    for layer in (0, 1):
        bias = scheme_bias(model, length, layer)
        assert bias.shape == (1, 3, length, length)
        raw1, raw2 = scheme.layer(layer).raw_r1.tolist(), scheme.layer(layer).raw_r2.tolist()
        expected = torch.zeros(1, 3, length, length)
        for h in range(3):
            r1, r2 = math.log1p(math.exp(raw1[h])), math.log1p(math.exp(raw2[h]))  # softplus
            assert r1 > 0 and r2 > 0
            for i in range(length):
                for j in range(length):
                    expected[0, h, i, j] = -r1 * math.log(1 + r2 * abs(i - j))
        torch.testing.assert_close(bias, expected)


def test_kerple_starts_at_the_reference_codes_initial_ranges():
    torch.manual_seed(0)
    shape = EncoderShape(hidden_size=64, num_heads=64, num_layers=1, max_positions=8)
    r1, r2 = POSITION_SCHEMES["kerple"](shape).layer(0).strengths()
    assert 0.01 - 1e-6 <= r1.min() and r1.max() <= 2 and r1.mean() > 0.6  # U(0, 2)
    assert 0.01 - 1e-6 <= r2.min() and r2.max() <= 1 and r2.mean() > 0.3  # U(0, 1)


# -- T5 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "num_buckets,max_distance", [(32, 128), (8, 20), (4, 3), (64, 1000), (16, 5), (6, 16)]
)
def test_t5_buckets_equal_hf(num_buckets, max_distance):
    from transformers.models.t5.modeling_t5 import T5Attention

    from roformer_lit.positions.t5 import t5_bucket

    relative = torch.arange(-3000, 3001)
    expected = T5Attention._relative_position_bucket(
        relative, bidirectional=True, num_buckets=num_buckets, max_distance=max_distance
    )
    got = t5_bucket(relative, num_buckets, max_distance)
    assert torch.equal(got, expected)
    assert got.min() == 0 and got.max() == num_buckets - 1


@pytest.mark.parametrize("per_layer", [False, True])
def test_t5_bias_is_the_table_at_hfs_bucket_of_j_minus_i(per_layer, double_precision):
    from transformers.models.t5.modeling_t5 import T5Attention

    model = small_model(
        "t5", position_kwargs={"num_buckets": 8, "max_distance": 12, "per_layer": per_layer}
    ).double()
    scheme, length = model.encoder.position, 30  # past max_distance: last buckets in use
    for layer in (0, 1):
        table = (scheme.table if not per_layer else scheme.layer(layer).table).weight
        bias = scheme_bias(model, length, layer)
        assert bias.shape == (1, 3, length, length)
        expected = torch.zeros(1, 3, length, length)
        for i in range(length):
            for j in range(length):
                bucket = T5Attention._relative_position_bucket(
                    torch.tensor(j - i), bidirectional=True, num_buckets=8, max_distance=12
                )
                for h in range(3):
                    expected[0, h, i, j] = table[bucket, h]
        torch.testing.assert_close(bias, expected)
    assert (scheme.layer(0) is scheme.layer(1)) == (not per_layer)
    tables = [n for n in model.state_dict() if n.startswith("encoder.position")]
    assert len(tables) == (2 if per_layer else 1)


@pytest.mark.parametrize(
    "options,message",
    [
        ({"num_buckets": 7}, "t5 num_buckets must be an even integer >= 4, got 7"),
        ({"num_buckets": 2}, "t5 num_buckets must be an even integer >= 4, got 2"),
        ({"num_buckets": 32, "max_distance": 8}, "t5 max_distance must be an integer > "),
    ],
)
def test_t5_refuses_impossible_buckets(options, message):
    shape = EncoderShape(hidden_size=16, num_heads=2, num_layers=1, max_positions=8)
    with pytest.raises(ConfigError, match=message):
        POSITION_SCHEMES["t5"](shape, **options)


# -- RoPE: rotary_fraction and scaling ------------------------------------------------------------


def rope_scheme(head_size: int = 16, max_positions: int = 64, **options):
    shape = EncoderShape(2 * head_size, 2, 1, max_positions)
    return POSITION_SCHEMES["rope"](shape, **options)


def rotate(scheme, x: torch.Tensor) -> torch.Tensor:
    ctx = scheme.prepare(x.shape[-2], x.device, x.dtype)
    return scheme.layer(0).rotate(x, ctx)


def rotate_by_loops(x: torch.Tensor, inv_freq: list[float]) -> torch.Tensor:
    """RoFormer's pairwise rotation of the first ``2 len(inv_freq)`` dims; the rest kept."""
    out = x.clone()
    for m in range(x.shape[-2]):
        for t, f in enumerate(inv_freq):
            c, s = math.cos(m * f), math.sin(m * f)
            a, b = x[..., m, 2 * t], x[..., m, 2 * t + 1]
            out[..., m, 2 * t], out[..., m, 2 * t + 1] = a * c - b * s, a * s + b * c
    return out


@pytest.mark.parametrize(
    "options",
    [
        {"rotary_fraction": 1.0},
        {"rotary_fraction": 1},
        {"scaling": {"type": "linear", "factor": 1}},
        {"scaling": {"type": "ntk", "factor": 1.0}},
        {"scaling": {"type": "yarn", "factor": 1.0, "original_max_positions": 8}},
    ],
)
def test_full_fraction_and_unit_factor_are_todays_rope_bit_for_bit(options):
    from roformer_lit.positions.rope import apply_rope, rope_tables

    x = torch.randn(2, 2, 80, 16)  # past max_positions: the tables grow
    today = apply_rope(x, *rope_tables(80, 16))
    scheme = rope_scheme(**options)
    assert torch.equal(rotate(scheme, x), today)
    assert scheme.layer(0).score(x, x, None, None) is None  # no temperature, no bias


@pytest.mark.parametrize("fraction,rotated", [(0.5, 8), (0.25, 4), (0.3, 4), (0.9, 14)])
def test_partial_rotation_rotates_the_first_pairs_and_keeps_the_rest(fraction, rotated):
    x = torch.randn(2, 2, 12, 16, dtype=torch.float64)
    scheme = rope_scheme(rotary_fraction=fraction)
    got = rotate(scheme, x.float()).double()
    assert torch.equal(got[..., rotated:], x.float()[..., rotated:].double())  # untouched
    inv_freq = [10000 ** (-2 * t / rotated) for t in range(rotated // 2)]
    torch.testing.assert_close(got, rotate_by_loops(x, inv_freq), atol=1e-5, rtol=1e-5)


def test_partial_rotation_allows_an_odd_head_size():
    scheme = rope_scheme(head_size=9, rotary_fraction=0.5)  # 4 rotated, 5 kept
    x = torch.randn(1, 2, 5, 9)
    assert torch.equal(rotate(scheme, x)[..., 4:], x[..., 4:])
    with pytest.raises(ConfigError, match="rope needs an even head size"):
        rope_scheme(head_size=9)


@pytest.mark.parametrize("factor", [2, 4])
def test_linear_scaling_at_length_l_times_f_gives_the_patterns_of_length_l(factor):
    """Position interpolation: q at iF, k at jF (scaled) score as q at i, k at j (unscaled)."""
    length = 10
    q, k = torch.randn(2, 2, length, 16), torch.randn(2, 2, length, 16)
    plain = rope_scheme()
    scaled = rope_scheme(scaling={"type": "linear", "factor": factor})
    long_q, long_k = torch.randn(2, 2, length * factor, 16), torch.randn(2, 2, length * factor, 16)
    long_q[..., ::factor, :], long_k[..., ::factor, :] = q, k
    short = rotate(plain, q) @ rotate(plain, k).transpose(-1, -2)
    long = rotate(scaled, long_q) @ rotate(scaled, long_k).transpose(-1, -2)
    torch.testing.assert_close(long[..., ::factor, ::factor], short, atol=1e-5, rtol=1e-5)
    # unscaled, the long sequence's patterns are different ones
    unscaled = rotate(plain, long_q) @ rotate(plain, long_k).transpose(-1, -2)
    assert (unscaled[..., ::factor, ::factor] - short).abs().max() > 1e-2


def hf_rope(rope_type: str, head_size: int, base: float, **parameters):
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = LlamaConfig(
        hidden_size=2 * head_size,
        num_attention_heads=2,
        max_position_embeddings=parameters.pop("max_position_embeddings", 2048),
        rope_parameters={"rope_type": rope_type, "rope_theta": base, **parameters},
    )
    inv_freq, attention_factor = ROPE_INIT_FUNCTIONS[rope_type](config, "cpu")
    return inv_freq.double(), attention_factor


@pytest.mark.parametrize(
    "head_size,base,factor,original,betas",
    [
        (64, 10000.0, 4.0, 64, (32.0, 1.0)),
        (16, 10000.0, 8.0, 128, (32.0, 1.0)),
        (128, 500000.0, 16.0, 512, (32.0, 1.0)),
        (32, 10000.0, 2.5, 256, (16.0, 2.0)),
        (64, 10000.0, 4.0, 100000, (32.0, 1.0)),  # the ramp clipped at the top
    ],
)
def test_yarn_frequencies_and_temperature_equal_hf(head_size, base, factor, original, betas):
    scaling = {
        "type": "yarn",
        "factor": factor,
        "original_max_positions": original,
        "beta_fast": betas[0],
        "beta_slow": betas[1],
    }
    scheme = rope_scheme(head_size=head_size, base=base, scaling=scaling)
    expected, attention_factor = hf_rope(
        "yarn",
        head_size,
        base,
        factor=factor,
        original_max_position_embeddings=original,
        max_position_embeddings=int(original * factor),
        beta_fast=betas[0],
        beta_slow=betas[1],
    )
    torch.testing.assert_close(scheme.inv_freq, expected, atol=0, rtol=1e-6)
    assert attention_factor == pytest.approx(0.1 * math.log(factor) + 1)
    q = torch.randn(1, 2, 4, head_size)
    score = scheme.layer(0).score(q, q, None, None)
    assert score.bias is None
    assert score.scale == pytest.approx(attention_factor**2 / math.sqrt(head_size))
    # the ramp really interpolates some frequencies and keeps others
    unscaled = base ** (-torch.arange(0, head_size, 2, dtype=torch.float64) / head_size)
    assert torch.isclose(scheme.inv_freq[0], unscaled[0])
    if original <= 512:  # (with a huge original length the ramp never reaches the end)
        assert torch.isclose(scheme.inv_freq[-1], unscaled[-1] / factor)


def test_yarn_on_a_partial_rotation_equals_hfs_partial_rotary_factor():
    scheme = rope_scheme(
        head_size=64,
        rotary_fraction=0.5,
        scaling={"type": "yarn", "factor": 4, "original_max_positions": 64},
    )
    expected, _ = hf_rope(
        "yarn",
        64,
        10000.0,
        factor=4.0,
        original_max_position_embeddings=64,
        max_position_embeddings=256,
        partial_rotary_factor=0.5,
    )
    torch.testing.assert_close(scheme.inv_freq, expected, atol=0, rtol=1e-6)


def test_yarn_temperature_sharpens_softmax_attention():
    """The model's logits with YaRN equal those of softmax(F_t^2 q.k / sqrt d) (checked
    through the block: scaling the q/k projections by F_t gives the same model)."""
    yarn = {"type": "yarn", "factor": 4.0, "original_max_positions": 8}
    model = small_model("rope", position_kwargs={"scaling": yarn})
    twin = small_model("rope", position_kwargs={"scaling": yarn})
    temperature = 0.1 * math.log(4.0) + 1
    with torch.no_grad():
        for layer in twin.encoder.layers:
            layer.attention.qkv.weight[: 2 * 48] *= temperature
            layer.attention.qkv.bias[: 2 * 48] *= temperature
    twin.encoder.position._layer.temperature = 1.0  # the twin tempers q and k instead
    ids = random_ids(2, 20)
    with torch.no_grad():
        torch.testing.assert_close(model(ids), twin(ids), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("factor", [2.0, 8.0])
def test_linear_and_ntk_frequencies_equal_their_formulas(factor):
    d, base = 32, 10000.0
    linear = rope_scheme(head_size=d, scaling={"type": "linear", "factor": factor})
    expected, _ = hf_rope("linear", d, base, factor=factor)
    torch.testing.assert_close(linear.inv_freq, expected, atol=0, rtol=1e-6)
    ntk = rope_scheme(head_size=d, scaling={"type": "ntk", "factor": factor})
    ntk_base = base * factor ** (d / (d - 2))
    oracle = torch.tensor([ntk_base ** (-2 * t / d) for t in range(d // 2)], dtype=torch.float64)
    torch.testing.assert_close(ntk.inv_freq, oracle, atol=0, rtol=1e-12)
    # NTK-aware: the highest frequency kept, the lowest interpolated by exactly F
    assert ntk.inv_freq[0] == 1.0
    assert ntk.inv_freq[-1].item() == pytest.approx(base ** (-(d - 2) / d) / factor, rel=1e-12)


@pytest.mark.parametrize(
    "options,message",
    [
        (
            {"scaling": {"type": "dynamic", "factor": 2}},
            "rope scaling type must be one of linear, ntk, yarn, got 'dynamic'",
        ),
        (
            {"scaling": {"factor": 2}},
            "rope scaling type must be one of linear, ntk, yarn, got None",
        ),
        ({"scaling": {"type": "linear"}}, "rope scaling 'linear' needs a factor"),
        (
            {"scaling": {"type": "linear", "factor": 0.5}},
            "rope scaling factor must be >= 1 and finite, got 0.5",
        ),
        ({"scaling": {"type": "linear", "factor": "x"}}, "rope scaling factor must be >= 1"),
        (
            {"scaling": {"type": "linear", "factor": 2, "beta_fast": 3}},
            "unknown rope scaling key(s) 'beta_fast' for type 'linear'; valid keys: type, factor",
        ),
        (
            {"scaling": {"type": "yarn", "factor": 2, "beta_fast": 1, "beta_slow": 2}},
            "beta_fast must be > beta_slow",
        ),
        (
            {"scaling": {"type": "yarn", "factor": 2, "original_max_positions": 0}},
            "original_max_positions must be a positive integer",
        ),
        ({"rotary_fraction": 0.0}, "rope rotary_fraction must be in (0, 1] and finite, got 0.0"),
        ({"rotary_fraction": 1.5}, "rope rotary_fraction must be in (0, 1]"),
        ({"rotary_fraction": 0.1}, "rotates no pair of dimensions"),
    ],
)
def test_rope_refuses_bad_options_in_one_line(options, message):
    with pytest.raises(ConfigError) as info:
        small_model("rope", hidden_size=32, num_heads=2, position_kwargs=options)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_nan_factor_is_refused_by_the_typed_options():
    with pytest.raises(ConfigError, match="must be finite"):
        small_model("rope", position_kwargs={"scaling": {"type": "yarn", "factor": math.nan}})


@pytest.mark.parametrize(
    "options",
    [
        {"rotary_fraction": 0.5},
        {"scaling": {"type": "yarn", "factor": 4.0, "original_max_positions": 8}},
        {"scaling": {"type": "ntk", "factor": 2.0}, "rotary_fraction": 0.5},
    ],
)
@pytest.mark.parametrize("attention", ["softmax", "linear"])
def test_rope_variants_compose_with_both_kernels(options, attention):
    model = small_model("rope", attention, position_kwargs=options)
    assert torch.isfinite(model(random_ids(2, 100))).all()  # past max_positions too


def test_scaling_does_not_change_the_weights():
    plain = small_model("rope")
    scaled = small_model("rope", position_kwargs={"scaling": {"type": "yarn", "factor": 4}})
    assert plain.state_dict().keys() == scaled.state_dict().keys()
    scaled.load_state_dict(plain.state_dict())  # strict: the same tensors fit


# -- scaling at evaluation time: extrapolate and validate --------------------------------------


@pytest.fixture(scope="module")
def rope_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("rope_run")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        assert main(fit_args("rope.yaml", 2)) == 0
    (run,) = (p for p in (workdir / "runs").glob("*/*") if p.is_dir())
    return workdir, run / "checkpoints" / "last.ckpt"


@pytest.mark.trainer
def test_extrapolate_with_scaling_rebuilds_the_model_with_its_weights(
    rope_run, monkeypatch, capsys
):
    from roformer_lit.module import MaskedLM
    from roformer_lit.results.extrapolate import with_position_kwargs

    workdir, ckpt = rope_run
    monkeypatch.chdir(workdir)
    model = MaskedLM.from_checkpoint(ckpt)
    yarn = {"scaling": {"type": "yarn", "factor": 4, "original_max_positions": 32}}
    scaled = with_position_kwargs(model, yarn, "ckpt")
    assert scaled.hparams.position_kwargs == yarn
    for name, tensor in model.state_dict().items():
        assert torch.equal(scaled.state_dict()[name], tensor)
    ids = random_ids(1, 64)
    with torch.no_grad():
        # barely trained (init std 0.02): a small but real difference
        assert not torch.equal(scaled.eval()(ids), model.eval()(ids))
    assert scaled.encoder.position.scaling["type"] == "yarn"
    capsys.readouterr()
    args = ["extrapolate", str(ckpt), "--lengths", "32", "64", "--tokens", "1024"]
    assert main(args) == 0
    plain = capsys.readouterr().out.splitlines()[-1]
    assert main([*args, "--position_kwargs", "{scaling: {type: yarn, factor: 4}}"]) == 0
    scaled_row = capsys.readouterr().out.splitlines()[-1]
    assert "rope {'scaling': {'type': 'yarn', 'factor': 4}}" in scaled_row
    assert "| rope |" in plain
    assert all(float(c) > 0 for c in scaled_row.split("|")[4:6])


@pytest.mark.parametrize(
    "value,message",
    [
        ("{scaling: {type: cubic, factor: 2}}", "rope scaling type must be one of"),
        ("[1, 2]", "--position_kwargs must be a mapping"),
        ("{scaling: {type: yarn, factor: 4}, bsae: 3}", "'bsae'"),
    ],
)
def test_extrapolate_refuses_bad_position_kwargs_in_one_line(
    rope_run, monkeypatch, capsys, value, message
):
    workdir, ckpt = rope_run
    monkeypatch.chdir(workdir)
    assert main(["extrapolate", str(ckpt), "--lengths", "32", "--position_kwargs", value]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


@pytest.mark.trainer
def test_validate_takes_scaling_over_a_checkpoint(rope_run, monkeypatch, capsys):
    from cli_helpers import CONFIGS, TINY, overridden

    workdir, ckpt = rope_run
    monkeypatch.chdir(workdir)
    validate = ["validate", "--config", str(CONFIGS / "rope.yaml"), *TINY, "--ckpt_path", str(ckpt)]
    assert main(overridden(validate, ["--data.max_length", "64"])) == 0
    scaled = "{scaling: {type: yarn, factor: 4, original_max_positions: 32}}"
    at_64 = ["--data.max_length", "64", "--model.position_kwargs", scaled]
    assert main(overridden(validate, at_64)) == 0
    import json

    lines = (ckpt.parent.parent / "evaluations.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])  # the model validate built: the checkpoint's, scaled
    assert last["model"]["position_kwargs"]["scaling"]["type"] == "yarn"
    assert json.loads(lines[-2])["model"]["position_kwargs"] == {}


# -- FIRE ----------------------------------------------------------------------------------------


def fire_oracle(fire, length: int) -> torch.Tensor:
    """f(psi(|i-j|) / psi(max(L_thr, max(i, j)))), psi(x) = log(|c x| + 1), by loops;
    the MLP 1 -> 32 -> h (ReLU) from its weight matrices."""
    c = fire.c.item()
    threshold = abs(fire.threshold_multiplier.item() * fire.init_threshold.item())
    w1, b1 = fire.mlp[0].weight[:, 0].tolist(), fire.mlp[0].bias.tolist()
    w2, b2 = fire.mlp[2].weight.tolist(), fire.mlp[2].bias.tolist()
    heads = len(b2)
    out = torch.zeros(1, heads, length, length)
    for i in range(length):
        for j in range(length):
            x = math.log(abs(c * abs(i - j)) + 1) / (
                math.log(abs(c * max(threshold, max(i, j))) + 1) + 1e-6
            )
            hidden = [max(0.0, w * x + b) for w, b in zip(w1, b1, strict=True)]
            for h in range(heads):
                out[0, h, i, j] = sum(a * z for a, z in zip(w2[h], hidden, strict=True)) + b2[h]
    return out


@pytest.mark.parametrize("per_layer", [False, True])
@pytest.mark.parametrize("threshold", [512.0, 4.0])
@pytest.mark.parametrize("piecewise", [False, True])
def test_fire_bias_equals_formula(per_layer, threshold, piecewise, double_precision, monkeypatch):
    """As layers (short rows) and in the piecewise-linear form (long rows, here made to
    start at 1 token)."""
    if piecewise:
        monkeypatch.setattr(fire_module, "PIECEWISE_FROM", 1)
    model = small_model(
        "fire", position_kwargs={"threshold": threshold, "per_layer": per_layer}
    ).double()
    scheme, length = model.encoder.position, 12
    for layer in (0, 1):
        fire = scheme.layer(layer).fire if per_layer else scheme.fire
        bias = scheme_bias(model, length, layer)
        assert bias.shape == (1, 3, length, length)
        torch.testing.assert_close(bias, fire_oracle(fire, length))
    assert (scheme.layer(0) is scheme.layer(1)) == (not per_layer)


def v_shaped_rows(generator: torch.Generator, rows: int, length: int) -> tuple:
    """``[2, rows, length]`` entries in ``[0, 1.5]`` that fall to 0 at each row's diagonal
    column and rise after it, and the diagonals."""
    diagonal = torch.randint(0, length, (rows,), generator=generator)
    x = torch.zeros(2, rows, length, dtype=torch.float64)
    for b in range(2):
        for i, d in enumerate(diagonal.tolist()):
            values = torch.rand(length, generator=generator, dtype=torch.float64) * 1.5
            x[b, i, :d] = values[:d].sort(descending=True).values
            x[b, i, d + 1 :] = values[d + 1 :].sort().values
    return x, diagonal


@pytest.mark.parametrize("dead_units", [False, True])
@pytest.mark.parametrize("by_rows", [False, True])
def test_fire_piecewise_form_has_the_layers_gradients(dead_units, by_rows, double_precision):
    """The piecewise-linear MLP gives the gradients of the layers it replaces: of every
    weight and of its input (through which ``c`` and ``L_thr`` learn); with units whose
    input weight is 0 (always on, or never) too. Kinks counted per entry (``bucketize``,
    any input) or, for rows falling to 0 at a diagonal and rising after it, per row (the
    tables' gradients then from running sums along rows)."""
    generator = torch.Generator().manual_seed(5)
    first, second = torch.nn.Linear(1, 32).double(), torch.nn.Linear(32, 3).double()
    with torch.no_grad():  # most kinks inside the inputs' range
        first.bias.copy_(-first.weight[:, 0] * (torch.rand(32, generator=generator) * 2 - 0.25))
    if dead_units:
        with torch.no_grad():
            first.weight[[2, 7]] = 0.0
            first.bias[2], first.bias[7] = 0.3, -0.3
    diagonal = None
    if by_rows:
        x, diagonal = v_shaped_rows(generator, 9, 11)
        x.requires_grad_()
    else:
        x = torch.rand(2, 9, 11, generator=generator, dtype=torch.float64) * 3 - 1.5
        x.requires_grad_()
    weight = torch.randn(3, 2, 9, 11, generator=generator, dtype=torch.float64)
    params = [x, *first.parameters(), *second.parameters()]
    got = fire_module.scalar_relu_mlp(x, first, second, diagonal=diagonal)
    want = second(torch.relu(first(x.unsqueeze(-1)))).movedim(-1, 0)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)
    got_grads = torch.autograd.grad((got * weight).sum(), params)
    want_grads = torch.autograd.grad((want * weight).sum(), params)
    for g, w in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(g, w, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_fire_v_shaped_segments_count_the_kinks_below_each_entry(seed):
    """For rows that fall to 0 at their diagonal and rise after it, the per-row search
    gives ``bucketize``'s count of kinks strictly below each entry: with kinks below 0,
    at 0, past every entry, repeated, and equal to entries (ties count as not below)."""
    generator = torch.Generator().manual_seed(seed)
    rows, length = 7, 40
    diagonal = torch.randint(0, length, (rows,), generator=generator)
    values = torch.rand(rows, length, generator=generator).div(4).round(decimals=2)
    x = torch.zeros(rows, length)
    for i, d in enumerate(diagonal.tolist()):
        x[i, :d] = values[i, :d].sort(descending=True).values + 0.01  # falls to x[i, d] = 0
        x[i, d + 1 :] = values[i, d + 1 :].sort().values
    x = x.expand(2, rows, length).contiguous()  # a leading (batch) dimension
    ties = x[0].flatten()[torch.randint(0, rows * length, (5,), generator=generator)]
    candidates = torch.cat(
        [torch.rand(8, generator=generator) * 0.4 - 0.1, ties, torch.tensor([-1.0, 0.0, 5.0])]
    )
    for count in (0, 1, 3, candidates.numel()):
        kinks = candidates[torch.randperm(candidates.numel(), generator=generator)[:count]]
        kinks = kinks.sort().values
        got = fire_module.VShapedCrossings(x, kinks, diagonal).segments()
        assert torch.equal(got, torch.bucketize(x, kinks)), count


@pytest.mark.parametrize("length", [1, 15, 16, 17, 100, 1000])
def test_prefix_sums_read_the_running_sum_of_each_row_at_its_ends(length):
    """Each row's sum of its first ``e`` entries, for ends anywhere in ``0 .. L`` (both
    bounds, the chunk's edges, repeated ends), over leading dimensions: the running sum
    computed by ``cumsum`` in float64 is the oracle."""
    generator = torch.Generator().manual_seed(length)
    values = torch.randn(3, 2, 5, length, generator=generator, dtype=torch.float64)
    chunk = fire_module.PREFIX_CHUNK
    edges = torch.tensor([0, length, min(chunk, length), min(chunk - 1, length), length])
    ends = torch.cat(
        [torch.randint(0, length + 1, (5, 7), generator=generator), edges.expand(5, -1)], 1
    )
    running = torch.cat([torch.zeros(3, 2, 5, 1, dtype=torch.float64), values.cumsum(-1)], -1)
    want = running.gather(-1, ends.expand(3, 2, -1, -1))
    got = fire_module.prefix_sums(values, ends)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)


def test_fire_over_its_own_positions_takes_the_row_search_with_bucketize_s_values(
    monkeypatch,
):
    """FIRE over positions 0 .. L-1 (rows falling to 0 at the diagonal) counts its kinks by
    the per-row search and sums its tables' gradients from running sums along rows; at
    explicit positions by ``bucketize`` and ``index_add_``. On 1,500 tokens past the
    threshold, kinks spread over the distances: in float32, the bias and gradients of the
    float64 form at explicit positions, to float32's rounding of sums over 300,000 entries."""
    torch.manual_seed(0)
    fire = fire_module.Fire(4, 256.0)
    with torch.no_grad():
        fire.mlp[0].bias.copy_(-fire.mlp[0].weight[:, 0] * torch.rand(32))  # kinks in [0, 1]
        fire.c.fill_(0.3)
    length, rows = 1500, slice(700, 900)
    searched = []

    class Counted(fire_module.VShapedCrossings):
        def __init__(self, *args) -> None:
            searched.append(1)
            super().__init__(*args)

    monkeypatch.setattr(fire_module, "VShapedCrossings", Counted)
    results = []
    for module, dtype, positions in [
        (fire, torch.float32, None),
        (copy.deepcopy(fire).double(), torch.float64, torch.arange(length)[None]),
    ]:
        bias = module(length, torch.device("cpu"), dtype, positions, rows)
        weight = torch.randn(bias.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
        grads = torch.autograd.grad((bias * weight).sum(), list(module.parameters()))
        results.append((bias, grads))
    assert len(searched) == 1
    (got, got_grads), (want, want_grads) = results
    torch.testing.assert_close(got.double(), want, atol=1e-6, rtol=1e-6)
    for g, w in zip(got_grads, want_grads, strict=True):
        assert (g.double() - w).abs().max() <= 1e-5 * w.abs().max() + 1e-6


def test_fire_normaliser_is_the_query_position_below_the_diagonal(double_precision):
    """For j <= i the bidirectional normaliser max(i, j) is the paper's causal i; the bias
    is symmetric in (i, j); below L_thr it depends on |i - j| only."""
    model = small_model("fire", position_kwargs={"threshold": 3.0}).double()
    bias = scheme_bias(model, 10)[0]
    torch.testing.assert_close(bias, bias.transpose(-1, -2))
    fire = model.encoder.position.fire
    c, w1, b1 = fire.c.item(), fire.mlp[0].weight[:, 0], fire.mlp[0].bias
    threshold = abs(fire.threshold_multiplier.item() * 3.0)
    i, j = 8, 2  # causal: normalised by the query position i (past the threshold)
    x = math.log(abs(c * (i - j)) + 1) / (math.log(abs(c * max(threshold, i)) + 1) + 1e-6)
    expected = fire.mlp[2](torch.relu(w1 * x + b1))
    torch.testing.assert_close(bias[:, i, j], expected)
    far = scheme_bias(small_model("fire").double(), 10)[0]  # L_thr = 512: purely relative
    for offset in range(10):
        diagonal = torch.diagonal(far, offset, -2, -1)
        torch.testing.assert_close(diagonal, diagonal[:, :1].expand_as(diagonal))


def test_fire_refuses_a_non_positive_threshold():
    shape = EncoderShape(hidden_size=16, num_heads=2, num_layers=1, max_positions=8)
    with pytest.raises(ConfigError, match="fire threshold must be > 0 and finite, got 0"):
        POSITION_SCHEMES["fire"](shape, threshold=0)


@pytest.mark.parametrize(
    "options", [{"rotary_fraction": 0.5}, {"scaling": {"type": "linear", "factor": 2}}]
)
def test_export_refuses_rope_variants_hf_roformer_cannot_express(options, tmp_path):
    from roformer_lit.interop.export import _check_exportable

    model = small_model("rope", hidden_size=32, num_heads=2, position_kwargs=options)
    with pytest.raises(ConfigError, match="cannot export rope with rotary_fraction < 1 or scaling"):
        _check_exportable(model)
