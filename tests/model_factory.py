"""Small models over every registered scheme x kernel pair, for the tests.

The models themselves are the scheme kit's (:mod:`roformer_lit.testing.models`): the
suite and an author's ``check_scheme`` build the very same ones."""

from __future__ import annotations

from roformer_lit import ATTENTION_KERNELS, POSITION_SCHEMES
from roformer_lit.testing.models import (
    PAD,
    SHAPES,
    VOCAB,
    random_ids,
    small_model,
    visible_model,
)

__all__ = [
    "INVALID_PAIRS",
    "PAD",
    "SHAPES",
    "VALID_PAIRS",
    "VOCAB",
    "compatible",
    "random_ids",
    "small_model",
    "visible_model",
]


def compatible(position: str, attention: str) -> bool:
    return not (
        POSITION_SCHEMES[position].needs_score_bias
        and not ATTENTION_KERNELS[attention].supports_score_bias
    )


VALID_PAIRS = [(p, a) for p in POSITION_SCHEMES for a in ATTENTION_KERNELS if compatible(p, a)]
INVALID_PAIRS = [
    (p, a) for p in POSITION_SCHEMES for a in ATTENTION_KERNELS if not compatible(p, a)
]
