"""Sliding-window softmax attention in blocks of queries: work linear in the length.

    out[i] = softmax_j( q_i k_j * scale + bias[i, j] + mask[i, j] ) v_j,   |i - j| <= half

Queries are cut into blocks of ``block`` rows; block ``[s, e)`` can only see keys in
``[s - half, e + half)``, so each block is one SDPA call on that slice of keys and values,
with the slice of the score bias and of the mask (padding, segments, the band; a query
always sees itself, see :mod:`roformer_lit.attention.window`) added as a float mask.
Each block costs ``O(block (block + 2 half) d)``, the whole ``O(L (block + 2 half) d)``
instead of ``O(L^2 d)``, with ordinary tensor operations only (so it trains on every
device: FlexAttention has no backward on a CPU).

The bias slice comes from the scheme's lookup where it gives one (its small tables, read at
the block's ``(i, j)``: no ``[L, L]`` tensor), else from its dense bias.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from roformer_lit.score_bias import ScoreBias, TableLookup


def _bias_block(bias: ScoreBias | None, q: Tensor, rows: Tensor, cols: Tensor) -> Tensor | None:
    """The bias at queries ``rows`` and keys ``cols``: ``[B or 1, h or 1, r or 1, c]``."""
    if bias is None or not bias.adds_bias:
        return None
    if bias.lookup is not None:
        lookup = bias.lookup
        if isinstance(lookup, TableLookup):
            lookup = lookup.cast(q.dtype)
        b = torch.arange(q.shape[0], device=q.device)[:, None, None, None]
        h = torch.arange(q.shape[1], device=q.device)[None, :, None, None]
        return lookup(b, h, rows[None, None, :, None], cols[None, None, None, :])
    dense = bias.bias
    by_query = dense.shape[2] > 1
    return dense[:, :, rows if by_query else slice(None)][..., cols]


def banded_softmax(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    scale: float,
    half: int,
    bias: ScoreBias | None = None,
    key_padding_mask: Tensor | None = None,
    segment_ids: Tensor | None = None,
    dropout_p: float = 0.0,
    block: int = 128,
) -> Tensor:
    """Windowed ``softmax(q k^T * scale + bias + mask) v`` for ``q, k, v`` ``[B, h, L, d]``
    (already rotated), ``|i - j| <= half``, in blocks of ``block`` queries."""
    length = q.shape[-2]
    pieces = []
    for start in range(0, length, block):
        stop = min(start + block, length)
        lo, hi = max(0, start - half), min(length, stop + half)
        rows = torch.arange(start, stop, device=q.device)
        cols = torch.arange(lo, hi, device=q.device)
        offset = rows[:, None] - cols[None, :]
        allowed = (offset.abs() <= half)[None, None]  # [1, 1, r, c]
        if key_padding_mask is not None:
            allowed = allowed & key_padding_mask[:, None, None, lo:hi]
        if segment_ids is not None:
            same = segment_ids[:, start:stop, None] == segment_ids[:, None, lo:hi]
            allowed = allowed & same[:, None]
        allowed = allowed | (offset == 0)  # a query always sees itself
        mask = torch.zeros(allowed.shape, dtype=q.dtype, device=q.device)
        mask = mask.masked_fill(~allowed, -torch.inf)
        extra = _bias_block(bias, q, rows, cols)
        if extra is not None:
            mask = mask + extra.to(q.dtype)
        pieces.append(
            F.scaled_dot_product_attention(
                q[..., start:stop, :],
                k[..., lo:hi, :],
                v[..., lo:hi, :],
                attn_mask=mask,
                dropout_p=dropout_p,
                scale=scale,
            )
        )
    return torch.cat(pieces, dim=-2)
