"""The SDPA backend each registered pair takes, read off the profiler (CPU float32).

Schemes without a score bias must reach a fused kernel (no ``[B, h, L, L]`` scores), in
the forward and in the backward, on packed batches and with a boolean padding mask.
"""

from __future__ import annotations

import pytest
import torch
from model_factory import VALID_PAIRS, random_ids, small_model

from roformer_lit import ATTENTION_KERNELS, POSITION_SCHEMES
from roformer_lit.benchmarks.sdpa_backends import FUSED_BACKENDS, backends_taken

BIAS_FREE = [
    (p, a) for p, a in VALID_PAIRS if not POSITION_SCHEMES[p].needs_score_bias and a == "softmax"
]


def _training_loss(position: str, attention: str, padded: bool):
    # attention dropout 0, as in the configs: on CPU, SDPA has no fused kernel with dropout
    model = small_model(position, attention, attention_dropout=0.0).train()
    ids = random_ids(2, 24)
    mask = None
    if padded:
        mask = torch.ones_like(ids, dtype=torch.bool)
        mask[1, 17:] = False
    return lambda: model.mlm_loss(ids, ids.clone(), attention_mask=mask)


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("position,attention", BIAS_FREE)
def test_bias_free_schemes_take_a_fused_sdpa_kernel(position, attention, padded):
    forward, backward = backends_taken(_training_loss(position, attention, padded))
    assert forward and forward <= FUSED_BACKENDS, forward
    assert backward and backward <= FUSED_BACKENDS, backward


@pytest.mark.parametrize("position,attention", VALID_PAIRS)
def test_every_pair_reports_the_backend_of_its_kernel(position, attention):
    forward, backward = backends_taken(_training_loss(position, attention, padded=False))
    if ATTENTION_KERNELS[attention].supports_score_bias:  # softmax: always through SDPA
        assert forward and backward
    else:  # the linear kernel never calls SDPA
        assert not forward and not backward


def test_the_math_path_is_recognised_as_unfused():
    q = torch.randn(1, 2, 8, 4, requires_grad=True)
    bias = torch.randn(1, 2, 8, 8, requires_grad=True)  # a bias with a gradient: math path

    def loss():
        return torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=bias).sum()

    forward, backward = backends_taken(loss)
    assert forward == {"math (unfused)"} and backward == {"math (unfused)"}
