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

**Tied tails** (``tied_from = m``: T5, whose offsets from about ``max_distance`` on read
the last bucket of their direction). Where the offsets ``o >= m`` read one parameter per
head and so do ``o <= -m``, only the tails' totals matter, and the rows of ``dS`` sum to
zero (``sum_j P_ij dP_ij = D_i``), so

    d b[o] for |o| < m:  the diagonals of dS in the band |i - j| < m  (keys i - m < j < i + m)
    sum_{o >= m} d b[o] = sum_i w_i (dout_i . out'_i - D_i),   w_i = exp(lse'_i + b_m - lse_i)
    sum_{o <= -m} d b[o] = -(the two above)

where ``out'``, ``lse'`` are attention without bias of query ``i >= m`` over keys
``j <= i - m`` (one causal call of the fused kernel on the shifted rows; the tail's bias
``b_m`` is constant there, so it only scales the tail's share ``w_i`` of row ``i``'s
probability). The band costs ``rows + 2m`` keys per chunk of rows instead of ``n``, the
causal call about half a forward; each tail's total is returned on its first column
(``o = m`` and ``o = -m``), zeros on the rest, which is the gradient of every parameter
the table reads (:class:`~roformer_lit.score_bias.OffsetLookup`'s ``shared_by``).

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

from typing import NamedTuple

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


#: The tied tails' path is taken where ``TAIL_BAND_FRACTION * tied_from <= n`` keys: the
#: band of ``rows + 2m`` keys per chunk and the causal call must cost less than the
#: whole rows they replace.
TAIL_BAND_FRACTION = 4


class _Backward(NamedTuple):
    """What the table's gradient reads: the forward's saved tensors (queries and ``out``,
    ``lse`` in the reversed order, the flipped table), ``dout`` reversed, and the scale."""

    reversed_q: Tensor
    k: Tensor
    v: Tensor
    flipped: Tensor
    out: Tensor
    lse: Tensor
    reversed_dout: Tensor
    scale: float


class _OffsetBiasAttention(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        per_offset: Tensor,
        scale: float,
        tied_from: int | None,
    ) -> Tensor:
        length, keys = q.shape[-2], k.shape[-2]
        flipped = per_offset.to(q.dtype).flip(-1).contiguous()
        reversed_q = q.flip(-2)
        mask = hankel_mask(flipped, length, keys)
        out, lse = _flash(reversed_q, k, v, 0.0, False, attn_mask=mask, scale=scale)
        ctx.save_for_backward(reversed_q, k, v, flipped, out, lse)
        ctx.scale = scale
        tail = tied_from is not None and TAIL_BAND_FRACTION * tied_from <= keys
        ctx.tied_from = tied_from if tail else None
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
            saved = _Backward(reversed_q, k, v, flipped, out, lse, reversed_dout, ctx.scale)
            d_flipped = _anti_diagonal_bias_gradient(saved, ctx.tied_from)
            if ctx.tied_from is not None:
                _add_tail_totals(d_flipped, saved, ctx.tied_from)
            d_offset = d_flipped.flip(-1).to(reversed_q.dtype)
        return dq.flip(-2), dk, dv, d_offset, None, None


def _anti_diagonal_bias_gradient(saved: _Backward, band: int | None = None) -> Tensor:
    """``d flipped[h, c] = sum_{r + j = c} dS[b, h, r, j]`` (summed over the batch, in at
    least float32), in the reversed query order, ``rows`` queries of one head at a time;
    ``keys``: ``k``'s length (the row's first keys). With ``band = m``, the columns of
    offsets ``|i - j| < m`` only (each chunk of rows against the ``rows + 2m - 1`` keys
    around its diagonal), zeros on the rest."""
    reversed_q, k, v, flipped, out, lse, reversed_dout, scale = saved
    batch, heads, length, _ = reversed_q.shape
    keys = k.shape[-2]
    dtype = reversed_q.dtype
    rows = max(1, min(length, ROWS_TIMES_KEYS // (batch * keys)))
    window = keys if band is None else min(keys, rows + 2 * band - 1)
    ones = k.new_ones(batch, heads, keys, 1)
    delta = (reversed_dout * out).sum(-1, keepdim=True)
    q_aug = torch.cat([reversed_q * scale, -lse.to(dtype).unsqueeze(-1)], -1)
    k_aug_t = torch.cat([k, ones], -1).transpose(-1, -2)
    dout_aug = torch.cat([reversed_dout, -delta], -1)
    v_aug_t = torch.cat([v, ones], -1).transpose(-1, -2)
    # summed in at least float32: a diagonal gathers up to L entries
    d_flipped = torch.zeros(flipped.shape, dtype=torch.promote_types(dtype, torch.float32))
    # its gaps stay zero: every chunk writes the same columns of each row (the same window)
    shifted = reversed_q.new_zeros(rows, window + rows - 1)
    for h in range(heads):
        for start in range(0, length, rows):
            count = min(rows, length - start)
            # reversed rows start .. start + count - 1 are queries L - start - count .. L - 1
            # - start: their band's keys from L - start - count - band + 1 on
            first = 0 if band is None else length - start - count - band + 1
            first = min(max(first, 0), keys - window)
            cols = slice(first, first + window)
            bias = flipped[h].as_strided(
                (count, window), (1, 1), flipped[h].storage_offset() + start + first
            )
            probs = torch.baddbmm(
                bias.expand(batch, count, window),
                q_aug[:, h, start : start + count],
                k_aug_t[:, h, :, cols],
            )
            probs.exp_()
            dscore = torch.bmm(dout_aug[:, h, start : start + count], v_aug_t[:, h, :, cols])
            view = shifted_rows(shifted, count, window)
            if batch == 1:
                torch.mul(dscore[0], probs[0], out=view)
            else:
                torch.sum(dscore.mul_(probs), 0, out=view)
            d_flipped[h, start + first : start + first + count + window - 1] += shifted[
                :count, : count + window - 1
            ].sum(0, dtype=d_flipped.dtype)
    if band is not None:  # a chunk's rectangle also covers part of some longer diagonals
        outside = torch.ones(flipped.shape[-1], dtype=torch.bool)
        outside[length - band : length - 1 + band] = False  # column c: offset L - 1 - c
        d_flipped[:, outside] = 0
    return d_flipped


def _add_tail_totals(d_flipped: Tensor, saved: _Backward, tied_from: int) -> None:
    """Adds each tied tail's total gradient to its first column of ``d_flipped`` (offset
    ``m = tied_from`` at column ``L - 1 - m``, ``-m`` at ``L - 1 + m``), whose band
    columns hold the rest: the tail ``o >= m`` from one causal call of the fused kernel
    over keys ``j <= i - m``, the tail ``o <= -m`` as minus everything else (the module's
    docstring)."""
    reversed_q, k, v, flipped, out, lse, reversed_dout, scale = saved
    length, keys = reversed_q.shape[-2], k.shape[-2]
    m, wide = tied_from, d_flipped.dtype  # at least float32
    q, dout = reversed_q.flip(-2), reversed_dout.flip(-2)
    out_n, lse_n = out.flip(-2), lse.flip(-1).to(wide)
    delta = (dout * out_n).sum(-1).to(wide)
    tail_keys = min(keys, length - m)  # keys j <= i - m of the last query
    tail_out, tail_lse = _flash(
        q[:, :, m:], k[:, :, :tail_keys], v[:, :, :tail_keys], 0.0, True, scale=scale
    )
    tail_bias = flipped[:, length - 1 - m].to(wide)[None, :, None]
    share = torch.exp(tail_lse.to(wide) + tail_bias - lse_n[:, :, m:])
    reads = (dout[:, :, m:] * tail_out).sum(-1).to(wide) - delta[:, :, m:]
    after = (share * reads).sum((0, 2))
    before = -(d_flipped.sum(-1) + after)
    d_flipped[:, length - 1 - m] += after
    d_flipped[:, length - 1 + m] += before


def offset_bias_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    per_offset: Tensor,
    scale: float,
    tied_from: int | None = None,
) -> Tensor:
    """``softmax(q k^T * scale + per_offset[h, i - j + L - 1]) v`` for ``q`` ``[B, h, L,
    d]``, ``k, v`` ``[B, h, n, d]`` (the row's first ``n <= L`` keys: the rest padded) and
    ``per_offset`` ``[h, 2L - 1]`` on the fused CPU kernel; the table's gradient (a learned
    bias) flows back through it. ``tied_from = m``: the columns of offsets ``>= m`` read
    one parameter, and so do those ``<= -m`` (each tail's gradient is then returned as its
    total on its first column; the module's docstring)."""
    return _OffsetBiasAttention.apply(q, k, v, per_offset, scale, tied_from)
