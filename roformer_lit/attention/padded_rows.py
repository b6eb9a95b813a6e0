"""Rows padded at their end, attended one row at a time against their real keys.

    out[b] = softmax(q[b] k[b, :, :n_b]^T * scale + b[h, i - j + L - 1]) v[b, :, :n_b]

A padding mask that is True on a row's first ``n_b`` keys and False after them sets the
scores of keys ``n_b .. L - 1`` to ``-inf``: their probabilities are zero, so every query of
the row (padded queries included) attends the first ``n_b`` keys only. That is attention
against the row's first ``n_b`` keys and values with no mask: ``L n_b`` scores instead of
``L^2``. A bias of ``(h, i - j)`` (``b``: its ``[h, 2L - 1]`` table) is read through the
Hankel view (:func:`~roformer_lit.attention.cpu_offset_bias.offset_bias_attention`): no
``[L, L]`` mask, memory linear in ``L``; without a bias each row is one SDPA call with no
mask (the fused kernel). A row with no real key, or a mask with a padded key before a real
one, is not of this form: :func:`real_prefix_lengths` returns None and the caller keeps the
masked path.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from roformer_lit.attention.cpu_offset_bias import offset_bias_attention


def real_prefix_lengths(key_padding_mask: Tensor) -> list[int] | None:
    """``n_b`` for each row of ``key_padding_mask`` ``[B, L]`` (True: a real key) whose real
    keys are its first ``n_b >= 1``; None if some row is not of that form."""
    lengths = key_padding_mask.sum(1)
    positions = torch.arange(key_padding_mask.shape[1], device=key_padding_mask.device)
    prefix = positions[None, :] < lengths[:, None]
    if not bool((lengths > 0).all()) or not torch.equal(prefix, key_padding_mask.bool()):
        return None
    return lengths.tolist()


def attend_padded_rows(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    per_offset: Tensor | None,
    scale: float,
    lengths: list[int],
    tied_from: int | None = None,
) -> Tensor:
    """``softmax(q k^T * scale + per_offset[h, i - j + L - 1] + pad) v`` for ``q, k, v``
    ``[B, h, L, d]`` where row ``b``'s keys from ``lengths[b]`` on are padded
    (``per_offset`` None: no bias; its tails tied from ``tied_from`` on, if given)."""
    length = q.shape[-2]
    rows = []
    # one split per row and tensor (its backward writes each gradient once), not a slice
    for q_row, k_row, v_row, real in zip(
        q.unbind(0), k.unbind(0), v.unbind(0), lengths, strict=True
    ):
        sizes = [real, length - real]
        k_real, v_real = (t.split(sizes, dim=1)[0] for t in (k_row, v_row))
        q_b, k_b, v_b = q_row[None], k_real[None], v_real[None]
        if per_offset is None:
            rows.append(F.scaled_dot_product_attention(q_b, k_b, v_b, scale=scale))
        else:
            rows.append(offset_bias_attention(q_b, k_b, v_b, per_offset, scale, tied_from))
    return torch.cat(rows, dim=0)
