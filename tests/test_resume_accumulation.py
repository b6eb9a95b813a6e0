"""Exact resume under ``accumulate_grad_batches`` > 1: a run preempted by a signal that
arrives inside an accumulation (on a batch that only accumulated gradients, or in a
validation that Lightning runs between two batches of one optimiser step) stops at the end
of that optimiser step, and resumed from its ``last.ckpt`` gives the uninterrupted run's
numbers bit for bit: every ``val/loss`` and ``train/loss`` and the final weights.

Before, the run stopped after the accumulating batch: ``last.ckpt`` held the previous
step's weights with the loader and the generators past that batch, the batch's gradients
were lost, and the resumed run (exit 0) trained on other numbers than the uninterrupted one.

A checkpoint saved inside an accumulation by other means (``best.ckpt`` and ``last.ckpt``
written at a validation that ``val_check_interval``, counted in batches, puts between two
batches of one step; a run killed after it) is refused on resume in one line, the run
unchanged: before, it resumed with exit 0 on other numbers.

A new run is no longer given such a schedule
(:mod:`~roformer_lit.training.step_end_validation`, ``tests/test_step_end_validation.py``);
the runs here are made as an earlier version made them, with that check off, as the runs
a resume of such a version's run meets (a resume keeps its run's schedule).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import torch
from cli_helpers import fit_args, fit_in, overridden, refused_unchanged
from lightning.pytorch import Callback

import roformer_lit.commands.pretrain as pretrain
from roformer_lit.commands import EXIT_PREEMPTED, main, prelaunch
from roformer_lit.commands.checkpoint_settings import check_step_boundary
from roformer_lit.errors import ConfigError
from roformer_lit.results.events import read_run
from roformer_lit.training import callbacks
from roformer_lit.training.checkpoint_io import TRAINER_SETTINGS_KEY

STEPS, ACCUMULATE = 8, 2
#: Validation every 5 batches with 2 batches a step: the first falls inside step 3.
ARGS = fit_args(
    "rope.yaml",
    STEPS,
    "--trainer.accumulate_grad_batches",
    str(ACCUMULATE),
    "--trainer.val_check_interval",
    "5",
    "--trainer.log_every_n_steps",
    "1",
)
RUN = Path("runs") / "mlm" / "rope-softmax-seed0"
LAST = RUN / "checkpoints" / "last.ckpt"


@pytest.fixture(scope="module", autouse=True)
def earlier_version():
    """Runs made as before the step-end validation rule: validation inside a step allowed."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(prelaunch, "check_new_run", lambda config: None)
        mp.setattr(callbacks, "check_validation_schedule", lambda *args: None)
        yield


class SignalAtBatch(Callback):
    """SIGTERM to this process once: at the start of training batch ``batch`` (a batch
    index, micro-batches counted), or inside the first validation after it started."""

    def __init__(self, batch: int, in_validation: bool) -> None:
        self.batch, self.in_validation, self.sent = batch, in_validation, False
        self.started = False

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if batch_idx == self.batch:
            self.started = True
            if not self.in_validation and not self.sent:
                self.sent = True
                os.kill(os.getpid(), signal.SIGTERM)

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dl=0) -> None:
        if self.in_validation and self.started and not self.sent and not trainer.sanity_checking:
            self.sent = True
            os.kill(os.getpid(), signal.SIGTERM)


def series(run_dir: Path, tag: str) -> dict[int, float]:
    """step -> value (a resumed run's later events win)."""
    return {s.step: s.value for s in read_run(run_dir).scalars.get(tag, [])}


def weights(run_dir: Path) -> dict[str, torch.Tensor]:
    return torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fit_in(tmp_path_factory, "uninterrupted", ARGS) / RUN


#: (signal at the start of batch index, in the validation after it, the step stopped at).
#: Batches 4 and 5 make step 3; the validation after batch 4 runs between them.
CASES = {
    "first batch of a step": (4, False, 3),
    "last batch of a step": (5, False, 3),
    "validation inside a step": (4, True, 3),
}


@pytest.mark.parametrize(("batch", "in_validation", "stopped_at"), CASES.values(), ids=CASES)
def test_a_run_preempted_inside_an_accumulation_resumes_exactly(
    batch, in_validation, stopped_at, uninterrupted, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    original = pretrain.RoformerCLI.instantiate_trainer

    def with_signal(self, **kwargs):
        trainer = original(self, **kwargs)
        trainer.callbacks.append(SignalAtBatch(batch, in_validation))
        return trainer

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pretrain.RoformerCLI, "instantiate_trainer", with_signal)
        assert main(ARGS) == EXIT_PREEMPTED
    saved = torch.load(tmp_path / LAST, weights_only=False)
    assert saved["global_step"] == stopped_at  # the end of the optimiser step, not inside it
    assert main([*ARGS, "--ckpt_path", str(LAST)]) == 0
    resumed = tmp_path / RUN
    for tag in ("val/loss", "train/loss"):
        assert series(resumed, tag) == series(uninterrupted, tag), tag  # bit for bit
    ours, theirs = weights(resumed), weights(uninterrupted)
    assert all(torch.equal(ours[name], theirs[name]) for name in theirs)


class KeepCheckpointAt(Callback):
    """Copies ``last.ckpt`` aside at the start of training batch ``batch``: the file a run
    killed there would leave."""

    def __init__(self, batch: int, to: Path) -> None:
        self.batch, self.to = batch, to

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if batch_idx == self.batch:
            self.to.write_bytes((Path(trainer.log_dir) / "checkpoints" / "last.ckpt").read_bytes())


def test_a_checkpoint_saved_at_a_validation_inside_a_step_is_refused(tmp_path, monkeypatch, capsys):
    """The validation after batch 4 (inside step 3) wrote ``last.ckpt``; killed before
    batch 5, the run leaves that file."""
    monkeypatch.chdir(tmp_path)
    kept = tmp_path / "killed-at-batch-5.ckpt"
    short = overridden(ARGS, ["--trainer.max_steps", "4"])
    original = pretrain.RoformerCLI.instantiate_trainer

    def keeping(self, **kwargs):
        trainer = original(self, **kwargs)
        trainer.callbacks.append(KeepCheckpointAt(5, kept))
        return trainer

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pretrain.RoformerCLI, "instantiate_trainer", keeping)
        assert main(short) == 0
    assert torch.load(kept, weights_only=False)["global_step"] == 2
    line = refused_unchanged(tmp_path, capsys, [*short, "--ckpt_path", str(kept)])
    assert "inside an optimiser step: step 3 had taken 1 of its" in line
    assert "trainer.accumulate_grad_batches=2" in line


def loops(ready: int, last: bool) -> dict:
    progress = {"ready": ready, "started": ready, "processed": ready, "completed": ready}
    batches = {"total": progress, "current": progress, "is_last_batch": last}
    return {"fit_loop": {"epoch_loop.batch_progress": batches}}


#: (batches of the epoch taken, the epoch's last batch, accumulate_grad_batches) -> refused.
BOUNDARIES = {
    "inside a step": (5, False, 2, True),
    "two of three": (8, False, 3, True),
    "end of a step": (6, False, 2, False),
    "epoch's last batch steps alone": (7, True, 2, False),
    "no accumulation": (5, False, 1, False),
    "epoch start": (0, False, 4, False),
}


@pytest.mark.parametrize(
    ("ready", "last", "accumulate", "refused"), BOUNDARIES.values(), ids=BOUNDARIES
)
def test_the_step_boundary_check(ready, last, accumulate, refused) -> None:
    checkpoint = {
        "global_step": 2,
        "loops": loops(ready, last),
        TRAINER_SETTINGS_KEY: {"accumulate_grad_batches": accumulate},
    }
    if refused:
        with pytest.raises(ConfigError, match="inside an optimiser step: step 3 had taken"):
            check_step_boundary(checkpoint, "x.ckpt")
    else:
        check_step_boundary(checkpoint, "x.ckpt")
