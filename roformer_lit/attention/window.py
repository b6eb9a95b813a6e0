"""Sliding windows: which keys a query sees in a layer with ``window = w``.

    query i attends to key j  iff  |i - j| <= w // 2

(bidirectional, ModernBERT's ``local_attention`` convention: ``w = 128`` sees 64 tokens on
each side, 129 keys). A window whose half-width reaches every key (``w // 2 >= L - 1``)
is global: the kernels then take their global path, bit for bit.

A padded query's window may hold padding only; every query therefore also sees itself
(for a real token that changes nothing, it is in its own band and segment), so no row of
the softmax is empty and no NaN reaches the real tokens through the padded values.
"""

from __future__ import annotations

import torch
from torch import Tensor


def band_half_width(window: int | None, length: int) -> int | None:
    """``w // 2``, or None when the window is global at this length (or absent)."""
    if window is None or window // 2 >= length - 1:
        return None
    return window // 2


def band_mask(length: int, half: int, device: torch.device | None = None) -> Tensor:
    """Bool ``[L, L]``: True where ``|i - j| <= half``."""
    index = torch.arange(length, device=device)
    return (index[:, None] - index[None, :]).abs() <= half
