"""Softmax attention through ``torch.nn.functional.scaled_dot_product_attention``.

    out = softmax(rot(q) rot(k)^T * scale + bias + mask) v

Without a bias the padding mask stays boolean (or absent for packed batches) so SDPA
can pick its fastest backend (flash / memory-efficient); with a bias, the padding mask
is merged into the float bias as ``-inf``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from roformer_lit.attention.base import AttentionKernel, Rotation


class SoftmaxAttention(AttentionKernel):
    """Full softmax attention; takes any additive score bias."""

    supports_score_bias = True

    def forward(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        *,
        scale: float,
        bias: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        rotate: Rotation | None = None,
        dropout_p: float = 0.0,
    ) -> Tensor:
        if rotate is not None:
            q, k = rotate(q), rotate(k)
        mask = None
        if key_padding_mask is not None:
            mask = key_padding_mask[:, None, None, :]
        if bias is not None:
            mask = bias if mask is None else bias.masked_fill(~mask, -torch.inf)
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale
        )
