"""A scheme's additive score bias, in the forms attention kernels consume.

    softmax(q k^T * scale + bias) v,   bias[b, h, i, j] = lookup(b, h, i, j)

- **dense**: ``bias``, a float tensor ``[B or 1, h, L or 1, L]``, built on first access
  when the scheme gives ``build`` (so a kernel that never asks for it never pays for it);
- **lookup**: ``lookup(b, h, q_idx, kv_idx)``, the same entry computed from small tables
  (a slope per head, a scalar per distance bucket, a ``[B, h, L, 2S]`` product). The
  indices are integer tensors that broadcast against each other: 0-d inside
  FlexAttention's ``score_mod``, index grids in :func:`dense_from_lookup`. A kernel that
  computes scores tile by tile (FlexAttention) uses it and never builds ``[L, L]``;
- **rows**: ``rows(start, stop)``, the bias of queries ``start .. stop - 1`` against every
  key, ``[B or 1, h, stop - start, L]``, for a bias with no per-entry lookup but a cheap
  block of rows (an MLP of the distance, a shifted product of the queries with a table);
- **squares**: ``squares(runs)``, for each row ``b`` and each run ``[start, stop)`` of
  ``runs[b]`` (ascending, not overlapping), the bias among those tokens as queries and as
  keys, ``[h, n, n]`` for ``n = stop - start``: the square ``bias[b, :, start:stop,
  start:stop]`` of one packed document, from the document's own tokens (``n^2`` entries,
  not ``n L``). One call for every document of a layer, so that a scheme cuts each of its
  per-token tensors once (:func:`run_pieces`), not once per document.

:func:`bias_rows` gives a block of rows from whichever compact form a bias has, so a kernel
that attends one block of queries at a time (long rows, in
:mod:`roformer_lit.attention.query_blocks`) never builds ``[L, L]``; :func:`bias_squares`
gives every document's square, so a kernel that attends packed documents one at a time
(:mod:`roformer_lit.attention.documents`) builds ``sum_d n_d^2`` entries, not ``L^2``.

A scheme gives ``lookup``, ``rows`` or ``squares`` when its bias has such a compact form;
then every form must be the same function of ``(b, h, i, j)`` (the test-suite and the
author's test kit, :mod:`roformer_lit.testing`, check this for every scheme).
This module is data only: schemes produce it and kernels read it, neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import torch
from torch import Tensor

#: ``lookup(b, h, q_idx, kv_idx) -> bias`` over broadcasting integer index tensors.
BiasLookup = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
#: Per row, the ``[start, stop)`` of each document (ascending, not overlapping).
Runs = list[list[tuple[int, int]]]
#: ``squares(runs)``: per row, per run, the ``[h, n, n]`` bias among the run's tokens.
DocumentSquares = Callable[[Runs], list[list[Tensor]]]


class ScoreBias:
    """``softmax(q k^T * scale + bias)``: an additive, already-scaled bias and the scale.

    Give the dense bias as ``bias`` (a tensor) or ``build`` (built once, on first access),
    and optionally its ``lookup`` form; with none of them only the scale changes.
    """

    def __init__(
        self,
        bias: Tensor | None = None,
        scale: float = 1.0,
        *,
        build: Callable[[], Tensor] | None = None,
        lookup: BiasLookup | None = None,
        rows: Callable[[int, int], Tensor] | None = None,
        rows_read: tuple[Tensor, ...] | None = None,
        squares: DocumentSquares | None = None,
    ) -> None:
        if bias is not None and build is not None:
            raise ValueError("give the dense bias as a tensor or as build, not both")
        self._bias, self._build = bias, build
        self.scale = scale
        self.lookup = lookup
        self.rows = rows
        #: Given, every tensor ``rows`` reads that may need a gradient (a module's parameters,
        #: or tensors computed before, such as a product of the queries with a table): no
        #: other. A kernel may then call ``rows`` again in backward and send the gradient to
        #: these alone (rather than recompute the whole block's forward).
        self.rows_read = rows_read
        self.squares = squares

    @property
    def block_reads(self) -> tuple[Tensor, ...] | None:
        """Every tensor a block of rows (:func:`bias_rows`) reads that may need a gradient,
        where known: ``rows_read`` for a bias given as ``rows``; the table of a bias of
        ``(h, i - j)`` alone (an :class:`OffsetLookup`, whose rows are a view of it); else
        None (a kernel then recomputes a block's whole forward for its gradients)."""
        if self.rows is not None:
            return self.rows_read
        if isinstance(self.lookup, OffsetLookup):
            return self.lookup.tables
        return None

    @property
    def adds_bias(self) -> bool:
        """True if there is a bias at all (False: only the scale differs)."""
        return any(form is not None for form in (self._bias, self._build, self.lookup, self.rows))

    @property
    def has_squares(self) -> bool:
        """True if a document's square comes without the dense bias (``squares`` or a
        lookup: :func:`bias_squares`)."""
        return self.squares is not None or self.lookup is not None

    @property
    def has_blocks(self) -> bool:
        """True if a block of rows comes without the dense bias (a lookup or ``rows``)."""
        return self.lookup is not None or self.rows is not None

    def check_dense(self, check: Callable[[Tensor], None]) -> None:
        """Have ``check`` read the dense bias before any kernel does: now if it was given as
        a tensor, when it is built if given as ``build`` (a kernel that never reads it still
        never builds it)."""
        if self._bias is not None:
            check(self._bias)
        elif self._build is not None:
            build = self._build

            def checked() -> Tensor:
                built = build()
                check(built)
                return built

            self._build = checked

    @property
    def bias(self) -> Tensor | None:
        """The dense ``[B or 1, h, L or 1, L]`` bias, built on first access."""
        if self._bias is None and self._build is not None:
            self._bias, self._build = along_keys(self._build()), None
        return self._bias


def along_keys(bias: Tensor) -> Tensor:
    """``bias`` with each row's keys adjacent in memory (stride 1 along the last dimension),
    the layout attention kernels read a mask in: a bias built as a lookup of an ``[S, h]``
    table and permuted to ``[.., h, L, L]`` holds its heads innermost, and every kernel would
    then stride across heads at every read. Copied only when it is not so laid out."""
    return bias if bias.stride(-1) == 1 else bias.contiguous()


def index_grids(
    batch: int, heads: int, length: int, device: torch.device | None = None
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``b[B,1,1,1], h[1,h,1,1], i[1,1,L,1], j[1,1,1,L]``: a lookup's arguments, broadcast."""

    def arange(n: int) -> Tensor:
        return torch.arange(n, device=device)

    return (
        arange(batch)[:, None, None, None],
        arange(heads)[None, :, None, None],
        arange(length)[None, None, :, None],
        arange(length)[None, None, None, :],
    )


def dense_from_lookup(
    lookup: BiasLookup, batch: int, heads: int, length: int, device: torch.device | None = None
) -> Tensor:
    """The dense ``[B, h, L, L]`` bias a lookup describes (for checks and small inputs)."""
    b, h, i, j = index_grids(batch, heads, length, device)
    return lookup(b, h, i, j).expand(batch, heads, length, length)


def bias_rows(
    bias: ScoreBias,
    batch: int,
    heads: int,
    start: int,
    stop: int,
    length: int,
    device: torch.device,
    dtype: torch.dtype,
) -> Tensor:
    """The bias of queries ``start .. stop - 1`` against all ``length`` keys,
    ``[B or 1, h, stop - start, L]`` in ``dtype``: from ``rows`` if the bias gives it, else
    its lookup at those indices (tables cast to ``dtype`` first), else a slice of the dense
    bias (which builds it)."""
    if bias.rows is not None:
        return along_keys(bias.rows(start, stop).to(dtype))
    lookup = bias.lookup
    if isinstance(lookup, OffsetLookup):
        return lookup.cast(dtype).rows(start, stop)
    if lookup is not None:
        if isinstance(lookup, TableLookup):
            lookup = lookup.cast(dtype)
        b, h, _, j = index_grids(batch, heads, length, device)
        i = torch.arange(start, stop, device=device)[None, None, :, None]
        return lookup(b, h, i, j).to(dtype)
    dense = bias.bias
    assert dense is not None, "a ScoreBias without any form adds no bias"
    return (dense[:, :, start:stop] if dense.shape[2] > 1 else dense).to(dtype)


def bias_squares(
    bias: ScoreBias, runs: Runs, heads: int, device: torch.device, dtype: torch.dtype
) -> list[list[Tensor]]:
    """Per row ``b``, per run ``[start, stop)`` of ``runs[b]``, the bias among those tokens
    (queries and keys), ``[h, n, n]`` in ``dtype``, laid out along the keys: from
    ``squares`` if the bias gives it, else its lookup at those indices (tables cast to
    ``dtype`` first). The bias must have one of them (:attr:`ScoreBias.has_squares`)."""
    if bias.squares is not None:
        return [[along_keys(s.to(dtype)) for s in row] for row in bias.squares(runs)]
    lookup = bias.lookup
    assert lookup is not None, "a bias without squares or lookup has no square"
    if isinstance(lookup, TableLookup):
        lookup = lookup.cast(dtype)
    h = torch.arange(heads, device=device)[:, None, None]

    def square(example: int, start: int, stop: int) -> Tensor:
        tokens = torch.arange(start, stop, device=device)
        b = torch.tensor(example, device=device)
        values = lookup(b, h, tokens[None, :, None], tokens[None, None, :])
        return values.expand(heads, stop - start, stop - start).to(dtype)

    return [[square(b, start, stop) for start, stop in row] for b, row in enumerate(runs)]


def run_pieces(tensor: Tensor, dim: int, runs: list[tuple[int, int]]) -> list[Tensor]:
    """``tensor.narrow(dim, start, stop - start)`` for each run (ascending, not
    overlapping), cut by one ``split``: autograd then writes the pieces' gradients into one
    tensor, where a slice per run would write a zero-filled gradient of the whole tensor for
    each."""
    length = tensor.shape[dim]
    cuts = sorted({0, length, *(start for start, _ in runs), *(stop for _, stop in runs)})
    parts = tensor.split([stop - start for start, stop in zip(cuts, cuts[1:], strict=False)], dim)
    at = dict(zip(cuts, parts, strict=False))
    pieces = [at[start] for start, _ in runs]
    assert all(
        p.shape[dim] == stop - start for p, (start, stop) in zip(pieces, runs, strict=True)
    ), f"runs overlap: {runs}"
    return pieces


class RowPieces:
    """A per-row tensor cut once along its query dimension ``dim`` into pieces of ``size``
    rows, for a bias given per block of rows (``ScoreBias.rows``): a block reads its rows
    from the pieces it overlaps, so its gradient is theirs alone, where a slice of the whole
    writes a zero-filled gradient of the whole for every block (and autograd then sums
    them). Name :attr:`pieces` among the tensors the rows read (``rows_read``)."""

    def __init__(self, tensor: Tensor, dim: int, size: int) -> None:
        self.dim, self.size = dim, size
        self.pieces: tuple[Tensor, ...] = tuple(tensor.split(size, dim))

    def rows(self, start: int, stop: int) -> Tensor:
        """Rows ``start .. stop - 1`` along ``dim``, from the pieces they fall in."""
        parts = []
        for index in range(start // self.size, (stop - 1) // self.size + 1):
            piece, first = self.pieces[index], index * self.size
            low, high = max(start, first) - first, min(stop, first + piece.shape[self.dim]) - first
            whole = low == 0 and high == piece.shape[self.dim]
            parts.append(piece if whole else piece.narrow(self.dim, low, high - low))
        return parts[0] if len(parts) == 1 else torch.cat(parts, self.dim)


class TableLookup:
    """A lookup that reads small tables: ``fn(*tables, b, h, i, j)``.

    ``cast(dtype)`` gives the same lookup over contiguous floating tables cast to ``dtype``,
    so that a kernel reads them in its compute precision (FlexAttention under bf16 autocast:
    the dense bias SDPA receives is cast to the query's dtype too; float32 tables made its
    backward need more shared memory than an H100 has).
    """

    def __init__(self, fn: Callable[..., Tensor], *tables: Tensor) -> None:
        self.fn, self.tables = fn, tables

    def __call__(self, b: Tensor, h: Tensor, i: Tensor, j: Tensor) -> Tensor:
        return self.fn(*self.tables, b, h, i, j)

    def cast(self, dtype: torch.dtype) -> TableLookup:
        return TableLookup(
            self.fn,
            *((t.to(dtype) if t.is_floating_point() else t).contiguous() for t in self.tables),
        )

    @property
    def learned_and_small(self) -> bool:
        """True if some table carries a gradient and none has more than two dimensions
        (per head and distance: T5 buckets, KERPLE, learnable ALiBi slopes)."""
        return any(t.requires_grad for t in self.tables) and all(t.dim() <= 2 for t in self.tables)


def _read_offset(per_offset: Tensor, b: Tensor, h: Tensor, i: Tensor, j: Tensor) -> Tensor:
    return per_offset[h, i - j + (per_offset.shape[1] - 1) // 2]


class OffsetLookup(TableLookup):
    """A lookup of a bias that depends on ``(h, i - j)`` only, read from its ``[h, 2L - 1]``
    values (column ``i - j + L - 1``). A block of rows is a Toeplitz block (each row the
    previous one shifted by one), so its gradient is a sum along diagonals
    (:class:`_ToeplitzRows`), not a scatter of one entry per score. A kernel may also read
    the table itself (``tables[0]``): the fused CPU path reads it through a strided view
    and builds no rows at all (:mod:`roformer_lit.attention.cpu_offset_bias`).

    ``shared_by`` (``[2L - 1]`` integers, optional): the parameter each column reads
    (T5's bucket of each offset). Columns with one id are one parameter whose gradient is
    the sum of theirs, so a kernel may return a run of such columns' gradient as its total
    on one of them: :attr:`tied_from` gives where both tails of the table become one
    parameter each."""

    def __init__(self, per_offset: Tensor, shared_by: Tensor | None = None) -> None:
        super().__init__(_read_offset, per_offset)
        self.shared_by = shared_by
        self._full: Tensor | None = None

    def cast(self, dtype: torch.dtype) -> OffsetLookup:
        return OffsetLookup(self.tables[0].to(dtype).contiguous(), self.shared_by)

    @cached_property
    def tied_from(self) -> int | None:
        """The smallest ``m >= 1`` such that every column of offset ``i - j >= m`` reads one
        parameter and every column of ``i - j <= -m`` reads one (T5: from about
        ``max_distance``); None without ``shared_by`` or where no tail is tied."""
        return None if self.shared_by is None else tied_tail_start(self.shared_by)

    def rows(self, start: int, stop: int) -> Tensor:
        """Queries ``start .. stop - 1`` against every key: ``[1, h, r, L]``, never more
        than those rows, forward or backward."""
        (per_offset,) = self.tables
        return _ToeplitzRows.apply(per_offset, start, stop)[None]

    def full(self) -> Tensor:
        """Every row, ``[1, h, L, L]``, built once per lookup (layers sharing a bias share
        it, and its gradient is reduced once)."""
        if self._full is None:
            length = (self.tables[0].shape[-1] + 1) // 2
            self._full = self.rows(0, length)
        return self._full


class _ToeplitzRows(torch.autograd.Function):
    """``rows[h, r, j] = per_offset[h, start + r - j + L - 1]`` for ``r < stop - start``.

    With ``needed[c] = per_offset[h, start + c]`` (``W = R + L - 1`` columns) and ``f`` its
    flip, ``rows[r, j] = needed[r + L - 1 - j] = f[R - 1 - r + j]``: row ``r`` is ``f`` read
    from column ``R - 1 - r`` on. Forward: ``f`` is copied into every row of an
    ``[h, R, W]`` buffer and the rows are a view of it whose row stride is one element
    shorter than the buffer's (:func:`receding_rows`): one pass over the block. Backward:
    the gradient of each column of ``f`` is the sum along its diagonal
    (:func:`receding_sums`), flipped back on the small ``[h, W]`` sums: two passes over the
    block, no index tensor."""

    @staticmethod
    def forward(ctx, per_offset: Tensor, start: int, stop: int) -> Tensor:
        length = (per_offset.shape[-1] + 1) // 2
        ctx.start, ctx.length = start, length
        flipped = per_offset[:, start : stop + length - 1].flip(-1)  # [h, W], small
        heads, width = flipped.shape
        count = stop - start
        buffer = flipped[:, None, :].expand(heads, count, width).contiguous()
        return receding_rows(buffer, count, length)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor | None, None, None]:
        heads, count, length = grad.shape
        d_offset = grad.new_zeros(heads, 2 * length - 1)
        d_offset[:, ctx.start : ctx.start + length + count - 1] = receding_sums(grad).flip(-1)
        return d_offset, None, None


def shifted_rows(buffer: Tensor, count: int, length: int) -> Tensor:
    """A ``[..., count, length]`` view of a contiguous ``buffer`` (``[..., R, W]``,
    ``R >= count``, ``W >= length + count - 1``) whose row ``r`` starts at column ``r`` of
    the buffer's row ``r``: rows written into it, the buffer summed over its rows gives the
    sums along anti-diagonals, ``out[c] = sum_{r + j = c} rows[r, j]`` (the buffer's other
    entries zero). The strides come from the shape, not ``stride()``, so that
    ``torch.compile`` traces it without a graph break."""
    *leading, _, width = buffer.shape
    return buffer.as_strided((*leading, count, length), (*_leading_strides(buffer), width + 1, 1))


def receding_rows(buffer: Tensor, count: int, length: int) -> Tensor:
    """A ``[..., count, length]`` view of a fresh contiguous ``buffer`` (``[..., R, W]``,
    ``R >= count``, ``W == length + count - 1``) whose row ``r`` starts at column
    ``count - 1 - r`` of the buffer's row ``r`` (row stride ``W - 1``): the mirror of
    :func:`shifted_rows`, with every stride positive. The strides come from the shape, not
    ``stride()``, so that ``torch.compile`` traces it without a graph break."""
    *leading, _, width = buffer.shape
    strides = (*_leading_strides(buffer), width - 1, 1)
    return buffer.as_strided((*leading, count, length), strides, count - 1)


def receding_sums(rows: Tensor) -> Tensor:
    """``out[..., c] = sum_r rows[..., r, c - (R - 1 - r)]`` for ``rows`` ``[..., R, L]``,
    ``c`` in ``0 .. R + L - 2``: the sums of row ``r`` placed from column ``R - 1 - r`` on
    (:func:`receding_rows`), i.e. along the diagonals ``j - r``. One pass writing the block
    into a buffer zeroed only where no row lands, one summing it."""
    *leading, count, length = rows.shape
    buffer = rows.new_empty(*leading, count, length + count - 1)
    buffer[..., : count - 1].zero_()  # row r covers columns R - 1 - r .. W - 1 - r
    buffer[..., length:].zero_()
    receding_rows(buffer, count, length).copy_(rows)
    return buffer.sum(-2)


def _leading_strides(buffer: Tensor) -> list[int]:
    """The strides of a contiguous ``buffer``'s dimensions before its last two, from its
    shape."""
    *leading, rows, width = buffer.shape
    strides, step = [], rows * width
    for size in reversed(leading):
        strides.insert(0, step)
        step *= size
    return strides


def offset_lookup(per_offset: Tensor, shared_by: Tensor | None = None) -> OffsetLookup:
    """A lookup of a bias that depends on ``(h, i - j)`` only, read from its ``[h, 2L - 1]``
    values (column ``i - j + L - 1``). Learned biases are first evaluated into this small
    table outside the kernel, so their gradient is one small scatter, not one atomic add
    per score entry into a few per-head parameters. ``shared_by``: the id of the parameter
    each column reads, where columns share parameters (:class:`OffsetLookup`)."""
    return OffsetLookup(per_offset, shared_by)


def tied_tail_start(shared_by: Tensor) -> int | None:
    """For ``shared_by`` ``[2L - 1]`` (column ``o + L - 1`` for offset ``o``), the smallest
    ``m >= 1`` with one id on every column of ``o >= m`` and one on every column of
    ``o <= -m``; None if only ``m = L`` (no column past it) would do."""
    length = (shared_by.shape[0] + 1) // 2
    starts = []
    for side in (shared_by[length - 1 :], shared_by[:length].flip(0)):  # offsets 0, ±1, ...
        differs = torch.nonzero(side != side[-1])
        starts.append(int(differs[-1]) + 1 if differs.numel() else 1)
    tied = max(starts)
    return tied if tied < length else None


def _read_dense(bias: Tensor, b: Tensor, h: Tensor, i: Tensor, j: Tensor) -> Tensor:
    batched, by_query = bias.shape[0] > 1, bias.shape[2] > 1
    return bias[b if batched else 0, h, i if by_query else 0, j]


def lookup_of_dense(bias: Tensor) -> TableLookup:
    """A lookup that reads a dense ``[B or 1, h, L or 1, L]`` bias (no memory saved)."""
    return TableLookup(_read_dense, bias)
