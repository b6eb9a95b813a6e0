"""A scheme's ``score`` hook whose return the layer's kernel cannot take is one line naming
the scheme when the model runs it (``SelfAttention.check_score``), not a traceback from
inside the kernel or the block that names neither: a bias from a class that claims
``needs_score_bias = False`` (so the pre-launch check paired it with a kernel without
score-bias support), something that is not a ``ScoreBias``, or a dense bias that is not a
floating tensor broadcasting to ``[B, h, L, L]`` (given as a tensor or as ``build``)."""

from __future__ import annotations

import pytest
import torch

from roformer_lit.errors import ConfigError
from roformer_lit.positions.alibi import AlibiPosition
from roformer_lit.positions.base import LayerPosition, ScoreBias
from roformer_lit.testing.models import random_ids, small_model


class ClaimsNoBias(AlibiPosition):
    """ALiBi that claims it adds no score bias."""

    needs_score_bias = False


class _BareTensor(LayerPosition):
    def score(self, q, k, ctx, qkv):
        return ctx.bias


class ReturnsATensor(AlibiPosition):
    """ALiBi whose layers return the bias tensor itself, not a ScoreBias."""

    def layer(self, index: int) -> LayerPosition:
        return _BareTensor()


class ReturnsAFloat(AlibiPosition):
    """ALiBi whose layers return the score scale alone."""

    def layer(self, index: int) -> LayerPosition:
        hooks = super().layer(index)
        hooks.score = lambda q, k, ctx, qkv: 0.25
        return hooks


class _Dense(LayerPosition):
    """Returns the dense bias ``make(q)`` as a tensor or, ``lazily``, as ``build``."""

    def __init__(self, make, lazily: bool) -> None:
        super().__init__()
        self.make, self.lazily = make, lazily

    def score(self, q, k, ctx, qkv):
        if self.lazily:
            return ScoreBias(build=lambda: self.make(q), scale=ctx.scale)
        return ScoreBias(self.make(q), scale=ctx.scale)


def _one_query_too_many(q):
    return q.new_zeros(1, q.shape[1], q.shape[2] + 1, q.shape[2])


def _integers(q):
    return q.new_zeros(1, q.shape[1], q.shape[2], q.shape[2], dtype=torch.long)


def dense(make, lazily: bool) -> type[AlibiPosition]:
    """ALiBi whose layers return ``make(q)`` as their dense bias."""

    class Dense(AlibiPosition):
        def layer(self, index: int) -> LayerPosition:
            return _Dense(make, lazily)

    Dense.__qualname__ = f"{make.__name__.strip('_')}_{'built' if lazily else 'given'}"
    return Dense


#: (scheme, kernel, the words of the one line).
CASES = [
    (ClaimsNoBias, "linear", "returned a score bias, which attention 'linear' cannot take"),
    (ReturnsATensor, "softmax", "returned Tensor, not a ScoreBias or None"),
    (ReturnsAFloat, "softmax", "returned float, not a ScoreBias or None"),
    (dense(_one_query_too_many, False), "softmax", "a dense bias of shape (1, 3, 8, 7)"),
    (dense(_one_query_too_many, True), "softmax", "a dense bias of shape (1, 3, 8, 7)"),
    (dense(_integers, False), "softmax", "a dense bias of dtype torch.int64"),
    (dense(_integers, True), "softmax", "a dense bias of dtype torch.int64"),
]


@pytest.mark.parametrize(("scheme", "kernel", "words"), CASES)
def test_a_score_the_kernel_cannot_take_is_one_line_naming_the_scheme(scheme, kernel, words):
    model = small_model(scheme, kernel, num_layers=2)
    with pytest.raises(ConfigError) as info:
        model(random_ids(2, 7))
    message = str(info.value)
    assert "\n" not in message and words in message, message
    assert message.startswith(f"position 'kit-check-{scheme.__qualname__}': "), message


def test_a_scheme_that_claims_its_bias_runs_with_a_kernel_that_takes_it():
    small_model(ClaimsNoBias, "softmax", num_layers=2)(random_ids(2, 7))


class _Cast(LayerPosition):
    """ALiBi's dense bias in ``dtype``, then (``back``) in float32 again."""

    def __init__(self, dtype: torch.dtype, back: bool) -> None:
        super().__init__()
        self.dtype, self.back = dtype, back

    def score(self, q, k, ctx, qkv):
        bias = ctx.bias.to(self.dtype)
        return ScoreBias(bias.float() if self.back else bias, scale=ctx.scale)


def cast(dtype: torch.dtype, back: bool) -> type[AlibiPosition]:
    """ALiBi whose layers return their dense bias in ``dtype`` (``back``: then float32)."""

    class Cast(AlibiPosition):
        def layer(self, index: int) -> LayerPosition:
            return _Cast(dtype, back)

    Cast.__qualname__ = f"cast_{str(dtype).rpartition('.')[2]}{'_back' if back else ''}"
    return Cast


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_a_dense_bias_of_any_floating_dtype_runs_beside_float32_queries(dtype):
    """A floating bias is what the run takes (bias_problem): one in float16 or bfloat16
    beside float32 queries was SDPA's traceback ('Expected attn_mask dtype to be bool or
    float or to match query dtype'), seen fitting a plugin whose bias was half. It scores
    as the same values in float32 do."""
    ids = random_ids(2, 7)
    got = small_model(cast(dtype, back=False), "softmax", num_layers=2)(ids)
    expected = small_model(cast(dtype, back=True), "softmax", num_layers=2)(ids)
    torch.testing.assert_close(got, expected)
