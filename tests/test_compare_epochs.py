"""``compare`` tells a finished run from an unfinished one for runs limited by epochs too:
real runs of two epochs (one finished, one preempted mid-epoch) and a run whose one epoch
ends before its ``max_steps``. Their settings do not say how many steps an epoch has; the
step a run ends at is what its logs record when training starts."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from cli_helpers import epochs_args, fit_preempted

from roformer_lit.commands import main

#: The optimiser step during which the mid-epoch run is preempted (of 2 epochs of 2 steps).
PREEMPTED_AT = 3


def _fit(*extra: str) -> None:
    assert main(epochs_args(*extra)) == 0


def _version(name: str, seed: int) -> list[str]:
    return ["--trainer.logger.init_args.version", name, "--seed_everything", str(seed)]


def _global_step(run: Path) -> int:
    """The optimiser steps the run's ``last.ckpt`` has taken (the oracle of its length)."""
    checkpoint = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)
    return int(checkpoint["global_step"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """``runs/`` of ``runs/two-epochs/`` (seed 0 finished its two epochs, seed 1 preempted
    during step :data:`PREEMPTED_AT`, mid-epoch) and ``runs/epoch-first/`` (one epoch, which
    ends long before its ``max_steps`` 100)."""
    work = tmp_path_factory.mktemp("epochs")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        two = ["--trainer.max_epochs", "2", "--trainer.logger.init_args.name", "two-epochs"]
        _fit(*two, *_version("done-seed0", 0))
        argv = epochs_args(*two, *_version("killed-seed1", 1))
        assert fit_preempted(argv, PREEMPTED_AT) == 75
        first = ["--trainer.max_steps", "100", "--trainer.logger.init_args.name", "epoch-first"]
        _fit(*first, *_version("ended-seed0", 0))
    return work / "runs"


def _rows(capsys: pytest.CaptureFixture[str], logdir: Path) -> dict[str, list[str]]:
    """``compare logdir``'s markdown rows by variant."""
    capsys.readouterr()
    assert main(["compare", str(logdir)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows[cells[0]] = cells
    return rows


def test_a_run_of_epochs_preempted_mid_epoch_is_unfinished(runs, capsys):
    """It was averaged with the finished seed as a second seed (its settings, max_steps -1,
    gave no length to compare against), its loss of three steps in the mean of four."""
    done = _global_step(runs / "two-epochs" / "done-seed0")
    stopped = _global_step(runs / "two-epochs" / "killed-seed1")
    assert stopped < done  # the oracle itself: the preempted run stopped before the end
    (cells,) = _rows(capsys, runs / "two-epochs").values()
    assert cells[1] == "1 (0) + 1 unfinished"
    note = f"seed 1: unfinished: last validated at step {stopped} of {done}"
    assert cells[-1] == f"{note}; left out of the means"


def test_a_run_whose_epochs_end_before_its_max_steps_is_finished(runs, capsys):
    """It was reported unfinished for ever ('last validated at step 2 of 100'), its
    max_steps never reached, so it was in no mean and never a selection's candidate."""
    (cells,) = _rows(capsys, runs / "epoch-first").values()
    assert cells[1] == "1 (0)" and "unfinished" not in " ".join(cells)
    ended = _global_step(runs / "epoch-first" / "ended-seed0")
    assert 0 < ended < 100 and cells[6] == str(ended)  # the steps column: the epoch's
