"""The registry of attention kernels: short name -> class.

A user's kernel is found by import path (``my_pkg.kernels:MyKernel``) or by an installed
distribution's entry point in the group ``roformer_lit.kernels``
(:class:`~roformer_lit.registry.Registry`).
"""

from roformer_lit.attention.base import AttentionKernel
from roformer_lit.attention.linear import LinearAttention
from roformer_lit.attention.softmax import SoftmaxAttention
from roformer_lit.registry import Registry, subclass_of

ATTENTION_KERNELS: Registry[type[AttentionKernel]] = Registry(
    "attention",
    "subclass of roformer_lit.attention.base.AttentionKernel",
    subclass_of(AttentionKernel),
    {
        "softmax": SoftmaxAttention,
        "linear": LinearAttention,
    },
    group="roformer_lit.kernels",
)

__all__ = ["ATTENTION_KERNELS", "AttentionKernel"]
