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

import pytest
from cli_helpers import fit_args, overridden

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
