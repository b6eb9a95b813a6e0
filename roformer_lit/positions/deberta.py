"""DeBERTa disentangled attention (He et al. 2021), v2/v3 layout as in HF ``DebertaV2``.

    A_ij = [q_i . k_j  +  q_i . Kr[delta(i,j)]  +  k_j . Qr[delta(i,j)]] / sqrt(d (1 + n))

``n`` is the number of position terms switched on (c2p, p2c; 2 gives ``sqrt(3d)``).
``delta(i, j) = clamp(bucket(i - j) + S, 0, 2S - 1)`` with log buckets: distances with
``|i-j| <= S/2`` stay exact, longer ones are compressed logarithmically up to
``max_relative_positions``. ``P[2S, H]`` is one relative table shared by all layers and
layer-normed once per forward; ``Kr = key_proj(P)`` and ``Qr = query_proj(P)`` use each
layer's own projections (``share_att_key``). The p2c term is indexed with ``delta(i, j)``
as in HF and Microsoft's code (the paper writes ``delta(j, i)``).

Each term is one ``[B, h, L, 2S]`` product gathered with the ``[L, L]`` index; no
``[L, L, d]`` tensor is built. On long rows the gather runs per block of query rows
(``rows``), with that block's ``[r, L]`` index from the ``[2L - 1]`` bucket of each offset:
the ``[L, L]`` index and the ``[B, h, L, L]`` bias are then never built. Given positions (randomized positions), the index is
``delta`` of ``p_i - p_j`` per example, ``[B, L, L]``. The bias needs the full score
matrix: softmax only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import torch
from torch import Tensor, nn

from roformer_lit.errors import ConfigError
from roformer_lit.positions.base import (
    EncoderShape,
    LayerPosition,
    PositionScheme,
    QKVWeights,
    ScoreBias,
)
from roformer_lit.score_bias import RowPieces, Runs, run_pieces
from roformer_lit.validation import Rule, at_least_int, boolean, check, optional

#: Query rows per piece of the c2p products a block of rows reads (the kernel's default
#: block of a long row, ``SoftmaxAttention.bias_block``).
PIECE_ROWS = 256
#: ``position_buckets``: the table has ``2 * position_buckets`` rows, half per direction.
EVEN_BUCKETS = Rule("an even integer >= 2", lambda v: at_least_int(2).accepts(v) and v % 2 == 0)


def log_bucket(relative: Tensor, buckets: int, max_position: int) -> Tensor:
    """DeBERTa's log-bucketed relative distance (HF ``make_log_bucket_position``)."""
    sign = torch.sign(relative)
    mid = buckets // 2
    near = (relative < mid) & (relative > -mid)
    abs_pos = torch.where(near, torch.full_like(relative, mid - 1), relative.abs())
    # float32 throughout, as HF computes it, so bucket boundaries match exactly
    log_ratio = torch.log(torch.tensor((max_position - 1) / mid))
    log_pos = torch.ceil(torch.log(abs_pos / mid) / log_ratio * (mid - 1)) + mid
    return torch.where(abs_pos <= mid, relative.to(log_pos.dtype), log_pos * sign).long()


def deberta_index(length: int, buckets: int, max_position: int, device: torch.device) -> Tensor:
    """``delta[i, j] = clamp(bucket(i - j) + S, 0, 2S - 1)``, shape ``[L, L]``."""
    pos = torch.arange(length, device=device)
    bucketed = log_bucket(pos[:, None] - pos[None, :], buckets, max_position)
    return (bucketed + buckets).clamp(0, 2 * buckets - 1)


def position_index(
    positions: Tensor, buckets: int, max_position: int, rows: slice = slice(None)
) -> Tensor:
    """``delta`` of ``p_i - p_j`` per example, ``[B, L, L]`` long; given ``rows``, those
    query rows only, ``[B, r, L]``."""
    relative = positions[:, rows, None] - positions[:, None, :]
    bucketed = log_bucket(relative, buckets, max_position)
    return (bucketed + buckets).clamp(0, 2 * buckets - 1)


def offset_buckets(length: int, buckets: int, max_position: int, device: torch.device) -> Tensor:
    """``delta`` of every offset ``i - j = -(L-1) .. L-1``: ``[2L - 1]`` long."""
    offsets = torch.arange(-(length - 1), length, device=device)
    return (log_bucket(offsets, buckets, max_position) + buckets).clamp(0, 2 * buckets - 1)


class DebertaLayer(LayerPosition):
    """c2p and p2c terms of one layer, through that layer's own q/k projections."""

    def __init__(self, shape: EncoderShape, c2p: bool, p2c: bool) -> None:
        super().__init__()
        self.c2p, self.p2c = c2p, p2c
        self.scale = 1.0 / math.sqrt(shape.head_size * (1 + int(c2p) + int(p2c)))

    def score(
        self,
        q: Tensor,
        k: Tensor,
        ctx: tuple[Tensor, Callable[..., Tensor], Tensor | None],
        qkv: QKVWeights,
    ) -> ScoreBias:
        """The two ``[h, B, L, 2S]`` products; the dense bias gathers them with the ``[L, L]``
        index (built if asked), the lookup indexes them with the bucket of ``i - j``; with
        a per-example ``[B, L, L]`` index (``offsets`` None) both read that index."""
        # [2S, H] layer-normed; a call giving [L, L] or [B, L, L]; [2L - 1] or None
        table, index_of, offsets = ctx
        batch, heads, length, head_size = q.shape
        # Heads-major [h, B*L, d] operands: plain bmm against the [h, 2S, d] tables (no
        # broadcast, so no reduction over the batch in backward); the scale goes on these
        # small operands, never on an [L, L] tensor.
        by_query = by_key = None
        if self.c2p:
            key_table = qkv.project(table, "key")  # [h, 2S, d]
            queries = (q.transpose(0, 1) * self.scale).reshape(heads, batch * length, head_size)
            by_query = torch.bmm(queries, key_table.transpose(1, 2)).view(heads, batch, length, -1)
        if self.p2c:
            query_table = qkv.project(table, "query")
            keys = (k.transpose(0, 1) * self.scale).reshape(heads, batch * length, head_size)
            by_key = torch.bmm(query_table, keys.transpose(1, 2))  # [h, 2S, B*L]
            by_key = by_key.view(heads, -1, batch, length).transpose(1, 2)  # [h, B, 2S, L(j)]

        def picked(queries: Tensor | None, keys: Tensor | None, index: Tensor) -> Tensor:
            """``q_i . Kr[delta(i, j)] + k_j . Qr[delta(i, j)]`` for the queries' products
            ``[h, .., r, 2S]`` and the keys' ``[h, .., 2S, c]`` (each None where its term is
            off), each gathered with the index ``[h, .., r, c]``."""
            bias = None
            if queries is not None:  # [i, j] = q_i . Kr[delta(i, j)]
                bias = queries.gather(-1, index)
            if keys is not None:  # [i, j] = k_j . Qr[delta(i, j)]
                p2c = keys.gather(-2, index)
                bias = p2c if bias is None else bias + p2c
            assert bias is not None
            return bias

        # a block of rows reads its c2p rows from pieces cut once (RowPieces)
        query_rows = None if by_query is None else RowPieces(by_query, 2, PIECE_ROWS)

        def gathered(index: Tensor, start: int, stop: int) -> Tensor:
            """Rows ``start .. stop - 1`` of the bias, ``[B, h, r, L]``, from their
            ``[r, L]`` or ``[B, r, L]`` index."""
            gather_index = index.expand(heads, batch, stop - start, length)
            queries = None if query_rows is None else query_rows.rows(start, stop)
            return picked(queries, by_key, gather_index).transpose(0, 1)

        def build() -> Tensor:
            gather_index = index_of().expand(heads, batch, length, length)
            return picked(by_query, by_key, gather_index).transpose(0, 1)

        def rows(start: int, stop: int) -> Tensor:
            if offsets is None:  # per-example positions: this block's own index
                return gathered(index_of(slice(start, stop)), start, stop)
            i = torch.arange(start, stop, device=q.device)[:, None]
            j = torch.arange(length, device=q.device)[None, :]
            return gathered(offsets[i - j + length - 1], start, stop)

        def lookup(b: Tensor, h: Tensor, i: Tensor, j: Tensor) -> Tensor:
            delta = index_of()[b, i, j] if offsets is None else offsets[i - j + length - 1]
            c2p = None if by_query is None else by_query[h, b, i, delta]
            p2c = None if by_key is None else by_key[h, b, delta, j]
            if c2p is None:
                return p2c
            return c2p if p2c is None else c2p + p2c

        def squares(runs: Runs) -> list[list[Tensor]]:
            """Each document among itself, ``[h, n, n]``: the buckets of offsets
            ``-(n - 1) .. n - 1`` alone, from each row's products cut once."""
            none: list[None] = [None] * len(runs)
            query_rows = none if by_query is None else by_query.unbind(1)  # [h, L, 2S] each
            key_rows = none if by_key is None else by_key.unbind(1)  # [h, 2S, L] each
            out = []
            for row, queries, keys in zip(runs, query_rows, key_rows, strict=True):
                cut_queries = [None] * len(row) if queries is None else run_pieces(queries, 1, row)
                cut_keys = [None] * len(row) if keys is None else run_pieces(keys, 2, row)
                pieces = []
                for (start, stop), q_d, k_d in zip(row, cut_queries, cut_keys, strict=True):
                    within = torch.arange(stop - start, device=q.device)
                    index = offsets[within[:, None] - within[None, :] + length - 1]
                    pieces.append(picked(q_d, k_d, index.expand(heads, stop - start, stop - start)))
                out.append(pieces)
            return out

        pieces = () if query_rows is None else query_rows.pieces
        products = (*pieces, *(() if by_key is None else (by_key,)))
        return ScoreBias(
            scale=self.scale,
            build=build,
            lookup=lookup,
            rows=rows,
            rows_read=products,
            squares=None if offsets is None else squares,
        )


class DebertaPosition(PositionScheme):
    """Disentangled relative attention; ``c2p`` / ``p2c`` switch each term for ablations."""

    needs_score_bias = True
    uses_segment_positions = False
    #: into its log buckets and past its last bucket on short rows
    test_kwargs = {"position_buckets": 8, "max_relative_positions": 32}

    def __init__(
        self,
        shape: EncoderShape,
        *,
        position_buckets: int = 256,
        max_relative_positions: int | None = None,
        c2p: bool = True,
        p2c: bool = True,
    ) -> None:
        super().__init__(shape)
        check("deberta c2p", c2p, boolean, option="c2p")
        check("deberta p2c", p2c, boolean, option="p2c")
        check("deberta position_buckets", position_buckets, EVEN_BUCKETS, option="position_buckets")
        if not (c2p or p2c):
            raise ConfigError(
                "deberta with c2p=false and p2c=false has no position term; use position=nope"
            )
        self.position_buckets = position_buckets
        # HF's default is max_position_embeddings; never let it fall inside the exact range
        default_max = max(shape.max_positions, position_buckets, position_buckets // 2 + 2)
        # (its log buckets need distances beyond the exact range |d| < position_buckets / 2)
        check(
            "deberta max_relative_positions",
            max_relative_positions,
            optional(_past_the_exact_offsets(position_buckets)),
            "max_relative_positions",
        )
        self.max_relative_positions = (
            default_max if max_relative_positions is None else max_relative_positions
        )
        self.c2p, self.p2c = c2p, p2c
        self.rel_embeddings = nn.Embedding(2 * position_buckets, shape.hidden_size)
        self.rel_norm = nn.LayerNorm(shape.hidden_size, eps=shape.layer_norm_eps)
        self._layer = DebertaLayer(shape, c2p, p2c)
        self._index: Tensor | None = None  # the [L, L] index of the last length seen
        self._offsets: Tensor | None = None  # the [2L - 1] offset buckets of the last length

    def prepare(
        self,
        length: int,
        device: torch.device,
        dtype: torch.dtype,
        positions: Tensor | None = None,
    ) -> tuple[Tensor, Callable[..., Tensor], Tensor | None]:
        """The layer-normed ``[2S, H]`` table, a call giving the ``[L, L]`` bucket index
        (built only when read: the dense bias) and the bucket of every offset
        ``i - j = -(L-1) .. L-1`` (``[2L - 1]``); given positions, a call giving the
        per-example ``[B, L, L]`` index (or ``[B, r, L]`` of some query rows), built when
        read, and None."""
        table = self.rel_norm(self.rel_embeddings.weight).to(dtype)
        buckets, max_position = self.position_buckets, self.max_relative_positions
        if positions is not None:

            def per_example(rows: slice = slice(None)) -> Tensor:
                return position_index(positions, buckets, max_position, rows)

            return table, per_example, None
        return table, lambda: self._square_index(length, device), self._offset_index(length, device)

    def _square_index(self, length: int, device: torch.device) -> Tensor:
        """``delta`` over ``[L, L]``, cached for the last length (rebuilt while tracing:
        a cache read inside a traced graph would make it recompile)."""
        build = partial(
            deberta_index, length, self.position_buckets, self.max_relative_positions, device
        )
        if torch.compiler.is_compiling():
            return build()
        cached = self._index
        if cached is None or cached.shape[0] != length or cached.device != device:
            cached = self._index = build()
        return cached

    def _offset_index(self, length: int, device: torch.device) -> Tensor:
        """``delta`` of every offset, ``[2L - 1]``, cached for the last length."""
        build = partial(
            offset_buckets, length, self.position_buckets, self.max_relative_positions, device
        )
        if torch.compiler.is_compiling():
            return build()
        cached = self._offsets
        if cached is None or cached.shape[0] != 2 * length - 1 or cached.device != device:
            cached = self._offsets = build()
        return cached

    def layer(self, index: int) -> LayerPosition:
        return self._layer


def _past_the_exact_offsets(position_buckets: int) -> Rule:
    """``max_relative_positions``' range, saying where its bound comes from: the log
    buckets start past the exact offsets ``|d| < position_buckets // 2``."""
    low = position_buckets // 2 + 2
    rule = at_least_int(low)
    return Rule(
        f"{rule.expected} (position_buckets // 2 + 2: past the exact offsets)",
        rule.accepts,
        rule.integers,
    )
