"""T5's bucketed relative position bias (Raffel et al. 2020), bidirectional as in T5's encoder.

    A_ij = q_i . k_j / sqrt(d)  +  b[bucket(j - i), h]

``b`` is a learned ``[num_buckets, h]`` table of scalars. ``bucket`` is HF
``T5Attention._relative_position_bucket(j - i, bidirectional=True, num_buckets,
max_distance)``: half the buckets per direction (keys after the query, ``j > i``, take the
upper half); in each half, distances below ``num_buckets / 4`` get a bucket each, larger
ones share logarithmically wider buckets up to ``max_distance``, and every distance from
``max_distance`` on falls in the last bucket of its direction. Computed in float32 and
truncated as HF does, so the buckets equal HF's exactly.

Choices, stated:

- Sharing: one table for all layers, as T5 (HF computes it in the first layer and hands it
  on); ``per_layer: true`` gives every layer its own table.
- Scale: T5 has no ``1/sqrt(d)`` (it folds it into its initialisation); this encoder keeps
  ``q.k / sqrt(d)`` for every scheme and adds the bias to the scaled score, unscaled.
- Initialisation: the table is an ``nn.Embedding``, so it gets the model's BERT init
  (normal, std ``init_std``), not T5's ``d_model^-0.5``.

The bias depends on (head, ``i - j``) only: its ``[h, 2L - 1]`` values per offset are read
by the fused CPU kernel through a strided view (from 1,024 tokens), per block of rows on
long rows elsewhere, and the dense ``[1, h, L, L]`` tensor (per layer with
``per_layer``, shared by the batch) is built only for the dense path; given positions
(randomized positions), ``bucket(p_j - p_i)`` per example gives a ``[B, h, L, L]`` one.
Softmax only.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from roformer_lit.errors import ConfigError
from roformer_lit.positions.base import (
    EncoderShape,
    LayerPosition,
    PositionScheme,
    QKVWeights,
    ScoreBias,
    default_scale,
)
from roformer_lit.score_bias import offset_lookup
from roformer_lit.validation import Rule, at_least_int, boolean, check

EVEN_BUCKETS = Rule("an even integer >= 4", lambda v: at_least_int(4).accepts(v) and v % 2 == 0)


def t5_bucket(relative: Tensor, num_buckets: int, max_distance: int) -> Tensor:
    """The bidirectional T5 bucket of ``relative = j - i`` (HF's computation, step by step)."""
    half = num_buckets // 2
    buckets = (relative > 0).long() * half
    distance = relative.abs()
    max_exact = half // 2
    is_small = distance < max_exact
    large = max_exact + (
        torch.log(distance.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (half - max_exact)
    ).to(torch.long)
    large = torch.clamp(large, max=half - 1)
    return buckets + torch.where(is_small, distance, large)


def bucket_index(length: int, num_buckets: int, max_distance: int, device: torch.device) -> Tensor:
    """``bucket(j - i)`` as an ``[L, L]`` long tensor (row ``i``, column ``j``)."""
    pos = torch.arange(length, device=device)
    return t5_bucket(pos[None, :] - pos[:, None], num_buckets, max_distance)


def offset_buckets(
    length: int, num_buckets: int, max_distance: int, device: torch.device
) -> Tensor:
    """``bucket(j - i)`` for every offset ``j - i = -(L-1) .. L-1``: ``[2L - 1]`` long."""
    offsets = torch.arange(-(length - 1), length, device=device)
    return t5_bucket(offsets, num_buckets, max_distance)


def position_bucket_index(
    positions: Tensor, num_buckets: int, max_distance: int, rows: slice = slice(None)
) -> Tensor:
    """``bucket(p_j - p_i)`` per example: ``[B, L, L]`` long (row ``i``, column ``j``); given
    ``rows``, those rows only, ``[B, r, L]``."""
    relative = positions[:, None, :] - positions[:, rows, None]
    return t5_bucket(relative, num_buckets, max_distance)


def t5_bias(
    table: nn.Embedding,
    index: Callable[..., Tensor],
    offsets: Tensor | None,
    dtype: torch.dtype,
    scale: float,
) -> ScoreBias:
    """The bias ``table[bucket(j - i), h]``: dense ``[1, h, L, L]`` from the ``[L, L]`` index
    ``index()`` (both built only if asked), lookup from the ``[2L - 1, h]`` per-offset
    values; for per-example positions (``offsets`` None), ``[B, h, L, L]`` from the
    ``[B, L, L]`` index, a lookup reading it, and blocks of rows from their own
    ``[B, r, L]`` index ``index(slice(start, stop))``."""
    if offsets is None:

        def lookup(b: Tensor, h: Tensor, i: Tensor, j: Tensor) -> Tensor:
            return table.weight[index()[b, i, j], h]

        def rows(start: int, stop: int) -> Tensor:
            return table(index(slice(start, stop))).permute(0, 3, 1, 2).to(dtype)

        return ScoreBias(
            scale=scale,
            build=lambda: table(index()).permute(0, 3, 1, 2).to(dtype),
            lookup=lookup,
            rows=rows,
        )

    def build() -> Tensor:
        return table(index()).permute(2, 0, 1).to(dtype)[None]

    # offsets holds bucket(j - i) for j - i = -(L-1) .. L-1; flipped: column i - j + L - 1
    buckets = offsets.flip(0)
    per_offset = table(buckets).t()  # [h, 2L - 1]: each column reads its bucket's row
    return ScoreBias(scale=scale, build=build, lookup=offset_lookup(per_offset, buckets))


class T5Layer(LayerPosition):
    """Adds the shared bias, or its own table's with ``per_layer``."""

    def __init__(self, shape: EncoderShape, table: nn.Embedding | None) -> None:
        super().__init__()
        self.table = table
        self.scale = default_scale(shape.head_size)

    def score(
        self,
        q: Tensor,
        k: Tensor,
        ctx: tuple[Callable[..., Tensor], Tensor | None, ScoreBias | None],
        qkv: QKVWeights,
    ) -> ScoreBias:
        index, offsets, shared = ctx
        if self.table is None:
            assert shared is not None
            return shared
        return t5_bias(self.table, index, offsets, q.dtype, self.scale)


class T5Position(PositionScheme):
    """T5 relative bias: a learned scalar per (bidirectional log bucket, head)."""

    needs_score_bias = True
    uses_segment_positions = False
    #: into its log buckets and past its last bucket on short rows
    test_kwargs = {"num_buckets": 8, "max_distance": 16}

    def __init__(
        self,
        shape: EncoderShape,
        *,
        num_buckets: int = 32,
        max_distance: int = 128,
        per_layer: bool = False,
    ) -> None:
        super().__init__(shape)
        check("t5 num_buckets", num_buckets, EVEN_BUCKETS, option="num_buckets")
        check("t5 per_layer", per_layer, boolean, option="per_layer")
        exact = num_buckets // 4
        if not at_least_int(exact + 1).accepts(max_distance):
            raise ConfigError(
                f"t5 max_distance must be an integer > num_buckets / 4 = {exact} (the last "
                f"exactly represented distance), got {max_distance!r}",
                option="max_distance",
            )
        self.num_buckets, self.max_distance, self.per_layer = num_buckets, max_distance, per_layer
        if per_layer:
            self.table = None
            self.layers = nn.ModuleList(
                T5Layer(shape, nn.Embedding(num_buckets, shape.num_heads))
                for _ in range(shape.num_layers)
            )
        else:
            self.table = nn.Embedding(num_buckets, shape.num_heads)
            self.layers = nn.ModuleList([T5Layer(shape, None)])
        self._index: Tensor | None = None  # the [L, L] bucket index of the last length seen
        self._offsets: Tensor | None = None  # the [2L - 1] offset buckets of the last length

    def _bucket_index(self, length: int, device: torch.device) -> Tensor:
        """The ``[L, L]`` bucket index (only the dense bias reads it: built when asked)."""
        if torch.compiler.is_compiling():  # traced into the graph (a cache would recompile)
            return bucket_index(length, self.num_buckets, self.max_distance, device)
        cached = self._index
        if cached is None or cached.shape[0] != length or cached.device != device:
            cached = self._index = bucket_index(length, self.num_buckets, self.max_distance, device)
        return cached

    def _offset_buckets(self, length: int, device: torch.device) -> Tensor:
        """The bucket of each offset ``j - i = -(L-1) .. L-1``: ``[2L - 1]``."""
        if torch.compiler.is_compiling():
            return offset_buckets(length, self.num_buckets, self.max_distance, device)
        cached = self._offsets
        if cached is None or cached.shape[0] != 2 * length - 1 or cached.device != device:
            cached = self._offsets = offset_buckets(
                length, self.num_buckets, self.max_distance, device
            )
        return cached

    def prepare(
        self,
        length: int,
        device: torch.device,
        dtype: torch.dtype,
        positions: Tensor | None = None,
    ) -> tuple[Callable[..., Tensor], Tensor | None, ScoreBias | None]:
        """The bucket index (a call: the ``[L, L]`` one is built only for the dense bias),
        the per-offset buckets and, when shared, the bias every layer adds; given positions,
        a call giving the per-example ``[B, L, L]`` index (or ``[B, r, L]`` of some rows),
        built when read, and no per-offset one."""
        if positions is None:
            offsets = self._offset_buckets(length, device)

            def index() -> Tensor:
                return self._bucket_index(length, device)
        else:
            offsets = None

            def index(rows: slice = slice(None)) -> Tensor:
                return position_bucket_index(positions, self.num_buckets, self.max_distance, rows)

        shared = None
        if self.table is not None:
            shared = t5_bias(self.table, index, offsets, dtype, self.layers[0].scale)
        return index, offsets, shared

    def layer(self, index: int) -> LayerPosition:
        return self.layers[index if self.per_layer else 0]
