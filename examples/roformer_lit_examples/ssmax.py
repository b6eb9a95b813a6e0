"""Scalable softmax (Nakanishi 2025, arXiv 2501.19399, "Scalable-Softmax Is Superior for
Attention"), over another position scheme.

The softmax over ``n`` scores ``z`` becomes ``SSMax(z)_j = n^(s z_j) / sum_t n^(s z_t)``,
that is ``softmax(s log n * z)``: as rows grow longer the scores are sharpened by ``log n``,
so attention does not flatten out with length (the same idea as the attention temperature
by length Llama 4 uses for long contexts). Here, per layer ``l`` and head ``h``:

    logits_ij = s_lh * log(n_i) * z_ij,    z_ij = the inner scheme's logits (scale q'.k' + bias)

- ``s_lh = exp(sigma_lh)`` is learned (kept positive by the exponential), initialised to
  ``initial_s`` (default ``1 / log(max_positions)``: the factor is 1 for a row of
  ``max_positions`` tokens; the paper learns ``s`` and this starting value is ours);
- ``n_i`` is the number of keys query ``i`` attends to: the real (unpadded) keys of its
  packed document when documents are packed (``segment_ids``: the segment positions restart
  at 0), else of its row. The scheme declares ``reads_key_padding``, so the encoder hands
  ``prepare`` the key-padding mask; a padded row is then scaled as the row alone.
  ``n_i = 1`` gives the factor 0 (one key: the softmax is 1 whatever the scale).
- The factor is applied through the seam without a core change: the layer's ``rotate``
  multiplies queries and keys by ``sqrt(s_lh log n)`` each (after the inner scheme's own
  rotation), so ``q'.k'`` is multiplied by ``s_lh log n`` for every pair of one document
  (``n_i = n_j`` there; other pairs are masked); an inner additive bias is multiplied by
  ``s_lh log n_i`` as a dense ``[B, h, L, L]`` tensor. ``sqrt(s_lh) = exp(sigma_lh / 2)``
  keeps the gradient finite where ``log n = 0``.

``inner`` is any registered per-layer scheme (``nope``, ``rope``, ``alibi``, ...; not one
that adds to the embeddings, whose class-level claims, embedding and bounded, this class
would then have to make for every inner scheme) built with ``inner_kwargs``; which positions
it reads and its translation invariance are the inner scheme's, set on the instance.
Softmax kernel only (a temperature means nothing to linear attention).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import torch
from torch import Tensor, nn

from roformer_lit.capabilities import SchemeCapabilities
from roformer_lit.errors import ConfigError, PluginBuildFailed
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.positions.base import (
    EncoderShape,
    LayerPosition,
    PositionScheme,
    QKVWeights,
    ScoreBias,
)
from roformer_lit.registry import check_options, construct, lookup


def keys_per_query(
    length: int,
    device: torch.device,
    positions: Tensor | None = None,
    key_padding_mask: Tensor | None = None,
) -> Tensor:
    """``n_i``, ``[B or 1, L]`` float: the (real) keys of query ``i``'s segment, a segment
    being a run of increasing positions (packed documents restart theirs at 0)."""
    if positions is None and key_padding_mask is None:
        return torch.full((1, length), float(length), device=device)
    rows = (positions if positions is not None else key_padding_mask).shape[0]
    starts = torch.zeros(rows, length, dtype=torch.bool, device=device)
    starts[:, 0] = True
    if positions is not None:
        starts[:, 1:] = positions[:, 1:] <= positions[:, :-1]
    segment = starts.long().cumsum(1) - 1  # [B, L]: 0, 1, ... along the row
    real = torch.ones(rows, length, device=device)
    if key_padding_mask is not None:
        real = key_padding_mask.to(real.dtype).expand(rows, length)
    counts = torch.zeros(rows, length, device=device).scatter_add(1, segment, real)
    return counts.gather(1, segment)


class ScaledLayer(LayerPosition):
    """The inner layer's hooks, its logits multiplied by ``s_lh log n_i``."""

    rotates = True

    def __init__(self, index: int, inner: LayerPosition) -> None:
        super().__init__()
        self.index = index
        self._inner = [inner]  # a list: the inner scheme owns (and registers) its layer

    def _factor(self, ctx: tuple, root: bool) -> Tensor:
        """``s_lh log n_i`` (or its square root), ``[B or 1, h, L, 1]``."""
        _, log_n, log_s = ctx
        if root:
            return (log_s[self.index] / 2).exp()[None, :, None, None] * log_n.sqrt()[
                :, None, :, None
            ]
        return log_s[self.index].exp()[None, :, None, None] * log_n[:, None, :, None]

    def rotate(self, x: Tensor, ctx: tuple) -> Tensor:
        inner = self._inner[0]
        if inner.rotates:
            x = inner.rotate(x, ctx[0])
        return x * self._factor(ctx, root=True).to(x.dtype)

    def score(self, q: Tensor, k: Tensor, ctx: tuple, qkv: QKVWeights) -> ScoreBias | None:
        inner = self._inner[0].score(q, k, ctx[0], qkv)
        if inner is None or not inner.adds_bias:
            return inner
        factor = self._factor(ctx, root=False)
        return ScoreBias(scale=inner.scale, build=lambda: inner.bias * factor.to(q.dtype))


def _inner_scheme(inner: Any) -> type[PositionScheme]:
    """The class of scheme ``inner`` (any registered name or import path), or a ConfigError
    naming ``inner`` (``ConfigError.option``): one that does not resolve, ssmax itself, or a
    scheme that adds to the embeddings."""
    try:
        inner_cls = lookup(POSITION_SCHEMES, inner, "position")
    except ConfigError as exc:
        raise ConfigError(f"ssmax inner: {exc}", option="inner") from None
    if issubclass(inner_cls, ScalableSoftmax):
        raise ConfigError(f"ssmax inner {inner!r} cannot be ssmax itself", option="inner")
    if inner_cls.embed is not PositionScheme.embed:
        per_layer = sorted(
            name
            for name in POSITION_SCHEMES.builtin_names()
            if POSITION_SCHEMES[name].embed is PositionScheme.embed
        )
        raise ConfigError(
            f"ssmax inner {inner!r} adds to the embeddings; ssmax scales the logits of a "
            f"per-layer scheme: {', '.join(per_layer)}",
            option="inner",
        )
    return inner_cls


class ScalableSoftmax(PositionScheme):
    """Scalable softmax: the inner scheme's logits times a learned ``s_lh log n``."""

    needs_score_bias = True
    uses_segment_positions = True
    reads_key_padding = True

    def __init__(
        self,
        shape: EncoderShape,
        *,
        inner: str = "nope",
        inner_kwargs: dict[str, Any] | None = None,
        initial_s: float | None = None,
    ) -> None:
        super().__init__(shape)
        inner_cls = _inner_scheme(inner)
        try:  # the inner scheme's options and its own checks, named under inner_kwargs
            options = check_options(
                inner_cls, inner_kwargs, "position", inner, lambda key: f"inner_kwargs.{key}"
            )
            self.inner = construct(inner_cls, "position", inner, shape, **options)
        except PluginBuildFailed as exc:  # the inner plugin's own bug: led by what chose it
            raise PluginBuildFailed(str(exc), option="inner") from None
        except ConfigError as exc:  # an option it names, else its options, else the choice
            nested = "inner_kwargs" if inner_kwargs else "inner"
            if exc.option is not None:
                nested = f"inner_kwargs.{exc.option}"
            raise ConfigError(str(exc), option=nested) from None
        if initial_s is None:
            initial_s = 1.0 / math.log(max(shape.max_positions, 2))
        if (
            isinstance(initial_s, bool)
            or not isinstance(initial_s, (int, float))
            or not (math.isfinite(initial_s) and initial_s > 0)
        ):
            raise ConfigError(
                f"ssmax initial_s must be a finite number > 0, got {initial_s!r}",
                option="initial_s",
            )
        # the claims that are the inner scheme's (the kit reads them from the instance)
        self.translation_invariant = self.inner.translation_invariant
        self.reads_positions = self.inner.reads_positions
        #: ``sigma_lh = log s_lh``, one per layer and head.
        self.log_s = nn.Parameter(
            torch.full((shape.num_layers, shape.num_heads), math.log(initial_s))
        )
        self._layers = [ScaledLayer(i, self.inner.layer(i)) for i in range(shape.num_layers)]

    @classmethod
    def capabilities(cls, options: Mapping[str, Any] | None = None) -> SchemeCapabilities:
        """The inner scheme's claims (translation invariance, reading positions, a bounded
        table), so the rules treat ``ssmax`` over ``fire`` as absolute and ``ssmax`` over
        ``nope`` as reading no positions; it always needs a score-taking kernel."""
        base = super().capabilities(options)
        inner_name = (options or {}).get("inner", "nope")
        if not isinstance(inner_name, str) or inner_name not in POSITION_SCHEMES:
            return base  # the constructor refuses it in one line
        inner = POSITION_SCHEMES[inner_name].capabilities((options or {}).get("inner_kwargs"))
        return replace(
            base,
            translation_invariant=inner.translation_invariant,
            reads_positions=inner.reads_positions,
            bounded=inner.bounded,
        )

    def amplify_for_tests(self) -> None:
        self.inner.amplify_for_tests()
        with torch.no_grad():  # spread the heads' s over [0.5, 2] times the start
            spread = torch.linspace(math.log(0.5), math.log(2.0), self.log_s.shape[1])
            self.log_s.add_(spread)

    def prepare(
        self,
        length: int,
        device: torch.device,
        dtype: torch.dtype,
        positions: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
    ) -> tuple[Any, Tensor, Tensor]:
        """(the inner context, ``log n_i`` ``[B or 1, L]``, ``sigma`` ``[layers, h]``)."""
        inner_positions = positions if self.inner.uses_segment_positions else None
        if positions is not None and not self.inner.uses_segment_positions:
            # positions here are segment positions or randomized ones; an inner scheme
            # without uses_segment_positions takes None for the former only
            increasing = bool((positions[:, 1:] > positions[:, :-1]).all())
            inner_positions = positions if increasing else None
        context = self.inner.prepare(length, device, dtype, inner_positions)
        counts = keys_per_query(length, device, positions, key_padding_mask)
        return context, counts.clamp(min=1).log().to(dtype), self.log_s

    def layer(self, index: int) -> LayerPosition:
        return self._layers[index]

    @staticmethod
    def reference(
        scheme: ScalableSoftmax, q: Tensor, k: Tensor, positions: Tensor | None, layer: int
    ) -> Tensor:
        """``s_lh log(n_i) z_ij`` in float64, ``n_i`` counted token by token. The inner
        logits ``z`` are the inner class's own ``reference`` where it has one, else its
        hooks' (the kit checks those against the inner's own tests): what this pins is
        the scale."""
        batch, heads, length, _ = q.shape
        q, k = q.double(), k.double()
        inner_cls = type(scheme.inner)
        if hasattr(inner_cls, "reference"):
            inner = inner_cls.reference(scheme.inner, q, k, positions, layer)
        else:
            from roformer_lit.testing.checks import seam_logits

            inner = seam_logits(scheme.inner, layer, q, k, positions, None)
        s = scheme.log_s[layer].double().exp()
        logits = torch.empty(batch, heads, length, length, dtype=torch.float64)
        for b in range(batch):
            row = list(range(length)) if positions is None else positions[b].tolist()
            for i in range(length):
                first, last = i, i  # the run of increasing positions holding i
                while first > 0 and row[first - 1] < row[first]:
                    first -= 1
                while last < length - 1 and row[last + 1] > row[last]:
                    last += 1
                n = last - first + 1
                logits[b, :, i, :] = (
                    s[:, None] * math.log(n) * inner[min(b, len(inner) - 1), :, i, :]
                )
        return logits
