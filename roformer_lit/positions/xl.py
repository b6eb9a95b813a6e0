"""Transformer-XL relative attention (Dai et al. 2019), made bidirectional for an encoder.

    A_ij = [(q_i + u) . k_j  +  (q_i + v) . (W_r R_{i-j})] / sqrt(d)

``R_p = [sin(p * inv_freq), cos(p * inv_freq)]`` (concatenated halves) is a fixed sinusoid of
the relative distance ``p = i - j`` over all ``2L - 1`` distances ``-(L-1) .. L-1``; ``W_r``
is a learned projection, ``u`` and ``v`` learned per-head biases (per layer, or shared by
all layers). The bias needs the full score matrix: softmax only.

The position term is computed in blocks of ``n`` query rows. Rows ``[i0, i0 + n)`` meet only
the ``n + L - 1`` distances ``i0 + n - 1`` down to ``i0 - (L-1)``: one
``[B, h, n, n + L - 1]`` product ``(q + v) @ (W_r R)^T`` per block, then the relative shift
(Transformer-XL's trick, both directions): with the distances in descending order, entry
``(r, j)`` sits at column ``n - 1 - r + j``, a strided view of the product. Against one
``[B, h, L, 2L - 1]`` product and a gather, this does ``(L + n) / 2L`` of the work, keeps
the transient ``n / L`` the size, and saves nothing large for backward (a view keeps only
its geometry; a gather would keep its whole input). No ``[L, L, d]`` tensor is built. On
long rows the attention kernel asks for one block of rows at a time (``rows``) and the
``[B, h, L, L]`` bias is never built; below that, ``build`` concatenates all blocks.

Given positions (randomized positions), the distance is ``p_i - p_j`` per example and the
table is no longer Toeplitz. With ``S_i = sin(p_i f)``, ``C_i = cos(p_i f)`` and the
query's position vector split into its sine and cosine halves, ``[s_i, c_i] = W_r^T
(q_i + v)`` (per head), the angle-difference identities give

    (q_i + v) . W_r R_{p_i - p_j} = [s_i S_i + c_i C_i,  c_i S_i - s_i C_i] . [C_j, S_j]

one ``[B, h, L, H] @ [B, 1, H, L]`` product from per-token sines and cosines (``h / 2``
times the work of the shifted product, no table over all distances up to the range).
"""

from __future__ import annotations

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
    sinusoid_angles,
)
from roformer_lit.score_bias import RowPieces, Runs, run_pieces
from roformer_lit.validation import boolean, check

#: Query rows per block of the position term.
BLOCK_ROWS = 256


def relative_sinusoid(length: int, dim: int) -> Tensor:
    """``R[k] = [sin(p f), cos(p f)]`` for ``p = L - 1 - k``, i.e. the distances in
    descending order ``L-1 .. -(L-1)``: ``[2L-1, dim]``."""
    distances = torch.arange(length - 1, -length, -1)
    angles = sinusoid_angles(distances, dim)
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


def shift_relative(by_distance: Tensor, length: int) -> Tensor:
    """``out[..., r, j] = by_distance[..., r, n - 1 - r + j]`` for a contiguous
    ``[B, h, n, n + L - 1]`` product whose columns run over descending distances: the
    entry of query ``r`` and key ``j`` as a strided view, no copy."""
    batch, heads, rows, width = by_distance.shape
    by_distance = by_distance.contiguous()  # a fresh matmul output: already, at offset 0
    return by_distance.as_strided(
        (batch, heads, rows, length), (heads * rows * width, rows * width, width - 1, 1), rows - 1
    )


class XLLayer(LayerPosition):
    """``u``, ``v`` and ``W_r`` of one layer (or of all layers, when shared)."""

    def __init__(self, shape: EncoderShape) -> None:
        super().__init__()
        self.num_heads, self.head_size = shape.num_heads, shape.head_size
        self.r_proj = nn.Linear(shape.hidden_size, shape.hidden_size, bias=False)
        self.u = nn.Parameter(torch.zeros(shape.num_heads, 1, shape.head_size))
        self.v = nn.Parameter(torch.zeros(shape.num_heads, 1, shape.head_size))
        nn.init.normal_(self.u, std=0.02)
        nn.init.normal_(self.v, std=0.02)

    def project(self, rel: Tensor) -> Tensor:
        """``W_r R`` per head: ``[h, D, d]`` for ``D`` rows of sinusoids ``[D, H]``."""
        return self.r_proj(rel).unflatten(-1, (self.num_heads, self.head_size)).transpose(0, 1)

    def score(
        self, q: Tensor, k: Tensor, ctx: Tensor | tuple[Tensor, Tensor], qkv: QKVWeights
    ) -> ScoreBias:
        if isinstance(ctx, tuple):
            return self.score_at_positions(q, k, *ctx)
        rel = ctx  # [2L-1, H], distances L-1 .. -(L-1)
        scale = default_scale(self.head_size)
        batch, heads, length, _ = q.shape
        r = self.project(rel)
        # the scale goes on the small operands, never on an [L, L] tensor
        content_bias = (k @ (self.u * scale).transpose(-1, -2)).transpose(-1, -2)  # [B, h, 1, L]
        queries = (q + self.v) * scale
        query_rows = RowPieces(queries, 2, BLOCK_ROWS)  # a block's gradient: its pieces'

        def rows(start: int, stop: int) -> Tensor:
            """Query rows ``start .. stop - 1`` against every key: ``[B, h, r, L]``."""
            count = stop - start
            # distances stop - 1 down to start - (L - 1)
            distances = r[:, length - count - start : 2 * length - 1 - start]
            by_distance = query_rows.rows(start, stop) @ distances.transpose(-1, -2)
            return shift_relative(by_distance, length) + content_bias

        def build() -> Tensor:
            # concatenated, not written into one tensor in place: the backward of each
            # in-place block write copies the whole [B, h, L, L] gradient (CopySlices),
            # which made XL's step 2.8x nope's at 2,048 tokens; the price is the blocks and
            # their concatenation held at once while it is built
            starts = range(0, length, BLOCK_ROWS)
            return torch.cat([rows(s, min(s + BLOCK_ROWS, length)) for s in starts], dim=2)

        def squares(runs: Runs) -> list[list[Tensor]]:
            """Each document among itself, ``[h, n, n]``, from the ``2n - 1`` distances
            ``n - 1 .. -(n - 1)`` alone (projected per length: a slice of ``r`` per document
            would write a zero-filled gradient of all ``2L - 1`` rows for each)."""
            tables: dict[int, Tensor] = {}
            out = []
            for q_row, c_row, row in zip(
                queries.unbind(0), content_bias.unbind(0), runs, strict=True
            ):
                pieces = []
                for (start, stop), q_d, c_d in zip(
                    row, run_pieces(q_row, 1, row), run_pieces(c_row, 2, row), strict=True
                ):
                    count = stop - start
                    if count not in tables:
                        distances = rel[length - count : length + count - 1]
                        tables[count] = self.project(distances)
                    by_distance = q_d @ tables[count].transpose(-1, -2)  # [h, n, 2n - 1]
                    pieces.append(shift_relative(by_distance[None], count)[0] + c_d)
                out.append(pieces)
            return out

        return ScoreBias(
            build=build,
            rows=rows,
            scale=scale,
            rows_read=(*query_rows.pieces, r, content_bias),
            squares=squares,
        )

    def score_at_positions(self, q: Tensor, k: Tensor, sin: Tensor, cos: Tensor) -> ScoreBias:
        """The ``[B, h, L, L]`` score bias at per-example positions, from their sines and
        cosines ``[B, L, H/2]`` (the identity in the module docstring)."""
        scale = default_scale(self.head_size)
        content_bias = (k @ (self.u * scale).transpose(-1, -2)).transpose(-1, -2)  # [B, h, 1, L]
        queries = (q + self.v) * scale
        weight = self.r_proj.weight.view(self.num_heads, self.head_size, -1)  # [h, d, H]
        by_sin, by_cos = (queries @ weight).chunk(2, dim=-1)  # [B, h, L, H/2] each
        sin_i, cos_i = sin[:, None], cos[:, None]
        by_query = torch.cat([by_sin * sin_i + by_cos * cos_i, by_cos * sin_i - by_sin * cos_i], -1)
        by_key = torch.cat([cos, sin], dim=-1)[:, None].transpose(-1, -2)  # [B, 1, H, L]

        def rows(start: int, stop: int) -> Tensor:
            return by_query[:, :, start:stop] @ by_key + content_bias

        def squares(runs: Runs) -> list[list[Tensor]]:
            out = []
            for row, queries_b, keys_b, content_b in zip(
                runs, by_query.unbind(0), by_key.unbind(0), content_bias.unbind(0), strict=True
            ):
                out.append(
                    [
                        q_d @ k_d + c_d
                        for q_d, k_d, c_d in zip(
                            run_pieces(queries_b, 1, row),
                            run_pieces(keys_b, 2, row),
                            run_pieces(content_b, 2, row),
                            strict=True,
                        )
                    ]
                )
            return out

        return ScoreBias(
            build=lambda: by_query @ by_key + content_bias,
            rows=rows,
            scale=scale,
            rows_read=(by_query, by_key, content_bias),
            squares=squares,
        )


class TransformerXLPosition(PositionScheme):
    """Bidirectional Transformer-XL relative attention; ``per_layer`` picks u/v/W_r sharing."""

    needs_score_bias = True
    uses_segment_positions = False

    def __init__(self, shape: EncoderShape, *, per_layer: bool = True) -> None:
        super().__init__(shape)
        if shape.hidden_size % 2:
            raise ConfigError(f"xl needs an even hidden_size, got {shape.hidden_size}")
        check("xl per_layer", per_layer, boolean, option="per_layer")
        self.per_layer = per_layer
        count = shape.num_layers if per_layer else 1
        self.layers = nn.ModuleList(XLLayer(shape) for _ in range(count))
        self._table: Tensor | None = None  # the relative sinusoid of the last length seen

    def prepare(
        self,
        length: int,
        device: torch.device,
        dtype: torch.dtype,
        positions: Tensor | None = None,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """The relative sinusoid ``[2L - 1, H]``; given positions, their sines and cosines
        ``[B, L, H/2]`` each."""
        if positions is not None:
            angles = sinusoid_angles(positions.flatten(), self.shape.hidden_size)
            angles = angles.unflatten(0, positions.shape)
            return angles.sin().to(dtype), angles.cos().to(dtype)
        if torch.compiler.is_compiling():  # traced once into the graph (a cache would recompile)
            return relative_sinusoid(length, self.shape.hidden_size).to(device, dtype)
        table = self._table
        if table is None or table.shape[0] != 2 * length - 1 or table.device != device:
            table = self._table = relative_sinusoid(length, self.shape.hidden_size).to(device)
        return table.to(dtype)

    def layer(self, index: int) -> LayerPosition:
        return self.layers[index if self.per_layer else 0]
