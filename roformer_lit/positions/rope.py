"""Rotary position embedding (RoFormer, Su et al. 2021), interleaved pairs as in HF RoFormer.

With ``theta_t = base^(-2t/d)``, each pair ``(x[2t], x[2t+1])`` of a query or key at
position ``m`` is rotated by ``m * theta_t``:

    rot(x, m)[2t]   = x[2t] cos(m theta_t) - x[2t+1] sin(m theta_t)
    rot(x, m)[2t+1] = x[2t] sin(m theta_t) + x[2t+1] cos(m theta_t)

computed element-wise as ``x * cos + rotate_pairs(x) * sin`` with ``[L, d]`` tables built
once per forward and shared by every layer. ``rot(q, m) . rot(k, n)`` depends on ``m - n``
only. Values are not rotated. The kernel decides where the rotation applies (softmax: on
q and k; linear: after the feature map, numerator only, RoFormer eq. 19).
"""

from __future__ import annotations

import torch
from torch import Tensor

from roformer_lit.errors import ConfigError
from roformer_lit.positions.base import EncoderShape, LayerPosition, PositionScheme, sinusoid_angles


def rotate_pairs(x: Tensor) -> Tensor:
    """``(x0, x1, x2, x3, ...) -> (-x1, x0, -x3, x2, ...)``."""
    pairs = x.unflatten(-1, (-1, 2))
    return torch.stack([-pairs[..., 1], pairs[..., 0]], dim=-1).flatten(-2)


def rope_tables(length: int, head_size: int, base: float = 10000.0) -> tuple[Tensor, Tensor]:
    """``cos, sin`` of shape ``[length, head_size]``, each angle repeated for its pair."""
    angles = sinusoid_angles(torch.arange(length), head_size, base).repeat_interleave(2, dim=-1)
    return angles.cos(), angles.sin()


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """The element-wise rotation ``x * cos + rotate_pairs(x) * sin`` (x: ``[..., L, d]``)."""
    return x * cos + rotate_pairs(x) * sin


class RopeLayer(LayerPosition):
    """Rotates queries and keys with the shared per-forward tables."""

    rotates = True

    def rotate(self, x: Tensor, ctx: tuple[Tensor, Tensor]) -> Tensor:
        cos, sin = ctx
        return apply_rope(x, cos, sin)


class RotaryPosition(PositionScheme):
    """RoPE with a configurable ``base``; needs an even head size."""

    def __init__(self, shape: EncoderShape, *, base: float = 10000.0) -> None:
        super().__init__(shape)
        if shape.head_size % 2:
            raise ConfigError(
                f"rope needs an even head size, got hidden_size={shape.hidden_size} / "
                f"num_heads={shape.num_heads} = {shape.head_size}"
            )
        if base <= 1:
            raise ConfigError(f"rope base must be > 1, got {base}")
        self.base = float(base)
        cos, sin = rope_tables(shape.max_positions, shape.head_size, self.base)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self._layer = RopeLayer()

    def prepare(
        self, length: int, device: torch.device, dtype: torch.dtype
    ) -> tuple[Tensor, Tensor]:
        if length > self.cos.shape[0]:
            cos, sin = rope_tables(length, self.shape.head_size, self.base)
            self.cos, self.sin = cos.to(device), sin.to(device)
        return self.cos[:length].to(dtype), self.sin[:length].to(dtype)

    def layer(self, index: int) -> LayerPosition:
        return self._layer
