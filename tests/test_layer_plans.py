"""Layer plans (``model.layer_plan``): one type everywhere is the model without a plan, bit
for bit, for every scheme; per-layer schemes, RoPE bases and windows against a float64
oracle of the encoder; packed documents stay apart in windowed layers for every scheme;
plans without a meaning are refused in one line."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
from cli_helpers import CONFIGS, one_error_line
from model_factory import VALID_PAIRS, random_ids, small_model

from roformer_lit import ATTENTION_KERNELS, POSITION_SCHEMES
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.plan_labels import plan_label
from roformer_lit.positions.base import PositionScheme
from roformer_lit.results.compare.variants import variant_labels

#: Schemes that act inside the layers (the ones a plan can vary per layer).
LAYER_SCHEMES = [n for n, c in POSITION_SCHEMES.items() if c.embed is PositionScheme.embed]


def _same_model(a, b, ids, mask):
    assert list(a.state_dict()) == list(b.state_dict())
    for name, value in a.state_dict().items():
        assert torch.equal(value, b.state_dict()[name]), name
    with torch.no_grad():
        assert torch.equal(a.encoder(ids, mask), b.encoder(ids, mask))


ONE_TYPE_PLANS = [
    {"pattern": ["all"]},
    {"pattern": ["a", "a"], "types": {"a": {"window": 1000}}},  # longer than the rows
    {"layers": ["a", "a"], "types": {"a": {"position_kwargs": {}}}},
]


@pytest.mark.parametrize("position,attention", VALID_PAIRS)
@pytest.mark.parametrize("plan", ONE_TYPE_PLANS)
def test_one_type_everywhere_is_the_model_without_a_plan(position, attention, plan):
    windowed = any("window" in t for t in plan.get("types", {}).values())
    if windowed and not ATTENTION_KERNELS[attention].supports_window:
        pytest.skip(f"{attention} takes no window (refused below)")
    ids, mask = random_ids(2, 12), torch.ones(2, 12, dtype=torch.bool)
    mask[0, 9:] = False
    plain, planned = (
        small_model(position, attention),
        small_model(position, attention, layer_plan=plan),
    )
    _same_model(plain, planned, ids, mask)


def _defaults(position: str) -> dict:
    """Every option of ``position``'s signature at its default value."""
    import inspect

    params = inspect.signature(POSITION_SCHEMES[position].__init__).parameters.values()
    return {
        p.name: p.default
        for p in params
        if p.kind is p.KEYWORD_ONLY and p.default is not p.empty and p.default is not None
    }


@pytest.mark.parametrize("position", LAYER_SCHEMES)
def test_a_layer_type_writing_the_defaults_is_the_model_without_a_plan(position):
    """A type that writes its scheme's options at their defaults (``num_buckets: 32`` in a
    T5 model) once got a scheme instance of its own, with parameters of its own: another
    model, drawn from other initial weights, than the one without a plan."""
    defaults = _defaults(position)
    if not defaults:
        pytest.skip(f"{position} has no option with a default")
    attention = "softmax"
    ids, mask = random_ids(2, 12), torch.ones(2, 12, dtype=torch.bool)
    plan = {"pattern": ["a", "b"], "types": {"b": {"position_kwargs": defaults}}}
    plain = small_model(position, attention)
    _same_model(plain, small_model(position, attention, layer_plan=plan), ids, mask)
    every = {"pattern": ["a"], "types": {"a": {"position_kwargs": defaults}}}
    _same_model(plain, small_model(position, attention, layer_plan=every), ids, mask)


@pytest.mark.parametrize("attention", sorted(ATTENTION_KERNELS))
def test_per_layer_rope_bases_and_nope_layers_work_on_every_kernel(attention):
    """Per-layer schemes without a score bias have a meaning on every kernel: a plan of
    RoPE base 500 and NoPE layers builds, runs and is not the plain RoPE model."""
    plan = {
        "pattern": ["a", "b"],
        "types": {"a": {"position_kwargs": {"base": 500.0}}, "b": {"position": "nope"}},
    }
    ids = random_ids(1, 10)
    with torch.no_grad():
        planned = small_model("rope", attention, layer_plan=plan).encoder(ids)
        plain = small_model("rope", attention).encoder(ids)
    assert torch.isfinite(planned).all()
    assert not torch.allclose(planned, plain, atol=1e-4)


def test_a_plan_restating_the_model_options_is_the_model_with_them():
    kwargs = {"base": 500.0}
    plan = {"pattern": ["g"], "types": {"g": {"position_kwargs": kwargs}}}
    ids, mask = random_ids(2, 10), torch.ones(2, 10, dtype=torch.bool)
    with_options = small_model("rope", position_kwargs=kwargs)
    _same_model(with_options, small_model("rope", layer_plan=plan), ids, mask)


# -- a float64 oracle of a post-LN encoder with per-layer RoPE bases / NoPE and windows -------


def _layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + eps) * weight + bias


def _rotate(x, base):
    """Interleaved RoPE, pair by pair: (x0, x1) at position m turned by m * base^(-2t/d)."""
    length, d = x.shape[-2:]
    out = x.clone()
    for t in range(d // 2):
        angle = torch.arange(length, dtype=torch.float64) * base ** (-2 * t / d)
        c, s = torch.cos(angle), torch.sin(angle)
        a, b = x[..., 2 * t], x[..., 2 * t + 1]
        out[..., 2 * t], out[..., 2 * t + 1] = a * c - b * s, a * s + b * c
    return out


def oracle(model, ids, mask, layers):
    """``layers``: per layer ``(rope base or None for NoPE, window or None)``."""
    state = {k: v.double() for k, v in model.state_dict().items()}
    eps, heads = model.hparams.layer_norm_eps, model.hparams.num_heads
    e = "encoder."
    x = _layer_norm(
        state[e + "word_embeddings.weight"][ids],
        state[e + "embedding_norm.weight"],
        state[e + "embedding_norm.bias"],
        eps,
    )
    batch, length, hidden = x.shape
    d = hidden // heads
    for n, (base, window) in enumerate(layers):
        p = f"{e}layers.{n}."
        qkv = x @ state[p + "attention.qkv.weight"].T + state[p + "attention.qkv.bias"]
        q, k, v = (t.view(batch, length, heads, d).transpose(1, 2) for t in qkv.chunk(3, -1))
        if base is not None:
            q, k = _rotate(q, base), _rotate(k, base)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        allowed = mask[:, None, None, :].expand(batch, heads, length, length).clone()
        if window is not None:
            for i in range(length):
                for j in range(length):
                    if abs(i - j) > window // 2:
                        allowed[:, :, i, j] = False
        scores = scores.masked_fill(~allowed, -math.inf)
        weights = scores.softmax(-1).nan_to_num(0.0)  # a padded query may see no key at all
        out = (weights @ v).transpose(1, 2).reshape(batch, length, hidden)
        out = out @ state[p + "attention.out.weight"].T + state[p + "attention.out.bias"]
        x = _layer_norm(
            x + out, state[p + "attention_norm.weight"], state[p + "attention_norm.bias"], eps
        )
        inner = x @ state[p + "ffn_in.weight"].T + state[p + "ffn_in.bias"]
        inner = 0.5 * inner * (1 + torch.erf(inner / math.sqrt(2)))
        ffn = inner @ state[p + "ffn_out.weight"].T + state[p + "ffn_out.bias"]
        x = _layer_norm(x + ffn, state[p + "ffn_norm.weight"], state[p + "ffn_norm.bias"], eps)
    return x


@pytest.mark.parametrize(
    "plan,layers",
    [
        (  # ModernBERT's: local RoPE 10 K with a window, global RoPE 160 K
            {
                "pattern": ["local", "local", "global"],
                "types": {
                    "local": {"window": 4, "position_kwargs": {"base": 10000.0}},
                    "global": {"position_kwargs": {"base": 160000.0}},
                },
            },
            [(10000.0, 4), (10000.0, 4), (160000.0, None)],
        ),
        (  # local RoPE with global NoPE (iRoPE / RNoPE); window 5 sees 2 each side
            {
                "layers": ["global", "local", "local"],
                "types": {"local": {"window": 5}, "global": {"position": "nope"}},
            },
            [(None, None), (10000.0, 5), (10000.0, 5)],
        ),
        ({"pattern": ["w"], "types": {"w": {"window": 1}}}, [(10000.0, 1)] * 3),  # itself only
    ],
)
def test_per_layer_schemes_bases_and_windows_match_the_oracle(plan, layers):
    torch.set_default_dtype(torch.float64)
    try:
        model = small_model("rope", num_layers=3, layer_plan=plan)
    finally:
        torch.set_default_dtype(torch.float32)
    ids, mask = random_ids(2, 13), torch.ones(2, 13, dtype=torch.bool)
    mask[1, 10:] = False
    with torch.no_grad():
        got = model.encoder(ids, mask)
    want = oracle(model, ids, mask, layers)
    # RoPE's cos/sin tables are float32 by design (positions/rope.py), so 1e-6, not 1e-9
    torch.testing.assert_close(got[mask], want[mask], atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("position", LAYER_SCHEMES)
def test_windowed_layers_keep_packed_documents_apart_for_every_scheme(position):
    """Two documents packed in one row with ``segment_ids`` get the hidden states each gets
    alone, in a plan of windowed layers and global NoPE ones."""
    plan = {
        "pattern": ["local", "global"],
        "types": {"local": {"window": 3}, "global": {"position": "nope"}},
    }
    model = small_model(position, layer_plan=plan).double()
    first, second = random_ids(1, 7, seed=2), random_ids(1, 5, seed=3)
    packed = torch.cat([first, second], dim=1)
    segments = torch.tensor([[0] * 7 + [1] * 5])
    with torch.no_grad():
        together = model.encoder(packed, segment_ids=segments)
        alone = torch.cat([model.encoder(first), model.encoder(second)], dim=1)
        unwindowed = small_model(position).double().encoder(first)
    torch.testing.assert_close(together, alone, atol=1e-9, rtol=1e-9)
    assert not torch.allclose(alone[:, :7], unwindowed, atol=1e-6)  # the plan does something


def test_a_plan_shows_in_the_run_name_and_compares_variant_columns():
    plan = {"pattern": ["local", "local", "global"], "types": {"local": {"window": 128}}}
    assert plan_label(plan) == "local128x2-global"
    assert plan_label(None) == ""
    modernbert_base = {
        "layers": (["global", "local", "local"] * 8)[:22],
        "types": {"local": {"window": 128}},
    }
    label = plan_label(modernbert_base)
    assert len(label) <= 80 and label.startswith("global-local128x2-global")
    # plain types everywhere build the model without a plan: no label
    assert plan_label({**modernbert_base, "types": {}}) == ""
    assert label != plan_label({**modernbert_base, "layers": modernbert_base["layers"][:21]})
    # plans that differ only in a type's scheme or options get different labels
    three = ["global", "local", "local"]
    plans = [
        {"pattern": three, "types": {"local": {"window": 8}}},
        {"pattern": three, "types": {"local": {"window": 8}, "global": {"position": "nope"}}},
        {
            "pattern": three,
            "types": {"local": {"window": 8}, "global": {"position_kwargs": {"base": 1e5}}},
        },
        {
            "pattern": three,
            "types": {"local": {"window": 8}, "global": {"position_kwargs": {"base": 2e5}}},
        },
    ]
    assert len({plan_label(p) for p in plans}) == len(plans), [plan_label(p) for p in plans]
    assert all(plan_label(p).endswith("local8x2") for p in plans)
    other = {"pattern": ["local", "local", "global"], "types": {"local": {"window": 64}}}
    base = {"position": "rope", "attention": "softmax"}
    labels = variant_labels([base, {**base, "layer_plan": plan}, {**base, "layer_plan": other}])
    assert len(set(labels)) == 3, labels
    assert "window=128" in labels[1] and "window=64" in labels[2], labels


def test_layer_schemes_train_at_the_position_rate():
    plan = {"pattern": ["a", "b"], "types": {"b": {"position": "alibi"}}}
    model = small_model("t5", layer_plan=plan, position_lr_scale=10.0)
    schemes = model.encoder.position_schemes()
    assert len(schemes) == 2 and type(schemes[1]).__name__ == "AlibiPosition"


@pytest.mark.parametrize("types", [None, {"a": None}])
def test_null_types_are_layers_without_settings(types):
    plan = EncoderConfig(num_layers=2, layer_plan={"pattern": ["a"], "types": types})
    assert [spec.window for spec in plan.layer_specs] == [None, None]
    assert plan.layer_specs == [
        replace(spec, type="a") for spec in EncoderConfig(num_layers=2).layer_specs
    ]


@pytest.mark.parametrize(
    "kwargs,expected",
    [
        (
            {"layer_plan": {"pattern": ["l"], "types": {"l": {"window": 0}}}},
            "model.layer_plan.types.l.window must be null or an integer in 1..2147483647, got 0",
        ),
        (  # no window is that long: unbounded integers are refused as every size is
            {"layer_plan": {"pattern": ["l"], "types": {"l": {"window": 10**30}}}},
            f"model.layer_plan.types.l.window must be null or an integer in 1..2147483647, "
            f"got {10**30}",
        ),
        (
            {"layer_plan": {"pattern": ["l", "l", "g"]}},
            "does not divide model.num_layers=2; valid pattern lengths: [1, 2]",
        ),
        ({"layer_plan": {"layers": ["l"]}}, "model.num_layers=2 needs 2"),
        (
            {"layer_plan": {"pattern": ["l"], "types": {"l": {"position_kwargs": {"bse": 1.0}}}}},
            "unknown position_kwargs key(s) 'bse' for position 'rope' "
            "(model.layer_plan.types.l.position_kwargs.bse); valid keys: base",
        ),
        (
            {"layer_plan": {"pattern": ["l"], "types": {"l": {"size": 3}}}},
            "has no setting 'size'; valid: window, position, position_kwargs",
        ),
        ({"layer_plan": {"pattern": ["l"], "types": {"g": {}}}}, "'g' is used by no layer"),
        # a falsy value is not "no settings": only null is (YAML's ``types: {l: }``)
        ({"layer_plan": {"pattern": ["l"], "types": False}}, "types must be a mapping"),
        ({"layer_plan": {"pattern": ["l"], "types": []}}, "types must be a mapping"),
        ({"layer_plan": {"pattern": ["l"], "types": {"l": False}}}, "types.l must be a mapping"),
        ({"layer_plan": {"pattern": ["l"], "types": {"l": 0}}}, "types.l must be a mapping"),
        ({"layer_plan": {"pattern": ["l"], "types": {"l": ""}}}, "types.l must be a mapping"),
        ({"layer_plan": {"pattern": ["l"], "layers": ["l", "l"]}}, "exactly one of pattern"),
        ({"layer_plan": {"pattern": "l"}}, "must be a non-empty list of layer type names"),
        ({"layer_plan": {"pattern": ["a/b"]}}, "letters, digits, underscores"),
        ({"layer_plan": {"repeat": 2}}, "has no key(s) 'repeat'; valid: pattern, layers, types"),
        (
            {"layer_plan": {"pattern": ["l"], "types": {"l": {"position": "rotary"}}}},
            "unknown position 'rotary'",
        ),
        (
            {
                "attention": "linear",
                "layer_plan": {"pattern": ["l"], "types": {"l": {"window": 8}}},
            },
            "attention 'linear' cannot restrict to; valid attention kernels with windows: softmax",
        ),
        (
            {
                "attention": "linear",
                "layer_plan": {"pattern": ["a", "b"], "types": {"b": {"position": "alibi"}}},
            },
            "position 'alibi' (layer type 'b') adds a score bias",
        ),
        (
            {
                "position": "learned",
                "layer_plan": {"pattern": ["a", "b"], "types": {"b": {"position": "nope"}}},
            },
            "position 'learned' adds positions to the embeddings once",
        ),
        (
            {"layer_plan": {"pattern": ["a", "b"], "types": {"b": {"position": "sinusoidal"}}}},
            "position 'sinusoidal' adds positions to the embeddings once",
        ),
        (
            {
                "position": "t5",
                "layer_plan": {
                    "pattern": ["a", "b"],
                    "types": {"a": {"position": "nope"}, "b": {"position": "rope"}},
                },
            },
            "no layer of model.layer_plan uses model.position 't5'; set model.position to a "
            "scheme a layer uses: nope, rope",
        ),
        (
            {
                "position": "t5",
                "layer_plan": {
                    "pattern": ["a", "b"],
                    "types": {
                        "a": {"position_kwargs": {"num_buckets": 8}},
                        "b": {"position_kwargs": {"num_buckets": 16}},
                    },
                },
            },
            "parameters would then train nothing",
        ),
    ],
)
def test_plans_without_a_meaning_are_refused_in_one_line(kwargs, expected):
    position = kwargs.pop("position", "rope")
    with pytest.raises(ConfigError) as error:
        small_model(position, **kwargs)
    message = str(error.value)
    assert "\n" not in message and expected in message, message


#: (a layer type's settings, in a plan of that type and a global one, what the message
#: must say: the dotted path the user wrote, the wrong value and the valid ones)
TYPE_SETTING_ERRORS = {
    "window": ({"window": 0}, "model.layer_plan.types.l.window must be null or an integer in 1.."),
    "position": (
        {"position": "rotary"},
        "model.layer_plan.types.l.position: unknown position 'rotary'; valid choices: alibi,",
    ),
    "position_kwargs type": (
        {"position_kwargs": {"base": "x"}},
        "model.layer_plan.types.l.position_kwargs.base='x' for position 'rope' has the wrong "
        "type: expected float",
    ),
    "position_kwargs range": (
        {"position_kwargs": {"base": 0.5}},
        "model.layer_plan.types.l.position_kwargs.base: rope base must be > 1 and finite, got 0.5",
    ),
    "position_kwargs of another scheme": (
        {"position": "t5", "position_kwargs": {"num_buckets": 3}},
        "model.layer_plan.types.l.position_kwargs.num_buckets: t5 num_buckets must be an even "
        "integer",
    ),
    "position_kwargs key": (
        {"position_kwargs": {"bse": 2.0}},
        "(model.layer_plan.types.l.position_kwargs.bse); valid keys: base",
    ),
    "attention": (
        {"attention": "flash"},
        "model.layer_plan.types.l.attention: unknown attention 'flash'; valid choices: linear, "
        "softmax",
    ),
    "attention_kwargs type": (
        {"attention_kwargs": {"backend": "fast"}},
        "model.layer_plan.types.l.attention_kwargs.backend='fast' for attention 'softmax' has "
        "the wrong type: expected one of 'auto', 'sdpa', 'flex'",
    ),
    "attention_kwargs range": (
        {"attention_kwargs": {"window_block": 0}},
        "model.layer_plan.types.l.attention_kwargs.window_block: softmax attention window_block "
        "must be a positive integer, got 0",
    ),
    "attention_kwargs key": (
        {"attention_kwargs": {"eps": 1.0}},
        "(model.layer_plan.types.l.attention_kwargs.eps); valid keys: backend",
    ),
}


@pytest.mark.parametrize("alone", [True, False], ids=["alone", "beside a global"])
@pytest.mark.parametrize("case", list(TYPE_SETTING_ERRORS))
def test_a_bad_layer_type_setting_names_the_path_written(case, alone):
    settings, expected = TYPE_SETTING_ERRORS[case]
    if alone and settings.get("position") == "t5":
        pytest.skip("no layer would use model.position (its own rule)")
    pattern = ["l"] if alone else ["l", "g"]
    plan = {"pattern": pattern, "types": {"l": settings}}
    with pytest.raises(ConfigError) as error:
        EncoderConfig(num_layers=2, layer_plan=plan)
    message = str(error.value)
    assert "\n" not in message and expected in message, message


@pytest.mark.parametrize(
    "model,type_settings,expected",
    [
        (
            {"position_kwargs": {"base": 0.5}},
            {"rotary_fraction": 0.5},
            "model.position_kwargs.base: rope base must be > 1",
        ),
        ({"position_kwargs": {"bse": 2.0}}, {"base": 100.0}, "(model.position_kwargs.bse)"),
    ],
)
def test_the_models_own_bad_option_is_not_blamed_on_a_layer_type(model, type_settings, expected):
    """A type lays its options over the model's: a bad one of the model's is the model's."""
    plan = {"pattern": ["l"], "types": {"l": {"position_kwargs": type_settings}}}
    with pytest.raises(ConfigError) as error:
        EncoderConfig(num_layers=2, layer_plan=plan, **model)
    message = str(error.value)
    assert expected in message and "layer_plan" not in message, message


@pytest.mark.trainer  # the CLI's parser reads the Trainer's signature
@pytest.mark.parametrize(
    "typed,expected",
    [
        (  # in a --config file: the same message as from the Python API
            [],
            "error: model.layer_plan.types.local.position_kwargs.base: rope base must be > 1",
        ),
        (  # a dotted option into a type: jsonargparse makes it one type named 'local.window'
            ["--model.layer_plan.types.local.window", "8"],
            "error: model.layer_plan.types.local.window cannot be set on its own",
        ),
    ],
)
def test_a_bad_layer_type_setting_on_the_command_line_is_one_line(
    typed, expected, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    plan = "{pattern: [global, local], types: {local: {window: 8, position_kwargs: {base: 0.5}}}}"
    (tmp_path / "plan.yaml").write_text(f"model:\n  num_layers: 2\n  layer_plan: {plan}\n")
    argv = ["fit", "--config", str(CONFIGS / "rope.yaml"), "--config", "plan.yaml", *typed]
    line = one_error_line([*argv, "--trainer.fast_dev_run", "true"], capsys)
    assert line.startswith(expected), line
    if typed:
        assert "'8'" in line and "--model.layer_plan '{" in line, line
        assert "the layers' types: global, local" in line, line
    assert list(tmp_path.iterdir()) == [tmp_path / "plan.yaml"]


@pytest.mark.parametrize(
    "options,path",
    [
        ({"base": 0.5}, "model.position_kwargs.base: "),
        ({"base": 0.5, "rotary_fraction": 0.5}, "model.position_kwargs.base: "),
    ],
)
@pytest.mark.parametrize(
    "plan", [None, {"pattern": ["global", "local"], "types": {"local": {"window": 8}}}]
)
def test_a_schemes_own_range_error_names_the_models_option(options, path, plan):
    """The scheme's own words (``rope base must be > 1``) are led by where the user wrote the
    option it refused (``ConfigError.option``), one option given or several; with or
    without a plan whose types take the model's options."""
    with pytest.raises(ConfigError) as error:
        EncoderConfig(num_layers=2, position="rope", position_kwargs=options, layer_plan=plan)
    message = str(error.value)
    assert message.startswith(path + "rope base must be > 1"), message
    assert "layer_plan" not in message and "\n" not in message, message


@pytest.mark.parametrize(
    "options,expected",
    [
        (
            {"base": 0.5, "rotary_fraction": 0.5},
            "model.layer_plan.types.local.position_kwargs.base: rope base must be > 1",
        ),
        (
            {"base": 100.0, "scaling": {"type": "linear", "factor": 0.5}},
            "model.layer_plan.types.local.position_kwargs.scaling.factor: rope scaling factor "
            "must be",
        ),
    ],
)
def test_a_layer_types_option_the_scheme_refuses_is_named_among_several(options, expected):
    """A type that writes several options: the line is led by the one refused, not by the
    type as a whole."""
    plan = {"pattern": ["global", "local"], "types": {"local": {"position_kwargs": options}}}
    with pytest.raises(ConfigError) as error:
        EncoderConfig(num_layers=2, position="rope", layer_plan=plan)
    message = str(error.value)
    assert message.startswith(expected) and "\n" not in message, message


def test_a_layer_types_option_refused_names_it_even_where_the_model_wrote_others():
    """The model writes one option, the type lays another over it: the type's is named."""
    plan = {"pattern": ["global", "local"], "types": {"local": {"position_kwargs": {"base": 0.5}}}}
    with pytest.raises(ConfigError) as error:
        EncoderConfig(
            num_layers=2, position="rope", position_kwargs={"rotary_fraction": 0.5}, layer_plan=plan
        )
    assert str(error.value).startswith(
        "model.layer_plan.types.local.position_kwargs.base: rope base must be > 1"
    ), error.value
