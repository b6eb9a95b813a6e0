"""What a user's hook returned, against the tensor the harness needs in its place.

A scheme's ``embed`` and ``rotate`` and a kernel's ``forward`` each return a tensor of a
known shape and dtype; one that does not would fail later inside roformer_lit's own code
(a traceback naming neither) or, worse, be reshaped into the next layer without a word.
:func:`tensor_problem` is the one comparison; the callers word the line around it.
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
