"""The scheme kit fails a broken scheme, naming the check and the scheme: one broken scheme
per check, each a working built-in with one thing wrong (an author's likely mistake)."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor, nn

from roformer_lit.positions.alibi import AlibiPosition, alibi_slopes
from roformer_lit.positions.base import EncoderShape, LayerPosition, PositionScheme, ScoreBias
from roformer_lit.positions.nope import NoPosition
from roformer_lit.positions.rope import RotaryPosition
from roformer_lit.positions.sinusoidal import SinusoidalPosition, sinusoidal_rows
from roformer_lit.testing import check_scheme


class WrongShape(NoPosition):
    """Drops the last token from the embeddings."""

    def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        return x[:, :-1]


class PaddingLeak(NoPosition):
    """Adds the mean of every slot's embedding, padded slots included."""

    def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        return x + x.mean(dim=1, keepdim=True)


class ClaimsTranslationInvariance(SinusoidalPosition):
    """Absolute sinusoids that claim to depend on differences of positions only."""

    translation_invariant = True


class ClaimsToDependOnAbsolutePositions(RotaryPosition):
    """RoPE (relative) that claims a shift of every position changes its outputs."""

    translation_invariant = False


class HalfPrecisionInFloat32(RotaryPosition):
    """Rotates through bfloat16 whenever it is not given float64."""

    def prepare(self, length, device, dtype, positions=None):
        ctx = super().prepare(length, device, dtype, positions)
        return ctx, dtype

    def layer(self, index: int) -> LayerPosition:
        inner = super().layer(index)
        return _HalfRotation(inner)


class _HalfRotation(LayerPosition):
    rotates = True

    def __init__(self, inner: LayerPosition) -> None:
        super().__init__()
        self.inner = inner

    def rotate(self, x: Tensor, ctx) -> Tensor:
        inner_ctx, dtype = ctx
        rotated = self.inner.rotate(x, inner_ctx)
        return rotated if dtype == torch.float64 else rotated.bfloat16().to(rotated.dtype)


class NanGradient(PositionScheme):
    """A learned log-distance bias ``log(w |i - j|)`` where ``i != j``, else 0: finite in the
    forward pass, but the masked-out branch's ``log 0`` makes the gradient NaN."""

    needs_score_bias = True

    def __init__(self, shape: EncoderShape) -> None:
        super().__init__(shape)
        self.weight = nn.Parameter(torch.ones(shape.num_heads))
        self._layer = _SharedBias()

    def prepare(self, length, device, dtype, positions=None) -> ScoreBias:
        index = torch.arange(length, device=device, dtype=dtype)
        distance = (index[:, None] - index[None, :]).abs()
        log_distance = torch.log(self.weight[:, None, None] * distance)
        bias = torch.where(distance > 0, -log_distance, torch.zeros_like(log_distance))
        return ScoreBias(bias[None], scale=self.shape.head_size**-0.5)

    def layer(self, index: int) -> LayerPosition:
        return self._layer


class _SharedBias(LayerPosition):
    def score(self, q, k, ctx, qkv):
        return ctx


class ForgetsWhatItsRowsRead(PositionScheme):
    """A learned per-head slope times ``|i - j|``, given as rows that name what they read,
    but not the slope (on long rows the slope would learn nothing through the bias)."""

    needs_score_bias = True

    def __init__(self, shape: EncoderShape) -> None:
        super().__init__(shape)
        self.slope = nn.Parameter(torch.full((shape.num_heads,), 0.5))
        self._layer = _SharedBias()

    def prepare(self, length, device, dtype, positions=None) -> ScoreBias:
        def rows(start: int, stop: int) -> Tensor:
            i = torch.arange(start, stop, device=device, dtype=dtype)[:, None]
            j = torch.arange(length, device=device, dtype=dtype)[None, :]
            return -(self.slope[:, None, None] * (i - j).abs())[None]

        return ScoreBias(
            build=lambda: rows(0, length),
            rows=rows,
            scale=self.shape.head_size**-0.5,
            rows_read=(),
        )

    def layer(self, index: int) -> LayerPosition:
        return self._layer


class SquaresFromTheRowStart(PositionScheme):
    """A bias of absolute positions, ``-slope_h |i^2 - j^2| / L``, whose document squares
    read positions ``0 .. n-1`` wherever the document sits (right only for a document at
    the row's start)."""

    needs_score_bias = True
    translation_invariant = False
    uses_segment_positions = False

    def __init__(self, shape: EncoderShape) -> None:
        super().__init__(shape)
        self.slope = nn.Parameter(torch.full((shape.num_heads,), 0.5))
        self._layer = _SharedBias()

    def prepare(self, length, device, dtype, positions=None) -> ScoreBias:
        def among(first: int, count: int) -> Tensor:
            at = torch.arange(first, first + count, device=device, dtype=dtype)
            return -(self.slope[:, None, None] * (at[:, None] ** 2 - at[None, :] ** 2).abs())

        return ScoreBias(
            build=lambda: among(0, length)[None] / length,
            scale=self.shape.head_size**-0.5,
            squares=lambda runs: [[among(0, e - s) / length for s, e in row] for row in runs],
        )

    def layer(self, index: int) -> LayerPosition:
        return self._layer


class WrongReference(AlibiPosition):
    """ALiBi whose reference doubles the paper's slopes."""

    @staticmethod
    def reference(scheme, q, k, positions, layer):
        length = q.shape[-2]
        at = torch.arange(length, dtype=torch.float64) if positions is None else positions
        at = at.to(torch.float64).expand(q.shape[0], length)
        slopes = 2 * torch.tensor(alibi_slopes(q.shape[1]), dtype=torch.float64)
        distance = (at[:, None, :, None] - at[:, None, None, :]).abs()
        return q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5 - slopes[:, None, None] * distance


class RightReference(AlibiPosition):
    """ALiBi with the paper's formula as its reference: the kit passes it."""

    @staticmethod
    def reference(scheme, q, k, positions, layer):
        length = q.shape[-2]
        at = torch.arange(length, dtype=torch.float64) if positions is None else positions
        at = at.to(torch.float64).expand(q.shape[0], length)
        slopes = torch.tensor(alibi_slopes(q.shape[1]), dtype=torch.float64)
        distance = (at[:, None, :, None] - at[:, None, None, :]).abs()
        return q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5 - slopes[:, None, None] * distance


class KeepsTheFirstPositionsOfALength(SinusoidalPosition):
    """Sinusoids that keep the positions of their first call at each length (a cache keyed by
    length alone) and reuse them for any positions of that length: right on a fresh model,
    wrong from the second batch of packed documents or drawn positions on."""

    def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        first = self.__dict__.setdefault("_first_positions", {})
        return super().embed(x, first.setdefault(x.shape[1], positions))


class DrawsEveryCall(AlibiPosition):
    """ALiBi plus noise drawn at every forward, in eval mode too (say, a random jitter of
    the positions left switched on): two calls on one input disagree."""

    def prepare(self, length, device, dtype, positions=None):
        ctx = super().prepare(length, device, dtype, positions)
        noise = torch.rand(1, self.shape.num_heads, length, length, device=device, dtype=dtype)
        return ScoreBias(ctx.bias + noise, scale=ctx.scale)


class WritesIntoItsPositions(AlibiPosition):
    """ALiBi that shifts the positions it is given in place (``positions.add_``, where
    ``positions += 1`` was meant as a local copy): translation-invariant, so its own logits
    do not change, but every later reader of the tensor (another layer type's scheme, the
    next call) gets shifted positions."""

    def prepare(self, length, device, dtype, positions=None):
        if positions is not None and 0 not in positions.stride():  # not an expanded arange
            positions.add_(1)
        return super().prepare(length, device, dtype, positions)


class BiasOneKeyShort(AlibiPosition):
    """ALiBi whose bias drops the last key (an off-by-one in the author's indexing)."""

    def prepare(self, length, device, dtype, positions=None):
        ctx = super().prepare(length, device, dtype, positions)
        return ScoreBias(ctx.bias[..., :-1], scale=ctx.scale)


class IntegerBias(AlibiPosition):
    """ALiBi whose bias is rounded to integers (an int64 tensor of the right shape)."""

    def prepare(self, length, device, dtype, positions=None):
        ctx = super().prepare(length, device, dtype, positions)
        return ScoreBias(ctx.bias.round().long(), scale=ctx.scale)


class ScoreReturnsATensor(AlibiPosition):
    """ALiBi whose layers return the bias tensor itself, not a ScoreBias."""

    def layer(self, index: int) -> LayerPosition:
        return _BareBias()


class _BareBias(LayerPosition):
    def score(self, q, k, ctx, qkv):
        return ctx.bias


class RotationDropsAFeature(RotaryPosition):
    """RoPE whose rotation drops the last feature of queries and keys alike: their product
    still has the scores' shape, so nothing downstream complains."""

    def layer(self, index: int) -> LayerPosition:
        return _Truncated(super().layer(index))


class _Truncated(LayerPosition):
    rotates = True

    def __init__(self, inner: LayerPosition) -> None:
        super().__init__()
        self.inner = inner

    def rotate(self, x: Tensor, ctx) -> Tensor:
        return self.inner.rotate(x, ctx)[..., :-1]


class RowsTwiceTheDense(AlibiPosition):
    """ALiBi whose blocks of rows (what a kernel reads on long rows) are twice its dense
    bias: short rows, all the other checks run, never read them."""

    def layer(self, index: int) -> LayerPosition:
        return _TwiceInRows(super().layer(index))


class _TwiceInRows(LayerPosition):
    def __init__(self, inner: LayerPosition) -> None:
        super().__init__()
        self.inner = inner

    def score(self, q, k, ctx, qkv) -> ScoreBias:
        dense = self.inner.score(q, k, ctx, qkv).bias
        return ScoreBias(
            dense,
            scale=self.inner.score(q, k, ctx, qkv).scale,
            rows=lambda start, stop: 2 * dense[..., start:stop, :],
            rows_read=(),
        )


class PositionsInTheComputeDtype(SinusoidalPosition):
    """Reads its table at positions cast to the dtype it computes in: under bfloat16
    autocast (a ``bf16-mixed`` run) positions past 256 round to their neighbours'."""

    def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device).expand(x.shape[0], -1)
        autocast = torch.is_autocast_enabled("cpu")
        dtype = torch.get_autocast_dtype("cpu") if autocast else x.dtype
        rounded = positions.to(dtype).round().long()
        return x * self.embedding_scale + sinusoidal_rows(rounded, x.shape[-1]).to(x.dtype)


class NanUnderBfloat16(RotaryPosition):
    """Fine in float32 and float64, NaN under bfloat16 autocast."""

    def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        return x * float("nan") if torch.is_autocast_enabled("cpu") else x


@pytest.mark.parametrize(
    "scheme,check,words",
    [
        (WrongShape, "shapes", "shapes check failed"),
        (PaddingLeak, "padding", "padded slots leak"),
        (ClaimsTranslationInvariance, "translation", "declares translation_invariant"),
        (ClaimsToDependOnAbsolutePositions, "translation", "changes no logit"),
        (HalfPrecisionInFloat32, "float64", "float32 disagrees with float64"),
        (NanGradient, "gradients", "non-finite gradients"),
        (WrongReference, "reference", "differs from the reference"),
        (ForgetsWhatItsRowsRead, "rows_read", "that rows_read does not name"),
        (SquaresFromTheRowStart, "squares", "is not that slice of its dense bias"),
        (RowsTwiceTheDense, "rows", "are not those rows of its dense bias (a kernel reads"),
        (KeepsTheFirstPositionsOfALength, "positions", "after a call at 0 .. L-1"),
        (DrawsEveryCall, "deterministic", "not deterministic: one model in eval mode"),
        (WritesIntoItsPositions, "deterministic", "changes its input in place: the model's po"),
        (BiasOneKeyShort, "shapes", "score bias has shape (1, 3, 7, 6), which does not"),
        (IntegerBias, "shapes", "score bias has dtype torch.int64, which does not fit"),
        (ScoreReturnsATensor, "shapes", "layer 0's score hook returned Tensor, not a ScoreB"),
        (RotationDropsAFeature, "shapes", "rotate turns queries of shape (3, 3, 7, 16) into"),
        (
            PositionsInTheComputeDtype,
            "bfloat16",
            "under bfloat16 autocast the logits (at drawn positions) disagree with float32's",
        ),
        (NanUnderBfloat16, "bfloat16", "non-finite logits: 2522 of 2522 are NaN or inf (torch.b"),
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else None,
)
def test_the_kit_fails_a_broken_scheme_naming_check_and_scheme(scheme, check, words):
    with pytest.raises(AssertionError) as failure:
        check_scheme(scheme, attention="softmax", checks=[check])
    message = str(failure.value)
    assert f"{check} check failed for scheme " in message and scheme.__qualname__ in message
    assert words in message, message


@pytest.mark.parametrize(
    "scheme,check",
    [
        (PaddingLeak, "shapes"),
        (ClaimsTranslationInvariance, "padding"),
        (HalfPrecisionInFloat32, "translation"),
        (NanGradient, "float64"),
        (RightReference, "reference"),
        (ForgetsWhatItsRowsRead, "gradients"),
        (SquaresFromTheRowStart, "gradients"),
        (KeepsTheFirstPositionsOfALength, "padding"),
        (KeepsTheFirstPositionsOfALength, "deterministic"),
        (DrawsEveryCall, "shapes"),
        (WritesIntoItsPositions, "positions"),
        (RowsTwiceTheDense, "padding"),
        (RowsTwiceTheDense, "rows_read"),
        (PositionsInTheComputeDtype, "positions"),
        (PositionsInTheComputeDtype, "float64"),
        (NanUnderBfloat16, "padding"),
        (HalfPrecisionInFloat32, "bfloat16"),  # bfloat16's precision is what it allows
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else value,
)
def test_each_broken_scheme_passes_the_checks_its_mistake_is_not_about(scheme, check):
    """The failures above are the named check's, not a kit that fails everything."""
    check_scheme(scheme, attention="softmax", checks=[check])


def test_a_scheme_that_draws_at_random_is_said_to_be_not_deterministic():
    """The whole kit names the randomness first, not the padding check it would also fail."""
    with pytest.raises(AssertionError, match="deterministic check failed.*not deterministic"):
        check_scheme(DrawsEveryCall, attention="softmax")


def test_a_scheme_that_ignores_segments_fails_the_segments_check():
    """Positions that run on across documents instead of restarting in each: an absolute
    scheme that drops the segment positions it is handed."""

    class RunsOnAcrossDocuments(SinusoidalPosition):
        def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
            return super().embed(x, None)

    with pytest.raises(AssertionError, match="segments check failed.*packed document 1"):
        check_scheme(RunsOnAcrossDocuments, attention="softmax", checks=["segments"])


def test_a_scheme_that_ignores_positions_it_claims_to_read_fails_the_positions_check():
    class IgnoresPositions(SinusoidalPosition):
        def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
            return super().embed(x, None)

    with pytest.raises(AssertionError, match="positions check failed.*longer padded row"):
        check_scheme(IgnoresPositions, attention="softmax", checks=["positions"])


class NanFromNineTokens(AlibiPosition):
    """ALiBi whose bias is NaN on rows of 9 tokens or more: the shapes check's 7-token rows
    are finite, every longer row of the other checks is not."""

    def prepare(self, length, device, dtype, positions=None):
        bias = super().prepare(length, device, dtype, positions)
        if length < 9:
            return bias
        return ScoreBias(bias.bias * torch.nan, scale=bias.scale)


class NanAtDrawnPositions(AlibiPosition):
    """ALiBi whose bias is NaN wherever it is given positions."""

    def prepare(self, length, device, dtype, positions=None):
        bias = super().prepare(length, device, dtype, positions)
        if positions is None:
            return bias
        return ScoreBias(bias.bias * torch.nan, scale=bias.scale)


@pytest.mark.parametrize(
    ("scheme", "check", "inputs"),
    [
        (NanFromNineTokens, "deterministic", "input_ids of shape (2, 13)"),
        (NanFromNineTokens, "padding", "input_ids of shape (2, 13) with attention_mask"),
        (NanAtDrawnPositions, "deterministic", "with position_ids"),
        (NanAtDrawnPositions, "positions", "with position_ids"),
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else str(value)[:16],
)
def test_a_scheme_that_gives_nan_on_some_inputs_is_said_to_give_nan(scheme, check, inputs):
    """NaN equals nothing, so a scheme finite on the shapes check's rows but NaN on others
    failed the first comparison that met it in that comparison's words ('not
    deterministic: ... (a random draw, or state kept between calls?)', seen with a plugin
    whose bias was NaN from 9 tokens on). Each check now says the logits are not finite,
    and on which inputs."""
    with pytest.raises(AssertionError) as info:
        check_scheme(scheme, attention="softmax", checks=[check])
    message = str(info.value)
    assert message.startswith(f"{check} check failed"), message
    assert "non-finite logits" in message and inputs in message, message
    assert "not deterministic" not in message and "leak" not in message, message
