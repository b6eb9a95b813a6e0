"""Multi-head self-attention: fused QKV projection, the scheme's hooks, a kernel, output.

    q, k, v = split(x W_qkv + b_qkv);  out = kernel(q, k, v, scale, bias, mask, rotate) W_o + b_o

The block is the same for every scheme: it asks the layer's position hooks for a score
bias and a rotation and hands both to the kernel, with the layer's window (its layer
plan; None: global). It is built from the config and its layer's spec: the layer's own
kernel, with the layer's options, and window. ``bias=False`` drops ``b_qkv`` and ``b_o``. Given ``rows`` (``[B, L]`` bool), the
output projection runs at those rows only and the result is ``[N, H]``.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from torch import Tensor, nn

from roformer_lit.attention.base import AttentionKernel
from roformer_lit.errors import ConfigError
from roformer_lit.hook_outputs import bias_problem, tensor_problem
from roformer_lit.positions.base import LayerPosition, QKVWeights, ScoreBias, default_scale

if TYPE_CHECKING:
    from roformer_lit.architecture_rules import ResolvedLayer
    from roformer_lit.encoder_config import EncoderConfig


class SelfAttention(nn.Module):
    """Self-attention over ``[B, L, H]`` with ``num_heads`` heads."""

    def __init__(self, config: EncoderConfig, layer: ResolvedLayer) -> None:
        super().__init__()
        kernel: AttentionKernel = layer.build_kernel()
        hidden_size, bias = config.hidden_size, config.block_options.linear_bias
        self.num_heads = config.num_heads
        self.head_size = hidden_size // config.num_heads
        self.hidden_size = hidden_size
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size, bias=bias)
        self.out = nn.Linear(hidden_size, hidden_size, bias=bias)
        self.kernel = kernel
        # null attention dropout means model.dropout where the kernel applies dropout
        has_dropout = layer.kernel_capabilities.dropout
        self.attention_dropout = config.attention_dropout_value if has_dropout else 0.0
        self.window = layer.spec.window
        self.kernel_name = layer.spec.attention
        self.position_name = layer.spec.position
        self.takes_bias = layer.kernel_capabilities.score_bias

    def forward(
        self,
        x: Tensor,
        ctx: Any,
        key_padding_mask: Tensor | None,
        position: LayerPosition,
        rows: Tensor | None = None,
        segment_ids: Tensor | None = None,
    ) -> Tensor:
        batch, length, _ = x.shape
        qkv = self.qkv(x).view(batch, length, 3, self.num_heads, self.head_size)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each [B, h, L, d]
        weights = QKVWeights(self.qkv.weight, self.qkv.bias, self.num_heads)
        score = position.score(q, k, ctx, weights)
        self.check_score(score, (batch, self.num_heads, length, length))
        out = self.kernel(
            q,
            k,
            v,
            scale=default_scale(self.head_size) if score is None else score.scale,
            bias=score,
            key_padding_mask=key_padding_mask,
            rotate=partial(self.rotated, position, ctx) if position.rotates else None,
            dropout_p=self.attention_dropout if self.training else 0.0,
            segment_ids=segment_ids,
            window=self.window,
        )
        self.check_output(out, q)
        out = out.transpose(1, 2)  # [B, L, h, d]
        if rows is not None:
            return self.out(out[rows].flatten(1))
        return self.out(out.reshape(batch, length, self.hidden_size))

    def rotated(self, position: LayerPosition, ctx: Any, x: Tensor) -> Tensor:
        """``position.rotate(x, ctx)``, refused in one ConfigError line naming the scheme
        (a user's, by its setting) if it is not ``x``'s shape and dtype: the kernel would
        otherwise fail inside, a traceback that names neither."""
        out = position.rotate(x, ctx)
        got = tensor_problem(out, x)
        if got is not None:
            raise ConfigError(
                f"position {self.position_name!r}: the layer's rotate hook returned {got} "
                f"for queries or keys of shape {tuple(x.shape)} and dtype {x.dtype}; rotate "
                "returns its input's shape and dtype (roformer_lit.testing.check_scheme "
                "checks a scheme)"
            )
        return out

    def check_score(self, score: Any, wanted: tuple[int, int, int, int]) -> None:
        """A one-line ConfigError naming the scheme (a user's, by its setting) if its
        layer's ``score`` returned what the kernel cannot take: not a ``ScoreBias`` (or
        None), a bias for a kernel without score-bias support, which the pre-launch
        check allowed because the scheme declares no score bias (``needs_score_bias`` in its
        ``capabilities`` for the options given, the class attribute unless overridden), or a dense
        bias that is not a floating tensor broadcasting to ``wanted`` (``[B, h, L, L]``;
        checked when built, for one given as ``build``); the kernel would otherwise fail
        inside, a traceback that names neither.
        ``roformer_lit.testing.check_scheme`` finds this and more."""
        if score is None:
            return
        if isinstance(score, ScoreBias):
            score.check_dense(partial(self.check_dense_bias, wanted))
        if not isinstance(score, ScoreBias):
            got = f"{type(score).__name__}, not a ScoreBias or None"
        elif score.adds_bias and not self.takes_bias:
            got = (
                f"a score bias, which attention {self.kernel_name!r} cannot take; the pair "
                "was allowed because the scheme declares needs_score_bias False for these "
                "options: declare it True (the class attribute, or capabilities() where "
                "it depends on an option)"
            )
        else:
            return
        raise ConfigError(
            f"position {self.position_name!r}: the layer's score hook returned {got} "
            "(roformer_lit.testing.check_scheme checks a scheme)"
        )

    def check_dense_bias(self, wanted: tuple[int, int, int, int], bias: Any) -> None:
        """The one line of :meth:`check_score` for a dense bias that is not a floating
        tensor broadcasting to ``wanted``."""
        got = bias_problem(bias, wanted)
        if got is None:
            return
        raise ConfigError(
            f"position {self.position_name!r}: the layer's score hook returned a dense bias "
            f"of {got}; a dense score bias is floating point and broadcasts to [B, h, L, L] "
            f"= {wanted} "
            "(roformer_lit.testing.check_scheme checks a scheme)"
        )

    def check_output(self, out: Any, q: Tensor) -> None:
        """A one-line ConfigError naming the kernel (a user's, by its setting) if ``out``
        is not ``[B, h, L, d]`` in ``q``'s dtype (any floating dtype under autocast): a
        ``[B, L, h, d]`` output would otherwise be reshaped into the next layer's input
        without a word. ``roformer_lit.testing.check_kernel`` finds this and more."""
        got = tensor_problem(out, q)
        if got is None:
            return
        raise ConfigError(
            f"attention {self.kernel_name!r} returned {got} for q, k, v of shape "
            f"{tuple(q.shape)} and dtype {q.dtype}; a kernel returns [B, h, L, d] in q's "
            "dtype (roformer_lit.testing.check_kernel checks a kernel)"
        )
