"""The two forms of every scheme's score bias, and the FlexAttention path that uses them.

For every registered scheme that adds a bias: its ``lookup`` (what FlexAttention's
``score_mod`` evaluates) equals its dense bias at every ``(b, h, i, j)``, and a model on the
FlexAttention path gives the SDPA path's logits, padded batches included. On CPU
FlexAttention runs forward-only and unfused; the CUDA training path is in ``test_gpu.py``.
"""

from __future__ import annotations

import pytest
import torch
from model_factory import PAD, random_ids, small_model

from roformer_lit import ATTENTION_KERNELS, POSITION_SCHEMES
from roformer_lit.attention.base import AttentionKernel
from roformer_lit.attention.linear import LinearAttention
from roformer_lit.attention.softmax import BACKENDS, SoftmaxAttention
from roformer_lit.errors import ConfigError
from roformer_lit.registry import option_names
from roformer_lit.score_bias import ScoreBias, dense_from_lookup

BIAS_SCHEMES = [name for name, cls in POSITION_SCHEMES.items() if cls.needs_score_bias]
#: Options that change which tables a scheme builds (shared or per layer, one term or two).
VARIANTS = [(name, {}) for name in BIAS_SCHEMES] + [
    ("deberta", {"c2p": False}),
    ("deberta", {"p2c": False}),
    ("t5", {"per_layer": True}),
    ("fire", {"per_layer": True}),
    ("alibi", {"learnable_slopes": True}),
]
pytestmark = pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")


def captured_biases(model, ids, mask=None) -> list[ScoreBias]:
    """The ScoreBias every layer's kernel received in one forward."""
    seen: list[ScoreBias] = []

    def record(module, args, kwargs):
        if kwargs.get("bias") is not None:
            seen.append(kwargs["bias"])

    handles = [
        m.register_forward_pre_hook(record, with_kwargs=True)
        for m in model.modules()
        if isinstance(m, SoftmaxAttention)
    ]
    try:
        with torch.no_grad():
            model(ids, attention_mask=mask)
    finally:
        for handle in handles:
            handle.remove()
    return seen


def with_pads(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, -5:] = False
    return ids.masked_fill(~mask, PAD), mask


@pytest.mark.parametrize("position,options", VARIANTS, ids=lambda v: str(v))
def test_lookup_equals_the_dense_bias_at_every_entry(position, options):
    model = small_model(position, hidden_size=64, num_heads=4, position_kwargs=options)
    ids = random_ids(2, 21)
    biases = captured_biases(model, ids)
    assert len(biases) == 2  # one per layer
    if biases[0].lookup is None:
        pytest.skip(f"{position} gives no lookup: FlexAttention reads its dense bias")
    for score in biases:
        dense = score.bias.expand(2, 4, 21, 21)
        from_lookup = dense_from_lookup(score.lookup, 2, 4, 21)
        torch.testing.assert_close(from_lookup.to(dense.dtype), dense, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("position,options", VARIANTS, ids=lambda v: str(v))
def test_flex_path_gives_the_sdpa_paths_logits_with_padding(position, options):
    ids, mask = with_pads(random_ids(2, 24))
    logits = {}
    for backend in ("sdpa", "flex"):
        model = small_model(
            position,
            hidden_size=64,
            num_heads=4,
            position_kwargs=options,
            attention_kwargs={"backend": backend},
        )
        with torch.no_grad():
            logits[backend] = model(ids, attention_mask=mask)
    torch.testing.assert_close(logits["flex"][mask], logits["sdpa"][mask], rtol=1e-4, atol=1e-5)


def test_auto_takes_sdpa_on_cpu_and_never_builds_the_dense_bias_on_the_flex_path():
    """``auto`` on CPU keeps SDPA; ``flex`` reads the lookup and leaves ``bias`` unbuilt."""
    built = []

    def build():
        built.append(True)
        return torch.zeros(1, 2, 5, 5)

    q = k = v = torch.randn(1, 2, 5, 16)
    lookup = lambda b, h, i, j: (i - j).abs().float()  # noqa: E731
    SoftmaxAttention(backend="flex")(
        q, k, v, scale=0.25, bias=ScoreBias(build=build, lookup=lookup)
    )
    assert built == []
    SoftmaxAttention()(q, k, v, scale=0.25, bias=ScoreBias(build=build, lookup=lookup))
    assert built == [True]


def test_flex_with_attention_dropout_is_refused_in_one_line():
    model = small_model("alibi", hidden_size=64, num_heads=4, attention_kwargs={"backend": "flex"})
    model.train()
    for module in model.modules():
        if hasattr(module, "attention_dropout"):
            module.attention_dropout = 0.1
    # without gradients: training on the CPU would be refused first (its own test below)
    with pytest.raises(ConfigError, match="no attention dropout"), torch.no_grad():
        model(random_ids(1, 8))


def test_an_unknown_backend_is_refused_naming_the_valid_ones():
    with pytest.raises(ConfigError, match="'auto', 'sdpa', 'flex'"):
        small_model("alibi", attention_kwargs={"backend": "triton"})


class CudaOnlyLinear(LinearAttention):
    """A plugin kernel that declares it trains on CUDA only (not named like any built-in)."""

    training_devices = ("cuda",)


#: (attention, its options) of every kernel that declares devices without the CPU: each
#: registered kernel with each backend it takes, and a plugin's, by import path.
OFF_CPU_KERNELS = [
    (name, options)
    for name in ATTENTION_KERNELS
    for options in [
        {},
        *({"backend": b} for b in BACKENDS if "backend" in option_names(ATTENTION_KERNELS[name])),
    ]
    if "cpu" not in (ATTENTION_KERNELS[name].capabilities(options).training_devices or ("cpu",))
] + [(f"{__name__}:CudaOnlyLinear", {})]


def _off_cpu_model(attention, options):
    position = "alibi" if ATTENTION_KERNELS[attention].capabilities(options).score_bias else "rope"
    return small_model(
        position,
        attention,
        hidden_size=64,
        num_heads=4,
        attention_dropout=0.0,
        attention_kwargs=options,
    ).train()


@pytest.mark.parametrize("attention,options", OFF_CPU_KERNELS, ids=str)
def test_training_a_kernel_off_its_devices_is_refused_before_any_layer_runs(
    attention, options, monkeypatch
):
    """The kernel's declared ``training_devices``, read at the top of ``forward``: one line
    naming the kernel, the device and the kernels that train there; no kernel has run."""
    assert ("softmax", {"backend": "flex"}) in OFF_CPU_KERNELS
    model = _off_cpu_model(attention, options)
    ran = []
    for module in model.modules():
        if isinstance(module, AttentionKernel):
            module.register_forward_pre_hook(lambda *_: ran.append(1))
    ids = random_ids(2, 8)
    with pytest.raises(ConfigError) as error:
        model.mlm_loss(ids, ids.clone())
    message = str(error.value)
    assert "\n" not in message and not ran, message
    devices = "/".join(ATTENTION_KERNELS[attention].capabilities(options).training_devices)
    assert message.startswith(f"attention {attention!r}"), message
    assert f"trains on {devices} only; this model trains on cpu here" in message, message
    assert "valid attention kernels on cpu (with their default options): linear, softmax" in (
        message
    )
    with pytest.raises(ConfigError, match="this model trains on cpu here"):
        model.on_fit_start()  # Lightning's first hook that knows the device


@pytest.mark.parametrize("attention,options", OFF_CPU_KERNELS, ids=str)
def test_evaluating_a_kernel_off_its_training_devices_runs(attention, options):
    model = _off_cpu_model(attention, options)
    ids = random_ids(2, 8)
    with torch.no_grad():
        model(ids)
    model.eval().requires_grad_(False)
    model(ids)  # gradients enabled, but nothing takes them
