"""The encoder and its MLM head: one network for every position scheme and kernel.

x = LN(E[ids] (+ absolute positions));  x = Block_l(x) for l < num_layers
post-LN block (BERT): x = LN(x + Attn(x));  x = LN(x + FFN(x))
pre-LN block:         x = x + Attn(LN(x));  x = x + FFN(LN(x));  final LN
FFN(x) = W_2 gelu(W_1 x);  head(x) = LN(gelu(W x)) E^T + b  (decoder tied to E)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor, nn

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.attention.block import SelfAttention
from roformer_lit.errors import ConfigError
from roformer_lit.positions import POSITION_SCHEMES, EncoderShape, LayerPosition, PositionScheme
from roformer_lit.positions.base import segment_positions
from roformer_lit.registry import check_options, lookup
from roformer_lit.validation import check_model_arguments

#: The kernels that can keep packed documents apart (``segment_ids``).
SEGMENT_KERNELS = sorted(name for name, k in ATTENTION_KERNELS.items() if k.supports_segments)


def check_document_mask(config: Mapping[str, Any]) -> None:
    """``data.document_mask`` with a kernel that cannot keep documents apart is refused
    in one line naming the kernels that can, before anything is built."""
    data, model = config.get("data"), config.get("model")
    if not data or not model or not data.get("document_mask"):
        return
    attention = model.get("attention")
    kernel = ATTENTION_KERNELS.get(attention)
    if kernel is not None and not kernel.supports_segments:
        valid = sorted(name for name, k in ATTENTION_KERNELS.items() if k.supports_segments)
        raise ConfigError(
            f"data.document_mask true needs an attention kernel that keeps documents apart; "
            f"model.attention={attention!r} cannot; valid: {', '.join(valid)}"
        )


def check_random_positions(config: Mapping[str, Any]) -> None:
    """``data.random_positions`` (the range ``R`` randomized positions are drawn from)
    against the model section, before anything is built: refused in one line with a scheme
    that reads no positions (they would change nothing), and with a scheme bounded by its
    table (its ``max_length``: ``learned``) when ``R > model.max_positions``."""
    data, model = config.get("data"), config.get("model")
    if not data or not model or data.get("random_positions") is None:
        return
    span, position = data.get("random_positions"), model.get("position")
    scheme = POSITION_SCHEMES.get(position)
    if scheme is None:  # an unknown name is refused, with the valid ones, by the encoder
        return
    if not scheme.reads_positions:
        valid = sorted(name for name, cls in POSITION_SCHEMES.items() if cls.reads_positions)
        raise ConfigError(
            f"data.random_positions={span} needs a position scheme that reads positions; "
            f"model.position={position!r} reads none; valid: {', '.join(valid)}"
        )
    limit = model.get("max_positions")
    bounded = scheme.max_length is not PositionScheme.max_length  # overridden: a table's size
    if bounded and isinstance(limit, int) and isinstance(span, int) and span > limit:
        raise ConfigError(
            f"data.random_positions={span} exceeds model.max_positions={limit}, the size of "
            f"the {position!r} position table; lower data.random_positions or raise "
            "model.max_positions"
        )


class EncoderLayer(nn.Module):
    """One transformer block, post-LN (BERT) or pre-LN."""

    def __init__(
        self,
        attention: SelfAttention,
        hidden_size: int,
        intermediate_size: int,
        dropout: float,
        layer_norm_eps: float,
        pre_norm: bool,
    ) -> None:
        super().__init__()
        self.attention = attention
        self.attention_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.ffn_in = nn.Linear(hidden_size, intermediate_size)
        self.ffn_out = nn.Linear(intermediate_size, hidden_size)
        self.ffn_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.pre_norm = pre_norm

    def ffn(self, x: Tensor) -> Tensor:
        return self.ffn_out(nn.functional.gelu(self.ffn_in(x)))

    def forward(
        self,
        x: Tensor,
        ctx: Any,
        key_padding_mask: Tensor | None,
        position: LayerPosition,
        rows: Tensor | None = None,
        segment_ids: Tensor | None = None,
    ) -> Tensor:
        """``[B, L, H]``; given ``rows`` (``[B, L]`` bool), everything after the attention
        runs at those rows only (all are row-wise) and the result is ``[N, H]``."""
        residual = x if rows is None else x[rows]
        if self.pre_norm:
            attended = self.attention(
                self.attention_norm(x), ctx, key_padding_mask, position, rows, segment_ids
            )
            x = residual + self.dropout(attended)
            return x + self.dropout(self.ffn(self.ffn_norm(x)))
        attended = self.attention(x, ctx, key_padding_mask, position, rows, segment_ids)
        x = self.attention_norm(residual + self.dropout(attended))
        return self.ffn_norm(x + self.dropout(self.ffn(x)))


class Encoder(nn.Module):
    """Token embeddings, a position scheme and ``num_layers`` blocks sharing one kernel."""

    def __init__(
        self,
        *,
        position: str,
        attention: str,
        vocab_size: int,
        hidden_size: int,
        num_layers: int,
        num_heads: int,
        intermediate_size: int,
        max_positions: int,
        dropout: float,
        attention_dropout: float,
        layer_norm_eps: float,
        pre_norm: bool,
        position_kwargs: Mapping[str, Any] | None,
        attention_kwargs: Mapping[str, Any] | None,
    ) -> None:
        super().__init__()
        check_model_arguments(
            {
                "position": position,
                "attention": attention,
                "vocab_size": vocab_size,
                "hidden_size": hidden_size,
                "num_layers": num_layers,
                "num_heads": num_heads,
                "intermediate_size": intermediate_size,
                "max_positions": max_positions,
                "dropout": dropout,
                "attention_dropout": attention_dropout,
                "layer_norm_eps": layer_norm_eps,
                "pre_norm": pre_norm,
                "position_kwargs": position_kwargs,
                "attention_kwargs": attention_kwargs,
            }
        )
        scheme_cls = lookup(POSITION_SCHEMES, position, "position")
        kernel_cls = lookup(ATTENTION_KERNELS, attention, "attention")
        position_options = check_options(scheme_cls, position_kwargs, "position", position)
        kernel_options = check_options(kernel_cls, attention_kwargs, "attention", attention)
        if scheme_cls.needs_score_bias and not kernel_cls.supports_score_bias:
            valid = sorted(n for n, k in ATTENTION_KERNELS.items() if k.supports_score_bias)
            raise ConfigError(
                f"position {position!r} adds a score bias, which attention {attention!r} cannot "
                f"take; valid attention kernels for {position!r}: {', '.join(valid)}"
            )
        self.attention_name = attention
        self.kernel_supports_segments = kernel_cls.supports_segments
        shape = EncoderShape(hidden_size, num_heads, num_layers, max_positions, layer_norm_eps)
        self.position = scheme_cls(shape, **position_options)
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size)
        self.embedding_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(
                SelfAttention(
                    hidden_size, num_heads, kernel_cls(**kernel_options), attention_dropout
                ),
                hidden_size,
                intermediate_size,
                dropout,
                layer_norm_eps,
                pre_norm,
            )
            for _ in range(num_layers)
        )
        self.final_norm = (
            nn.LayerNorm(hidden_size, eps=layer_norm_eps) if pre_norm else nn.Identity()
        )

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        rows: Tensor | None = None,
        segment_ids: Tensor | None = None,
        position_ids: Tensor | None = None,
    ) -> Tensor:
        """Hidden states ``[B, L, H]``; ``attention_mask`` is True (or 1) at real tokens.

        Given ``segment_ids`` (``[B, L]`` int, runs of equal ids: packed documents), a token
        attends only to its own segment and positions restart at 0 in every segment, so each
        document gets the hidden states it would get alone. Given ``position_ids``
        (``[B, L]`` long, increasing and distinct along each row: randomized positions),
        token ``i`` of row ``b`` sits at position ``position_ids[b, i]`` instead of ``i``:
        the hidden states are those of a longer row with the tokens at those indices and
        padding, masked out, everywhere else. The two cannot be combined. Given ``rows``
        (``[B, L]`` bool), the result is ``forward(...)[rows]``, ``[N, H]``, and the last
        layer does only the work those rows need: its attention still reads every key and
        value, but the output projection, FFN and norms run at ``N`` rows.
        """
        positions = position_ids
        if segment_ids is not None:
            if not self.kernel_supports_segments:
                raise ConfigError(
                    f"attention {self.attention_name!r} cannot keep documents apart; valid "
                    f"attention kernels with segments: {', '.join(SEGMENT_KERNELS)}"
                )
            if position_ids is not None:
                raise ConfigError(
                    "randomized positions (position_ids) and packed documents kept apart "
                    "(segment_ids) cannot be combined: positions restart in every segment; "
                    "set data.random_positions null or data.document_mask false"
                )
            if self.position.uses_segment_positions:  # else None means the same (base.py)
                positions = segment_positions(segment_ids)
        x = self.position.embed(self.word_embeddings(input_ids), positions)
        x = self.dropout(self.embedding_norm(x))
        key_padding_mask = None if attention_mask is None else attention_mask.bool()
        ctx = self.position.prepare(input_ids.shape[1], x.device, x.dtype, positions)
        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            layer_rows = rows if index == last else None
            x = layer(x, ctx, key_padding_mask, self.position.layer(index), layer_rows, segment_ids)
        return self.final_norm(x)


class MLMHead(nn.Module):
    """``LN(gelu(W x)) E^T + b`` with the decoder tied to the word embeddings ``E``."""

    def __init__(self, vocab_size: int, hidden_size: int, layer_norm_eps: float) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, hidden: Tensor, word_embeddings: Tensor) -> Tensor:
        """Logits ``[..., V]`` of hidden states ``[..., H]``; ``word_embeddings`` is ``E``."""
        x = self.norm(nn.functional.gelu(self.dense(hidden)))
        return nn.functional.linear(x, word_embeddings, self.bias)


def init_bert_weights(module: nn.Module, std: float = 0.02) -> None:
    """BERT initialisation: normal(0, std) weights, zero biases, unit LayerNorms."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)
