"""Multi-head self-attention: fused QKV projection, the scheme's hooks, a kernel, output.

    q, k, v = split(x W_qkv + b_qkv);  out = kernel(q, k, v, scale, bias, mask, rotate) W_o + b_o

The block is the same for every scheme: it asks the layer's position hooks for a score
bias and a rotation and hands both to the kernel, with the layer's window (its layer
plan; None: global). ``bias=False`` drops ``b_qkv`` and ``b_o``. Given ``rows`` (``[B, L]`` bool), the
output projection runs at those rows only and the result is ``[N, H]``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from torch import Tensor, nn

from roformer_lit.attention.base import AttentionKernel
from roformer_lit.positions.base import LayerPosition, QKVWeights, default_scale


class SelfAttention(nn.Module):
    """Self-attention over ``[B, L, H]`` with ``num_heads`` heads."""

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        kernel: AttentionKernel,
        attention_dropout: float,
        *,
        bias: bool = True,
        window: int | None = None,
    ) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.hidden_size = hidden_size
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size, bias=bias)
        self.out = nn.Linear(hidden_size, hidden_size, bias=bias)
        self.kernel = kernel
        self.attention_dropout = attention_dropout
        self.window = window

    def forward(
        self,
        x: Tensor,
        ctx: Any,
        key_padding_mask: Tensor | None,
        position: LayerPosition,
        rows: Tensor | None = None,
        segment_ids: Tensor | None = None,
    ) -> Tensor:
        batch, length, _ = x.shape
        qkv = self.qkv(x).view(batch, length, 3, self.num_heads, self.head_size)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each [B, h, L, d]
        weights = QKVWeights(self.qkv.weight, self.qkv.bias, self.num_heads)
        score = position.score(q, k, ctx, weights)
        out = self.kernel(
            q,
            k,
            v,
            scale=default_scale(self.head_size) if score is None else score.scale,
            bias=score,
            key_padding_mask=key_padding_mask,
            rotate=partial(position.rotate, ctx=ctx) if position.rotates else None,
            dropout_p=self.attention_dropout if self.training else 0.0,
            segment_ids=segment_ids,
            window=self.window,
        )
        out = out.transpose(1, 2)  # [B, L, h, d]
        if rows is not None:
            return self.out(out[rows].flatten(1))
        return self.out(out.reshape(batch, length, self.hidden_size))
