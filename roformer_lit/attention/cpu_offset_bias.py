"""Softmax attention with a bias of ``(h, i - j)`` on PyTorch's fused CPU kernel, never an
``[L, L]`` tensor, forward or backward.

    out_i = sum_j softmax_j(q_i k_j * scale + b[h, i - j]) v_j,   b: [h, 2L - 1]

(``b[h, o + L - 1]`` is the bias at offset ``o = i - j``: ALiBi's slopes times distance,
T5's bucket values, KERPLE's kernel, evaluated once per forward into this small table.)

**The Hankel view.** With the queries taken in reverse order (row ``r`` is query
``L - 1 - r``) the bias of row ``r`` and key ``j`` is ``f[h, r + j]`` for ``f = b`` flipped
along its offsets: an ``[L, L]`` Hankel matrix, which is a strided *view* of ``f`` with
strides ``(1, 1)``. The fused kernel (``_scaled_dot_product_flash_attention_for_cpu``) reads
its mask through strides, so it reads the ``[h, 2L - 1]`` table, which stays in cache,
instead of an ``[L, L]`` mask in memory; the outputs are flipped back.

**Backward.** ``dq, dk, dv``: the fused kernel's own backward, with the same view. A learned
bias also needs

    d b[h, o] = sum_{i - j = o} dS_ij,   dS = P (dP - D),
    P = exp(q k^T * scale + bias - lse),   dP = dout v^T,   D_i = dout_i . out_i

computed ``rows`` reversed queries at a time: ``P`` by one product of the queries
augmented with ``-lse`` and the keys augmented with ``1`` (added to the view of the bias),
``dP - D`` by one product of ``dout`` augmented with ``-D`` and ``v`` with ``1``; in reversed
order the sum along a diagonal ``i - j = o`` is one along an anti-diagonal ``r + j``, taken
by writing row ``r`` shifted by ``r`` into a buffer and summing its rows.

**Padded keys.** The keys may be the first ``n <= L`` of the row (``k, v``:
``[B, h, n, d]``): every query attends those keys only, with the same table, which is what
a padding mask that is ``-inf`` at keys ``n ..  L - 1`` computes (the view is the first
``n`` columns of the same Hankel matrix). A row padded at its end is attended this way,
one row at a time, by the caller.

Exact up to float rounding: the same function as
``F.scaled_dot_product_attention(q, k, v, attn_mask=b[:, i - j + L - 1], scale=scale)``
(tests check values and gradients against that in float64, padded keys included). No
other mask: padding anywhere but a row's end, or segments, need ``-inf`` per pair, which a
view of the table cannot hold (the caller takes the materialised path then; packed
documents that are one run each are attended one by one, each through this view of its
own offsets, :mod:`roformer_lit.attention.documents`).
Speed needs subnormal floats flushed (see
:mod:`roformer_lit.training.denormals`).
"""

from __future__ import annotations

import torch
from torch import Tensor

from roformer_lit.score_bias import shifted_rows

_flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
_flash_backward = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward

#: Reversed query rows per chunk of the bias gradient: ``ROWS_TIMES_KEYS / (B L)`` rows, so
#: one chunk's ``[B, rows, L]`` scores stay about 4 MiB in float32 (at 8,192 tokens on the
#: 2-core CPU 2^20 was faster than 2^18 and 2^19; at 2,048 not separable from 2^19).
ROWS_TIMES_KEYS = 1 << 20


def hankel_mask(flipped: Tensor, length: int, keys: int | None = None) -> Tensor:
    """``[1, h, L, n]`` view (``n = keys``, default ``L``) with ``mask[0, h, r, j] =
    flipped[h, r + j]``: the bias of reversed query ``r`` (query ``L - 1 - r``) and key
    ``j``. No memory is written."""
    heads, width = flipped.shape
    keys = length if keys is None else keys
    return flipped.as_strided(
        (1, heads, length, keys), (heads * width, width, 1, 1), flipped.storage_offset()
    )


class _OffsetBiasAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q: Tensor, k: Tensor, v: Tensor, per_offset: Tensor, scale: float) -> Tensor:
        length, keys = q.shape[-2], k.shape[-2]
        flipped = per_offset.to(q.dtype).flip(-1).contiguous()
        reversed_q = q.flip(-2)
        mask = hankel_mask(flipped, length, keys)
        out, lse = _flash(reversed_q, k, v, 0.0, False, attn_mask=mask, scale=scale)
        ctx.save_for_backward(reversed_q, k, v, flipped, out, lse)
        ctx.scale = scale
        return out.flip(-2)

    @staticmethod
    def backward(ctx, dout: Tensor) -> tuple[Tensor | None, ...]:
        reversed_q, k, v, flipped, out, lse = ctx.saved_tensors
        length, keys = reversed_q.shape[-2], k.shape[-2]
        reversed_dout = dout.flip(-2).contiguous()
        dq, dk, dv = _flash_backward(
            reversed_dout,
            reversed_q,
            k,
            v,
            out,
            lse,
            0.0,
            False,
            attn_mask=hankel_mask(flipped, length, keys),
            scale=ctx.scale,
        )
        d_offset = None
        if ctx.needs_input_grad[3]:
            d_flipped = _anti_diagonal_bias_gradient(
                reversed_q, k, v, flipped, out, lse, reversed_dout, ctx.scale
            )
            d_offset = d_flipped.flip(-1)
        return dq.flip(-2), dk, dv, d_offset, None


def _anti_diagonal_bias_gradient(
    reversed_q: Tensor,
    k: Tensor,
    v: Tensor,
    flipped: Tensor,
    out: Tensor,
    lse: Tensor,
    reversed_dout: Tensor,
    scale: float,
) -> Tensor:
    """``d flipped[h, c] = sum_{r + j = c} dS[b, h, r, j]`` (summed over the batch), in the
    reversed query order, ``rows`` queries of one head at a time; ``keys``: ``k``'s length
    (the row's first keys)."""
    batch, heads, length, _ = reversed_q.shape
    keys = k.shape[-2]
    dtype = reversed_q.dtype
    rows = max(1, min(length, ROWS_TIMES_KEYS // (batch * keys)))
    width = keys + rows - 1
    ones = k.new_ones(batch, heads, keys, 1)
    delta = (reversed_dout * out).sum(-1, keepdim=True)
    q_aug = torch.cat([reversed_q * scale, -lse.to(dtype).unsqueeze(-1)], -1)
    k_aug_t = torch.cat([k, ones], -1).transpose(-1, -2)
    dout_aug = torch.cat([reversed_dout, -delta], -1)
    v_aug_t = torch.cat([v, ones], -1).transpose(-1, -2)
    # summed in at least float32: a diagonal gathers up to L entries
    d_flipped = torch.zeros(flipped.shape, dtype=torch.promote_types(dtype, torch.float32))
    shifted = reversed_q.new_zeros(rows, width)  # its gaps stay zero: each chunk rewrites the rest
    for h in range(heads):
        for start in range(0, length, rows):
            count = min(rows, length - start)
            bias = flipped[h].as_strided((count, keys), (1, 1), flipped[h].storage_offset() + start)
            probs = torch.baddbmm(
                bias.expand(batch, count, keys), q_aug[:, h, start : start + count], k_aug_t[:, h]
            )
            probs.exp_()
            dscore = torch.bmm(dout_aug[:, h, start : start + count], v_aug_t[:, h])
            view = shifted_rows(shifted, count, keys)
            if batch == 1:
                torch.mul(dscore[0], probs[0], out=view)
            else:
                torch.sum(dscore.mul_(probs), 0, out=view)
            d_flipped[h, start : start + count + keys - 1] += shifted[
                :count, : count + keys - 1
            ].sum(0, dtype=d_flipped.dtype)
    return d_flipped.to(dtype)


def offset_bias_attention(
    q: Tensor, k: Tensor, v: Tensor, per_offset: Tensor, scale: float
) -> Tensor:
    """``softmax(q k^T * scale + per_offset[h, i - j + L - 1]) v`` for ``q`` ``[B, h, L,
    d]``, ``k, v`` ``[B, h, n, d]`` (the row's first ``n <= L`` keys: the rest padded) and
    ``per_offset`` ``[h, 2L - 1]`` on the fused CPU kernel; the table's gradient (a learned
    bias) flows back through it."""
    return _OffsetBiasAttention.apply(q, k, v, per_offset, scale)
