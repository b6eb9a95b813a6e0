"""Model FLOPs of one MLM training step (forward + backward = 3x forward), read off the
built model: every product it runs with a weight matrix, and attention at the keys each
layer reads.

- Weights: every ``nn.Linear`` of every encoder layer (whatever its block: a GLU's
  ``[2I, H]`` input projection counts as such), ``2 * rows * in * out`` each; the last
  layer's output projection and FFN and the MLM head (its dense layer and the tied
  ``[V, H]`` decoder) run at the ``M`` masked tokens only, as ``MaskedLM.mlm_loss`` does,
  every other product at all ``B * L`` tokens.
- Attention: ``2 * 2 * h * d * pairs`` per layer (scores and weighted sum), ``pairs``
  the ``(query, key)`` entries the layer's kernel computes over the batch at its window
  (``kernel.score_pairs``: ``L^2`` per row globally, the band read block by block in a
  windowed layer; ``kernel.score_pairs_read``: ``sum_d n_d^2`` where the kernel's last
  forward at this shape attended packed documents one at a time, ``L n_b`` where it
  attended rows padded at their end against their ``n_b`` real keys, so a step's count is
  read after its forward); a kernel without ``score_pairs`` (linear attention) costs
  ``2 * 2 * d * H`` per token.

Not counted: element-wise work, and a position scheme's own products (XL's relative
projection and shifted product, DeBERTa's c2p/p2c tables, FIRE's MLP), which are not
in its attention layers' weights.
"""

from __future__ import annotations

import torch
from torch import nn

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
    """``(m, k, n)`` of every weight matrix product in one forward pass, from the model's
    own ``nn.Linear`` modules (and the tied decoder)."""
    tokens = batch * length
    layers = list(model.encoder.layers)
    shapes = []
    for index, layer in enumerate(layers):
        for module in layer.modules():
            if isinstance(module, nn.Linear):
                # the last layer needs keys and values at every token, the rest at the masked
                at_all = index < len(layers) - 1 or module is layer.attention.qkv
                shapes.append(
                    (tokens if at_all else masked, module.in_features, module.out_features)
                )
    for module in model.head.modules():
        if isinstance(module, nn.Linear):
            shapes.append((masked, module.in_features, module.out_features))
    vocab, hidden = model.encoder.word_embeddings.weight.shape
    return [*shapes, (masked, hidden, vocab)]


def attention_flops(model: MaskedLM, batch: int, length: int) -> int:
    """Forward FLOPs of every layer's attention (scores and weighted sum) at the score
    entries its kernel computes: ``score_pairs_read`` (packed documents attended one at a
    time, or rows padded at their end against their real keys, in the kernel's last forward
    at this shape), else ``score_pairs`` per row."""
    total = 0
    for layer in model.encoder.layers:
        attention = layer.attention
        width = attention.num_heads * attention.head_size
        kernel, window = attention.kernel, attention.window
        if hasattr(kernel, "score_pairs_read"):
            pairs = kernel.score_pairs_read(batch, length, window)
        elif hasattr(kernel, "score_pairs"):
            pairs = batch * kernel.score_pairs(length, window)
        else:  # linear attention: d x d state per head
            total += 2 * 2 * batch * length * attention.head_size * width
            continue
        total += 2 * 2 * pairs * width
    return total


def training_step_flops(model: MaskedLM, batch: int, length: int, masked: int) -> float:
    """FLOPs of forward + backward (3x the forward's matrix products)."""
    weights = sum(2 * m * k * n for m, k, n in gemm_shapes(model, batch, length, masked))
    return 3.0 * (weights + attention_flops(model, batch, length))


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
