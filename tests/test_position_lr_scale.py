"""``model.position_lr_scale``: the position scheme's parameters, and only they, train at a
multiple of the learning rate.

Oracle: Adam's first step moves every parameter by about ``lr * sign(grad)`` (plus the
decoupled weight decay ``lr * wd * p``), so a first step taken with the scale ``s`` moves
the scheme's parameters ``s`` times as far as with scale 1 and every other parameter
exactly as far. Parametrised over the registry: a new scheme is covered when registered.
"""

from __future__ import annotations

import copy

import pytest
import torch

from roformer_lit import POSITION_SCHEMES
from roformer_lit.training.lifecycle import adamw
from tests.model_factory import small_model

SCALE = 8.0
LR = 1e-3


def _first_step_moves(model: torch.nn.Module, scale: float) -> dict[str, torch.Tensor]:
    model = copy.deepcopy(model).double().train()  # float64: the moves are exact enough to compare
    torch.manual_seed(1)
    ids = torch.randint(5, 97, (2, 12))
    labels = torch.where(torch.rand(ids.shape) < 0.5, ids, torch.full_like(ids, -100))
    labels[:, 0] = ids[:, 0]
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    optimizer = adamw(model, LR, 0.01, (0.9, 0.98), scale, model.position_parameters())
    torch.manual_seed(2)  # the same dropout masks for both scales
    model.mlm_loss(ids, labels).backward()
    optimizer.step()
    return {n: (p.detach() - before[n]).double() for n, p in model.named_parameters()}


@pytest.mark.parametrize("position", sorted(POSITION_SCHEMES))
def test_only_the_schemes_parameters_move_scale_times_as_far(position):
    model = small_model(position)
    positional = {f"encoder.position.{n}" for n, _ in model.encoder.position.named_parameters()}
    base = _first_step_moves(model, 1.0)
    scaled = _first_step_moves(model, SCALE)
    for name, delta in base.items():
        if name in positional:
            torch.testing.assert_close(scaled[name], SCALE * delta, rtol=1e-6, atol=1e-12)
        else:
            torch.testing.assert_close(scaled[name], delta, rtol=0, atol=1e-12)
    if positional:  # the test saw the scheme's parameters move at all
        assert any(base[n].abs().max() > 0 for n in positional)


def test_the_optimiser_of_the_module_scales_its_position_parameters():
    """``configure_optimizers`` hands AdamW the module's own position parameters."""
    model = small_model("t5", learning_rate=LR, position_lr_scale=SCALE)
    groups = model.configure_optimizers()["optimizer"].param_groups
    scaled = [p for g in groups if g["initial_lr"] == LR * SCALE for p in g["params"]]
    assert {id(p) for p in scaled} == {id(p) for p in model.encoder.position.parameters()}


def test_scale_one_keeps_the_two_groups_older_checkpoints_hold():
    """Resuming a run saved before the option existed loads its optimiser state, which has
    two groups (decayed matrices, then everything else)."""
    model = small_model("t5")
    optimizer = adamw(model, LR, 0.01, (0.9, 0.98))
    decays = [g["weight_decay"] for g in optimizer.param_groups]
    assert decays == [0.01, 0.0]
    assert sum(len(g["params"]) for g in optimizer.param_groups) == len(list(model.parameters()))


@pytest.mark.parametrize("position", sorted(POSITION_SCHEMES))
def test_a_scale_that_cannot_act_says_so_once(position, capsys):
    """A scheme without parameters (nope, sinusoidal, rope, fixed ALiBi) has nothing to scale:
    one warning line, and training is unchanged; a scheme with parameters gets no warning."""
    model = small_model(position)
    has_parameters = any(True for _ in model.encoder.position.parameters())
    capsys.readouterr()
    adamw(model, LR, 0.01, (0.9, 0.98), SCALE, model.position_parameters())
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    if has_parameters:
        assert lines == []
    else:
        assert len(lines) == 1 and "model.position_lr_scale=8 has no effect" in lines[0], lines
