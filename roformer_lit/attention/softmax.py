"""Softmax attention: SDPA, or FlexAttention for a score bias on CUDA.

    out = softmax(rot(q) rot(k)^T * scale + bias + mask) v

Two paths compute the same function:

- ``torch.nn.functional.scaled_dot_product_attention``: without a bias the padding mask
  stays boolean (or absent for packed batches) so SDPA can pick its fastest backend
  (flash / cuDNN / memory-efficient); with a bias, the scheme's dense ``[B or 1, h, L, L]``
  bias is built and the padding mask merged into it as ``-inf``.
- FlexAttention (:mod:`roformer_lit.attention.flex`): the bias is computed inside the
  fused kernel from the scheme's small tables (its ``lookup``), so no ``[L, L]`` tensor
  is built.

``backend``: ``auto`` (default) takes FlexAttention on CUDA from ``FLEX_FROM_LENGTH``
tokens on, when the scheme gives a lookup and attention dropout is off (FlexAttention has
no dropout), SDPA otherwise;
``sdpa`` always SDPA; ``flex`` FlexAttention for every bias (reading the dense bias where
a scheme gives no lookup); on CPU FlexAttention runs forward only, for checks.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from roformer_lit.attention.base import AttentionKernel, Rotation
from roformer_lit.attention.flex import flex_softmax
from roformer_lit.errors import ConfigError
from roformer_lit.score_bias import ScoreBias, lookup_of_dense

BACKENDS = ("auto", "sdpa", "flex")
#: ``auto`` takes FlexAttention from this length on (below it SDPA with the dense bias was
#: as fast or faster at BERT-base on an H100; see the README's GPU table).
FLEX_FROM_LENGTH = 2048


class SoftmaxAttention(AttentionKernel):
    """Full softmax attention; takes any additive score bias."""

    supports_score_bias = True

    def __init__(self, *, backend: Literal["auto", "sdpa", "flex"] = "auto") -> None:
        super().__init__()
        if backend not in BACKENDS:
            raise ConfigError(
                f"softmax attention backend must be one of {', '.join(BACKENDS)}, got {backend!r}"
            )
        self.backend = backend

    def _flex_lookup(self, q: Tensor, bias: ScoreBias, dropout_p: float):
        """The lookup FlexAttention should use, or None to take SDPA."""
        if self.backend == "sdpa" or not bias.adds_bias:
            return None
        if self.backend == "flex":
            if dropout_p > 0:
                raise ConfigError(
                    "softmax backend 'flex' has no attention dropout; set "
                    "model.attention_dropout 0 or backend 'auto'"
                )
            return bias.lookup or lookup_of_dense(bias.bias)
        if (
            q.device.type == "cuda"
            and dropout_p == 0
            and bias.lookup is not None
            and q.shape[-2] >= FLEX_FROM_LENGTH
        ):
            return bias.lookup
        return None

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
    ) -> Tensor:
        if rotate is not None:
            q, k = rotate(q), rotate(k)
        lookup = None if bias is None else self._flex_lookup(q, bias, dropout_p)
        if lookup is not None:
            return flex_softmax(
                q, k, v, scale=scale, lookup=lookup, key_padding_mask=key_padding_mask
            )
        mask = None
        if key_padding_mask is not None:
            mask = key_padding_mask[:, None, None, :]
        dense = None if bias is None else bias.bias
        if dense is not None:
            mask = dense if mask is None else dense.masked_fill(~mask, -torch.inf)
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale
        )
