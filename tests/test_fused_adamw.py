"""AdamW runs fused only where Lightning can still clip its gradients."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from lightning.pytorch.plugins.precision import MixedPrecision
from model_factory import small_model

from roformer_lit.training.lifecycle import adamw, fuses

ON_GPU = [SimpleNamespace(is_cuda=True)] * 3


def test_lightning_refuses_to_clip_a_fused_optimisers_gradients_in_bf16():
    """Why :func:`fuses` looks at clipping: Lightning's bf16-mixed plugin refuses to clip
    the gradients of a fused AdamW (fused AdamW runs on a CPU too since torch 2.4)."""
    model = small_model("nope", "softmax", num_layers=1)
    fused = torch.optim.AdamW(model.parameters(), fused=True)
    plain = adamw(model, 1e-3, 0.01, (0.9, 0.999), clips_gradients=True)
    plugin = MixedPrecision("bf16-mixed", "cpu")
    with pytest.raises(RuntimeError, match="does not allow for gradient clipping"):
        plugin.clip_gradients(fused, 1.0)
    plugin.clip_gradients(plain, 1.0)  # the optimiser adamw builds when clipping: accepted


@pytest.mark.parametrize(
    ("parameters", "clips", "fused"),
    [
        (ON_GPU, False, True),
        (ON_GPU, True, False),  # configs/size/base.yaml: gradient_clip_val 1.0, bf16-mixed
        ([*ON_GPU, SimpleNamespace(is_cuda=False)], False, False),
        ([], False, False),
    ],
)
def test_adamw_fuses_only_on_the_gpu_without_clipping(parameters, clips, fused):
    assert fuses(parameters, clips) is fused
