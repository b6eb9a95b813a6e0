"""Model FLOPs of one MLM training step (forward + backward = 3x forward), by matrix product.

Per layer and token: QKV ``2*H*3H``, output ``2*H*H``, FFN ``2*2*H*I``; attention
``2*2*L*H`` (scores and weighted sum; linear attention: ``2*2*d*H``); the MLM head runs at
the ``M`` masked tokens only: ``2*H*H + 2*H*V``. Element-wise work is not counted.
"""

from __future__ import annotations

from roformer_lit.module import MaskedLM


def gemm_shapes(
    model: MaskedLM, batch: int, length: int, masked: int
) -> list[tuple[int, int, int]]:
    """``(m, k, n)`` of every weight matrix product in one forward pass."""
    hp = model.hparams
    tokens = batch * length
    h, i, v = hp.hidden_size, hp.intermediate_size, hp.vocab_size
    per_layer = [(tokens, h, 3 * h), (tokens, h, h), (tokens, h, i), (tokens, i, h)]
    return per_layer * hp.num_layers + [(masked, h, h), (masked, h, v)]


def training_step_flops(model: MaskedLM, batch: int, length: int, masked: int) -> float:
    """FLOPs of forward + backward (3x the forward's matrix products)."""
    hp = model.hparams
    weights = sum(2 * m * k * n for m, k, n in gemm_shapes(model, batch, length, masked))
    head_size = hp.hidden_size // hp.num_heads
    kernel = model.encoder.layers[0].attention.kernel
    span = length if kernel.supports_score_bias else head_size  # quadratic vs linear kernels
    attention = 2 * 2 * batch * length * span * hp.hidden_size * hp.num_layers
    return 3.0 * (weights + attention)
