"""Model FLOPs of one MLM training step (forward + backward = 3x forward), by matrix product.

Per layer and token: QKV ``2*H*3H``, output ``2*H*H``, FFN ``2*2*H*I``; attention
``2*2*L*H`` (scores and weighted sum; linear attention: ``2*2*d*H``). The last layer's
output projection and FFN and the MLM head (``2*H*H + 2*H*V``) run at the ``M`` masked
tokens only, as ``MaskedLM.mlm_loss`` does. Element-wise work is not counted.
"""

from __future__ import annotations

import torch

from roformer_lit.module import MaskedLM

#: Dense bf16 tensor-core peaks from the vendors' data sheets, in TFLOP/s, matched
#: against ``torch.cuda.get_device_name`` in this order (more specific names first).
NOMINAL_BF16_TFLOPS = (
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.0),
    ("H100", 989.4),  # SXM ("NVIDIA H100 80GB HBM3")
    ("H200", 989.4),
    ("GH200", 989.4),
    ("A100", 312.0),
    ("L40S", 362.1),
    ("L4", 121.0),
    ("A10G", 70.0),
    ("A10", 125.0),
    ("RTX 4090", 165.2),
)


def gemm_shapes(
    model: MaskedLM, batch: int, length: int, masked: int
) -> list[tuple[int, int, int]]:
    """``(m, k, n)`` of every weight matrix product in one forward pass."""
    hp = model.config
    tokens = batch * length
    h, i, v = hp.hidden_size, hp.intermediate_size, hp.vocab_size

    def layer(rows: int) -> list[tuple[int, int, int]]:
        return [(tokens, h, 3 * h), (rows, h, h), (rows, h, i), (rows, i, h)]

    head = [(masked, h, h), (masked, h, v)]
    return layer(tokens) * (hp.num_layers - 1) + layer(masked) + head


def training_step_flops(model: MaskedLM, batch: int, length: int, masked: int) -> float:
    """FLOPs of forward + backward (3x the forward's matrix products)."""
    hp = model.config
    weights = sum(2 * m * k * n for m, k, n in gemm_shapes(model, batch, length, masked))
    head_size = hp.hidden_size // hp.num_heads
    kernel = model.encoder.layers[0].attention.kernel
    span = length if kernel.supports_score_bias else head_size  # quadratic vs linear kernels
    attention = 2 * 2 * batch * length * span * hp.hidden_size * hp.num_layers
    return 3.0 * (weights + attention)


def nominal_peak_flops(device: torch.device, override_tflops: float | None = None) -> float | None:
    """FLOP/s the MFU column divides by: ``override_tflops``, else the GPU's nominal bf16
    peak from :data:`NOMINAL_BF16_TFLOPS`, else None (CPUs, unknown GPUs)."""
    if override_tflops is not None:
        return override_tflops * 1e12
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    for key, tflops in NOMINAL_BF16_TFLOPS:
        if key in name:
            return tflops * 1e12
    return None
