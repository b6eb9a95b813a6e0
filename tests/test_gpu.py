"""GPU-only checks (skipped without CUDA): bf16 training and the flash SDPA path."""

from __future__ import annotations

import pytest
import torch
from model_factory import VALID_PAIRS, random_ids, small_model

from roformer_lit import POSITION_SCHEMES

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

    model = small_model(position, "softmax", hidden_size=128, num_heads=2).cuda().train()
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

    model = small_model(position, "softmax", hidden_size=256, num_heads=4).cuda().train()
    ids = random_ids(4, 256).cuda()
    labels = torch.where(torch.rand(4, 256, device="cuda") < 0.15, ids, -100)

    def loss():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return model.mlm_loss(ids, labels)

    forward, backward = backends_taken(loss)
    assert forward and forward <= {"flash", "cuDNN"}, forward
    assert backward and backward <= {"flash", "cuDNN"}, backward
