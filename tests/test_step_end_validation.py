"""A new run validates only at the end of an optimiser step
(:mod:`roformer_lit.training.step_end_validation`).

Before, ``--trainer.accumulate_grad_batches 2 --trainer.val_check_interval 3`` trained with
exit 0 and saved ``best.ckpt`` and ``last.ckpt`` at a validation inside step 2, which no
resume continues (``check_step_boundary`` refuses it): a run killed after that validation
had no usable checkpoint. Such a schedule is now one ``error:`` line naming both values and
the valid ones: before any run directory exists where the settings decide it (an integer
interval, a duration), and at the start of training, the new run's directory removed again,
where the epoch's batches decide it (a fraction of an epoch; batches counted over the whole
run through epochs whose batches are not a multiple of the accumulation). An epoch's end is
a step's end (Lightning steps at the epoch's last batch), so validation there is kept, and
its checkpoint resumes the run exactly.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from cli_helpers import fit_args, fit_in, one_error_line, overridden
from lightning.pytorch import Callback

import roformer_lit.commands.pretrain as pretrain
from roformer_lit.commands import main
from roformer_lit.errors import ConfigError
from roformer_lit.results.events import read_run
from roformer_lit.training.callbacks import RunCheckpoint
from roformer_lit.training.step_end_validation import check_validation_schedule, inside_step

#: (batches an epoch, accumulate_grad_batches, validation every, counted per epoch) -> the
#: first batch of an epoch whose validation falls inside a step (None: none does).
SCHEDULES = {
    "no accumulation": (5, 1, 3, False, None),
    "a multiple of the accumulation": (16, 2, 4, False, None),
    "not a multiple": (16, 2, 3, False, 3),
    "within each epoch, a multiple": (5, 2, 2, True, None),
    "within each epoch, not a multiple": (16, 4, 6, True, 6),
    "the epoch's end": (5, 2, 5, True, None),
    "over epochs whose steps do not divide them": (5, 2, 4, False, 3),
    "over epochs, every epoch's end": (5, 2, 5, False, None),
    "over epochs, every other epoch's end": (5, 2, 10, False, None),
    "over epochs of whole steps": (6, 3, 9, False, None),
}


@pytest.mark.parametrize(
    ("batches", "accumulate", "every", "per_epoch", "first"), SCHEDULES.values(), ids=SCHEDULES
)
def test_where_validation_falls_inside_a_step(batches, accumulate, every, per_epoch, first):
    assert inside_step(batches, accumulate, every, per_epoch) == first
    if first is None:
        check_validation_schedule(batches, accumulate, every, per_epoch, every)
    else:
        with pytest.raises(ConfigError, match=f"batch {first}"):
            check_validation_schedule(batches, accumulate, every, per_epoch, every)


#: A run of epochs of 5 batches, 2 batches a step (an epoch: 3 steps, the last of 1 batch).
FIVE = overridden(
    fit_args("rope.yaml", 6),
    ["--data.max_train_blocks", "40", "--trainer.accumulate_grad_batches", "2"],
)

#: case -> (the schedule's flags, what the line names).
REFUSED = {
    "an interval that is no multiple": (
        ["--trainer.val_check_interval", "3"],
        "trainer.val_check_interval=3 is not a multiple of trainer.accumulate_grad_batches=2",
    ),
    "a duration": (
        ["--trainer.val_check_interval", "00:00:00:05"],
        "trainer.val_check_interval='00:00:00:05' is a duration",
    ),
    "within each epoch, no multiple": (
        ["--trainer.val_check_interval", "3", "--trainer.check_val_every_n_epoch", "1"],
        "trainer.val_check_interval=3 is not a multiple of trainer.accumulate_grad_batches=2",
    ),
    "a fraction of an epoch": (
        ["--trainer.val_check_interval", "0.6", "--trainer.check_val_every_n_epoch", "1"],
        "trainer.val_check_interval=0.6 of an epoch is every 3 batches: validation would "
        "follow batch 3 of an epoch of 5 batches",
    ),
    "a multiple, over epochs of no whole steps": (
        ["--trainer.val_check_interval", "4"],
        "trainer.val_check_interval=4 counts batches over the whole run",
    ),
}


@pytest.mark.trainer
@pytest.mark.parametrize(("flags", "named"), REFUSED.values(), ids=REFUSED)
def test_a_schedule_that_validates_inside_a_step_is_refused(
    flags, named, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    line = one_error_line(overridden(FIVE, flags), capsys)
    assert line.startswith(f"error: {named}"), line
    assert "a multiple of 2 (2, 4, 6, ...)" in line, line
    assert list(tmp_path.iterdir()) == []  # no run directory, or the new one removed again


class KeepCheckpointAtEpochStart(Callback):
    """Copies ``last.ckpt`` aside at the first batch of epoch ``epoch``: the file a run
    killed right after the previous epoch's validation leaves."""

    def __init__(self, epoch: int, to: Path) -> None:
        self.epoch, self.to = epoch, to

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.current_epoch == self.epoch and batch_idx == 0:
            self.to.write_bytes((Path(trainer.log_dir) / "checkpoints" / "last.ckpt").read_bytes())


def series(run: Path, tag: str) -> dict[int, float]:
    return {s.step: s.value for s in read_run(run).scalars.get(tag, [])}


#: case -> (the schedule's flags, the epoch a killed run was in, the step its checkpoint holds).
EPOCH_ENDS = {
    "every 10 batches of the run: every other epoch's end": (
        ["--trainer.val_check_interval", "10"],
        2,
        6,
    ),
    "once an epoch (1.0), counted within each epoch": (
        ["--trainer.val_check_interval", "1.0", "--trainer.check_val_every_n_epoch", "1"],
        1,
        3,
    ),
}


@pytest.mark.trainer
@pytest.mark.parametrize(("flags", "epoch", "step"), EPOCH_ENDS.values(), ids=EPOCH_ENDS)
def test_validation_at_an_epochs_end_after_a_partial_step_resumes_exactly(
    flags, epoch, step, tmp_path_factory, tmp_path, monkeypatch
):
    """Epochs of 5 batches, 2 a step: an epoch's third step has 1 batch, which Lightning
    steps on. Validation at an epoch's end follows a step's end: kept, and the checkpoint
    it saved resumes the run to the uninterrupted run's numbers, bit for bit. (Once an
    epoch, Lightning saved it at the training epoch's end, where its restored loops count
    the epoch's last step again: every step logged one late, other numbers, exit 0;
    ``RunCheckpoint`` saves after the validation instead.)"""
    args = overridden(
        FIVE, ["--trainer.max_steps", "9", "--trainer.log_every_n_steps", "1", *flags]
    )
    whole = fit_in(tmp_path_factory, "whole", args) / "runs" / "mlm" / "rope-softmax-seed0"
    monkeypatch.chdir(tmp_path)
    kept = tmp_path / "killed.ckpt"
    original = pretrain.RoformerCLI.instantiate_trainer

    def keeping(self, **kwargs):
        trainer = original(self, **kwargs)
        trainer.callbacks.append(KeepCheckpointAtEpochStart(epoch, kept))
        return trainer

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pretrain.RoformerCLI, "instantiate_trainer", keeping)
        assert main(args) == 0
    assert torch.load(kept, weights_only=False)["global_step"] == step
    resumed_args = [*args, "--trainer.logger.init_args.version", "resumed"]
    assert main([*resumed_args, "--ckpt_path", str(kept)]) == 0
    resumed = tmp_path / "runs" / "mlm" / "resumed"
    for tag in ("val/loss", "train/loss"):
        ours, theirs = series(resumed, tag), series(whole, tag)
        assert ours and ours == {s: theirs.get(s) for s in ours}, tag  # bit for bit
    ours, theirs = (
        torch.load(r / "checkpoints" / "last.ckpt")["state_dict"] for r in (resumed, whole)
    )
    assert all(torch.equal(ours[name], theirs[name]) for name in theirs)


def trainer_at_start(**settings):
    """What ``RunCheckpoint.on_train_start`` reads of a Trainer once its epoch is known: a
    new run of epochs of 5 batches, 2 a step, validating every 4 batches of the run."""
    values = {
        "ckpt_path": None,
        "enable_validation": True,
        "num_training_batches": 5,
        "accumulate_grad_batches": 2,
        "val_check_batch": 4,
        "val_check_interval": 4,
        "check_val_every_n_epoch": None,
        "_val_check_time_interval": None,
    }
    return SimpleNamespace(**{**values, **settings})


#: case -> (the trainer's settings, the line's start; None: kept).
PYTHON_API = {
    "over epochs of no whole steps": ({}, "trainer.val_check_interval=4 counts batches"),
    "no multiple": (
        {"val_check_batch": 3, "val_check_interval": 3},
        "trainer.val_check_interval=3 is not",
    ),
    "a duration (Lightning keeps its seconds)": (
        {"val_check_batch": None, "_val_check_time_interval": 5.0},
        "trainer.val_check_interval='5 s' is a duration",
    ),
    "a resumed run keeps its schedule": ({"ckpt_path": "last.ckpt"}, None),
    "no validation": ({"enable_validation": False}, None),
    "epochs of whole steps": ({"num_training_batches": 6}, None),
}


@pytest.mark.parametrize(("settings", "line"), PYTHON_API.values(), ids=PYTHON_API)
def test_the_python_api_meets_the_rule_at_the_start_of_training(settings, line):
    """A Trainer built in Python (no pre-launch check) with the run's checkpoint callback."""
    callback = RunCheckpoint(monitor="val/loss")
    trainer = trainer_at_start(**settings)
    if line is None:
        callback.on_train_start(trainer, None)
        return
    with pytest.raises(ConfigError) as refused:
        callback.on_train_start(trainer, None)
    assert str(refused.value).startswith(line), refused.value
