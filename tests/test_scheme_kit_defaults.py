"""The scheme kit checks a scheme at its default options too, not only with its
``test_kwargs``: a run builds a scheme at its defaults, so a scheme broken there alone (each
class here is right with its ``test_kwargs`` and wrong without them) fails the kit, the
failure naming the default options."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from roformer_lit.positions.base import EncoderShape
from roformer_lit.positions.nope import NoPosition
from roformer_lit.positions.rope import RotaryPosition
from roformer_lit.positions.sinusoidal import sinusoidal_rows
from roformer_lit.testing import check_scheme


class AbsoluteAtItsDefaults(RotaryPosition):
    """RoPE (translation invariant, as it claims) that also adds absolute sinusoids unless
    ``absolute=False``, which its ``test_kwargs`` set."""

    test_kwargs = {"absolute": False}

    def __init__(self, shape: EncoderShape, *, absolute: bool = True) -> None:
        super().__init__(shape)
        self.absolute = absolute

    def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        if not self.absolute:
            return x
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device).expand(x.shape[0], -1)
        return x + sinusoidal_rows(positions, x.shape[-1]).to(x.dtype)


class PoolsPaddingAtItsDefaults(NoPosition):
    """Adds the mean of every slot, padded ones included, unless ``pool=False``."""

    test_kwargs = {"pool": False}

    def __init__(self, shape: EncoderShape, *, pool: bool = True) -> None:
        super().__init__(shape)
        self.pool = pool

    def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        return x + x.mean(dim=1, keepdim=True) if self.pool else x


class JittersAtItsDefaults(NoPosition):
    """Adds fresh noise to every embedding at each call unless ``jitter=0``."""

    test_kwargs = {"jitter": 0.0}

    def __init__(self, shape: EncoderShape, *, jitter: float = 0.5) -> None:
        super().__init__(shape)
        self.jitter = jitter

    def embed(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        return x + self.jitter * torch.randn_like(x)


BROKEN_AT_DEFAULTS = [
    (AbsoluteAtItsDefaults, "translation", "declares translation_invariant"),
    (PoolsPaddingAtItsDefaults, "padding", "padded slots leak"),
    (JittersAtItsDefaults, "deterministic", "not deterministic"),
]


@pytest.mark.parametrize(
    "scheme,check,words", BROKEN_AT_DEFAULTS, ids=lambda v: getattr(v, "__name__", None)
)
def test_a_scheme_broken_at_its_defaults_alone_fails_the_kit_naming_them(scheme, check, words):
    with pytest.raises(AssertionError) as failure:
        check_scheme(scheme, attention="softmax", checks=[check])
    message = str(failure.value)
    assert f"{check} check failed for scheme " in message and scheme.__qualname__ in message
    assert "at its default options" in message and str(dict(scheme.test_kwargs)) in message
    assert words in message, message


@pytest.mark.parametrize(
    "scheme,check,words", BROKEN_AT_DEFAULTS, ids=lambda v: getattr(v, "__name__", None)
)
def test_the_same_scheme_given_its_test_kwargs_passes(scheme, check, words):
    """The failure above is the defaults': given the options of its ``test_kwargs``, the
    scheme is checked as that scheme alone, and passes."""
    check_scheme(scheme, attention="softmax", checks=[check], **scheme.test_kwargs)


def test_the_whole_kit_fails_a_scheme_only_its_defaults_break():
    """Every check but the defaults' passes ``AbsoluteAtItsDefaults`` (shapes and packed
    documents hold at its defaults too): the kit as a whole still fails it."""
    with pytest.raises(AssertionError, match="translation check failed.*at its default options"):
        check_scheme(AbsoluteAtItsDefaults, attention="softmax")
