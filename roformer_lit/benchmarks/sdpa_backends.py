"""Which ``scaled_dot_product_attention`` backend a training step actually takes.

``F.scaled_dot_product_attention`` dispatches at run time to one of several ATen kernels
(flash, memory-efficient, cuDNN, the CPU flash kernel, or the unfused math path) and says
nothing about its choice. This module runs one forward + backward under
``torch.profiler`` and reads the choice off the ATen op names that were recorded.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.profiler import ProfilerActivity, profile

#: ATen op (forward) -> backend name; the backward op is the same name + ``_backward``.
SDPA_BACKEND_OPS = {
    "aten::_scaled_dot_product_flash_attention": "flash",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash (CPU)",
    "aten::_scaled_dot_product_efficient_attention": "memory-efficient",
    "aten::_scaled_dot_product_cudnn_attention": "cuDNN",
    "aten::_scaled_dot_product_fused_attention_overrideable": "fused (overrideable)",
    "aten::_scaled_dot_product_attention_math": "math (unfused)",
}

#: The backends that never materialise the ``[B, h, L, L]`` score matrix.
FUSED_BACKENDS = frozenset(SDPA_BACKEND_OPS.values()) - {"math (unfused)"}


def backends_taken(step: Callable[[], torch.Tensor]) -> tuple[set[str], set[str]]:
    """Backends seen in the forward and in the backward of ``step().backward()``.

    ``step`` computes a scalar loss; both sets are empty when no SDPA call was made (the
    linear kernel). The math path has no backward op of its own (autograd runs through
    its softmax and matmuls), so a math forward is reported for the backward as well.
    """
    with profile(activities=[ProfilerActivity.CPU]) as prof:  # ATen ops, on any device
        step().backward()
    names = {event.key for event in prof.key_averages()}
    forward = {backend for op, backend in SDPA_BACKEND_OPS.items() if op in names}
    backward = {backend for op, backend in SDPA_BACKEND_OPS.items() if f"{op}_backward" in names}
    if "math (unfused)" in forward:
        backward.add("math (unfused)")
    return forward, backward


def describe(backends: set[str]) -> str:
    """``"flash"``, ``"flash, math (unfused)"``, or ``"none (no SDPA)"``."""
    return ", ".join(sorted(backends)) or "none (no SDPA)"
