"""What every attention kernel receives: heads, an optional bias, mask and rotation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from torch import Tensor, nn

from roformer_lit.capabilities import KernelCapabilities
from roformer_lit.score_bias import ScoreBias

Rotation = Callable[[Tensor], Tensor]


class AttentionKernel(nn.Module):
    """``forward(q, k, v, scale, bias, key_padding_mask, rotate, dropout_p, segment_ids,``
    ``window) -> [B, h, L, d]``.

    ``q, k, v``: ``[B, h, L, d]``. ``bias``: the scheme's additive, already-scaled score
    bias (:class:`~roformer_lit.score_bias.ScoreBias`: dense and/or lookup form) or None.
    ``key_padding_mask``: bool ``[B, L]``, True at real tokens, or None (packed batches).
    ``segment_ids``: ``[B, L]`` int or None; with it a token attends only to tokens of its
    own segment (block-diagonal). ``window``: None (global) or ``w >= 1``: query ``i``
    attends to key ``j`` only where ``|i - j| <= w // 2`` (the layer's plan; only kernels
    with ``supports_window`` receive one). ``rotate``: the scheme's query/key rotation, or None;
    a kernel with ``rotates_inputs`` (the default) applies it to ``q`` and ``k`` before
    anything else reads them, one that rotates elsewhere sets it False and says where (linear
    attention: its feature maps). Options are keyword-only ``__init__`` arguments.

    Optional, for the kernel author's test kit (:mod:`roformer_lit.testing`,
    ``check_kernel``): a staticmethod (or classmethod) ``reference(kernel, q, k, v, scale, *,
    bias, key_padding_mask, rotate, segment_ids, window) -> [B, h, L, d]`` computing the
    same function from its formula, slowly and in float64; ``kernel`` is the built instance
    (read its options), ``bias`` the dense bias tensor or None, the other keywords as
    ``forward``'s (None where unused). Only the real queries' outputs are compared.
    """

    #: Whether the kernel materialises the score matrix and so can add a float bias to it.
    supports_score_bias: ClassVar[bool] = False
    #: Whether the kernel can keep segments apart (``segment_ids``: packed documents).
    supports_segments: ClassVar[bool] = False
    #: Whether the kernel can restrict attention to a sliding window (``window``).
    supports_window: ClassVar[bool] = False
    #: Whether the kernel applies attention dropout (``dropout_p > 0``).
    supports_dropout: ClassVar[bool] = True
    #: The device types it can train on; None: every device.
    training_devices: ClassVar[tuple[str, ...] | None] = None
    #: Its options that act only in a windowed layer (``window`` given).
    window_options: ClassVar[tuple[str, ...]] = ()
    #: Its options that act only in a layer whose scheme adds a score bias.
    bias_options: ClassVar[tuple[str, ...]] = ()
    #: Whether ``rotate`` turns ``q`` and ``k`` as given, before anything else reads them:
    #: the output with ``rotate`` is the output on ``rotate(q), rotate(k)`` with none (the
    #: kernel kit checks this). False for a kernel that rotates elsewhere.
    rotates_inputs: ClassVar[bool] = True

    @classmethod
    def capabilities(cls, options: Mapping[str, Any] | None = None) -> KernelCapabilities:
        """What the kernel supports with ``options`` (checked ``attention_kwargs``): its
        class attributes; a kernel whose support depends on an option overrides this."""
        return KernelCapabilities(
            score_bias=cls.supports_score_bias,
            segments=cls.supports_segments,
            window=cls.supports_window,
            dropout=cls.supports_dropout,
            training_devices=cls.training_devices,
            window_options=cls.window_options,
            bias_options=cls.bias_options,
        )

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
        raise NotImplementedError
