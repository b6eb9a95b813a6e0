"""Softmax attention: SDPA, or FlexAttention for a score bias on CUDA.

    out = softmax(rot(q) rot(k)^T * scale + bias + mask) v

``mask`` is ``-inf`` at padded keys and, with ``segment_ids``, at every pair of tokens
from different segments (block-diagonal: a packed document sees only itself).

Two paths compute the same function:

- ``torch.nn.functional.scaled_dot_product_attention``: without a bias the padding mask
  stays boolean (or absent for packed batches) so SDPA can pick its fastest backend
  (flash / cuDNN / memory-efficient); with a bias, the scheme's dense ``[B or 1, h, L, L]``
  bias is built and the padding mask merged into it as ``-inf``.
- FlexAttention (:mod:`roformer_lit.attention.flex`): the bias is computed inside the
  fused kernel from the scheme's small tables (its ``lookup``), so no ``[L, L]`` tensor
  is built.

On a CPU (backend ``auto``, from ``FUSED_FROM_LENGTH`` tokens, no attention dropout), a
global layer whose bias depends on ``(h, i - j)`` only (an
:class:`~roformer_lit.score_bias.OffsetLookup`: ALiBi, T5, KERPLE), with no padded key
and no segments, runs the fused CPU kernel reading the bias's ``[h, 2L - 1]`` table
through a strided Hankel view (:mod:`roformer_lit.attention.cpu_offset_bias`): no ``[L, L]``
tensor at any length, memory linear in ``L``. Rows padded at their end take it too, one row
at a time against the row's real keys (:mod:`roformer_lit.attention.padded_rows`), and so do
they with no bias (SDPA with no mask over the real keys: ``L n_b`` scores, not ``L^2``).

With packed documents (``segment_ids``) and no padded key, on the same fused CPU path, a
global layer attends each document on its own (:mod:`roformer_lit.attention.documents`)
where every document is one run of its row: SDPA with no mask for no bias, the Hankel view
of the document's offsets for a bias of ``(h, i - j)`` alone, and the document's own
``[h, n, n]`` square for any other bias that gives one (``ScoreBias.has_squares``: FIRE,
XL, DeBERTa) while every document is shorter than ``bias_block_from``: ``sum_d n_d^2``
scores instead of ``L^2``, no ``[L, L]`` mask.

Otherwise, from ``bias_block_from`` tokens on (default ``BIAS_BLOCK_FROM``), a global layer
whose bias has a compact form (a lookup or ``rows``: every bias scheme here) and that does
not take FlexAttention runs SDPA one block of ``bias_block`` queries at a time
(:mod:`roformer_lit.attention.query_blocks`): the bias is built per block from that form,
never ``[B, h, L, L]``, and memory grows linearly with the length, in training too. Shorter
rows take the dense path above, unchanged bit for bit.

``backend``: ``auto`` (default) takes FlexAttention on CUDA where it measured faster
than SDPA at BERT-base on an H100 (README, GPU table): a bias learned in small
per-distance tables (T5 buckets, KERPLE, learnable ALiBi slopes; SDPA then has to
produce the gradient of a dense ``[1, h, L, L]`` bias) from ``FUSED_FROM_LENGTH`` tokens
on, with attention dropout off (FlexAttention has none); SDPA otherwise. ``sdpa``: always
SDPA. ``flex``: FlexAttention wherever the scheme gives a lookup (DeBERTa's halves its
memory at 2048 tokens for ~15 % more time; fixed ALiBi saves memory and is slower), SDPA
for the others. FlexAttention trains on CUDA only; on CPU it runs forward-only, unfused.

A windowed layer (``window``, its layer plan) whose band is narrower than the sequence
takes, on CUDA without attention dropout (backend not ``sdpa``, not float64, a bias that is
absent or has a lookup), FlexAttention with a block mask of the band (the bias inside its
``score_mod``); elsewhere (XL's and FIRE's dense-only biases too), when the
sequence is longer than ``window_block`` queries, the banded computation of
:mod:`roformer_lit.attention.banded` (blocks of ``window_block`` queries, each against its
window's keys only: cost linear in the length); else dense SDPA with the band in its mask.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

from roformer_lit.attention.banded import banded_softmax
from roformer_lit.attention.base import AttentionKernel, Rotation
from roformer_lit.attention.cpu_fused_bias import fused_attention_with_bias, fused_bias_available
from roformer_lit.attention.cpu_offset_bias import offset_bias_attention
from roformer_lit.attention.documents import attend_documents, document_runs
from roformer_lit.attention.flex import flex_softmax
from roformer_lit.attention.padded_rows import attend_padded_rows, real_prefix_lengths
from roformer_lit.attention.query_blocks import query_blocked_softmax
from roformer_lit.attention.window import band_half_width, band_mask
from roformer_lit.capabilities import KernelCapabilities
from roformer_lit.errors import ConfigError
from roformer_lit.score_bias import (
    BiasLookup,
    OffsetLookup,
    Runs,
    ScoreBias,
    TableLookup,
    bias_squares,
)
from roformer_lit.validation import check, one_of, positive_int

BACKENDS = ("auto", "sdpa", "flex")
#: ``auto`` takes a fused kernel for a score bias from this length on: FlexAttention on CUDA
#: for learned per-distance biases (at 512 tokens KERPLE was 20 % slower on it, at 2048 26 %
#: faster; see the README's GPU table), the fused CPU kernel with its own bias gradient on
#: a CPU (:mod:`roformer_lit.attention.cpu_fused_bias`). Below it, SDPA as before.
FUSED_FROM_LENGTH = 1024
#: The dtypes FlexAttention's Triton kernels compute in (no float64 matrix products).
FLEX_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
#: Global layers with a score bias that do not take the per-offset path (FIRE, XL,
#: DeBERTa; any bias with padding, or with segments that are not one run each) attend in
#: blocks of queries from this many tokens on (below it, the dense bias path). The blocks
#: keep memory linear in the length, in training too, for the price of the checkpoint's
#: second forward of each block: a memory path, not a speed-up (docs/performance.md, "Bias
#: schemes on a CPU", has its step times and peak memory at 8,192 tokens). It starts where
#: a dense layer's float32 scores pass 1 GiB per head group; set ``bias_block_from`` lower
#: to trade time for memory.
BIAS_BLOCK_FROM = 8192
#: Queries per block there: the transient bias is ``[B, h, BIAS_BLOCK, L]``.
BIAS_BLOCK = 256


class UnmaskedPath(NamedTuple):
    """How a layer on the fused CPU path attends with no mask: documents one at a time
    (``runs``, None for the whole row), with the ``[h, 2L - 1]`` table of a bias of
    ``(h, i - j)`` (``per_offset``) or each document's own square (``squares``, per row
    and run), or neither (no bias); ``real_keys``: with no runs, each row's count of real
    keys where the rows are padded at their end (None: no padding)."""

    runs: Runs | None
    per_offset: Tensor | None = None
    squares: list[list[Tensor]] | None = None
    real_keys: list[int] | None = None
    tied_from: int | None = None


class SoftmaxAttention(AttentionKernel):
    """Full softmax attention; takes any additive score bias."""

    supports_score_bias = True
    supports_segments = True
    supports_window = True
    window_options = ("window_block",)
    bias_options = ("bias_block", "bias_block_from")

    def __init__(
        self,
        *,
        backend: Literal["auto", "sdpa", "flex"] = "auto",
        window_block: int = 128,
        bias_block: int = BIAS_BLOCK,
        bias_block_from: int = BIAS_BLOCK_FROM,
    ) -> None:
        super().__init__()
        check("softmax attention backend", backend, one_of(*BACKENDS), option="backend")
        check("softmax attention window_block", window_block, positive_int, option="window_block")
        check("softmax attention bias_block", bias_block, positive_int, option="bias_block")
        check(
            "softmax attention bias_block_from",
            bias_block_from,
            positive_int,
            option="bias_block_from",
        )
        self.backend = backend
        self.window_block = window_block
        self.bias_block, self.bias_block_from = bias_block, bias_block_from
        #: ``(batch, length, score entries)`` of the last forward that computed fewer than
        #: ``L^2`` per row and head on the fused CPU path: packed documents one at a time
        #: (``sum_d n_d^2``), rows padded at their end (``L n_b``); None after any other
        self._pairs_read: tuple[int, int, int] | None = None

    def score_pairs(self, length: int, window: int | None) -> int:
        """``(query, key)`` score entries one head of one row computes at ``length`` tokens
        with ``window`` (the keys the layer actually reads, for FLOP counts): ``L^2`` on the
        global path and dense SDPA; in the banded computation each block of ``window_block``
        queries reads its window's keys, ``[start - half, stop + half)`` clipped to the row.
        (FlexAttention's block mask on CUDA reads the band in 128 x 128 tiles instead: at
        most one tile more per block of rows.)"""
        half = band_half_width(window, length)
        if half is None or self.backend == "flex" or length <= self.window_block:
            return length * length
        return sum(
            (min(start + self.window_block, length) - start)
            * (min(length, start + self.window_block + half) - max(0, start - half))
            for start in range(0, length, self.window_block)
        )

    def score_pairs_read(self, batch: int, length: int, window: int | None) -> int:
        """Score entries of one head over ``batch`` rows of ``length`` tokens, as this
        kernel computed them, where its last forward was at that shape on the fused CPU
        path: ``sum_d n_d^2`` over every row's documents attended one at a time, ``L n_b``
        over rows padded at their end and attended against their ``n_b`` real keys; else
        ``batch * score_pairs(length, window)`` (a masked row computes every entry, masked
        or not)."""
        read = self._pairs_read
        if read is not None and read[:2] == (batch, length):
            return read[2]
        return batch * self.score_pairs(length, window)

    @classmethod
    def capabilities(cls, options: Mapping[str, Any] | None = None) -> KernelCapabilities:
        """``backend: flex`` has no attention dropout and trains on CUDA only (PyTorch has
        no FlexAttention backward elsewhere); ``auto`` and ``sdpa`` support both."""
        base = super().capabilities(options)
        if (options or {}).get("backend") == "flex":
            return replace(base, dropout=False, training_devices=("cuda",))
        return base

    def _flex_window(self, q: Tensor, bias: ScoreBias | None, dropout_p: float) -> bool:
        """Whether a windowed layer runs on FlexAttention with a block mask: CUDA, a dtype
        its Triton kernels take (not float64), no dropout, backend not ``sdpa``, and a bias
        that is absent or has a lookup (a dense-only bias, XL's or FIRE's, would be read as
        an ``[L, L]`` tensor inside the kernel: more memory than the banded computation, and
        its bf16 backward does not fit an H100's shared memory). Else the banded SDPA
        computation."""
        dense_only = bias is not None and bias.adds_bias and bias.lookup is None
        return (
            q.device.type == "cuda"
            and q.dtype in FLEX_DTYPES
            and dropout_p == 0
            and self.backend != "sdpa"
            and not dense_only
        )

    def _flex_lookup(self, q: Tensor, bias: ScoreBias, dropout_p: float) -> BiasLookup | None:
        """The lookup FlexAttention should use, or None to take SDPA (also for float64 on
        CUDA, which FlexAttention's Triton kernels cannot compute)."""
        if self.backend == "sdpa" or bias.lookup is None:
            return None
        if q.device.type == "cuda" and q.dtype not in FLEX_DTYPES:
            return None
        if self.backend == "flex":
            if dropout_p > 0:
                raise ConfigError(
                    "softmax backend 'flex' has no attention dropout; set "
                    "model.attention_dropout 0 or backend 'auto'"
                )
            return bias.lookup
        lookup = bias.lookup
        if (
            q.device.type == "cuda"
            and dropout_p == 0
            and isinstance(lookup, TableLookup)
            and lookup.learned_and_small
            and q.shape[-2] >= FUSED_FROM_LENGTH
        ):
            return lookup
        return None

    def _fused_cpu_bias(self, q: Tensor, dropout_p: float) -> bool:
        """Whether a float bias takes the fused CPU kernel with its own bias gradient
        (:mod:`roformer_lit.attention.cpu_fused_bias`): backend ``auto``, from
        ``FUSED_FROM_LENGTH`` tokens on, where the kernel applies (CPU, no dropout).
        Shorter rows keep SDPA's choice, so every curve trained below it is unchanged."""
        return (
            self.backend == "auto"
            and q.shape[-2] >= FUSED_FROM_LENGTH
            and fused_bias_available(q, dropout_p)
        )

    def _unmasked_cpu_path(
        self,
        q: Tensor,
        bias: ScoreBias | None,
        key_padding_mask: Tensor | None,
        segment_ids: Tensor | None,
        half: int | None,
        dropout_p: float,
    ) -> UnmaskedPath | None:
        """Where a global layer on the fused CPU path (``_fused_cpu_bias``) needs no mask,
        how; else None. A padding mask with every key real counts as none. Without
        segments: a bias of ``(h, i - j)`` alone (an
        :class:`~roformer_lit.score_bias.OffsetLookup`), its ``[h, 2L - 1]`` table read
        through a strided view over the whole row by
        :func:`~roformer_lit.attention.cpu_offset_bias.offset_bias_attention` (no ``[L, L]``
        tensor at any length; with no bias SDPA's fused kernel takes the row anyway). Rows
        padded at their end, with that table or no bias, each against its real keys
        (:func:`~roformer_lit.attention.padded_rows.attend_padded_rows`); other padding takes
        the masked path. With segments and no padded key, where every document is one run
        of its row, each document on its own
        (:func:`~roformer_lit.attention.documents.attend_documents`): no bias, that table,
        or, for another bias with squares (``ScoreBias.has_squares``), each document's
        ``[h, n, n]`` square while every document is shorter than ``bias_block_from`` (a
        longer one takes the blocks of queries, whose memory stays linear)."""
        if half is not None or not self._fused_cpu_bias(q, dropout_p):
            return None
        table = square_bias = tied_from = None
        if bias is not None and bias.adds_bias:
            if isinstance(bias.lookup, OffsetLookup):
                table, tied_from = bias.lookup.tables[0], bias.lookup.tied_from
            elif segment_ids is not None and bias.has_squares:
                square_bias = bias
            else:
                return None
        if key_padding_mask is not None and not bool(key_padding_mask.all()):
            real_keys = None if segment_ids is not None else real_prefix_lengths(key_padding_mask)
            if real_keys is None:
                return None
            return UnmaskedPath(None, table, real_keys=real_keys, tied_from=tied_from)
        if segment_ids is None:
            return None if table is None else UnmaskedPath(None, table, tied_from=tied_from)
        runs = document_runs(segment_ids)
        if runs is None:
            return None
        if square_bias is None:
            return UnmaskedPath(runs, table, tied_from=tied_from)
        if max(stop - start for row in runs for start, stop in row) >= self.bias_block_from:
            return None
        squares = bias_squares(square_bias, runs, q.shape[1], q.device, q.dtype)
        return UnmaskedPath(runs, squares=squares)

    def forward(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        *,
        scale: float,
        bias: ScoreBias | None = None,
        key_padding_mask: Tensor | None = None,
        rotate: Rotation | None = None,
        dropout_p: float = 0.0,
        segment_ids: Tensor | None = None,
        window: int | None = None,
    ) -> Tensor:
        if rotate is not None:
            q, k = rotate(q), rotate(k)
        if not torch.compiler.is_compiling():  # (the documents path never runs compiled)
            self._pairs_read = None
        half = band_half_width(window, q.shape[-2])
        if half is not None and self._flex_window(q, bias, dropout_p):
            return flex_softmax(
                q,
                k,
                v,
                scale=scale,
                lookup=_lookup_of(bias),
                key_padding_mask=key_padding_mask,
                segment_ids=segment_ids,
                half_window=half,
            )
        if half is not None and self.backend != "flex" and q.shape[-2] > self.window_block:
            return banded_softmax(
                q,
                k,
                v,
                scale=scale,
                half=half,
                bias=bias,
                key_padding_mask=key_padding_mask,
                segment_ids=segment_ids,
                dropout_p=dropout_p,
                block=self.window_block,
            )
        lookup = None if bias is None else self._flex_lookup(q, bias, dropout_p)
        if lookup is not None:
            return flex_softmax(
                q,
                k,
                v,
                scale=scale,
                lookup=lookup,
                key_padding_mask=key_padding_mask,
                segment_ids=segment_ids,
                half_window=half,
            )
        unmasked = self._unmasked_cpu_path(q, bias, key_padding_mask, segment_ids, half, dropout_p)
        if unmasked is not None:
            runs, per_offset, squares, real_keys, tied = unmasked
            if runs is not None:
                pairs = sum((stop - start) ** 2 for row in runs for start, stop in row)
                self._pairs_read = (q.shape[0], q.shape[-2], pairs)
                return attend_documents(q, k, v, runs, scale, per_offset, squares, tied)
            if real_keys is not None:
                self._pairs_read = (q.shape[0], q.shape[-2], q.shape[-2] * sum(real_keys))
                return attend_padded_rows(q, k, v, per_offset, scale, real_keys, tied)
            assert per_offset is not None
            return offset_bias_attention(q, k, v, per_offset, scale, tied)
        if (
            half is None
            and bias is not None
            and bias.adds_bias
            and bias.has_blocks
            and q.shape[-2] >= self.bias_block_from
        ):
            return query_blocked_softmax(
                q,
                k,
                v,
                scale=scale,
                bias=bias,
                key_padding_mask=key_padding_mask,
                segment_ids=segment_ids,
                dropout_p=dropout_p,
                block=self.bias_block,
                fused=self.backend == "auto" and fused_bias_available(q, dropout_p),
            )
        mask = None
        if key_padding_mask is not None:
            mask = key_padding_mask[:, None, None, :]
        if segment_ids is not None:  # block-diagonal: [B, 1, L, L]
            same = segment_ids[:, None, :, None] == segment_ids[:, None, None, :]
            mask = same if mask is None else same & mask
        if half is not None:  # the band |i - j| <= half; a query always sees itself
            band = band_mask(q.shape[-2], half, q.device)
            mask = band if mask is None else (band & mask) | band_mask(q.shape[-2], 0, q.device)
        fused = bias is not None and bias.adds_bias and self._fused_cpu_bias(q, dropout_p)
        dense = None if bias is None else _dense_bias(bias, fused)
        if dense is not None:
            mask = dense if mask is None else dense.masked_fill(~mask, -torch.inf)
            if fused:
                return fused_attention_with_bias(q, k, v, mask, scale)
            if mask.dtype not in (torch.float32, q.dtype):
                # SDPA takes a float mask of float32 or q's dtype only; a scheme's bias may
                # be any floating dtype (float64, or float16 beside float32 queries), as
                # the other paths here take it
                mask = mask.to(q.dtype)
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale
        )

    @staticmethod
    def reference(
        kernel: SoftmaxAttention,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        scale: float,
        *,
        bias: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        rotate: Rotation | None = None,
        segment_ids: Tensor | None = None,
        window: int | None = None,
    ) -> Tensor:
        """``softmax(rot(q) rot(k)^T * scale + bias + mask) v`` written out in float64 (the
        kernel kit's oracle): ``mask`` is ``-inf`` where key ``j`` is padding, in another
        segment than query ``i``, or (``window``) farther than ``window // 2`` from it;
        every query also sees itself (nothing changes for a real token). Every option of
        the kernel computes this same function."""
        q, k, v = q.double(), k.double(), v.double()
        if rotate is not None:
            q, k = rotate(q), rotate(k)
        logits = scale * (q @ k.transpose(-1, -2))
        if bias is not None:
            logits = logits + bias.double()
        batch, _, length, _ = q.shape
        index = torch.arange(length, device=q.device)
        offset = index[:, None] - index[None, :]
        sees = torch.ones(batch, 1, length, length, dtype=torch.bool, device=q.device)
        if key_padding_mask is not None:
            sees = sees & key_padding_mask.bool()[:, None, None, :]
        if segment_ids is not None:
            sees = sees & (segment_ids[:, None, :, None] == segment_ids[:, None, None, :])
        if window is not None:
            sees = sees & (offset.abs() <= window // 2)
        sees = sees | (offset == 0)
        return torch.softmax(logits.masked_fill(~sees, -torch.inf), dim=-1) @ v


def _dense_bias(bias: ScoreBias, fused: bool) -> Tensor | None:
    """The dense bias; for the fused CPU kernel, a bias of ``(h, i - j)`` only is expanded
    from its ``[h, 2L - 1]`` values (:meth:`~roformer_lit.score_bias.OffsetLookup.full`),
    so its gradient is a sum along diagonals rather than a scatter through an ``[L, L]``
    index."""
    if fused and isinstance(bias.lookup, OffsetLookup):
        return bias.lookup.full()
    return bias.bias


def _lookup_of(bias: ScoreBias | None) -> BiasLookup | None:
    """A bias's lookup for FlexAttention's ``score_mod`` (None: no bias; a windowed layer
    with a dense-only bias never reaches FlexAttention, see ``_flex_window``)."""
    return None if bias is None or not bias.adds_bias else bias.lookup
