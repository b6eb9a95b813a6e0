"""Transformer-XL relative attention (Dai et al. 2019), made bidirectional for an encoder.

    A_ij = [(q_i + u) . k_j  +  (q_i + v) . (W_r R_{i-j})] / sqrt(d)

``R_p = [sin(p * inv_freq), cos(p * inv_freq)]`` (concatenated halves) is a fixed sinusoid of
the relative distance ``p = i - j`` over all ``2L - 1`` distances ``-(L-1) .. L-1``; ``W_r``
is a learned projection, ``u`` and ``v`` learned per-head biases (per layer, or shared by
all layers). The position term is computed in blocks of ``n`` query rows: rows
``[i0, i0 + n)`` meet only the distances ``i0 - (L-1) .. i0 + n - 1``, so each block is one
``[B, h, n, n + L - 1]`` product ``(q + v) @ (W_r R)^T`` gathered into ``[n, L]`` with the
block-local index ``r - j + L - 1`` (the same for every block). Compared with one
``[B, h, L, 2L - 1]`` product this does ``(L + n) / 2L`` of the work and keeps the
transient ``n / L`` the size; no ``[L, L, d]`` tensor is built. The bias needs the full
score matrix: softmax only.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from roformer_lit.errors import ConfigError
from roformer_lit.positions.base import (
    EncoderShape,
    LayerPosition,
    PositionScheme,
    ScoreBias,
    default_scale,
    sinusoid_angles,
)


def relative_sinusoid(length: int, dim: int) -> Tensor:
    """``R[p + L - 1] = [sin(p f), cos(p f)]`` for ``p = -(L-1) .. L-1``: ``[2L-1, dim]``."""
    distances = torch.arange(-(length - 1), length)
    angles = sinusoid_angles(distances, dim)
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


#: Query rows per block of the position term.
BLOCK_ROWS = 256


def relative_index(rows: int, length: int, device: torch.device) -> Tensor:
    """``index[r, j] = r - j + L - 1`` (``r < rows``): for query ``i = i0 + r`` of a block
    starting at ``i0``, the column of distance ``i - j`` among the block's distances
    ``i0 - (L-1) ..``, i.e. rows ``i0 .. i0 + rows + L - 2`` of ``relative_sinusoid``."""
    return (
        torch.arange(rows, device=device)[:, None]
        - torch.arange(length, device=device)[None, :]
        + (length - 1)
    )


class XLLayer(LayerPosition):
    """``u``, ``v`` and ``W_r`` of one layer (or of all layers, when shared)."""

    def __init__(self, shape: EncoderShape) -> None:
        super().__init__()
        self.num_heads, self.head_size = shape.num_heads, shape.head_size
        self.r_proj = nn.Linear(shape.hidden_size, shape.hidden_size, bias=False)
        self.u = nn.Parameter(torch.zeros(shape.num_heads, 1, shape.head_size))
        self.v = nn.Parameter(torch.zeros(shape.num_heads, 1, shape.head_size))
        nn.init.normal_(self.u, std=0.02)
        nn.init.normal_(self.v, std=0.02)

    def score(self, q: Tensor, k: Tensor, ctx: tuple[Tensor, Tensor], attn: nn.Module) -> ScoreBias:
        rel, index = ctx  # [2L-1, H], [min(L, BLOCK_ROWS), L]
        scale = default_scale(self.head_size)
        batch, heads, length, _ = q.shape
        r = self.r_proj(rel).unflatten(-1, (self.num_heads, self.head_size)).transpose(0, 1)
        # the scale goes on the small operands, never on an [L, L] tensor
        content_bias = (k @ (self.u * scale).transpose(-1, -2)).transpose(-1, -2)  # [B, h, 1, L]
        queries = (q + self.v) * scale
        blocks = []
        for start in range(0, length, index.shape[0]):
            rows = min(index.shape[0], length - start)
            distances = r[:, start : start + rows + length - 1]  # [h, rows + L - 1, d]
            by_distance = queries[:, :, start : start + rows] @ distances.transpose(-1, -2)
            local = index[:rows].expand(batch, heads, rows, length)
            blocks.append(by_distance.gather(-1, local) + content_bias)
        bias = blocks[0] if len(blocks) == 1 else torch.cat(blocks, dim=-2)
        return ScoreBias(bias=bias, scale=scale)


class TransformerXLPosition(PositionScheme):
    """Bidirectional Transformer-XL relative attention; ``per_layer`` picks u/v/W_r sharing."""

    needs_score_bias = True

    def __init__(self, shape: EncoderShape, *, per_layer: bool = True) -> None:
        super().__init__(shape)
        if shape.hidden_size % 2:
            raise ConfigError(f"xl needs an even hidden_size, got {shape.hidden_size}")
        self.per_layer = per_layer
        count = shape.num_layers if per_layer else 1
        self.layers = nn.ModuleList(XLLayer(shape) for _ in range(count))
        self._cache: tuple[Tensor, Tensor] | None = None  # (R, index) of the last length seen

    def prepare(
        self, length: int, device: torch.device, dtype: torch.dtype
    ) -> tuple[Tensor, Tensor]:
        cached = self._cache
        if cached is None or cached[1].shape[0] != length or cached[0].device != device:
            rel = relative_sinusoid(length, self.shape.hidden_size).to(device)
            index = relative_index(min(length, BLOCK_ROWS), length, device)
            cached = self._cache = (rel, index)
        return cached[0].to(dtype), cached[1]

    def layer(self, index: int) -> LayerPosition:
        return self.layers[index if self.per_layer else 0]
