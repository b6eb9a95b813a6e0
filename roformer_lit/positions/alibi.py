"""ALiBi (Press et al. 2022, arXiv 2108.12409), symmetric for a bidirectional encoder.

    A_ij = q_i . k_j / sqrt(d)  -  m_h |i - j|

No position is added to the embeddings; each head ``h`` subtracts a fixed, head-specific
multiple of the query-key distance. The slopes are the paper's geometric sequence: for
``n`` heads, a power of two, ``m_h = 2^(-8h/n)`` for ``h = 1 .. n`` (8 heads:
``1/2, 1/4, ..., 1/256``). For other ``n``, the paper's recipe (its reference
``get_slopes``): the slopes of the closest power of two below, ``p = 2^floor(log2 n)``,
followed by every other slope of ``2p`` heads (``2^(-4h/p)`` for odd ``h``), the first
``n - p`` of them.

Choices the paper leaves open for an encoder, made here:

- Direction: the paper is causal (``j <= i``, bias ``-m (i - j)``). Here the bias is
  symmetric, ``-m |i - j|``, as in MosaicBERT's encoder: a key ``k`` tokens ahead costs as
  much as one ``k`` tokens behind, with one slope per head for both directions.
- Scale: the bias is added to the already-scaled score ``q.k / sqrt(d)`` (the paper's code
  adds it to the scaled logits too).
- ``learnable_slopes`` (off by default: the paper's slopes are fixed and it reports
  learning them did not help): the slopes are then ``m_h = exp(s_h)``, ``s_h`` a parameter
  per head (shared by all layers) initialised to ``log`` of the paper's slopes, so they
  stay positive.

The bias depends on (head, ``i - j``) only: one ``[1, h, L, L]`` tensor built once per
forward and shared by every layer and every example (padding broadcasts it to
``[B, h, L, L]`` inside the softmax kernel). Given positions (randomized positions) the
distance is ``|p_i - p_j|`` per example: a ``[B, h, L, L]`` bias when built whole, read from
the ``[B, L]`` positions entry by entry (or block by block) otherwise. It needs the full score
matrix: softmax only.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

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


def alibi_slopes(num_heads: int) -> list[float]:
    """The paper's slopes for ``num_heads`` heads (its ``get_slopes``), in float64."""

    def power_of_two(n: int) -> list[float]:
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    if math.log2(num_heads).is_integer():
        return power_of_two(num_heads)
    closest = 2 ** math.floor(math.log2(num_heads))
    return power_of_two(closest) + power_of_two(2 * closest)[0::2][: num_heads - closest]


def absolute_distance(length: int, device: torch.device) -> Tensor:
    """``|i - j|`` as an ``[L, L]`` float32 tensor."""
    pos = torch.arange(length, device=device, dtype=torch.float32)
    return (pos[:, None] - pos[None, :]).abs()


def position_distance(positions: Tensor) -> Tensor:
    """``|p_i - p_j|`` per example as a ``[B, L, L]`` float32 tensor."""
    pos = positions.to(torch.float32)
    return (pos[:, :, None] - pos[:, None, :]).abs()


def position_gap(positions: Tensor, b: Tensor, i: Tensor, j: Tensor) -> Tensor:
    """``|p_i - p_j|`` of row ``b`` at broadcasting indices, exact in integers (the entries
    of :func:`position_distance`, read without building its ``[B, L, L]``)."""
    return (positions[b, i] - positions[b, j]).abs()


def _read_position_bias(
    slopes: Tensor, positions: Tensor, b: Tensor, h: Tensor, i: Tensor, j: Tensor
) -> Tensor:
    return -slopes[h] * position_gap(positions, b, i, j).to(slopes.dtype)


class DistanceCache:
    """``|i - j|`` of the last length and device seen (rebuilt while compiling: a cache
    read inside a traced graph would make it recompile)."""

    def __init__(self) -> None:
        self._distance: Tensor | None = None

    def __call__(self, length: int, device: torch.device) -> Tensor:
        if torch.compiler.is_compiling():
            return absolute_distance(length, device)
        distance = self._distance
        if distance is None or distance.shape[0] != length or distance.device != device:
            distance = self._distance = absolute_distance(length, device)
        return distance


class SharedBiasLayer(LayerPosition):
    """Every layer adds the same per-forward bias: the context, a :class:`ScoreBias`."""

    def score(self, q: Tensor, k: Tensor, ctx: ScoreBias, qkv: QKVWeights) -> ScoreBias:
        return ctx


class AlibiPosition(PositionScheme):
    """Symmetric ALiBi: ``-m_h |i - j|`` with the paper's slopes (optionally learned)."""

    needs_score_bias = True
    uses_segment_positions = False

    def __init__(self, shape: EncoderShape, *, learnable_slopes: bool = False) -> None:
        super().__init__(shape)
        check("alibi learnable_slopes", learnable_slopes, boolean, option="learnable_slopes")
        self.learnable_slopes = learnable_slopes
        slopes = torch.tensor(alibi_slopes(shape.num_heads), dtype=torch.float64)
        if learnable_slopes:
            self.log_slopes = nn.Parameter(slopes.log().float())
        else:
            self.register_buffer("fixed_slopes", slopes.float(), persistent=False)
        self._distance = DistanceCache()
        self.scale = default_scale(shape.head_size)
        self._layer = SharedBiasLayer()

    def slopes(self) -> Tensor:
        """``m_h``, shape ``[h]``."""
        return self.log_slopes.exp() if self.learnable_slopes else self.fixed_slopes

    def prepare(
        self,
        length: int,
        device: torch.device,
        dtype: torch.dtype,
        positions: Tensor | None = None,
    ) -> ScoreBias:
        """The bias every layer adds: dense ``[1, h, L, L]`` (built if asked) and its lookup
        from the ``[h, 2L - 1]`` values ``-m_h |i - j|``; given positions, ``[B, h, L, L]``
        and a lookup computing ``|p_i - p_j|`` from the positions at the entries it reads."""
        slopes = self.slopes()
        if positions is not None:
            return ScoreBias(
                scale=self.scale,
                build=lambda: (-slopes[:, None, None] * position_distance(positions)[:, None]).to(
                    dtype
                ),
                lookup=TableLookup(_read_position_bias, slopes, positions),
            )

        def build() -> Tensor:
            distance = self._distance(length, device)
            return (-slopes[:, None, None] * distance).to(dtype)[None]

        offsets = torch.arange(-(length - 1), length, device=device, dtype=slopes.dtype).abs()
        per_offset = -slopes[:, None] * offsets  # [h, 2L - 1]
        return ScoreBias(scale=self.scale, build=build, lookup=offset_lookup(per_offset))

    def layer(self, index: int) -> LayerPosition:
        return self._layer
