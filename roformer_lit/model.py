"""The encoder and its MLM head: one network for every position scheme and kernel.

x = LN(E[ids] (+ absolute positions));  x = Block_l(x) for l < num_layers
post-LN block (BERT): x = LN(x + Attn(x));  x = LN(x + FFN(x))
pre-LN block:         x = x + Attn(LN(x));  x = x + FFN(LN(x));  final LN
FFN(x) = W_2 gelu(W_1 x);  head(x) = LN(gelu(W x)) E^T + b  (decoder tied to E)

``model.block`` swaps the MLP (GeGLU, SwiGLU), the norm (RMSNorm, LayerNorm without bias)
and drops linear biases (:mod:`roformer_lit.blocks`); ``model.layer_plan`` gives each
layer its own scheme, options and window (:mod:`roformer_lit.layer_plan`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from torch import Tensor, nn

from roformer_lit.attention import ATTENTION_KERNELS, AttentionKernel
from roformer_lit.attention.block import SelfAttention
from roformer_lit.blocks import BlockOptions
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.layer_plan import LayerSpec
from roformer_lit.positions import POSITION_SCHEMES, EncoderShape, LayerPosition, PositionScheme
from roformer_lit.positions.base import segment_positions
from roformer_lit.registry import check_options, lookup


class EncoderLayer(nn.Module):
    """One transformer block, post-LN (BERT) or pre-LN, built with ``block``'s options
    (:mod:`roformer_lit.blocks`); ``attention_norm`` False: no norm before the attention
    (ModernBERT's first layer)."""

    def __init__(
        self,
        attention: SelfAttention,
        hidden_size: int,
        intermediate_size: int,
        dropout: float,
        layer_norm_eps: float,
        pre_norm: bool,
        block: BlockOptions | None = None,
        attention_norm: bool = True,
    ) -> None:
        super().__init__()
        block = block or BlockOptions()
        self.attention = attention
        self.attention_norm = (
            block.norm_layer(hidden_size, layer_norm_eps) if attention_norm else nn.Identity()
        )
        bias = block.linear_bias
        self.ffn_in = nn.Linear(hidden_size, block.ffn_widths(intermediate_size), bias=bias)
        self.ffn_out = nn.Linear(intermediate_size, hidden_size, bias=bias)
        self.ffn_norm = block.norm_layer(hidden_size, layer_norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.pre_norm = pre_norm
        self.block = block

    def ffn(self, x: Tensor) -> Tensor:
        return self.ffn_out(self.block.ffn_activation(self.ffn_in(x)))

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
    """Token embeddings, a position scheme and ``num_layers`` blocks, as ``config`` (an
    :class:`~roformer_lit.encoder_config.EncoderConfig`, checked when it was made) says;
    here the checks that need the registries: the scheme and kernel names, their options,
    and the plan's combinations (:func:`check_plan`).

    ``block`` (:mod:`roformer_lit.blocks`) chooses the MLP, norms and biases; ``layer_plan``
    (:mod:`roformer_lit.layer_plan`) gives each layer its own scheme, scheme options and
    window. Layers whose scheme and options are equal share one scheme instance: the
    model's (``position``, embedding too) or one in ``layer_positions`` (built over the
    layers that use it, numbered among themselves). Without a plan, or with one whose
    layers all resolve alike, there is one scheme, as without a plan.
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.config = config
        position, attention = config.position, config.attention
        position_kwargs, num_layers = config.position_kwargs, config.num_layers
        hidden_size, layer_norm_eps = config.hidden_size, config.layer_norm_eps
        dropout, pre_norm = config.dropout, config.pre_norm
        scheme_cls = lookup(POSITION_SCHEMES, position, "position")
        kernel_cls = lookup(ATTENTION_KERNELS, attention, "attention")
        check_options(scheme_cls, position_kwargs, "position", position)
        kernel_options = check_options(kernel_cls, config.attention_kwargs, "attention", attention)
        options = config.block_options
        model_spec = config.model_layer
        specs = config.layer_specs
        check_plan(specs, model_spec, kernel_cls, attention)
        self.attention_name = attention
        self.kernel_supports_segments = kernel_cls.supports_segments
        shape = EncoderShape(
            hidden_size, config.num_heads, num_layers, config.max_positions, layer_norm_eps
        )
        keys = list(dict.fromkeys(spec.scheme_key for spec in specs))
        model_key = model_spec.scheme_key
        used = list(dict.fromkeys(spec.position for spec in specs))
        if position not in used:
            raise ConfigError(
                f"no layer of model.layer_plan uses model.position {position!r}; set "
                f"model.position to a scheme a layer uses: {', '.join(used)}"
            )
        if len(keys) == 1:  # one scheme everywhere: the model's, with the layers' options
            model_spec = specs[0]
        self.position = build_scheme(
            model_spec, replace(shape, num_layers=_count(specs, model_spec.scheme_key, num_layers))
        )
        if len(keys) > 1 and model_key not in keys and _has_parameters(self.position):
            raise ConfigError(
                f"every layer of model.layer_plan overrides model.position {position!r}, whose "
                f"parameters would then train nothing; give one layer type the model's "
                f"position_kwargs, or set model.position to another scheme a layer uses"
            )
        # (group name or None for the model's scheme, index among the group's layers)
        self._layer_scheme: list[tuple[str | None, int]] = []
        groups: dict[tuple[str, str], str | None] = {model_spec.scheme_key: None}
        others: dict[str, PositionScheme] = {}
        for spec in specs:
            if spec.scheme_key not in groups:
                groups[spec.scheme_key] = spec.type
                others[spec.type] = build_scheme(
                    spec, replace(shape, num_layers=_count(specs, spec.scheme_key, 0))
                )
            group = groups[spec.scheme_key]
            used = sum(1 for g, _ in self._layer_scheme if g == group)
            self._layer_scheme.append((group, used))
        self.word_embeddings = nn.Embedding(config.vocab_size, hidden_size)
        self.embedding_norm = options.norm_layer(hidden_size, layer_norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(
                SelfAttention(
                    hidden_size,
                    config.num_heads,
                    kernel_cls(**kernel_options),
                    config.attention_dropout_value,
                    bias=options.linear_bias,
                    window=spec.window,
                ),
                hidden_size,
                config.intermediate_size,
                dropout,
                layer_norm_eps,
                pre_norm,
                options,
                attention_norm=options.first_norm or index > 0,
            )
            for index, spec in enumerate(specs)
        )
        self.final_norm = (
            options.norm_layer(hidden_size, layer_norm_eps) if pre_norm else nn.Identity()
        )
        if others:  # registered last: no plan leaves the parameters' order and init as before
            self.layer_positions = nn.ModuleDict(others)

    def position_schemes(self) -> list[PositionScheme]:
        """Every scheme instance of the encoder: the model's first, then the plan's."""
        extra = getattr(self, "layer_positions", None)
        return [self.position, *(extra.values() if extra is not None else ())]

    def position_parameters(self) -> list[nn.Parameter]:
        """The position schemes' own parameters (T5's bucket table, FIRE's MLP, learned
        tables, ...): what ``model.position_lr_scale`` scales."""
        return [p for scheme in self.position_schemes() for p in scheme.parameters()]

    def _scheme(self, group: str | None) -> PositionScheme:
        return self.position if group is None else self.layer_positions[group]

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
        padding, masked out, everywhere else (a layer's window counts tokens, not
        positions). The two cannot be combined. Given ``rows`` (``[B, L]`` bool), the result
        is ``forward(...)[rows]``, ``[N, H]``, and the last layer does only the work those
        rows need: its attention still reads every key and value, but the output
        projection, FFN and norms run at ``N`` rows.
        """
        positions = position_ids
        in_segments = None
        if segment_ids is not None:
            # the pre-launch check refuses these settings (commands/prelaunch.py)
            assert self.kernel_supports_segments, (
                f"attention {self.attention_name!r} cannot keep documents apart"
            )
            assert position_ids is None, (
                "randomized positions (position_ids) and packed documents kept apart "
                "(segment_ids) cannot be combined: positions restart in every segment"
            )
            if any(s.uses_segment_positions for s in self.position_schemes()):
                in_segments = segment_positions(segment_ids)  # else None means the same

        def positions_for(scheme: PositionScheme) -> Tensor | None:
            # a scheme without uses_segment_positions takes None (positions/base.py)
            if in_segments is not None and scheme.uses_segment_positions:
                return in_segments
            return positions

        x = self.position.embed(self.word_embeddings(input_ids), positions_for(self.position))
        x = self.dropout(self.embedding_norm(x))
        key_padding_mask = None if attention_mask is None else attention_mask.bool()
        length = input_ids.shape[1]
        contexts = {
            group: self._scheme(group).prepare(
                length, x.device, x.dtype, positions_for(self._scheme(group))
            )
            for group in dict.fromkeys(g for g, _ in self._layer_scheme)
        }
        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            group, local = self._layer_scheme[index]
            hooks = self._scheme(group).layer(local)
            layer_rows = rows if index == last else None
            x = layer(x, contexts[group], key_padding_mask, hooks, layer_rows, segment_ids)
        return self.final_norm(x)


def _count(specs: list[LayerSpec], key: tuple[str, str], empty: int) -> int:
    """How many layers use scheme ``key`` (``empty`` if none: a scheme that only embeds)."""
    return sum(1 for spec in specs if spec.scheme_key == key) or max(empty, 1)


def _has_parameters(module: nn.Module) -> bool:
    return any(True for _ in module.parameters())


def build_scheme(spec: LayerSpec, shape: EncoderShape) -> PositionScheme:
    """The scheme ``spec`` names, with its checked options, over ``shape``."""
    scheme_cls = lookup(POSITION_SCHEMES, spec.position, "position")
    options = check_options(scheme_cls, spec.position_kwargs, "position", spec.position)
    return scheme_cls(shape, **options)


def _embeds(scheme_cls: type[PositionScheme]) -> bool:
    """True if the scheme adds positions to the embeddings (overrides ``embed``)."""
    return scheme_cls.embed is not PositionScheme.embed


def check_plan(
    specs: list[LayerSpec],
    model: LayerSpec,
    kernel_cls: type[AttentionKernel],
    attention: str,
) -> None:
    """The combinations a plan cannot have, each refused in one line with the valid values:
    a layer scheme whose score bias the kernel cannot take; a window on a kernel without
    windows; a scheme that adds to the embeddings (once, before every layer) in a plan
    whose layers differ from the model's scheme or options (it cannot vary per layer)."""
    for spec in specs:
        scheme_cls = lookup(POSITION_SCHEMES, spec.position, "position")
        if scheme_cls.needs_score_bias and not kernel_cls.supports_score_bias:
            valid = sorted(n for n, k in ATTENTION_KERNELS.items() if k.supports_score_bias)
            where = "" if spec.position == model.position else f" (layer type {spec.type!r})"
            raise ConfigError(
                f"position {spec.position!r}{where} adds a score bias, which attention "
                f"{attention!r} cannot take; valid attention kernels for {spec.position!r}: "
                f"{', '.join(valid)}"
            )
        if spec.window is not None and not kernel_cls.supports_window:
            valid = sorted(n for n, k in ATTENTION_KERNELS.items() if k.supports_window)
            raise ConfigError(
                f"model.layer_plan type {spec.type!r} has window {spec.window}, which attention "
                f"{attention!r} cannot restrict to; valid attention kernels with windows: "
                f"{', '.join(valid)}"
            )
    varied = [spec for spec in specs if spec.scheme_key != model.scheme_key]
    embedding = [name for name in (model.position, *(s.position for s in varied))]
    embedding = [name for name in embedding if _embeds(POSITION_SCHEMES[name])]
    if varied and embedding:
        valid = sorted(n for n, cls in POSITION_SCHEMES.items() if not _embeds(cls))
        raise ConfigError(
            f"position {embedding[0]!r} adds positions to the embeddings once, so it cannot vary "
            f"per layer in model.layer_plan; valid per-layer schemes: {', '.join(valid)}"
        )


class MLMHead(nn.Module):
    """``LN(gelu(W x)) E^T + b`` with the decoder tied to the word embeddings ``E``."""

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        layer_norm_eps: float,
        block: BlockOptions | None = None,
    ) -> None:
        super().__init__()
        block = block or BlockOptions()
        self.dense = nn.Linear(hidden_size, hidden_size, bias=block.linear_bias)
        self.norm = block.norm_layer(hidden_size, layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, hidden: Tensor, word_embeddings: Tensor) -> Tensor:
        """Logits ``[..., V]`` of hidden states ``[..., H]``; ``word_embeddings`` is ``E``."""
        x = self.norm(nn.functional.gelu(self.dense(hidden)))
        return nn.functional.linear(x, word_embeddings, self.bias)


def init_bert_weights(module: nn.Module, std: float = 0.02) -> None:
    """BERT initialisation: normal(0, std) weights, zero biases, unit norms."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, (nn.LayerNorm, nn.RMSNorm)):
        nn.init.ones_(module.weight)
        if getattr(module, "bias", None) is not None:
            nn.init.zeros_(module.bias)
