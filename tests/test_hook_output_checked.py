"""A scheme whose ``embed`` or ``rotate`` returns another shape or dtype than its input is
one line naming it when the model runs (``MaskedLM.check_embedded``,
``SelfAttention.rotated``), not a traceback inside the layers that names neither."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import Tensor

from roformer_lit.errors import ConfigError
from roformer_lit.positions.base import LayerPosition
from roformer_lit.positions.rope import RotaryPosition
from roformer_lit.positions.sinusoidal import SinusoidalPosition
from roformer_lit.testing.models import random_ids, small_model


class EmbedsOneTokenShort(SinusoidalPosition):
    def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        return super().embed(x, positions)[:, :-1]


class EmbedsInFloat64(SinusoidalPosition):
    def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        return super().embed(x, positions).double()


class EmbedsAPair(SinusoidalPosition):
    def embed(self, x: Tensor, positions: Tensor | None = None):
        return super().embed(x, positions), None


class ChangedRotation(LayerPosition):
    """A layer that rotates as ``inner`` does, then passes the result through ``change``."""

    rotates = True

    def __init__(self, inner: LayerPosition, change: Callable[[Tensor], Tensor]) -> None:
        super().__init__()
        self.inner, self.change = inner, change

    def rotate(self, x: Tensor, ctx) -> Tensor:
        return self.change(self.inner.rotate(x, ctx))


def rotating(change: Callable[[Tensor], Tensor]) -> type[RotaryPosition]:
    """A RoPE whose layers' rotate passes its result through ``change``."""

    class Changed(RotaryPosition):
        def layer(self, index: int) -> LayerPosition:
            return ChangedRotation(super().layer(index), change)

    Changed.__qualname__ = f"Rotates_{change.__name__}"
    return Changed


def one_key_short(t: Tensor) -> Tensor:
    return t[..., :-1, :]


def in_float64(t: Tensor) -> Tensor:
    return t.double()


@pytest.mark.parametrize(
    ("scheme", "words"),
    [
        (EmbedsOneTokenShort, "its embed hook returned shape (2, 6, 48) for token embeddings"),
        (EmbedsInFloat64, "its embed hook returned dtype torch.float64 for token embeddings"),
        (EmbedsAPair, "its embed hook returned tuple for token embeddings"),
        (rotating(one_key_short), "rotate hook returned shape (2, 3, 6, 16) for queries or keys"),
        (rotating(in_float64), "rotate hook returned dtype torch.float64 for queries or keys"),
    ],
)
def test_a_hook_output_of_another_shape_or_dtype_is_one_line(scheme, words):
    model = small_model(scheme)
    with pytest.raises(ConfigError) as info:
        model(random_ids(2, 7))
    message = str(info.value)
    assert "\n" not in message and words in message, message
    assert message.startswith("position 'kit-check-"), message


@pytest.mark.parametrize("position", ["sinusoidal", "rope"])
def test_right_hooks_run_under_autocast(position):
    model = small_model(position)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(random_ids(2, 7))
