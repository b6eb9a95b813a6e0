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

from typing import Any

import torch
from torch import Tensor, nn

from roformer_lit.architecture_rules import (
    ResolvedLayer,
    kernels_train_on,
    scheme_groups,
    schemes_that,
)
from roformer_lit.attention.block import SelfAttention
from roformer_lit.batch import IGNORE_INDEX
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.hook_outputs import tensor_problem
from roformer_lit.positions import LayerPosition, PositionScheme
from roformer_lit.positions.base import EncoderShape, segment_positions


class EncoderLayer(nn.Module):
    """One transformer block, post-LN (BERT) or pre-LN, built from the config and its
    layer's spec: the block's options (:mod:`roformer_lit.blocks`), the layer's kernel and
    window; layer 0 has no norm before the attention with ``block.first_norm false``
    (ModernBERT's first layer)."""

    def __init__(self, config: EncoderConfig, layer: ResolvedLayer) -> None:
        super().__init__()
        block = config.block_options
        hidden_size, eps = config.hidden_size, config.layer_norm_eps
        self.attention = SelfAttention(config, layer)
        attention_norm = block.first_norm or layer.index > 0
        self.attention_norm = (
            block.norm_layer(hidden_size, eps) if attention_norm else nn.Identity()
        )
        bias = block.linear_bias
        self.ffn_in = nn.Linear(hidden_size, block.ffn_widths(config.intermediate_size), bias=bias)
        self.ffn_out = nn.Linear(config.intermediate_size, hidden_size, bias=bias)
        self.ffn_norm = block.norm_layer(hidden_size, eps)
        self.dropout = nn.Dropout(config.dropout)
        self.pre_norm = config.pre_norm
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
    """Token embeddings, position schemes and ``num_layers`` blocks, as ``config`` (an
    :class:`~roformer_lit.encoder_config.EncoderConfig`, checked when it was made: every
    rule of :mod:`roformer_lit.architecture_rules`) says; nothing is checked here.

    ``block`` (:mod:`roformer_lit.blocks`) chooses the MLP, norms and biases; ``layer_plan``
    (:mod:`roformer_lit.layer_plan`) gives each layer its own scheme, kernel, their options
    and window, and each layer is built from its spec. Layers whose scheme and options are
    equal share one scheme instance: the model's (``position``, embedding too) or one in
    ``layer_positions`` (built over the layers that use it, numbered among themselves).
    Without a plan, or with one whose layers all resolve alike, there is one scheme, as
    without a plan.
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        config.check_unchanged()  # built from what was checked, never from an edit since
        self.config = config
        layers = config.layers
        groups = scheme_groups(config, layers)
        self.position = groups[0].build()
        others = {group.name: group.build() for group in groups[1:]}
        # (group name or None for the model's scheme, index among the group's layers)
        group_of = {group.key: group.name for group in groups}
        self._layer_scheme: list[tuple[str | None, int]] = []
        for layer in layers:
            group = group_of[layer.scheme_key]
            used = sum(1 for g, _ in self._layer_scheme if g == group)
            self._layer_scheme.append((group, used))
        self.kernels_keep_segments = all(layer.kernel_capabilities.segments for layer in layers)
        options = config.block_options
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.embedding_norm = options.norm_layer(config.hidden_size, config.layer_norm_eps)
        self.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(EncoderLayer(config, layer) for layer in layers)
        self.final_norm = (
            options.norm_layer(config.hidden_size, config.layer_norm_eps)
            if config.pre_norm
            else nn.Identity()
        )
        if others:  # registered last: no plan leaves the parameters' order and init as before
            self.layer_positions = nn.ModuleDict(others)
        for group in groups:
            _check_hooks_registered(self._scheme(group.name), group.spec.position, group.shape)
        #: The device types this encoder's kernels were found to train on (checked once each).
        self._trains_on: set[str] = set()

    def check_training_device(self, device: torch.device) -> None:
        """Refuse to train on ``device`` a kernel that declares it trains elsewhere
        (:func:`~roformer_lit.architecture_rules.kernels_train_on`: ``backend: flex`` on
        the CPU): one ConfigError line naming the kernel, the device and the kernels that
        train there, before any layer runs. Training means gradients enabled and a
        parameter that takes them; evaluating (``torch.no_grad()``, frozen weights) runs
        anywhere. Checked once per device type (a set lookup after that)."""
        if device.type in self._trains_on or not torch.is_grad_enabled():
            return
        if not any(p.requires_grad for p in self.parameters()):
            return
        here = f"this model trains on {device.type} here (its weights there, gradients enabled)"
        kernels_train_on(self.config, device.type, here)
        self._trains_on.add(device.type)

    def check_embedded(self, out: Any, tokens: Tensor) -> None:
        """A one-line ConfigError naming the scheme (a user's, by its setting) if its
        ``embed`` returned other than the token embeddings' shape and dtype: the layers
        would otherwise fail inside, a traceback that names neither."""
        got = tensor_problem(out, tokens)
        if got is not None:
            raise ConfigError(
                f"position {self.config.position!r}: its embed hook returned {got} for "
                f"token embeddings of shape {tuple(tokens.shape)} and dtype {tokens.dtype}; "
                "embed returns its input's shape and dtype (roformer_lit.testing.check_scheme "
                "checks a scheme)"
            )

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
        check_forward_inputs(
            self.config.vocab_size, input_ids, attention_mask, segment_ids, position_ids, rows
        )
        check_positions_input(self.position_schemes(), input_ids.shape[1], position_ids)
        if not torch.compiler.is_compiling():  # a compiled run was checked at on_fit_start
            self.check_training_device(self.word_embeddings.weight.device)
        positions = position_ids
        in_segments = None
        if segment_ids is not None:
            check_segments_input(self.config, self.kernels_keep_segments, position_ids)
            if any(s.uses_segment_positions for s in self.position_schemes()):
                in_segments = segment_positions(segment_ids)  # else None means the same

        def positions_for(scheme: PositionScheme) -> Tensor | None:
            # a scheme without uses_segment_positions takes None (positions/base.py)
            if in_segments is not None and scheme.uses_segment_positions:
                return in_segments
            return positions

        tokens = self.word_embeddings(input_ids)
        x = self.position.embed(tokens, positions_for(self.position))
        self.check_embedded(x, tokens)
        x = self.dropout(self.embedding_norm(x))
        key_padding_mask = None if attention_mask is None else attention_mask.bool()
        length = input_ids.shape[1]
        contexts = {
            group: _prepare(
                self._scheme(group),
                length,
                x,
                positions_for(self._scheme(group)),
                key_padding_mask,
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


def _check_hooks_registered(scheme: PositionScheme, name: str, shape: EncoderShape) -> None:
    """A one-line ConfigError naming the scheme if a layer's hooks (``layer(index)``) hold
    parameters or buffers the scheme does not: kept in a plain dict or list, or made anew
    in ``layer``, they would be left out of the optimiser, the checkpoint and ``.to(device)``
    (trained nowhere, random again in every command that loads the run) without a word."""
    owned = {id(t) for t in (*scheme.parameters(), *scheme.buffers())}
    for index in range(shape.num_layers):
        hooks = scheme.layer(index)
        if not isinstance(hooks, nn.Module):
            continue  # the run's own check of what the hooks return names it
        tensors = (*hooks.named_parameters(), *hooks.named_buffers())
        stray = [held for held, tensor in tensors if id(tensor) not in owned]
        if stray:
            raise ConfigError(
                f"position {name!r}: layer({index}) returns hooks "
                f"({type(hooks).__qualname__}) holding {', '.join(stray)}, which the scheme "
                "does not register: they would be left out of training, the checkpoint and "
                "the device; keep the layers' modules in the scheme (an attribute, an "
                "nn.ModuleList or nn.ModuleDict) rather than a plain dict or list, or made "
                "anew in layer()"
            )


def _prepare(
    scheme: PositionScheme,
    length: int,
    x: Tensor,
    positions: Tensor | None,
    key_padding_mask: Tensor | None,
) -> Any:
    """The scheme's per-forward context; the keys' padding only to a scheme that reads it."""
    if scheme.reads_key_padding:
        return scheme.prepare(
            length, x.device, x.dtype, positions, key_padding_mask=key_padding_mask
        )
    return scheme.prepare(length, x.device, x.dtype, positions)


def _kind(value: object) -> str:
    """A tensor's shape and dtype in words (``shape (2, 8), torch.float32``), else its type."""
    if isinstance(value, Tensor):
        return f"shape {tuple(value.shape)}, {value.dtype}"
    return f"a {type(value).__name__}"


def _is_integer(value: Tensor) -> bool:
    return not (
        value.dtype.is_floating_point or value.dtype.is_complex or value.dtype == torch.bool
    )


def check_forward_inputs(
    vocab_size: int,
    input_ids: Any,
    attention_mask: Any = None,
    segment_ids: Any = None,
    position_ids: Any = None,
    rows: Any = None,
) -> None:
    """The tensors of ``Encoder.forward`` (and ``MaskedLM``'s): ``input_ids`` ``[B, L]``
    ``torch.long`` or ``torch.int`` in ``0 .. vocab_size - 1``, and each of
    ``attention_mask`` (bool or integer), ``segment_ids`` and ``position_ids`` (integer)
    and ``rows`` (bool) None or of ``input_ids``' shape. A ``ValueError`` naming the argument, its shape and
    dtype and what is expected (an input error of the Python API), before anything runs.
    Shapes and dtypes only, except the ids' range and ``position_ids``' (0 or more and
    increasing along each row), read on CPU tensors alone (one pass of ``aminmax``; on an
    accelerator it would wait for the device, so an id out of range there is the device's
    own error) and never while compiling."""
    if not (
        isinstance(input_ids, Tensor)
        and input_ids.dim() == 2
        and input_ids.dtype in (torch.long, torch.int)
    ):
        raise ValueError(
            f"input_ids must be a [batch, length] tensor of token ids (torch.long or "
            f"torch.int), got {_kind(input_ids)}"
        )
    shape = tuple(input_ids.shape)
    others = (
        ("attention_mask", attention_mask, "bool or integer (True or 1 at real tokens)"),
        ("segment_ids", segment_ids, "integer"),
        ("position_ids", position_ids, "integer"),
        ("rows", rows, "bool (True at the rows wanted)"),
    )
    for name, value, dtypes in others:
        if value is None:
            continue
        is_bool = getattr(value, "dtype", None) == torch.bool
        # rows select (bool only: integer ones would index); the mask takes either
        kind_fits = (
            is_bool
            if name == "rows"
            else _is_integer(value) or (is_bool and name == "attention_mask")
        )
        if not (isinstance(value, Tensor) and tuple(value.shape) == shape and kind_fits):
            raise ValueError(
                f"{name} must be None or a tensor of input_ids' shape {shape}, {dtypes}; got "
                f"{_kind(value)}"
            )
    if not _readable_here(input_ids):
        return
    wrong = _outside_vocabulary(input_ids, vocab_size)
    if wrong is not None:
        raise ValueError(
            f"input_ids holds token id {wrong}, outside the vocabulary: ids must be in "
            f"0..{vocab_size - 1} (model.vocab_size={vocab_size})"
        )
    if position_ids is not None and position_ids.device.type == "cpu":
        lowest = int(position_ids.min())
        if lowest < 0:  # a table indexed at -1 is torch's IndexError, a bias its own guess
            raise ValueError(
                f"position_ids holds position {lowest}: positions are 0 or more (the first "
                "token of a row sits at 0)"
            )
        _check_increasing(position_ids)


def _check_increasing(position_ids: Tensor) -> None:
    """Each row of ``position_ids`` strictly increasing (distinct and in order: the tokens
    of a longer row at those indices), what every position scheme is promised
    (:mod:`roformer_lit.positions.base`) and what the data modules draw (sorted, without
    replacement); one pass over the row's steps. A ``ValueError`` naming the first row and
    index where a position is not above the one before it."""
    if position_ids.shape[1] < 2:
        return
    steps = position_ids[:, 1:] <= position_ids[:, :-1]
    if not bool(steps.any()):
        return
    row, index = (int(i) for i in steps.nonzero()[0])
    before, at = (int(p) for p in position_ids[row, index : index + 2])
    raise ValueError(
        f"position_ids must increase along each row (distinct positions, in the tokens' "
        f"order), but row {row} has position {at} at index {index + 1} after {before} at "
        f"index {index}; give each row's positions sorted and without repeats (packed "
        "documents restart their positions through segment_ids, not position_ids)"
    )


def _readable_here(ids: Tensor) -> bool:
    """Whether ``ids``' values may be read for a range check: a non-empty CPU tensor, not
    while compiling (on an accelerator the read would wait for the device, so a value out
    of range there is the device's own error)."""
    return ids.device.type == "cpu" and bool(ids.numel()) and not torch.compiler.is_compiling()


def _outside_vocabulary(ids: Tensor, vocab_size: int) -> int | None:
    """An id of ``ids`` outside ``0 .. vocab_size - 1`` (the lowest if one is below 0, else
    the highest), or None; one pass of ``aminmax``."""
    if not ids.numel():
        return None
    low, high = (int(bound) for bound in torch.aminmax(ids))
    if low < 0:
        return low
    return high if high >= vocab_size else None


def check_labels(vocab_size: int, input_ids: Tensor, labels: Any) -> None:
    """The MLM targets of :meth:`~roformer_lit.module.MaskedLM.mlm_loss`: a ``torch.long`` or
    ``torch.int`` tensor of ``input_ids``' shape, each -100 (not scored) or a token id in ``0 .. vocab_size - 1``.
    A ``ValueError`` naming what is wrong, before anything runs (on CPU tensors the range is
    read as ``input_ids``' is; on an accelerator a target out of range is the device's own
    error)."""
    shape = tuple(input_ids.shape)
    if not (
        isinstance(labels, Tensor)
        and tuple(labels.shape) == shape
        and labels.dtype in (torch.long, torch.int)
    ):
        raise ValueError(
            f"labels must be a tensor of input_ids' shape {shape}, torch.long or torch.int "
            f"(a token id to "
            f"predict, or {IGNORE_INDEX} where nothing is scored); got {_kind(labels)}"
        )
    if not _readable_here(labels):
        return
    wrong = _outside_vocabulary(labels[labels != IGNORE_INDEX], vocab_size)
    if wrong is not None:
        raise ValueError(
            f"labels holds {wrong}: a label is a token id in 0..{vocab_size - 1} "
            f"(model.vocab_size={vocab_size}) or {IGNORE_INDEX} (not scored)"
        )


def check_positions_input(
    schemes: list[PositionScheme], length: int, position_ids: Tensor | None
) -> None:
    """Inputs past the table of a scheme bounded by one (its ``max_length``: ``learned``):
    a row longer than the table, or ``position_ids`` reaching past it. A ``ValueError``
    naming the limit and the schemes without a table (an input error of the Python API;
    the command line refuses ``data.max_length`` and ``data.random_positions`` past it
    before a run)."""
    for scheme in schemes:
        limit = scheme.max_length
        if limit is None:
            continue
        if position_ids is None:
            what, needed = f"sequence length {length}", length
        else:
            needed = int(position_ids.max()) + 1 if position_ids.numel() else 0
            what = f"position_ids up to {needed - 1}"
        if needed > limit:
            raise ValueError(
                f"{what} is past model.max_positions={limit}, the size of the "
                f"{type(scheme).__name__} position table; raise model.max_positions or use a "
                f"scheme without a table: {schemes_that(lambda c: not c.bounded)}"
            )


def check_segments_input(
    config: EncoderConfig, kernels_keep_segments: bool, position_ids: Tensor | None
) -> None:
    """Inputs ``forward`` cannot honour with ``segment_ids`` (packed documents kept apart):
    a kernel that cannot keep them apart, or randomized positions beside them. A
    ``ValueError`` naming both (an input error of the Python API, raised whether or not
    Python runs with ``-O``; the command line refuses the settings before a run)."""
    if not kernels_keep_segments:
        kernels = sorted(
            {
                layer.spec.attention
                for layer in config.layers
                if not layer.kernel_capabilities.segments
            }
        )
        raise ValueError(
            f"segment_ids given, but attention {', '.join(map(repr, kernels))} cannot keep "
            "packed documents apart; pass segment_ids=None or use a kernel that supports "
            "segments"
        )
    if position_ids is not None:
        raise ValueError(
            "randomized positions (position_ids) and packed documents kept apart "
            "(segment_ids) cannot be combined: positions restart in every segment"
        )


class MLMHead(nn.Module):
    """``LN(gelu(W x)) E^T + b`` with the decoder tied to the word embeddings ``E``."""

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        block, hidden_size = config.block_options, config.hidden_size
        self.dense = nn.Linear(hidden_size, hidden_size, bias=block.linear_bias)
        self.norm = block.norm_layer(hidden_size, config.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

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
