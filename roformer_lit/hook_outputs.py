"""What a user's hook returned, against the tensor the harness needs in its place.

A scheme's ``embed`` and ``rotate`` and a kernel's ``forward`` each return a tensor of a
known shape and dtype; one that does not would fail later inside roformer_lit's own code
(a traceback naming neither) or, worse, be reshaped into the next layer without a word.
:func:`tensor_problem` is the one comparison; the callers word the line around it. A
``score`` hook's dense bias must broadcast to ``[B, h, L, L]`` in a floating dtype:
:func:`bias_problem`, which the run (``attention/block.py``) and the author's test kit
(``roformer_lit.testing``) both ask.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def tensor_problem(out: Any, like: Tensor) -> str | None:
    """None if ``out`` is a tensor of ``like``'s shape and dtype (any floating dtype
    under autocast), else what it is instead: ``"tuple"``, ``"shape (2, 6, 48)"`` or
    ``"dtype torch.float64"``."""
    if not isinstance(out, Tensor):
        return type(out).__name__
    if tuple(out.shape) != tuple(like.shape):
        return f"shape {tuple(out.shape)}"
    if out.dtype != like.dtype and not (
        torch.is_autocast_enabled(like.device.type) and out.dtype.is_floating_point
    ):
        return f"dtype {out.dtype}"
    return None


def bias_problem(bias: Any, wanted: tuple[int, int, int, int]) -> str | None:
    """None if ``bias`` is a floating tensor that broadcasts to ``wanted`` (``[B, h, L,
    L]``), else what it is instead: ``"list"``, ``"dtype torch.int64"`` or ``"shape (1, 1,
    34, 33)"``."""
    if not isinstance(bias, Tensor):
        return type(bias).__name__
    if not bias.dtype.is_floating_point:
        return f"dtype {bias.dtype}"
    try:
        fits = torch.broadcast_shapes(tuple(bias.shape), wanted) == wanted
    except RuntimeError:
        fits = False
    return None if fits else f"shape {tuple(bias.shape)}"
