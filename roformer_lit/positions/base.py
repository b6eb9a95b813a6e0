"""The seam between a position scheme and the encoder.

A scheme acts at up to four points:

- ``embed(x, positions)``: once, on the token embeddings ``x[B, L, H]`` (absolute schemes);
- ``prepare(length, device, dtype, positions)``: once per forward, a context shared by all
  layers (cos/sin table, relative index, normalised relative table); a scheme that sets
  ``reads_key_padding`` also gets ``key_padding_mask`` (which keys are real tokens);
- per layer, through the module returned by ``layer(index)``:
  ``rotate(x, ctx)`` on projected queries and keys (the kernel decides where), and
  ``score(q, k, ctx, qkv)`` returning an additive score bias and the score scale;
  ``qkv`` is the layer's query/key/value projection as data (:class:`QKVWeights`), so a
  scheme never imports or calls into the attention block.

``positions`` (``[B, L]`` long, or None for ``0 .. L-1`` in every row) is each token's
position, and every scheme that reads positions (``reads_positions``) must honour any
values it is given, distinct and increasing along a row but not necessarily contiguous:

- with ``segment_ids`` (packed documents kept apart) they restart at 0 in every segment,
  so a packed document is encoded as it would be alone;
- with randomized positions (Ruoss et al. 2023; ``data.random_positions``) they are a
  sorted random subset of a larger range, one per example: absolute schemes embed at them,
  rotary ones rotate by them, and relative ones use the per-example distances
  ``positions[b, i] - positions[b, j]`` in place of ``i - j``.

Given ``None`` a scheme takes its fast path (shared tables over ``0 .. L-1``), unchanged.
A scheme whose scores depend on ``p_i - p_j`` only and are built from its own ``[L, L]``
grid sets ``uses_segment_positions = False``: the encoder then hands it None instead of
segment positions (inside a segment the offsets equal ``i - j``, and the kernel masks
every pair across segments), so packed batches keep the shared bias and its small tables.

The encoder calls these hooks and never branches on a scheme's name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch
from torch import Tensor, nn

from roformer_lit.capabilities import SchemeCapabilities
from roformer_lit.score_bias import ScoreBias

__all__ = [
    "EncoderShape",
    "LayerPosition",
    "PositionScheme",
    "QKVWeights",
    "ScoreBias",
    "default_scale",
    "rows_at",
    "sinusoid_angles",
]


@dataclass(frozen=True)
class EncoderShape:
    """The encoder dimensions a scheme may need to build itself."""

    hidden_size: int
    num_heads: int
    num_layers: int
    max_positions: int
    layer_norm_eps: float = 1e-12

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_heads


#: Rows of the fused ``[3H, H]`` projection per slot.
_SLOT = {"query": 0, "key": 1, "value": 2}


@dataclass(frozen=True)
class QKVWeights:
    """A layer's fused projection ``[q, k, v] = x W^T + b`` (``W [3H, H]``, ``b [3H]``),
    handed to the scheme as data (DeBERTa projects its relative table with it)."""

    weight: Tensor
    bias: Tensor | None  # None: a bias-free projection (model.block.linear_bias false)
    num_heads: int

    def project(self, x: Tensor, which: Literal["query", "key", "value"]) -> Tensor:
        """One projection of ``x[N, H]`` split into heads: ``[h, N, d]``."""
        hidden = self.weight.shape[1]
        rows = slice(_SLOT[which] * hidden, (_SLOT[which] + 1) * hidden)
        bias = None if self.bias is None else self.bias[rows]
        projected = nn.functional.linear(x, self.weight[rows], bias)
        return projected.unflatten(-1, (self.num_heads, hidden // self.num_heads)).transpose(0, 1)


class LayerPosition(nn.Module):
    """Per-layer hooks of a scheme. The default does nothing."""

    rotates: ClassVar[bool] = False

    def rotate(self, x: Tensor, ctx: Any) -> Tensor:
        """Rotate projected queries or keys ``x[B, h, L, d]``; identity by default."""
        return x

    def score(self, q: Tensor, k: Tensor, ctx: Any, qkv: QKVWeights) -> ScoreBias | None:
        """An additive score bias for this layer, or None (plain ``q.k / sqrt(d)``)."""
        return None


class PositionScheme(nn.Module):
    """Base class of every position scheme: all hooks are the identity.

    Subclasses take ``shape`` positionally and their own options as keyword-only
    arguments; those keyword-only arguments are exactly the valid ``position_kwargs``.
    """

    #: True if the scheme adds a float bias to the full ``[L, L]`` score matrix, which
    #: only kernels with ``supports_score_bias`` can take.
    needs_score_bias: ClassVar[bool] = False
    #: True if outputs depend only on differences of positions (a shift of every position
    #: changes nothing). The test-suite checks this claim both ways for every scheme.
    translation_invariant: ClassVar[bool] = True
    #: False if the scheme ignores positions altogether (``nope``): randomized positions
    #: would change nothing, so the command line refuses them with it.
    reads_positions: ClassVar[bool] = True
    #: False if segment positions may be replaced by None (see the module docstring).
    uses_segment_positions: ClassVar[bool] = True
    #: The head size must be a multiple of this with the default options (RoPE rotates
    #: pairs: 2); the registry-wide tests skip the shapes that are not.
    head_size_multiple: ClassVar[int] = 1
    #: True if ``prepare`` takes the keys' padding: the encoder then calls
    #: ``prepare(..., key_padding_mask=mask)`` (``[B, L]`` bool, True at real tokens, or
    #: None), e.g. a scale by the number of keys a query attends to. Schemes that leave it
    #: False are called as before.
    reads_key_padding: ClassVar[bool] = False
    #: ``position_kwargs`` under which the scheme's position dependence shows on the short
    #: rows of the tests (a few tokens, tens of positions); the registry-wide tests build
    #: every scheme with them, so no test names a scheme.
    test_kwargs: ClassVar[Mapping[str, Any]] = {}

    @classmethod
    def capabilities(cls, options: Mapping[str, Any] | None = None) -> SchemeCapabilities:
        """What the scheme needs and claims with ``options`` (its checked
        ``position_kwargs``), as data (:mod:`roformer_lit.capabilities`): its class
        attributes; a scheme whose claims depend on an option (one that wraps another
        scheme) overrides this."""
        return SchemeCapabilities(
            needs_score_bias=cls.needs_score_bias,
            embeds=cls.embed is not PositionScheme.embed,
            reads_positions=cls.reads_positions,
            translation_invariant=cls.translation_invariant,
            bounded=cls.max_length is not PositionScheme.max_length,
            head_size_multiple=cls.head_size_multiple,
        )

    def amplify_for_tests(self) -> None:
        """Scale freshly initialised parameters whose effect is too small to see in a
        test's tolerance (the registry-wide tests call it on every scheme; none here)."""

    def __init__(self, shape: EncoderShape) -> None:
        super().__init__()
        self.shape = shape
        self._no_op_layer = LayerPosition()

    @property
    def max_length(self) -> int | None:
        """The longest sequence the scheme can encode, or None if unbounded."""
        return None

    def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        """Add absolute position information to token embeddings ``x[B, L, H]``."""
        return x

    def prepare(
        self,
        length: int,
        device: torch.device,
        dtype: torch.dtype,
        positions: Tensor | None = None,
    ) -> Any:
        """The per-forward context handed to every layer's hooks (a scheme with
        ``reads_key_padding`` also receives ``key_padding_mask=``)."""
        return None

    def layer(self, index: int) -> LayerPosition:
        """The per-layer hook module for encoder layer ``index``."""
        return self._no_op_layer


def segment_positions(segment_ids: Tensor) -> Tensor:
    """Each token's position inside its segment: ``[B, L]`` long, 0 at every segment start.

    Segments are runs of equal ids along a row (packed documents), e.g. ids
    ``[0 0 0 1 1 2]`` give positions ``[0 1 2 0 1 0]``.
    """
    index = torch.arange(segment_ids.shape[1], device=segment_ids.device)
    starts = torch.ones_like(segment_ids, dtype=torch.bool)
    starts[:, 1:] = segment_ids[:, 1:] != segment_ids[:, :-1]
    start_of_segment = torch.where(starts, index, 0).cummax(dim=1).values
    return index - start_of_segment


def sinusoid_angles(positions: Tensor, dim: int, base: float = 10000.0) -> Tensor:
    """``angles[p, t] = positions[p] * base^(-2t/dim)`` for ``t < dim/2``, in float32."""
    inv_freq = base ** (
        -torch.arange(0, dim, 2, dtype=torch.float64, device=positions.device) / dim
    )
    return (positions.to(torch.float64)[:, None] * inv_freq[None, :]).to(torch.float32)


def rows_at(table: Tensor, positions: Tensor, compute: Callable[[Tensor], Tensor]) -> Tensor:
    """``table[positions]`` where the table has the row, else ``compute(positions)``: any
    position gets the very row the fast path reads, and positions past the table (randomized
    positions, up to ``data.random_positions``) need no table grown to a size read back
    from the device."""
    inside = positions < table.shape[0]
    looked_up = table[positions.clamp(max=table.shape[0] - 1)]
    return torch.where(inside[..., None], looked_up, compute(positions).to(table))


def default_scale(head_size: int) -> float:
    return 1.0 / math.sqrt(head_size)
