"""Global softmax attention with a score bias, one block of queries at a time.

    out[i] = softmax_j( q_i k_j * scale + bias[i, j] + mask[i, j] ) v_j,   all j

The queries are cut into blocks of ``block`` rows. Block ``[s, e)`` is one SDPA (or fused
CPU kernel) call
(its queries against every key) with a float mask ``[B or 1, h, e - s, L]``: the scheme's
bias for those rows, built from its compact form (:func:`~roformer_lit.score_bias.bias_rows`:
a lookup of small tables, or the scheme's own ``rows``), with ``-inf`` at padded keys and
across segments, as the dense path merges them. The ``[B, h, L, L]`` bias is never built:
the transient is ``block / L`` of it.

Training keeps memory linear in ``L`` too: each block runs under activation checkpointing
(:func:`torch.utils.checkpoint.checkpoint`, non-reentrant, random state kept so attention
dropout draws the same mask again), so backward stores only the inputs and the
``[B, h, L, d]`` output, and recomputes one block's bias and probabilities at a time; the
price is one more forward of the attention (and of the bias) per step. Gradients reach the
scheme's tables through its lookup or ``rows``, block by block. On the fused CPU kernel a
bias that needs no gradient (fixed ALiBi), or whose ``rows`` read no tensor needing a
gradient but those it names (``ScoreBias.block_reads``: FIRE's parameters, XL's and
DeBERTa's products of the queries and keys with their tables, the ``[h, 2L - 1]`` table of
a bias of ``(h, i - j)`` such as T5's and KERPLE's with padding), skips the
checkpoint: each block keeps only its output and log-sum-exp, and its mask is rebuilt in
backward, its gradient sent through the rebuilt mask to the named tensors
(:func:`~roformer_lit.attention.cpu_fused_bias.fused_attention_rebuilding_mask`).

A bias of ``(h, i - j)`` alone with no padded key never reaches this path on the fused CPU
kernel: it reads its table through a view instead
(:mod:`roformer_lit.attention.cpu_offset_bias`; with packed documents, each one run of its
row, one view per document, :mod:`roformer_lit.attention.documents`; both chosen in
:class:`~roformer_lit.attention.softmax.SoftmaxAttention`).

The row blocks are exact: softmax is per row, so block ``[s, e)`` gives the same rows as the
full computation (up to float rounding order).
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from roformer_lit.attention.cpu_fused_bias import (
    fused_attention_rebuilding_mask,
    fused_attention_with_bias,
)
from roformer_lit.score_bias import ScoreBias, bias_rows


def _block_mask(
    q: Tensor,
    start: int,
    stop: int,
    *,
    bias: ScoreBias,
    key_padding_mask: Tensor | None,
    segment_ids: Tensor | None,
) -> Tensor:
    """The float mask of queries ``start .. stop - 1``: their bias rows, ``-inf`` at padded
    keys and across segments (``[B or 1, h, stop - start, L]``)."""
    batch, heads, length, _ = q.shape
    mask = bias_rows(bias, batch, heads, start, stop, length, q.device, q.dtype)
    allowed = None
    if key_padding_mask is not None:
        allowed = key_padding_mask[:, None, None, :]
    if segment_ids is not None:  # block-diagonal, these rows: [B, 1, r, L]
        same = segment_ids[:, None, start:stop, None] == segment_ids[:, None, None, :]
        allowed = same if allowed is None else same & allowed
    if allowed is not None:
        mask = mask.masked_fill(~allowed, -torch.inf)
    return mask


def _attend_rows(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    start: int,
    stop: int,
    *,
    scale: float,
    bias: ScoreBias,
    key_padding_mask: Tensor | None,
    segment_ids: Tensor | None,
    dropout_p: float,
    fused: bool,
) -> Tensor:
    """Queries ``start .. stop - 1`` against every key: ``[B, h, stop - start, d]``."""
    mask = _block_mask(
        q, start, stop, bias=bias, key_padding_mask=key_padding_mask, segment_ids=segment_ids
    )
    if fused:
        return fused_attention_with_bias(q[..., start:stop, :], k, v, mask, scale)
    return F.scaled_dot_product_attention(
        q[..., start:stop, :], k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale
    )


def query_blocked_softmax(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    scale: float,
    bias: ScoreBias,
    key_padding_mask: Tensor | None = None,
    segment_ids: Tensor | None = None,
    dropout_p: float = 0.0,
    block: int = 256,
    fused: bool = False,
) -> Tensor:
    """Global ``softmax(q k^T * scale + bias + mask) v`` for ``q, k, v`` ``[B, h, L, d]``
    (already rotated) in blocks of ``block`` queries; ``bias`` must have a lookup or
    ``rows`` (:attr:`~roformer_lit.score_bias.ScoreBias.has_blocks`). ``fused``: each block
    on the fused CPU kernel with its own bias gradient
    (:mod:`~roformer_lit.attention.cpu_fused_bias`), else SDPA."""
    length = q.shape[-2]
    options = dict(
        scale=scale,
        bias=bias,
        key_padding_mask=key_padding_mask,
        segment_ids=segment_ids,
        dropout_p=dropout_p,
        fused=fused,
    )
    recompute = torch.is_grad_enabled()
    masks = dict(bias=bias, key_padding_mask=key_padding_mask, segment_ids=segment_ids)
    # on the fused kernel, a bias that needs no gradient (fixed ALiBi; read off the mask of
    # the first query row alone) or whose rows read only the tensors it names: each block's
    # mask is rebuilt in backward instead of checkpointing the block (no second forward)
    reads = bias.block_reads
    if fused and recompute and reads is None:
        reads = None if _block_mask(q, 0, 1, **masks).requires_grad else ()
    pieces = []
    for start in range(0, length, block):
        stop = min(start + block, length)
        if fused and recompute and reads is not None:
            rebuild = functools.partial(_block_mask, q.detach(), start, stop, **masks)
            piece = fused_attention_rebuilding_mask(
                q[..., start:stop, :], k, v, rebuild, scale, reads
            )
        elif recompute:
            piece = checkpoint(_attend_rows, q, k, v, start, stop, use_reentrant=False, **options)
        else:
            piece = _attend_rows(q, k, v, start, stop, **options)
        pieces.append(piece)
    return torch.cat(pieces, dim=-2)
