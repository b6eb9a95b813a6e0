"""The registry of attention kernels: short name -> class."""

from roformer_lit.attention.base import AttentionKernel
from roformer_lit.attention.linear import LinearAttention
from roformer_lit.attention.softmax import SoftmaxAttention

ATTENTION_KERNELS: dict[str, type[AttentionKernel]] = {
    "softmax": SoftmaxAttention,
    "linear": LinearAttention,
}

__all__ = ["ATTENTION_KERNELS", "AttentionKernel"]
