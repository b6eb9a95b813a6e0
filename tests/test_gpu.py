"""GPU-only checks (skipped without CUDA): bf16 training and the flash SDPA path."""

from __future__ import annotations

import pytest
import torch
from model_factory import VALID_PAIRS, random_ids, small_model

from roformer_lit import POSITION_SCHEMES
from roformer_lit.attention.softmax import SoftmaxAttention

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


@pytest.mark.parametrize("position,attention", VALID_PAIRS)
def test_bf16_training_step_is_finite_and_close_to_float32(position, attention):
    model = small_model(position, attention, hidden_size=128, num_heads=2).cuda().train()
    ids = random_ids(4, 64).cuda()
    labels = torch.where(torch.rand(4, 64, device="cuda") < 0.15, ids, -100)
    torch.manual_seed(0)
    reference = model.eval().mlm_loss(ids, labels)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model.mlm_loss(ids, labels)
    loss.backward()
    assert torch.isfinite(loss)
    assert abs(loss.item() - reference.item()) < 0.05 * reference.item()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


@pytest.mark.parametrize(
    "position", [p for p, c in POSITION_SCHEMES.items() if not c.needs_score_bias]
)
def test_flash_backend_is_usable_without_a_score_bias(position):
    """With only the flash kernel allowed, a packed bf16 batch must still run."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    model = small_model(position, "softmax", hidden_size=128, num_heads=2, max_positions=128)
    model = model.cuda().train()
    ids = random_ids(2, 128).cuda()
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]), torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model.mlm_loss(ids, ids.clone())
        loss.backward()
    assert torch.isfinite(loss)


@pytest.mark.parametrize(
    "position", [p for p, c in POSITION_SCHEMES.items() if not c.needs_score_bias]
)
def test_profiler_shows_a_flash_kernel_for_bf16_training_without_a_score_bias(position):
    """Left to choose, SDPA must pick a flash-attention kernel (FlashAttention-2 or cuDNN's)."""
    from roformer_lit.benchmarks.sdpa_backends import backends_taken

    model = small_model(position, "softmax", hidden_size=256, num_heads=4, max_positions=256)
    model = model.cuda().train()
    ids = random_ids(4, 256).cuda()
    labels = torch.where(torch.rand(4, 256, device="cuda") < 0.15, ids, -100)

    def loss():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return model.mlm_loss(ids, labels)

    forward, backward = backends_taken(loss)
    assert forward and forward <= {"flash", "cuDNN"}, forward
    assert backward and backward <= {"flash", "cuDNN"}, backward


BIAS_SCHEMES = [p for p, c in POSITION_SCHEMES.items() if c.needs_score_bias]
#: The schemes whose default options make ``backend: auto`` take FlexAttention on CUDA.
AUTO_FLEX = {"t5", "kerple"}


def _flex_and_sdpa_grads(position: str, autocast: bool):
    ids = random_ids(3, 200).cuda()
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, -37:] = False  # padding: the flex path masks keys in score_mod
    labels = torch.where(torch.rand(3, 200, device="cuda") < 0.15, ids, -100)
    results = {}
    for backend in ("sdpa", "flex"):
        model = small_model(
            position,
            hidden_size=128,
            num_heads=2,
            max_positions=256,
            attention_dropout=0.0,  # FlexAttention has none
            attention_kwargs={"backend": backend},
        )
        model = model.cuda().train()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = model.mlm_loss(ids, labels, attention_mask=mask)
        loss.backward()
        grads = {n: p.grad.float() for n, p in model.named_parameters() if p.grad is not None}
        results[backend] = (loss.item(), grads)
    return results


def _relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """``|a - b| / |b|``; gradients that are zero in exact arithmetic (a constant added to
    every score of a head: softmax cancels it) compare as absolute rounding noise."""
    return ((a - b).norm() / b.norm().clamp_min(1e-6)).item()


def _assert_same_step(got: tuple, want: tuple, autocast: bool) -> None:
    """Loss and every gradient of two training steps agree: float32 within TF32 rounding,
    bf16 within bf16 rounding; every gradient finite."""
    (loss_got, grads_got), (loss_want, grads_want) = got, want
    tolerance = 5e-2 if autocast else 1e-2
    assert abs(loss_got - loss_want) <= tolerance * abs(loss_want)
    assert grads_got.keys() == grads_want.keys()
    for name, grad in grads_want.items():
        assert torch.isfinite(grads_got[name]).all(), name
        assert _relative_error(grads_got[name], grad) < tolerance, name


@pytest.mark.parametrize("position", BIAS_SCHEMES)
@pytest.mark.parametrize("autocast", [False, True], ids=["float32", "bf16"])
def test_flex_training_step_equals_the_sdpa_path(position, autocast):
    """Loss and every gradient (the bias tables' too) of the compiled FlexAttention path
    equal the eager SDPA path: float32 within TF32 rounding, bf16 within bf16 rounding."""
    results = _flex_and_sdpa_grads(position, autocast)
    (loss_sdpa, grads_sdpa), (loss_flex, grads_flex) = results["sdpa"], results["flex"]
    _assert_same_step((loss_flex, grads_flex), (loss_sdpa, grads_sdpa), autocast)


@pytest.mark.parametrize("position", BIAS_SCHEMES)
def test_auto_backend_takes_flex_on_cuda_for_long_inputs_when_the_scheme_gives_a_lookup(
    position, monkeypatch
):
    import roformer_lit.attention.softmax as softmax

    calls = []
    real = softmax.flex_softmax
    monkeypatch.setattr(softmax, "flex_softmax", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    long = softmax.FUSED_FROM_LENGTH
    model = small_model(
        position, hidden_size=128, num_heads=2, attention_dropout=0.0, max_positions=long
    )
    model = model.cuda().train()
    seen = []
    for module in model.modules():
        if isinstance(module, softmax.SoftmaxAttention):
            module.register_forward_pre_hook(
                lambda m, a, kw: seen.append(kw["bias"]), with_kwargs=True
            )
    for length in (64, long):
        ids = random_ids(1, length).cuda()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            model.mlm_loss(ids, ids.clone()).backward()
    # the policy: learned per-distance tables only (README's GPU table); two layers, long only
    expected = 2 if position in AUTO_FLEX else 0
    assert len(calls) == expected


#: ModernBERT's 2:1 layer plan with a window narrower than the rows (so the band matters).
WINDOW_PLAN = {"pattern": ["local", "local", "global"], "types": {"local": {"window": 48}}}


def _windowed_step(position: str, backend: str, autocast: bool):
    """Loss, gradients and the layers' score biases of one training step of a 2:1 plan."""
    generator = torch.Generator().manual_seed(2)
    ids = random_ids(3, 200).cuda()
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, -37:] = False
    labels = torch.where(torch.rand(3, 200, generator=generator) < 0.15, ids.cpu(), -100).cuda()
    model = small_model(
        position,
        hidden_size=128,
        num_heads=2,
        num_layers=3,
        max_positions=256,
        dropout=0.0,
        attention_dropout=0.0,
        attention_kwargs={"backend": backend},
        layer_plan=WINDOW_PLAN,
    )
    model = model.cuda().train()
    biases = []
    for module in model.modules():
        if isinstance(module, SoftmaxAttention):
            module.register_forward_pre_hook(
                lambda m, a, kw: biases.append(kw["bias"]), with_kwargs=True
            )
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
        loss = model.mlm_loss(ids, labels, attention_mask=mask)
    loss.backward()
    grads = {n: p.grad.float() for n, p in model.named_parameters() if p.grad is not None}
    return loss.item(), grads, biases


@pytest.mark.parametrize("position", list(POSITION_SCHEMES))
@pytest.mark.parametrize("autocast", [False, True], ids=["float32", "bf16"])
def test_windowed_flex_training_step_equals_the_banded_sdpa_path(position, autocast, monkeypatch):
    """A 2:1 local/global plan trains on CUDA through FlexAttention's block mask (the bias
    in its ``score_mod``) wherever the layer's bias is absent or has a lookup; loss and every
    gradient equal the banded SDPA computation (backend ``sdpa``), itself checked against a
    float64 oracle on the CPU. A dense-only bias keeps the banded computation."""
    import roformer_lit.attention.flex as flex

    masks = []
    real = flex.window_block_mask
    monkeypatch.setattr(
        flex, "window_block_mask", lambda *a, **kw: masks.append(a[1]) or real(*a, **kw)
    )
    loss_banded, grads_banded, _ = _windowed_step(position, "sdpa", autocast)
    assert masks == []
    loss_flex, grads_flex, biases = _windowed_step(position, "auto", autocast)
    local = biases[:2]  # layers 0 and 1 are local, half width 48 // 2
    dense_only = any(b is not None and b.adds_bias and b.lookup is None for b in local)
    assert masks == ([] if dense_only else [24, 24])
    _assert_same_step((loss_flex, grads_flex), (loss_banded, grads_banded), autocast)
