"""CoPE, contextual position encoding (Golovneva et al. 2024, arXiv 2405.18719), for an encoder.

Positions are counted by the content: each key between a query and the key it attends to
adds a gate in ``[0, 1]``, so a position can be "the third sentence back" rather than "the
40th token back". With ``a_ij = q_i . k_j / sqrt(d)`` (the layer's scaled score):

    g_ij = sigmoid(a_ij)                                    gates
    p_ij = sum of g_it over t from min(i, j) to max(i, j)   contextual position (>= 0)
    z_i[p] = q_i . e[p]                                     p = 0 .. P-1, e: [P, d] learned
    bias_ij = (1 - w) z_i[floor p_ij] + w z_i[floor p_ij + 1],   w = p_ij - floor p_ij
    logits_ij = a_ij + bias_ij

with ``p_ij`` clamped to ``P - 1`` (``npos_max``). As in the paper's code, the gates read
the already-scaled score, the bias ``q . e`` is not scaled, the table ``e`` (one per layer,
shared by its heads) starts at zero, and the gradient reaches the gates through the
interpolation weight ``w``.

The paper is causal (``j <= i``: it sums ``g_it`` for ``t = j .. i``). In a bidirectional
encoder a key may lie on either side: the count runs from the query towards the key in both
directions, over the keys between them, both ends included (``p_ii = g_ii``). Then:

- the gates are the query's own: ``p_ij`` counts ``g_it`` of row ``i`` only, so the two
  directions need not agree (``p_ij != p_ji``), as in the paper;
- padding and packed documents need no mask here: padding sits at the ends of a row and
  documents are contiguous runs, so the keys between a real query and a real key of its own
  document are all real and of that document; every other pair is masked by the kernel;
- positions given to the model (randomized positions) are ignored, like ``nope``'s: the
  scheme counts, it reads no index (``reads_positions = False``), and a shift of every
  position changes nothing (``translation_invariant``).

The bias is a dense ``[B, h, L, L]`` tensor per layer (it depends on the content): softmax
kernel only. Both directions are computed with one cumulative sum each over the row's gates
masked to the query's side, so no difference of long sums loses precision.
"""

from __future__ import annotations

import math

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


def contextual_positions(gates: Tensor) -> Tensor:
    """``p_ij = sum_{t = min(i, j)}^{max(i, j)} g_it`` for gates ``[..., L, L]`` (row i)."""
    length = gates.shape[-1]
    index = torch.arange(length, device=gates.device)
    behind = index[None, :] <= index[:, None]  # t <= i
    ahead = index[None, :] >= index[:, None]  # t >= i
    zero = gates.new_zeros(())
    # j <= i: sum of g_it for t = j .. i, a cumulative sum from the right over t <= i
    towards_start = torch.where(behind, gates, zero).flip(-1).cumsum(-1).flip(-1)
    # j >= i: sum of g_it for t = i .. j, a cumulative sum from the left over t >= i
    towards_end = torch.where(ahead, gates, zero).cumsum(-1)
    return torch.where(behind, towards_start, towards_end)


def interpolated_bias(q: Tensor, table: Tensor, positions: Tensor) -> Tensor:
    """``z_i`` at fractional ``positions [B, h, L, L]``: linear between ``q_i . e[floor p]``
    and ``q_i . e[floor p + 1]``, with ``p`` clamped to the table's last row."""
    last = table.shape[0] - 1
    positions = positions.clamp(max=last)
    at_integers = q @ table.transpose(0, 1)  # [B, h, L, P]: z_i[p] for every integer p
    floor = positions.detach().floor()
    weight = positions - floor
    below = floor.long()
    above = (below + 1).clamp(max=last)
    low, high = at_integers.gather(-1, below), at_integers.gather(-1, above)
    return low + weight * (high - low)


class CoPELayer(LayerPosition):
    """Layer ``index``'s bias from its table ``ctx[index]`` (the context is the tables)."""

    def __init__(self, index: int, scale: float) -> None:
        super().__init__()
        self.index, self.scale = index, scale

    def score(self, q: Tensor, k: Tensor, ctx: Tensor, qkv: QKVWeights) -> ScoreBias:
        table = ctx[self.index].to(q.dtype)

        def build() -> Tensor:
            scores = (q @ k.transpose(-1, -2)) * self.scale
            positions = contextual_positions(torch.sigmoid(scores))
            return interpolated_bias(q, table, positions)

        return ScoreBias(scale=self.scale, build=build)


class CoPE(PositionScheme):
    """Contextual position encoding, counted in both directions from the query."""

    needs_score_bias = True
    reads_positions = False
    uses_segment_positions = False
    translation_invariant = True

    def __init__(self, shape: EncoderShape, *, npos_max: int = 64) -> None:
        super().__init__(shape)
        if isinstance(npos_max, bool) or not isinstance(npos_max, int) or npos_max < 2:
            raise ConfigError(
                f"cope npos_max must be an integer >= 2 (the number of position embeddings; "
                f"positions past it clamp), got {npos_max!r}",
                option="npos_max",
            )
        self.npos_max = npos_max
        #: ``e``: one ``[P, d]`` table per layer, shared by the layer's heads; zero at start.
        self.embeddings = nn.Parameter(torch.zeros(shape.num_layers, npos_max, shape.head_size))
        scale = 1.0 / math.sqrt(shape.head_size)
        self._layers = nn.ModuleList(CoPELayer(i, scale) for i in range(shape.num_layers))

    def amplify_for_tests(self) -> None:
        """The zero tables would make CoPE ``nope`` in the tests: draw them instead."""
        with torch.no_grad():
            self.embeddings.normal_(0.0, 1.0)

    def prepare(
        self,
        length: int,
        device: torch.device,
        dtype: torch.dtype,
        positions: Tensor | None = None,
    ) -> Tensor:
        return self.embeddings

    def layer(self, index: int) -> LayerPosition:
        return self._layers[index]

    @staticmethod
    def reference(
        scheme: CoPE, q: Tensor, k: Tensor, positions: Tensor | None, layer: int
    ) -> Tensor:
        """The logits ``a_ij + bias_ij`` of the module docstring, entry by entry in float64."""
        q, k = q.double(), k.double()
        table = scheme.embeddings[layer].double()
        last = table.shape[0] - 1
        length, head_size = q.shape[-2], q.shape[-1]
        scores = q @ k.transpose(-1, -2) / math.sqrt(head_size)
        logits = torch.empty_like(scores)
        for i in range(length):
            for j in range(length):
                between = range(min(i, j), max(i, j) + 1)
                p = sum(torch.sigmoid(scores[..., i, t]) for t in between)
                p = torch.clamp(p, max=float(last))
                below = p.floor()
                w = p - below
                low = (q[..., i, :] * table[below.long()]).sum(-1)
                high = (q[..., i, :] * table[(below.long() + 1).clamp(max=last)]).sum(-1)
                logits[..., i, j] = scores[..., i, j] + (1 - w) * low + w * high
        return logits
