"""Packed documents attended one document at a time.

    out[b, :, s:e] = softmax(q[b, :, s:e] k[b, :, s:e]^T * scale + bias) v[b, :, s:e]
    for every run [s, e) of one segment id in row b

With ``segment_ids`` every token attends only to the tokens of its own document, so the
scores are block-diagonal. Where each document is one contiguous run of its row (packed
blocks are), that is one attention call per document on the document's own queries, keys
and values: no ``[L, L]`` mask is built and ``sum_d n_d^2`` score entries are computed
instead of ``L^2``. A bias of ``(h, i - j)`` alone is, inside a document of ``n`` tokens,
the same table at offsets ``-(n - 1) .. n - 1`` (columns ``L - n .. L + n - 2`` of the row's
``[h, 2L - 1]`` table), read through the Hankel view of
:mod:`roformer_lit.attention.cpu_offset_bias`; with no bias each document is one SDPA call
with no mask (the fused kernel). Any other bias with a compact form gives the document's own
``[h, n, n]`` square (:func:`~roformer_lit.score_bias.bias_squares`: FIRE's function of the
document's positions, XL's shifted product and DeBERTa's gathers of its own tokens, or a
lookup at its indices), attended on the fused kernel with the square's gradient
(:mod:`roformer_lit.attention.cpu_fused_bias`).

Exact up to float rounding: outside its document a key's probability is ``exp(-inf) = 0``
in the masked computation. A row whose id comes back after another id (one document in two
runs) is not a set of contiguous documents: :func:`document_runs` returns None and the
caller keeps the masked path.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from roformer_lit.attention.cpu_fused_bias import fused_attention_with_bias
from roformer_lit.attention.cpu_offset_bias import offset_bias_attention
from roformer_lit.score_bias import Runs

#: Documents shorter than this on average keep the masked path: each document costs a few
#: calls (on the 2-core CPU at 1,024 tokens, batch 4, T5's training step one document at a
#: time took 1.19x the masked step with 8-token documents and 0.83x with 16-token ones:
#: ``python scripts/document_split_speed.py t5 --length 1024 --batch 4 --documents 128 64
#: 32 8``, raw output docs/bench/cpu-2026-11-28-document-split-1024.txt). Each document's own
#: square, on another 2-core CPU, 16-token documents against 8: FIRE 0.74x (1.24x), XL 1.03x
#: (1.75x; 0.67x with 32 tokens), DeBERTa 0.93x (1.39x)
#: (docs/bench/cpu-2026-11-28-document-split-squares-1024-{fire,xl,deberta}.txt).
MIN_MEAN_DOCUMENT = 16


def document_runs(segment_ids: Tensor) -> Runs | None:
    """The runs of equal ids of each row of ``segment_ids`` ``[B, L]``, or None if an id
    comes back after another id in some row (its tokens would not be one run) or the
    documents are shorter than ``MIN_MEAN_DOCUMENT`` tokens on average."""
    batch, length = segment_ids.shape
    change = (segment_ids[:, 1:] != segment_ids[:, :-1]).nonzero().tolist()
    if batch * length < MIN_MEAN_DOCUMENT * (batch + len(change)):
        return None
    starts: list[list[int]] = [[0] for _ in range(batch)]
    for row, before in change:
        starts[row].append(before + 1)
    ids = segment_ids.tolist()
    runs: Runs = []
    for row, row_starts in enumerate(starts):
        if len({ids[row][start] for start in row_starts}) < len(row_starts):
            return None
        runs.append(list(zip(row_starts, [*row_starts[1:], length], strict=True)))
    return runs


def attend_documents(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    runs: Runs,
    scale: float,
    per_offset: Tensor | None,
    squares: list[list[Tensor]] | None = None,
    tied_from: int | None = None,
) -> Tensor:
    """Block-diagonal ``softmax(q k^T * scale + bias) v`` for ``q, k, v`` ``[B, h, L, d]``
    (already rotated), one call per run; ``per_offset``: the ``[h, 2L - 1]`` table of a bias
    of ``(h, i - j)`` (column ``i - j + L - 1``; its tails tied from ``tied_from`` on, if
    given); else ``squares[b][d]``: the ``[h, n, n]``
    bias of document ``d`` of row ``b`` (``runs[b][d]``); neither: no bias."""
    length = q.shape[-2]
    rows = []
    # one split per row and tensor (its backward writes each gradient once), not a slice per
    # document (each slice's backward would write a zero-filled gradient of the whole tensor)
    for example, (q_row, k_row, v_row, row_runs) in enumerate(
        zip(q.unbind(0), k.unbind(0), v.unbind(0), runs, strict=True)
    ):
        row_squares = None if squares is None else squares[example]
        sizes = [stop - start for start, stop in row_runs]
        pieces = []
        for index, ((start, stop), q_d, k_d, v_d) in enumerate(
            zip(row_runs, *(t.split(sizes, dim=1) for t in (q_row, k_row, v_row)), strict=True)
        ):
            q_d, k_d, v_d = q_d[None], k_d[None], v_d[None]
            if per_offset is not None:
                table = per_offset[:, length - (stop - start) : length + stop - start - 1]
                pieces.append(offset_bias_attention(q_d, k_d, v_d, table, scale, tied_from))
            elif row_squares is not None:
                bias = row_squares[index][None]
                pieces.append(fused_attention_with_bias(q_d, k_d, v_d, bias, scale))
            else:
                pieces.append(F.scaled_dot_product_attention(q_d, k_d, v_d, scale=scale))
        rows.append(torch.cat(pieces, dim=2))
    return torch.cat(rows, dim=0)
