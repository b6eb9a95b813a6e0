"""The kernel kit fails a broken kernel, naming the check, the kernel and what is wrong: one
broken kernel per property, each the built-in softmax kernel (which claims every capability)
with one thing wrong, an author's likely mistake."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.attention.softmax import SoftmaxAttention
from roformer_lit.score_bias import ScoreBias, dense_from_lookup
from roformer_lit.testing import check_kernel


class IgnoresPadding(SoftmaxAttention):
    """Attends to every key, padded ones included."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        return super().forward(q, k, v, **{**kwargs, "key_padding_mask": None})


class LeaksAcrossSegments(SoftmaxAttention):
    """Claims packed documents (supports_segments), but drops ``segment_ids``."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        return super().forward(q, k, v, **{**kwargs, "segment_ids": None})


class IgnoresTheWindow(SoftmaxAttention):
    """Claims windows (supports_window), but attends globally."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        return super().forward(q, k, v, **{**kwargs, "window": None})


class WindowOneKeyShort(SoftmaxAttention):
    """Reads ``|i - j| < w // 2`` for the band (an off-by-one): one key too few each side."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        window = kwargs.get("window")
        if window is not None and window >= 2:
            kwargs["window"] = window - 2
        return super().forward(q, k, v, **kwargs)


class DrawsEveryCall(SoftmaxAttention):
    """Adds noise at every call, in eval mode too (a dropout left switched on)."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        out = super().forward(q, k, v, **kwargs)
        return out + 1e-2 * torch.rand_like(out)


class ScalesItsValuesInPlace(SoftmaxAttention):
    """Writes into ``v`` (``v.mul_(2)``): the next reader of the layer's values gets them
    changed; each call's output differs from the last only because of that."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        v.mul_(2.0)
        return super().forward(q, k, v, **kwargs)


class HeadsAndTokensSwapped(SoftmaxAttention):
    """Returns ``[B, L, h, d]`` (the layout before the block's transpose)."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        return super().forward(q, k, v, **kwargs).transpose(1, 2)


class DropsTheBias(SoftmaxAttention):
    """Claims a score bias (supports_score_bias), but never adds it."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        return super().forward(q, k, v, **{**kwargs, "bias": None})


class MisreadsTheLookup(SoftmaxAttention):
    """Reads a bias's lookup with queries and keys swapped (where it has one)."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        bias = kwargs.get("bias")
        if bias is not None and bias.lookup is not None:
            batch, heads, length = q.shape[0], q.shape[1], q.shape[2]
            dense = dense_from_lookup(bias.lookup, batch, heads, length).transpose(-1, -2)
            kwargs["bias"] = ScoreBias(dense.contiguous(), scale=bias.scale)
        return super().forward(q, k, v, **kwargs)


class SharesAcrossTheBatch(SoftmaxAttention):
    """Adds the batch's mean output to every row (a batch statistic left in)."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        out = super().forward(q, k, v, **kwargs)
        return out + out.mean(dim=0, keepdim=True)


class RotatesQueriesOnly(SoftmaxAttention):
    """Applies ``rotate`` to the queries and forgets the keys."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        rotate = kwargs.pop("rotate", None)
        if rotate is not None:
            q = rotate(q)
        return super().forward(q, k, v, rotate=None, **kwargs)


class ComputesInBfloat16(SoftmaxAttention):
    """Attends in bfloat16 whenever it is not given float64."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        if q.dtype == torch.float64:
            return super().forward(q, k, v, **kwargs)
        bias = kwargs.get("bias")
        if bias is not None:
            kwargs["bias"] = ScoreBias(bias.bias.bfloat16(), scale=bias.scale)
        out = super().forward(q.bfloat16(), k.bfloat16(), v.bfloat16(), **kwargs)
        return out.to(q.dtype)


class ClearsTheMaskInPlace(SoftmaxAttention):
    """Marks every key real in the mask it was given, once done with it (the next layers
    share that mask)."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        out = super().forward(q, k, v, **kwargs)
        if kwargs.get("key_padding_mask") is not None:
            kwargs["key_padding_mask"].fill_(True)
        return out


class ScalesTheBiasInPlace(SoftmaxAttention):
    """Scales the dense bias it was given in place (the next layers share ALiBi's)."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        bias = kwargs.get("bias")
        if bias is not None and bias.bias is not None:
            bias.bias.mul_(2.0)
        return super().forward(q, k, v, **kwargs)


class RenumbersTheSegmentsInPlace(SoftmaxAttention):
    """Numbers the documents it was given from 1 in place (the same documents: its
    outputs do not change, the model's segment ids do)."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        out = super().forward(q, k, v, **kwargs)
        if kwargs.get("segment_ids") is not None:
            kwargs["segment_ids"].add_(1)
        return out


class LinearIgnoresTheMaskInTraining(ATTENTION_KERNELS["linear"]):
    """Linear attention (no dropout claimed, so no check but ``gradients`` trains it) that
    reads padded keys whenever it is in train mode."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        if self.training:
            kwargs["key_padding_mask"] = None
        return super().forward(q, k, v, **kwargs)


class DropsThePaddingInBfloat16(SoftmaxAttention):
    """A fast path for bfloat16 inputs (a ``bf16-mixed`` run's) that forgets the padding."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        if q.dtype == torch.bfloat16:
            kwargs["key_padding_mask"] = None
        return super().forward(q, k, v, **kwargs)


class NanInBfloat16(SoftmaxAttention):
    """Fine in float32 and float64, NaN whenever it is given bfloat16."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        out = super().forward(q, k, v, **kwargs)
        return out * float("nan") if q.dtype == torch.bfloat16 else out


class IgnoresTheScale(SoftmaxAttention):
    """Scores with its own ``1 / sqrt(d)``, whatever scale the scheme gave (xl's, deberta's)."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        return super().forward(q, k, v, **{**kwargs, "scale": q.shape[-1] ** -0.5})


class ScalesTheBiasToo(SoftmaxAttention):
    """Multiplies the bias by the scale as well: ``(q k^T + bias) * scale``."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        bias = kwargs.get("bias")
        if bias is not None and bias.bias is not None:
            scaled = bias.bias * kwargs["scale"] / q.shape[-1] ** -0.5
            kwargs["bias"] = ScoreBias(scaled, scale=bias.scale)
        return super().forward(q, k, v, **kwargs)


class ReferenceWithoutTheScale(SoftmaxAttention):
    """Softmax whose reference forgets the score scale."""

    @staticmethod
    def reference(kernel, q, k, v, scale, **kwargs):
        return SoftmaxAttention.reference(kernel, q, k, v, 1.0, **kwargs)


@pytest.mark.parametrize(
    "kernel,check,words",
    [
        (IgnoresPadding, "padding", "padded keys leak: what sits in padded slots changes"),
        (LeaksAcrossSegments, "segments", "differs from it alone (packed documents): documents"),
        (IgnoresTheWindow, "window", "keys beyond w // 2 = 0 change the output (window 1)"),
        (WindowOneKeyShort, "window", "the key at distance w // 2 = 1 changes nothing"),
        (DrawsEveryCall, "deterministic", "not deterministic: one kernel in eval mode"),
        (ScalesItsValuesInPlace, "deterministic", "changes its input in place: v differs"),
        (LinearIgnoresTheMaskInTraining, "gradients", "padded k gets a gradient"),
        (ClearsTheMaskInPlace, "deterministic", "in place: key_padding_mask differs after"),
        (ScalesTheBiasInPlace, "deterministic", "in place: bias differs after a call (with"),
        (RenumbersTheSegmentsInPlace, "deterministic", "in place: segment_ids differs after"),
        (HeadsAndTokensSwapped, "shapes", "wrong output shape: (2, 7, 3, 8) for q, k, v of"),
        (DropsTheBias, "bias", "claims supports_score_bias, but a score bias changes nothing"),
        (MisreadsTheLookup, "bias", "the bias given as lookup differs from the same bias dense"),
        (IgnoresTheScale, "bias", "but the score scale changes nothing (padded)"),
        (ScalesTheBiasToo, "bias", "scale 2s on q differs from scale s on 2q (padded)"),
        (SharesAcrossTheBatch, "batch", "batch row 0 differs from that row alone (plain)"),
        (RotatesQueriesOnly, "rotation", "a rotation the same at every position changes"),
        (ComputesInBfloat16, "float64", "float32 disagrees with float64 (plain)"),
        (
            DropsThePaddingInBfloat16,
            "bfloat16",
            "under bfloat16 autocast, bfloat16 inputs give other outputs than float32 on the "
            "same values (padded)",
        ),
        (NanInBfloat16, "bfloat16", "non-finite output: 936 of 936 are NaN or inf (torch.bfloa"),
        (ReferenceWithoutTheScale, "reference", "differs from the reference (plain)"),
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else None,
)
def test_the_kit_fails_a_broken_kernel_naming_check_kernel_and_mistake(kernel, check, words):
    with pytest.raises(AssertionError) as failure:
        check_kernel(kernel, checks=[check])
    message = str(failure.value)
    assert message.startswith(f"{check} check failed for kernel "), message
    assert kernel.__qualname__ in message
    assert words in message, message


@pytest.mark.parametrize(
    "kernel,check",
    [
        (IgnoresPadding, "shapes"),
        (IgnoresPadding, "batch"),
        (LeaksAcrossSegments, "padding"),
        (IgnoresTheWindow, "padding"),
        (DrawsEveryCall, "shapes"),
        (HeadsAndTokensSwapped, "deterministic"),
        (DropsTheBias, "window"),
        (MisreadsTheLookup, "padding"),
        (IgnoresTheScale, "padding"),
        (ScalesTheBiasToo, "padding"),
        (SharesAcrossTheBatch, "deterministic"),
        (RotatesQueriesOnly, "padding"),
        (ReferenceWithoutTheScale, "float64"),
        (LinearIgnoresTheMaskInTraining, "padding"),
        (ComputesInBfloat16, "bfloat16"),  # bfloat16's precision is what the check allows
        (DropsThePaddingInBfloat16, "padding"),
        (DropsThePaddingInBfloat16, "float64"),
        (NanInBfloat16, "float64"),
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else value,
)
def test_each_broken_kernel_passes_the_checks_its_mistake_is_not_about(kernel, check):
    """The failures above are the named check's, not a kit that fails everything."""
    check_kernel(kernel, checks=[check])


def test_a_kernel_that_draws_at_random_is_said_to_be_not_deterministic():
    """The whole kit names the randomness first, not the batch or padding check."""
    with pytest.raises(AssertionError, match="deterministic check failed.*not deterministic"):
        check_kernel(DrawsEveryCall)


class KeepsWhatItComputedForAShape(SoftmaxAttention):
    """Computes once per input shape and returns that output for any values of it."""

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.computed: dict[tuple, Tensor] = {}

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        key = (tuple(q.shape), *(kwargs.get(name) is None for name in sorted(kwargs)))
        if key not in self.computed:
            self.computed[key] = super().forward(q, k, v, **kwargs)
        return self.computed[key]


class NanOnPackedDocuments(SoftmaxAttention):
    """NaN wherever it is given segment ids."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        out = super().forward(q, k, v, **kwargs)
        return out * torch.nan if kwargs.get("segment_ids") is not None else out


class NanFromThirteenTokens(SoftmaxAttention):
    """NaN on rows of 13 tokens or more: the shapes check's rows (up to 9) are finite."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        out = super().forward(q, k, v, **kwargs)
        return out * torch.nan if q.shape[-2] >= 13 else out


def test_a_kernel_that_keeps_what_it_computed_for_a_shape_is_said_to_keep_state():
    """A kernel reusing what it computed for a shape passed the deterministic check (the
    same input twice, another shape between) and failed the batch check as 'rows of a
    batch leak into each other' (seen with such a plugin kernel): the whole kit now names
    the state kept between calls first."""
    with pytest.raises(AssertionError) as failure:
        check_kernel(KeepsWhatItComputedForAShape)
    message = str(failure.value)
    assert message.startswith("deterministic check failed for kernel "), message
    assert "keeps state between calls" in message, message


@pytest.mark.parametrize(
    ("kernel", "check", "inputs"),
    [
        (NanOnPackedDocuments, "deterministic", "with key_padding_mask, segment_ids"),
        (NanOnPackedDocuments, "segments", "with key_padding_mask, segment_ids"),
        (NanFromThirteenTokens, "deterministic", "of shape (3, 3, 13, 8)"),
        (NanFromThirteenTokens, "padding", "of shape (3, 3, 13, 8) with key_padding_mask"),
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else str(value)[:16],
)
def test_a_kernel_that_gives_nan_on_some_inputs_is_said_to_give_nan(kernel, check, inputs):
    """NaN equals nothing: a kernel finite on the shapes check's rows but NaN on others
    failed the first comparison that met it in its words ('not deterministic ... (a random
    draw, or state kept between calls?)', seen with such a plugin kernel). Each check now
    says the output is not finite, and on which inputs."""
    with pytest.raises(AssertionError) as failure:
        check_kernel(kernel, checks=[check])
    message = str(failure.value)
    assert message.startswith(f"{check} check failed for kernel "), message
    assert "non-finite output" in message and inputs in message, message
    assert "not deterministic" not in message and "leak" not in message, message
