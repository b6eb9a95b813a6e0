"""KERPLE, logarithmic variant (Chi et al. 2022, arXiv 2205.09921), made bidirectional.

    A_ij = q_i . k_j / sqrt(d)  -  r1_h log(1 + r2_h |i - j|),      r1_h, r2_h > 0

a conditionally positive definite kernel of the distance turned into a score bias, with
two learned parameters per head. Choices the paper leaves open, made here:

- Direction: the paper (a causal LM) uses ``i - j >= 0``; the encoder uses ``|i - j|``,
  one kernel for both directions (the kernel is a function of the distance, so this is
  the natural symmetric form).
- Positivity: the reference code (chijames/KERPLE) clamps the raw parameters in place to
  ``>= 0.01`` before each forward. Here ``r = softplus(raw)`` instead: always positive, a
  gradient everywhere (an in-place clamp inside the forward would mutate parameters during
  evaluation and break ``torch.compile``'s graph). Initial values follow the reference
  code's ``r1 ~ U(0, 2)``, ``r2 ~ U(0, 1)``, floored at its 0.01 and stored as
  ``softplus^-1``.
- Sharing: one ``(r1, r2)`` pair per head and per layer, as in the reference code, where
  every attention layer owns its kernel; ``per_layer: false`` shares one pair across layers.
- Scale: the bias is added to the already-scaled score ``q.k / sqrt(d)``, as in the
  reference code (it adds to the scaled attention logits).

The bias depends on (head, ``i - j``) only: its ``[h, 2L - 1]`` values per offset are read
by the fused CPU kernel through a strided view (from 1,024 tokens), per block of rows on
long rows elsewhere; the dense ``[1, h, L, L]`` tensor per layer, shared by the
batch, is built only for the dense path; given positions (randomized positions),
``|p_i - p_j|`` per example gives a ``[B, h, L, L]`` one, or is read from the ``[B, L]``
positions entry by entry (or block by block). It needs the full score matrix: softmax only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor, nn

from roformer_lit.positions.alibi import DistanceCache, position_distance, position_gap
from roformer_lit.positions.base import (
    EncoderShape,
    LayerPosition,
    PositionScheme,
    QKVWeights,
    ScoreBias,
    default_scale,
)
from roformer_lit.score_bias import TableLookup, offset_lookup
from roformer_lit.validation import boolean, check

#: The reference code's floor on r1, r2 (here only on their initial values).
EPS = 1e-2


def inverse_softplus(x: Tensor) -> Tensor:
    """``softplus^-1(x) = log(exp(x) - 1)`` for ``x > 0``."""
    return x + torch.log(-torch.expm1(-x))


def kerple_bias(r1: Tensor, r2: Tensor, distance: Tensor) -> Tensor:
    """``-r1_h log(1 + r2_h d)`` over per-example distances ``[B, L, L]``: ``[B, h, L, L]``."""
    return -r1[:, None, None] * torch.log1p(r2[:, None, None] * distance[:, None])


def _read_kerple(
    r1: Tensor, r2: Tensor, positions: Tensor, b: Tensor, h: Tensor, i: Tensor, j: Tensor
) -> Tensor:
    return -r1[h] * torch.log1p(r2[h] * position_gap(positions, b, i, j).to(r2.dtype))


class KerpleDistances(NamedTuple):
    """``|i - j|`` over ``0 .. L-1`` (or ``|p_i - p_j|`` over per-example positions):
    ``square()`` gives the ``[L, L]`` (``[B, L, L]``) float32 tensor, built only when a
    dense bias asks for it."""

    length: int
    square: Callable[[], Tensor]
    #: ``[B, L]`` per-example positions (``square`` then gives ``[B, L, L]``), or None.
    positions: Tensor | None = None


class KerpleLayer(LayerPosition):
    """``r1, r2`` of one layer (or of all layers, when shared)."""

    def __init__(self, shape: EncoderShape) -> None:
        super().__init__()
        heads = shape.num_heads
        self.raw_r1 = nn.Parameter(inverse_softplus((torch.rand(heads) * 2).clamp(min=EPS)))
        self.raw_r2 = nn.Parameter(inverse_softplus(torch.rand(heads).clamp(min=EPS)))
        self.scale = default_scale(shape.head_size)

    def strengths(self) -> tuple[Tensor, Tensor]:
        """``r1, r2 > 0``, each ``[h]``."""
        return nn.functional.softplus(self.raw_r1), nn.functional.softplus(self.raw_r2)

    def score(self, q: Tensor, k: Tensor, ctx: KerpleDistances, qkv: QKVWeights) -> ScoreBias:
        """Dense ``[1, h, L, L]`` (built if asked) and the lookup from the ``[h]`` strengths;
        at per-example positions, ``[B, h, L, L]`` and a lookup reading the positions."""
        r1, r2 = self.strengths()
        if ctx.positions is not None:
            return ScoreBias(
                scale=self.scale,
                build=lambda: kerple_bias(r1, r2, ctx.square().to(r2.dtype)).to(q.dtype),
                lookup=TableLookup(_read_kerple, r1, r2, ctx.positions),
            )

        def build() -> Tensor:
            square = ctx.square().to(r2.dtype)
            bias = -r1[:, None, None] * torch.log1p(r2[:, None, None] * square)
            return bias.to(q.dtype)[None]

        offsets = torch.arange(-(ctx.length - 1), ctx.length, device=q.device, dtype=r2.dtype).abs()
        per_offset = -r1[:, None] * torch.log1p(r2[:, None] * offsets)  # [h, 2L - 1]
        return ScoreBias(scale=self.scale, build=build, lookup=offset_lookup(per_offset))


class KerplePosition(PositionScheme):
    """Bidirectional KERPLE-log: ``-r1 log(1 + r2 |i - j|)`` per head, learned."""

    needs_score_bias = True
    uses_segment_positions = False

    def __init__(self, shape: EncoderShape, *, per_layer: bool = True) -> None:
        super().__init__(shape)
        check("kerple per_layer", per_layer, boolean, option="per_layer")
        self.per_layer = per_layer
        count = shape.num_layers if per_layer else 1
        self.layers = nn.ModuleList(KerpleLayer(shape) for _ in range(count))
        self._distance = DistanceCache()

    def prepare(
        self,
        length: int,
        device: torch.device,
        dtype: torch.dtype,
        positions: Tensor | None = None,
    ) -> KerpleDistances:
        """``|i - j|``, or ``|p_i - p_j|`` given positions, each layer applying its own
        kernel to it (the ``[L, L]`` or ``[B, L, L]`` tensor is built only if a dense bias
        asks)."""
        if positions is not None:
            return KerpleDistances(length, lambda: position_distance(positions), positions)
        return KerpleDistances(length, lambda: self._distance(length, device))

    def layer(self, index: int) -> LayerPosition:
        return self.layers[index if self.per_layer else 0]
