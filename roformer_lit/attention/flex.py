"""Softmax attention with a score bias through FlexAttention, never building ``[L, L]``.

    out = softmax(q k^T * scale + bias) v,   bias[b, h, i, j] = lookup(b, h, i, j)

FlexAttention (``torch.nn.attention.flex_attention``) generates one fused kernel from a
``score_mod(score, b, h, q_idx, kv_idx)``; here ``score_mod`` adds the scheme's
:class:`~roformer_lit.score_bias.ScoreBias` lookup and sets padded keys to ``-inf``. The
bias comes from the scheme's small tables inside the kernel, so neither the ``[B, h, L, L]``
bias nor the score matrix is ever in memory, and gradients reach the tables through the
kernel's backward. ``flex_attention`` is compiled once per process (it only fuses when
compiled); inside an already-compiled model it is traced as it is. PyTorch trains it on
CUDA only: on CPU it runs forward-only, unfused (for checks).
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from roformer_lit.errors import ConfigError
from roformer_lit.score_bias import BiasLookup, TableLookup

_compiled_flex = None
RECOMPILE_LIMIT = 64
#: Band block masks kept (one per length and window: a length sweep reuses them).
BLOCK_MASK_CACHE = 64


def _flex_attention():
    """``flex_attention``, compiled on first use on CUDA (plain while tracing or on CPU)."""
    from torch.nn.attention.flex_attention import flex_attention

    global _compiled_flex
    if torch.compiler.is_compiling():
        return flex_attention
    if _compiled_flex is None:
        # one specialisation per (lookup, length): a sweep of lengths (extrapolate, bench)
        # must not hit dynamo's default limit of 8 and fall back to the unfused kernel
        limit = torch._dynamo.config.recompile_limit
        torch._dynamo.config.recompile_limit = max(limit, RECOMPILE_LIMIT)
        _compiled_flex = torch.compile(flex_attention, dynamic=False)
    return _compiled_flex


def flex_softmax(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    scale: float,
    lookup: BiasLookup | None,
    key_padding_mask: Tensor | None,
    segment_ids: Tensor | None = None,
    half_window: int | None = None,
) -> Tensor:
    """``softmax(q k^T * scale + lookup + mask) v`` for ``q, k, v`` ``[B, h, L, d]``; the
    mask is ``-inf`` at padded keys, across segments and, given ``half_window``, where
    ``|i - j| > half_window``. The window is also a block mask: on CUDA, tiles wholly
    outside the band are skipped, so a windowed layer's cost grows linearly with ``L``."""

    if isinstance(lookup, TableLookup):
        lookup = lookup.cast(q.dtype)  # the kernel's compute dtype, as SDPA casts its mask

    def score_mod(score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        if lookup is not None:
            score = score + lookup(b, h, q_idx, kv_idx).to(score.dtype)
        allowed = None
        if key_padding_mask is not None:
            allowed = key_padding_mask[b, kv_idx]
        if segment_ids is not None:
            same = segment_ids[b, q_idx] == segment_ids[b, kv_idx]
            allowed = same if allowed is None else allowed & same
        if half_window is not None:
            inside = (q_idx - kv_idx).abs() <= half_window
            allowed = inside if allowed is None else allowed & inside
            # in a band a query always sees itself, padded or not (attention/window.py)
            allowed = allowed | (q_idx == kv_idx)
        return score if allowed is None else torch.where(allowed, score, -torch.inf)

    block_mask = None

    if q.device.type == "cuda":
        attend = _flex_attention()
    else:
        from torch.nn.attention.flex_attention import flex_attention as attend

        if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
            raise ConfigError(
                f"softmax backend 'flex' trains on CUDA only (PyTorch has no FlexAttention "
                f"backward on {q.device.type}); use backend 'auto' or 'sdpa' here"
            )
    if half_window is not None and q.device.type == "cuda":
        block_mask = window_block_mask(q.shape[-2], half_window, q.device)
    v = v.to(q.dtype)
    return attend(q, k.to(q.dtype), v, score_mod=score_mod, block_mask=block_mask, scale=scale)


def window_block_mask(length: int, half_window: int, device: torch.device):
    """FlexAttention's block mask of the band ``|i - j| <= half_window`` (one for every
    batch row and head): tiles outside it are never computed. Built once per (length,
    band, device) and reused by every layer and step (building it evaluates the band over
    all ``L x L`` pairs); built afresh while tracing."""
    if torch.compiler.is_compiling():
        return _band_block_mask(length, half_window, device)
    return _cached_band_block_mask(length, half_window, torch.device(device))


def _band_block_mask(length: int, half_window: int, device: torch.device):
    from torch.nn.attention.flex_attention import create_block_mask

    def in_band(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return (q_idx - kv_idx).abs() <= half_window

    return create_block_mask(in_band, None, None, length, length, device=device)


_cached_band_block_mask = functools.lru_cache(maxsize=BLOCK_MASK_CACHE)(_band_block_mask)
