"""A new run whose warm-up its schedule cuts says so
(:func:`roformer_lit.commands.prelaunch.warmup_past_the_steps`).

Before, ``--model.warmup_steps 100 --trainer.max_steps 50`` trained with exit 0 and
nothing said: the decaying schedules (``linear``, ``wsd``) cut the warm-up to
``max_steps - 1`` (:func:`~roformer_lit.training.lifecycle.planned_warmup`), so the last
step trained at the peak rate and nothing decayed. Such a new run now prints one ``note:``
line naming both values and the warm-ups that run as given. Not refused: the examples'
smoke runs (``--trainer.max_steps 20`` under a shipped config's warm-up of 60) are such
runs. ``constant`` (whose rate at a step does not depend on ``max_steps``), a warm-up the
schedule keeps, and a resumed run (it keeps the schedule it started with) say nothing.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from cli_helpers import epochs_args, fit_args, overridden

from roformer_lit.commands import main, prelaunch

#: case -> (model.warmup_steps, model.lr_schedule, noted) for a run of 6 steps.
CASES = {
    "linear, a warm-up of every step": (6, "linear", True),
    "linear, a warm-up past the steps": (10, "linear", True),
    "wsd, a warm-up of every step": (6, "wsd", True),
    "linear, the last step after the warm-up": (5, "linear", False),
    "linear, no warm-up": (0, "linear", False),
    "constant, a warm-up past the steps": (10, "constant", False),
}


def config(warmup: int, schedule: str, **more) -> dict:
    return {
        "model": {"warmup_steps": warmup, "lr_schedule": schedule},
        "trainer": {"max_steps": 6},
        **more,
    }


@pytest.mark.parametrize(("warmup", "schedule", "noted"), CASES.values(), ids=CASES)
def test_a_warmup_the_schedule_would_cut_is_noted(warmup, schedule, noted):
    note = prelaunch.warmup_past_the_steps(config(warmup, schedule))
    if not noted:
        assert note is None
        return
    assert note is not None and "\n" not in note
    assert f"model.warmup_steps={warmup} is not below trainer.max_steps=6" in note, note
    assert "warms up over 5 steps" in note and "0 to 5" in note, note


def test_a_resumed_run_keeps_its_schedule_and_says_nothing():
    assert prelaunch.warmup_past_the_steps(config(10, "linear")) is not None  # the control
    resumed = config(10, "linear", ckpt_path="runs/x/checkpoints/last.ckpt")
    assert prelaunch.warmup_past_the_steps(resumed) is None


@pytest.mark.trainer
def test_fit_says_it_in_one_note_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(prelaunch, "_noted", set())
    args = overridden(fit_args("rope.yaml", 6), ["--model.warmup_steps", "10"])
    assert main(args) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "warmup_steps" in line]
    assert len(notes) == 1 and notes[0].startswith("note: model.warmup_steps=10 is not below")


def epoch_run(
    warmup: int, schedule: str, ckpt_path: str | None = None, max_steps: int = -1, **hparams
) -> tuple[SimpleNamespace, SimpleNamespace]:
    """(a trainer of one epoch of 6 training batches, a module of ``warmup`` steps)."""
    trainer = SimpleNamespace(
        ckpt_path=ckpt_path,
        max_steps=max_steps,
        max_epochs=1,
        accumulate_grad_batches=1,
        limit_train_batches=None,
        datamodule=SimpleNamespace(train_batches=6),
    )
    module = SimpleNamespace(hparams={"warmup_steps": warmup, "lr_schedule": schedule, **hparams})
    return trainer, module


@pytest.mark.parametrize(("warmup", "schedule", "noted"), CASES.values(), ids=CASES)
def test_a_run_counted_in_epochs_is_noted_as_a_run_counted_in_steps(warmup, schedule, noted):
    """A run of one epoch of 6 steps and none of ``trainer.max_steps`` said nothing of a
    warm-up its schedule cut (its step count is known only once its data are read); it is
    judged as a run of ``--trainer.max_steps 6`` is, once its count is known."""
    note = prelaunch.warmup_past_the_epochs(*epoch_run(warmup, schedule))
    assert (note is not None) == noted
    if noted:
        assert note is not None and "\n" not in note
        assert f"model.warmup_steps={warmup} is not below the run's 6 optimiser steps" in note
        assert "warms up over 5 steps" in note and "0 to 5" in note, note
        assert "raise trainer.max_epochs" in note, note


def test_a_resumed_or_step_counted_epoch_run_says_nothing_here():
    assert prelaunch.warmup_past_the_epochs(*epoch_run(10, "linear")) is not None  # control
    resumed = epoch_run(10, "linear", ckpt_path="runs/x/checkpoints/last.ckpt")
    assert prelaunch.warmup_past_the_epochs(*resumed) is None
    # trainer.max_steps ends it: warmup_past_the_steps noted it before the run started
    assert prelaunch.warmup_past_the_epochs(*epoch_run(10, "linear", max_steps=6)) is None
    # a module whose warm-up is no model.warmup_steps (a fine-tune's warmup_ratio)
    trainer, module = epoch_run(10, "linear")
    module.hparams = {"warmup_ratio": 1.0, "lr_schedule": "linear"}
    assert prelaunch.warmup_past_the_epochs(trainer, module) is None


@pytest.mark.trainer
def test_an_epoch_counted_fit_says_it_in_one_note_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(prelaunch, "_noted", set())
    assert main(epochs_args("--model.warmup_steps", "10")) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "warmup_steps" in line]
    (last,) = tmp_path.glob("runs/*/*/checkpoints/last.ckpt")
    steps = torch.load(last, map_location="cpu", weights_only=False)["global_step"]
    assert len(notes) == 1, notes
    assert notes[0].startswith(f"note: model.warmup_steps=10 is not below the run's {steps} "), (
        notes
    )
