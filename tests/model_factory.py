"""Small models over every registered scheme x kernel pair, for the tests.

The models themselves are the scheme kit's (:mod:`roformer_lit.testing.models`): the
suite and an author's ``check_scheme`` build the very same ones."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType

import pytest
import torch

from roformer_lit import ATTENTION_KERNELS, POSITION_SCHEMES
from roformer_lit.architecture_rules import takes_score_bias
from roformer_lit.attention import softmax
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
    "assert_same_logits_and_gradients",
    "count_calls",
    "logits_and_gradients",
    "on_both_cpu_paths",
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
    """Whether the rule table pairs them (what each declares, read as the rule reads it)."""
    return takes_score_bias(
        POSITION_SCHEMES[position].capabilities(), ATTENTION_KERNELS[attention].capabilities()
    )


VALID_PAIRS = [(p, a) for p in POSITION_SCHEMES for a in ATTENTION_KERNELS if compatible(p, a)]
INVALID_PAIRS = [
    (p, a) for p in POSITION_SCHEMES for a in ATTENTION_KERNELS if not compatible(p, a)
]


def logits_and_gradients(
    model: torch.nn.Module, ids: torch.Tensor, **inputs: torch.Tensor | None
) -> tuple[torch.Tensor, dict[str, torch.Tensor | None]]:
    """``model``'s logits on ``ids`` and, by name, each parameter's gradient of the
    probability of token 5 summed over every position (None where a parameter is unused)."""
    logits = model(ids, **inputs)
    loss = logits.softmax(-1)[..., 5].sum()
    names, params = zip(*model.named_parameters(), strict=True)
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    return logits.detach(), dict(zip(names, grads, strict=True))


def assert_same_logits_and_gradients(
    got: tuple[torch.Tensor, dict[str, torch.Tensor | None]],
    want: tuple[torch.Tensor, dict[str, torch.Tensor | None]],
    tolerance: float = 1e-10,
) -> None:
    """Two :func:`logits_and_gradients` results agree: logits, and every gradient (or its
    absence) by name."""
    torch.testing.assert_close(got[0], want[0], atol=tolerance, rtol=tolerance)
    for name, expected in want[1].items():
        actual = got[1][name]
        assert (actual is None) == (expected is None), name
        if expected is not None:
            torch.testing.assert_close(actual, expected, atol=tolerance, rtol=tolerance, msg=name)


def count_calls(
    monkeypatch: pytest.MonkeyPatch, modules: Iterable[ModuleType], name: str, function: Callable
) -> list[int]:
    """Replace ``name`` in each of ``modules`` by ``function`` counted: one entry per call."""
    calls: list[int] = []

    def counted(*args, **kwargs):
        calls.append(1)
        return function(*args, **kwargs)

    for module in modules:
        monkeypatch.setattr(module, name, counted)
    return calls


def on_both_cpu_paths(
    monkeypatch: pytest.MonkeyPatch, position: str, ids: torch.Tensor, **inputs: torch.Tensor | None
) -> tuple[tuple, tuple]:
    """:func:`logits_and_gradients` of the same float64 small model of ``position`` (training
    mode, no dropout) below the fused CPU path's length and on that path from 2 tokens."""
    results = []
    for fused_from in (softmax.FUSED_FROM_LENGTH, 2):
        monkeypatch.setattr(softmax, "FUSED_FROM_LENGTH", fused_from)
        torch.manual_seed(0)
        model = small_model(position, dropout=0.0).double().train()
        results.append(logits_and_gradients(model, ids, **inputs))
    below, fused = results
    return below, fused
