"""FIRE, Functional Interpolation for Relative positions (Li et al. 2023, arXiv 2310.04418).

    A_ij = q_i . k_j / sqrt(d)  +  f_theta( psi(|i - j|) / psi(max(L_thr, N(i, j))) )
    psi(x) = log(c x + 1)

``f_theta`` is a small MLP, ``1 -> 32 -> h`` with a ReLU (the paper's 2 layers, width 32,
one output per head); ``c`` and the threshold ``L_thr`` are learned. As in the paper's
reference code, ``psi`` uses ``|c x|``, the denominator gets ``+ 1e-6``, ``c`` starts at
0.1 and ``L_thr = |m| * 512`` with a learned multiplier ``m`` (init 1; the 512 is the
option ``threshold``).

The paper is causal: ``N(i, j) = i``, the query position, so ``|i - j| <= N`` and the
normalised distance lies in ``[0, 1]`` ("progressive interpolation"). **Bidirectional
form, chosen here: ``N(i, j) = max(i, j)``.** For ``j <= i`` this is exactly the paper's
``i``; for keys after the query it is the key position, the symmetric counterpart. It is
the smallest symmetric choice that keeps ``|i - j| <= N`` (so the input stays in
``[0, 1]``, the property the paper's interpolation argument rests on) without looking at
the sequence length: normalising by ``L`` instead would make every score depend on how
much padding or how many packed documents follow. Like the original, FIRE is therefore
not translation invariant once positions pass ``L_thr`` (below it, ``N`` is the
constant threshold and the bias depends on ``|i - j|`` only).

Other choices: the distance is ``|i - j|``, symmetric (one MLP for both directions); one
FIRE module shared by all layers (``per_layer: true`` gives each layer its own), the
bias added to the scaled score ``q.k / sqrt(d)``. The MLP runs once per forward on the
``[L, L]`` normalised distances: one ``[1, h, L, L]`` bias shared by the batch; on long
rows it runs per block of query rows instead, in every layer (no ``[L, L]`` tensor).
Softmax only.

From ``PIECEWISE_FROM`` tokens on, the MLP is evaluated in its piecewise-linear form
(:func:`scalar_relu_mlp`): a ReLU MLP of one scalar is ``a_s x + c_s`` on each of the at
most 33 intervals its 32 kinks cut the line into, so the grid costs an interval count and
one lookup of both tables per entry rather than a ``[L, L, 32]`` hidden layer forward and
back (1.8x the step of T5 at 2,048 tokens on a CPU). Over positions ``0 .. L-1`` (no
per-example positions) it uses the grid's shape: ``psi(|i - j|)`` and
``psi(max(L_thr, i, j)) = max(psi_n[i], psi_n[j])`` come from two ``[L]`` vectors
(:class:`_NormalisedDistances`), and each row of ``x`` falls to 0 at its diagonal and rises
after it, so the intervals are counted by a search per row and kink, and the tables'
gradients are read off running sums along rows (:class:`VShapedCrossings`). Same
function, same gradients (of the parameters and of the input, through ``c`` and
``L_thr``); below that length the MLP runs as layers, bit for bit as before.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from roformer_lit.positions.alibi import SharedBiasLayer
from roformer_lit.positions.base import (
    EncoderShape,
    LayerPosition,
    PositionScheme,
    QKVWeights,
    ScoreBias,
    default_scale,
)
from roformer_lit.score_bias import Runs, receding_sums
from roformer_lit.validation import boolean, check, finite_float_above

MLP_WIDTH = 32
EPS = 1e-6
#: Grids of at least this many tokens evaluate the MLP piecewise (:func:`scalar_relu_mlp`).
PIECEWISE_FROM = 1024


def scalar_relu_mlp(
    x: Tensor, first: nn.Linear, second: nn.Linear, *, diagonal: Tensor | None = None
) -> Tensor:
    """``second(relu(first(x[..., None])))`` for a ``1 -> W -> h`` MLP, as ``[h, *x.shape]``.

    Unit ``k`` is active where ``w_k x + b_k > 0``: right of its kink ``t_k = -b_k / w_k``
    if ``w_k > 0``, left of it if ``w_k < 0``, everywhere or nowhere if ``w_k = 0``
    (``b_k > 0``). On the interval ``s`` between consecutive sorted kinks the active set is
    fixed, so the MLP is ``slope[s] x + intercept[s]`` with ``slope[s] = sum_k active
    W2[:, k] w_k`` and ``intercept[s] = b2 + sum_k active W2[:, k] b_k``: differentiable in
    every weight (the active set is constant almost everywhere), and in ``x`` (``slope``).
    ``s`` is the number of kinks strictly below ``x``; at a kink itself both sides give
    the same value (ReLU is continuous). It is ``bucketize(x, kinks)``, or, given
    ``diagonal`` (each row of ``x`` falls to 0 at its column ``diagonal`` and rises after
    it, as FIRE's distances do), :class:`VShapedCrossings`, a search per row and kink."""
    w, b = first.weight[:, 0], first.bias
    kinks = torch.where(w != 0, -b / torch.where(w != 0, w, 1), torch.inf).detach()
    kinks = torch.sort(kinks).values
    finite = kinks[torch.isfinite(kinks)]
    # one point inside each interval: below the first kink, between kinks, above the last
    edges = torch.cat([finite[:1] - 1, (finite[1:] + finite[:-1]) / 2, finite[-1:] + 1])
    if finite.numel() == 0:
        edges = torch.zeros(1, dtype=w.dtype, device=w.device)
    active = (w[None, :] * edges[:, None] + b[None, :] > 0).to(w.dtype).detach()  # [S, W]
    slope = (active * w) @ second.weight.t()  # [S, h]
    intercept = (active * b) @ second.weight.t() + second.bias
    if diagonal is None:
        crossings = None
        segment = torch.bucketize(x.detach(), finite.contiguous(), out_int32=True)
    else:
        crossings = VShapedCrossings(x.detach(), finite, diagonal)
        segment = crossings.segments()
    return _PiecewiseLinear.apply(slope, intercept, x, segment, crossings)


#: Entries per chunk of :func:`prefix_sums` (on a CPU, summing chunks of 16 and reading at
#: most one partial chunk per end took a fraction of ``cumsum``'s time over 256 x 8,192 rows:
#: a running sum along a row is one long dependency chain, a chunk sum vectorises).
PREFIX_CHUNK = 16


def prefix_sums(values: Tensor, ends: Tensor) -> Tensor:
    """``out[..., m, k] = sum_{t < ends[m, k]} values[..., m, t]`` for ``values``
    ``[..., M, L]`` and ``ends`` ``[M, K]`` in ``0 .. L``: the running sum along each row
    read at a few places, without writing it. Rows are cut into chunks of
    ``PREFIX_CHUNK``: the sum of the chunks before an end (a running sum over chunk sums,
    ``1 / PREFIX_CHUNK`` of the entries), plus the entries of its own chunk before it."""
    *leading, rows, length = values.shape
    pad = -length % PREFIX_CHUNK
    if pad:
        values = F.pad(values, (0, pad))
    chunks = values.reshape(*leading, rows, -1, PREFIX_CHUNK)  # [..., M, C, c]
    whole = chunks.sum(-1).cumsum(-1)  # [..., M, C]: the sums of chunks 0 .. C - 1 up to each
    whole = torch.cat([torch.zeros_like(whole[..., :1]), whole], -1)  # before chunk C: total
    chunk, inside = ends.div(PREFIX_CHUNK, rounding_mode="floor"), ends.remainder(PREFIX_CHUNK)
    before = whole.gather(-1, chunk.expand(*leading, -1, -1))
    last = chunks.shape[-2] - 1  # an end at L (a multiple of the chunk) reads no partial chunk
    index = chunk.clamp(max=last)[..., None].expand(*leading, -1, -1, PREFIX_CHUNK)
    partial = chunks.gather(-2, index)  # [..., M, K, c]: each end's own chunk
    taken = torch.arange(PREFIX_CHUNK, device=ends.device) < inside[..., None]
    return before + partial.masked_fill_(~taken, 0).sum(-1)


class VShapedCrossings:
    """Where each row of an ``x >= 0`` of ``[..., r, L]`` crosses each sorted kink, for
    rows that do not rise up to their column ``diagonal[i]`` and do not fall after it
    (FIRE's normalised distances over positions ``0 .. L-1``).

    With ``y = -x`` up to the diagonal and ``x`` after it, every row of ``y`` is sorted,
    so for a kink ``t >= 0`` the entries above it are a prefix (``a = #{y < -t}``) and a
    suffix (from ``b = #{y <= t}``) of the row: two ``searchsorted`` per row and kink
    instead of a search per entry. Kinks below 0 lie below every entry. Where float
    rounding leaves ``x`` out of order by an ulp, an entry within that ulp of a kink may
    be counted on the kink's other side: the MLP is continuous there, so its value moves
    by rounding only (and its gradient follows the count taken)."""

    def __init__(self, x: Tensor, kinks: Tensor, diagonal: Tensor) -> None:
        *_, rows, length = x.shape
        self.shape = x.shape
        columns = torch.arange(length, device=x.device)
        before = columns[None, :] <= diagonal[:, None]  # [r, L]
        flat = x.reshape(-1, rows, length)
        y = torch.where(before, -flat, flat).reshape(-1, length)
        upper = kinks[kinks >= 0].contiguous().expand(y.shape[0], -1).contiguous()
        self.below = kinks.numel() - upper.shape[1]
        self.prefix = torch.searchsorted(y, -upper)  # [M, K+]: the entries before it above t
        self.suffix = torch.searchsorted(y, upper, right=True)  # the first entry after it

    def segments(self) -> Tensor:
        """``bucketize(x, kinks)``: how many kinks lie strictly below each entry,
        ``#{t < 0} + #{t >= 0} - #{a <= j} + #{b <= j}``, a running sum along the row."""
        rows, length = self.prefix.shape[0], self.shape[-1]
        # int32: the count is at most the number of kinks, and the lookups read int32 faster
        steps = torch.zeros(rows, length + 1, dtype=torch.int32, device=self.prefix.device)
        steps.scatter_add_(1, self.suffix, torch.ones_like(self.suffix, dtype=torch.int32))
        steps.scatter_add_(1, self.prefix, torch.full_like(self.prefix, -1, dtype=torch.int32))
        count = steps[:, :length].cumsum(1, dtype=torch.int32)
        count.add_(self.below + self.prefix.shape[1])
        return count.reshape(self.shape)

    def interval_sums(self, values: Tensor) -> Tensor:
        """``[n, S]``: the sum of ``values`` (``[n, *x.shape]``) over the entries of each of
        the ``S = kinks + 1`` intervals. With ``U_k`` the sum over entries above kink ``k``
        (a prefix and a suffix of each row: two reads of its running sum, by
        :func:`prefix_sums`), interval ``s`` holds ``U_{s-1} - U_s`` (``U_{-1}`` the total,
        ``U_K = 0``)."""
        count, length = values.shape[0], self.shape[-1]
        flat = values.reshape(count, -1, length)  # [n, M, L]
        kinks = self.prefix.shape[1]
        ends = torch.cat([self.prefix, self.suffix, torch.full_like(self.prefix[:, :1], length)], 1)
        sums = prefix_sums(flat, ends)  # [n, M, 2 K+ + 1]: each row's first a, first b, all
        total = sums[..., -1]  # [n, M]
        above = (sums[..., :kinks] + total[..., None] - sums[..., kinks:-1]).sum(1)  # [n, K+]
        everything = total.sum(1, keepdim=True)  # [n, 1]
        above = torch.cat(
            [everything.expand(-1, self.below), above, torch.zeros_like(everything)], 1
        )  # U_0 .. U_{K-1}, U_K = 0
        return torch.cat([everything, above[:, :-1]], 1) - above


def _per_entry(values: Tensor, segment: Tensor, out: Tensor | None = None) -> Tensor:
    """``values[segment]`` for a ``[S]`` table, shaped like ``segment``: one head's table
    read by ``index_select`` on the flat index (on a CPU faster than one embedding lookup
    of every head's ``[S, 2h]`` row, whose heads-innermost result every later pass would
    read strided)."""
    index = segment.reshape(-1)
    if out is None:
        return torch.index_select(values.contiguous(), 0, index).view(segment.shape)
    torch.index_select(values.contiguous(), 0, index, out=out.view(-1))
    return out


class _PiecewiseLinear(torch.autograd.Function):
    """``slope[s] x + intercept[s]`` with ``s = segment``, for ``[S, h]`` tables and an
    ``x`` and ``segment`` of one shape: ``[h, *x.shape]``, written head by head (each
    head's two tables read per entry by :func:`_per_entry`, then one ``addcmul_``). The
    backward sums the tables' gradients per interval (from sums along rows read at the
    crossings given ``crossings``, else with ``index_add_``, on a CPU 5x faster at
    2,048 x 2,048 entries than the accumulating scatter autograd gives advanced indexing)
    and gives ``x``'s, ``sum_h grad * slope[s]``; nothing of size ``[h, *x.shape]`` is
    kept."""

    @staticmethod
    def forward(
        ctx,
        slope: Tensor,
        intercept: Tensor,
        x: Tensor,
        segment: Tensor,
        crossings: VShapedCrossings | None,
    ) -> Tensor:
        ctx.save_for_backward(slope, x, segment)
        ctx.crossings = crossings
        out = x.new_empty(slope.shape[1], *x.shape)
        for head, (slope_h, intercept_h) in enumerate(zip(slope.t(), intercept.t(), strict=True)):
            _per_entry(intercept_h, segment, out=out[head]).addcmul_(
                _per_entry(slope_h, segment), x
            )
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor | None, ...]:
        slope, x, segment = ctx.saved_tensors
        intervals, heads = slope.shape
        crossings = ctx.crossings

        def per_interval(values: Tensor) -> Tensor:
            if crossings is not None:
                return crossings.interval_sums(values).t()
            flat = values.reshape(heads, -1)
            return values.new_zeros(heads, intervals).index_add_(1, segment.reshape(-1), flat).t()

        d_slope = per_interval(grad * x) if ctx.needs_input_grad[0] else None
        d_intercept = per_interval(grad) if ctx.needs_input_grad[1] else None
        d_x = None
        if ctx.needs_input_grad[2]:
            d_x = torch.zeros_like(x)
            for head, slope_h in enumerate(slope.t()):
                d_x.addcmul_(grad[head], _per_entry(slope_h, segment))
        return d_slope, d_intercept, d_x, None, None


class _NormalisedDistances(torch.autograd.Function):
    """``x[i, j] = psi_d[|i - j|] / psi_n[max(i, j)]`` for rows ``start .. stop - 1`` and
    every column ``0 .. L-1``, from the ``[L]`` vectors ``psi_d`` (of each distance) and
    ``psi_n`` (of each position, non-decreasing: so ``psi_n[max(i, j)] = max(psi_n[i],
    psi_n[j])``). Forward: the distances are a view of one ``[2L - 1]`` vector (rows
    reversed: a Hankel view), three passes over ``[r, L]``. Backward, with ``g = dx /
    psi_n[max(i, j)]``: ``psi_d``'s gradient sums ``g`` along diagonals (folded over
    ``|i - j|``), ``psi_n``'s sums ``-g x`` over each row up to the diagonal (``max = i``)
    and each column past it (``max = j``)."""

    @staticmethod
    def forward(ctx, psi_d: Tensor, psi_n: Tensor, start: int, stop: int) -> Tensor:
        length = psi_d.shape[0]
        both_ways = torch.cat([psi_d.flip(0), psi_d[1:]])  # entry L - 1 + m: psi_d[|m|]
        # row n of the unfolded view holds entries n .. n + L - 1: query i is row L - 1 - i
        reversed_rows = both_ways.unfold(0, length, 1)[length - stop : length - start]
        normaliser = torch.maximum(psi_n[start:stop].flip(0)[:, None], psi_n[None, :])
        # written row-major (from an overlapping view, div alone may pick columns first)
        x = torch.div(reversed_rows, normaliser, out=psi_d.new_empty(stop - start, length))
        x = x.flip(0)
        ctx.save_for_backward(psi_n, x)
        ctx.start, ctx.stop = start, stop
        return x

    @staticmethod
    def backward(ctx, dx: Tensor) -> tuple[Tensor | None, Tensor | None, None, None]:
        psi_n, x = ctx.saved_tensors
        start, stop, length = ctx.start, ctx.stop, x.shape[1]
        g = dx / torch.maximum(psi_n[start:stop, None], psi_n[None, :])
        d_psi_d = d_psi_n = None
        if ctx.needs_input_grad[0]:
            # column c of the sums along j - r holds j - i = c - (stop - 1)
            by_offset = receding_sums(g)  # offsets j - i from -(stop - 1) to L - 1 - start
            offsets = torch.arange(by_offset.shape[0], device=g.device) - (stop - 1)
            d_psi_d = g.new_zeros(length).index_add_(0, offsets.abs(), by_offset)
        if ctx.needs_input_grad[1]:
            weighted = g.mul_(x).neg_()  # -g x
            columns = torch.arange(length, device=x.device)
            past = columns[None, :] > torch.arange(start, stop, device=x.device)[:, None]
            after = torch.where(past, weighted, 0)  # max(i, j) = j
            d_psi_n = after.sum(0)
            d_psi_n[start:stop] += weighted.sum(1) - after.sum(1)  # max(i, j) = i
        return d_psi_d, d_psi_n, None, None


class Fire(nn.Module):
    """``f_theta(psi(|i - j|) / psi(max(L_thr, max(i, j))))`` as a bias over positions."""

    def __init__(self, num_heads: int, threshold: float) -> None:
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(1, MLP_WIDTH), nn.ReLU(), nn.Linear(MLP_WIDTH, num_heads)
        )
        self.c = nn.Parameter(torch.tensor(0.1))
        self.threshold_multiplier = nn.Parameter(torch.tensor(1.0))
        self.register_buffer("init_threshold", torch.tensor(float(threshold)), persistent=False)

    def psi(self, value: Tensor) -> Tensor:
        """``psi(x) = log(|c x| + 1)``."""
        return torch.log(torch.abs(self.c * value) + 1)

    def forward(
        self,
        length: int,
        device: torch.device,
        dtype: torch.dtype,
        positions: Tensor | None,
        rows: slice = slice(None),
    ) -> Tensor:
        """``[1, h, L, L]`` over positions ``0 .. L-1``, or ``[B, h, L, L]`` over
        ``positions``; given ``rows``, only those query rows: ``[B or 1, h, r, L]``."""
        threshold = (self.threshold_multiplier * self.init_threshold).abs()
        if length >= PIECEWISE_FROM and positions is None:
            # over positions 0 .. L-1 psi(|i - j|) and psi(max(L_thr, max(i, j))) are read
            # from two [L] vectors; row i of x falls to 0 at column i and rises after it
            steps = torch.arange(length, device=device, dtype=self.c.dtype)
            psi_distance, psi_normaliser = (
                self.psi(steps),
                self.psi(torch.maximum(steps, threshold)),
            )
            start, stop, _ = rows.indices(length)
            x = _NormalisedDistances.apply(psi_distance, psi_normaliser + EPS, start, stop)[None]
            diagonal = torch.arange(start, stop, device=device)
            bias = scalar_relu_mlp(x, self.mlp[0], self.mlp[2], diagonal=diagonal)
            return bias.transpose(0, 1).to(dtype)
        if positions is None:
            pos = torch.arange(length, device=device, dtype=self.c.dtype)[None]
        else:
            pos = positions.to(self.c.dtype)
        at_query = pos[:, rows]
        distance = (at_query[:, :, None] - pos[:, None, :]).abs()
        normaliser = torch.maximum(torch.maximum(at_query[:, :, None], pos[:, None, :]), threshold)
        psi_distance, psi_normaliser = self.psi(distance), self.psi(normaliser) + EPS
        x = psi_distance / psi_normaliser  # [B or 1, r, L]
        if length >= PIECEWISE_FROM:
            bias = scalar_relu_mlp(x, self.mlp[0], self.mlp[2])
            return bias.transpose(0, 1).to(dtype)
        bias = self.mlp(x.unsqueeze(-1))  # [B or 1, r, L, h]
        return bias.permute(0, 3, 1, 2).to(dtype)


def fire_bias(
    fire: Fire,
    length: int,
    device: torch.device,
    dtype: torch.dtype,
    positions: Tensor | None,
    scale: float,
) -> ScoreBias:
    """The ``[1, h, L, L]`` bias (``[B, h, L, L]`` given positions), built when asked: the
    MLP evaluated once per forward on the ``[L, L]`` grid, shared by the batch; or, on long
    rows, one block of query rows at a time (``rows``: never the whole grid); or packed
    documents' squares (``squares``), each the bias among its own positions. No lookup:
    past ``L_thr`` the bias depends on ``max(i, j)`` too, so it has no per-distance table,
    and FlexAttention reading a learned ``[h, L, L]`` tensor did not compile in bf16 on an
    H100 (its backward needed more shared memory than the chip has)."""
    return ScoreBias(
        scale=scale,
        build=lambda: fire(length, device, dtype, positions),
        rows=lambda start, stop: fire(length, device, dtype, positions, slice(start, stop)),
        rows_read=tuple(fire.parameters()),
        squares=DocumentSquares(fire, device, dtype, positions),
    )


class DocumentSquares:
    """``squares(runs)``: per row ``b`` and run ``[start, stop)``, ``bias[b, :, start:stop,
    start:stop]``, ``[h, n, n]``: FIRE among the positions of those tokens (``0 .. L-1``
    when ``positions`` is None). A document whose positions are ``0 .. n-1`` (packed
    documents: positions restart in each) is the ``n``-token grid, with its piecewise form
    from ``PIECEWISE_FROM``; it is built once per length and shared by the documents and
    layers of one forward."""

    def __init__(
        self, fire: Fire, device: torch.device, dtype: torch.dtype, positions: Tensor | None
    ) -> None:
        self.fire, self.device, self.dtype, self.positions = fire, device, dtype, positions
        self._grids: dict[int, Tensor] = {}

    def __call__(self, runs: Runs) -> list[list[Tensor]]:
        return [[self.square(b, start, stop) for start, stop in row] for b, row in enumerate(runs)]

    def square(self, example: int, start: int, stop: int) -> Tensor:
        """The ``[h, n, n]`` bias among tokens ``start .. stop - 1`` of row ``example``."""
        size = stop - start
        if self.positions is None:
            at = torch.arange(start, stop, device=self.device)
        else:
            at = self.positions[0 if self.positions.shape[0] == 1 else example, start:stop]
        if bool(at[0] == 0) and bool((at[1:] - at[:-1] == 1).all()):
            if size not in self._grids:
                self._grids[size] = self.fire(size, self.device, self.dtype, None)[0]
            return self._grids[size]
        return self.fire(size, self.device, self.dtype, at[None])[0]


class FireLayer(LayerPosition):
    """A layer's own FIRE module (``per_layer``)."""

    def __init__(self, shape: EncoderShape, threshold: float) -> None:
        super().__init__()
        self.fire = Fire(shape.num_heads, threshold)
        self.scale = default_scale(shape.head_size)

    def score(
        self, q: Tensor, k: Tensor, ctx: tuple[Tensor | None, None], qkv: QKVWeights
    ) -> ScoreBias:
        positions, _ = ctx
        return fire_bias(self.fire, q.shape[-2], q.device, q.dtype, positions, self.scale)


class FirePosition(PositionScheme):
    """FIRE with the bidirectional normaliser ``max(L_thr, max(i, j))``."""

    needs_score_bias = True
    translation_invariant = False  # past L_thr the normaliser depends on max(i, j)
    #: relative below its threshold (512): past 4 its absolute part shows on short rows
    test_kwargs = {"threshold": 4.0}

    def amplify_for_tests(self) -> None:
        """Its small random MLP's output is ~1e-3: scale the last layer to make it count."""
        with torch.no_grad():
            for fire in [self.fire] if self.fire is not None else [lay.fire for lay in self.layers]:
                fire.mlp[-1].weight.mul_(30.0)

    def __init__(
        self, shape: EncoderShape, *, threshold: float = 512.0, per_layer: bool = False
    ) -> None:
        super().__init__(shape)
        check("fire threshold", threshold, finite_float_above(0), option="threshold")
        check("fire per_layer", per_layer, boolean, option="per_layer")
        self.per_layer = per_layer
        if per_layer:
            self.fire = None
            self.layers = nn.ModuleList(
                FireLayer(shape, threshold) for _ in range(shape.num_layers)
            )
        else:
            self.fire = Fire(shape.num_heads, threshold)
            self.layers = nn.ModuleList([SharedBiasLayer()])

    def prepare(
        self,
        length: int,
        device: torch.device,
        dtype: torch.dtype,
        positions: Tensor | None = None,
    ) -> ScoreBias | tuple[Tensor | None, None]:
        """The shared bias, or with ``per_layer`` the positions each layer builds its own from."""
        if self.fire is None:
            return positions, None
        scale = default_scale(self.shape.head_size)
        return fire_bias(self.fire, length, device, dtype, positions, scale)

    def layer(self, index: int) -> LayerPosition:
        return self.layers[index if self.per_layer else 0]
