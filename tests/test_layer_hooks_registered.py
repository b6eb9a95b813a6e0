"""A scheme whose layers' hooks hold parameters or buffers it does not register (kept in a
plain dict or list, or made anew in ``layer``) is refused in one line naming it when the
encoder is built: those tensors would be left out of the optimiser, the checkpoint and
``.to(device)`` without a word, a model trained without them and random again in every
command that loads the run."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from roformer_lit.errors import ConfigError
from roformer_lit.positions.alibi import AlibiPosition
from roformer_lit.positions.base import LayerPosition, ScoreBias
from roformer_lit.testing.models import random_ids, small_model


class _Weighted(LayerPosition):
    """ALiBi's bias times a learned weight per head (a parameter, or a buffer)."""

    def __init__(self, heads: int, buffer: bool = False) -> None:
        super().__init__()
        weight = torch.linspace(0.5, 1.5, heads)
        if buffer:
            self.register_buffer("weight", weight)
        else:
            self.weight = nn.Parameter(weight)

    def score(self, q, k, ctx, qkv):
        return ScoreBias(ctx.bias * self.weight[None, :, None, None], scale=ctx.scale)


class InAPlainDict(AlibiPosition):
    """Keeps each layer's hooks, made on first use, in a plain dict."""

    def layer(self, index: int) -> LayerPosition:
        if not hasattr(self, "_made"):
            self._made = {}
        return self._made.setdefault(index, _Weighted(self.shape.num_heads))


class MadeAnewEachCall(AlibiPosition):
    """Makes each layer's hooks, with a buffer, anew on every call."""

    def layer(self, index: int) -> LayerPosition:
        return _Weighted(self.shape.num_heads, buffer=True)


class InAModuleList(AlibiPosition):
    """Registers each layer's hooks: the right way."""

    def __init__(self, shape) -> None:
        super().__init__(shape)
        self.weighted = nn.ModuleList(_Weighted(shape.num_heads) for _ in range(shape.num_layers))

    def layer(self, index: int) -> LayerPosition:
        return self.weighted[index]


@pytest.mark.parametrize(
    ("scheme", "held"),
    [(InAPlainDict, "holding weight"), (MadeAnewEachCall, "holding weight")],
    ids=lambda value: value.__name__ if isinstance(value, type) else None,
)
def test_hooks_holding_tensors_the_scheme_does_not_register_are_one_line(scheme, held):
    """Seen: a plugin keeping its layers in a dict trained without their weights (absent
    from model.parameters() and the checkpoint), and the scheme kit failed it as 'float32
    disagrees with float64'."""
    with pytest.raises(ConfigError) as info:
        small_model(scheme, "softmax", num_layers=2)
    message = str(info.value)
    assert "\n" not in message, message
    assert message.startswith(f"position 'kit-check-{scheme.__qualname__}': layer(0)"), message
    assert held in message and "does not register" in message, message


def test_hooks_the_scheme_registers_build_train_and_are_saved():
    model = small_model(InAModuleList, "softmax", num_layers=2)
    hooks = model.encoder.position.layer(1)
    assert any(p is hooks.weight for p in model.parameters())
    assert any(t is hooks.weight for t in model.state_dict(keep_vars=True).values())
    model(random_ids(2, 7)).sum().backward()
    assert hooks.weight.grad is not None and hooks.weight.grad.abs().sum() > 0
