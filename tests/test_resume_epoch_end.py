"""A checkpoint of the last epoch of a run limited by ``max_epochs``, resumed from the command
line: one saved inside the epoch finishes it; one saved after the epoch's last batch (the
validation that follows it, before the loop closes the epoch, so its ``epoch`` is the one
before) has nothing left to train and is refused in one line, as the run's ``last.ckpt``
at its end is (:func:`~roformer_lit.training.lightning_compat.epochs_trained`).

The run: one epoch of two steps without a step limit, validating after each, keeping every
checkpoint (``at-1.ckpt`` inside the epoch, ``at-2.ckpt`` after its last batch); its
``mode: max`` makes ``at-1`` the best, so ``at-2`` is not replaced by a link to
``last.ckpt`` at the end (``LastCheckpointAtEnd`` shares a best of the final step)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from cli_helpers import epochs_args, refused_unchanged, tree_state

from roformer_lit.commands import main
from roformer_lit.training import lightning_compat as compat
from roformer_lit.training.checkpoint_io import at_its_end

RUN = Path("runs") / "mlm" / "one-epoch"
CHECKPOINTS = RUN / "checkpoints"
INSIDE, AFTER, LAST = (
    CHECKPOINTS / "at-1.ckpt",
    CHECKPOINTS / "at-2.ckpt",
    CHECKPOINTS / "last.ckpt",
)


def epoch_args(*extra: str) -> list[str]:
    """The run's command: one epoch of two steps, every checkpoint kept as ``at-<step>``."""
    keep_every = ["--checkpoint.save_top_k", "-1", "--checkpoint.filename", "at-{step}"]
    return epochs_args(*keep_every, "--checkpoint.mode", "max", *extra)


def version(name: str) -> list[str]:
    return ["--trainer.logger.init_args.version", name]


def load(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True, mmap=True)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("resume-epoch-end")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert main(epoch_args(*version(RUN.name))) == 0
    return work


def test_the_checkpoints_record_where_in_the_last_epoch_they_were_saved(work):
    """What Lightning records: the save after the last batch has the epoch before and the
    loop's last batch done, the one inside the epoch not; both count as trained only the
    epochs whose batches were all trained."""
    records = {path.name: load(work / path) for path in (INSIDE, AFTER, LAST)}
    loops = {name: ckpt["loops"]["fit_loop"] for name, ckpt in records.items()}
    assert [records[p.name]["global_step"] for p in (INSIDE, AFTER, LAST)] == [1, 2, 2]
    assert [records[p.name]["epoch"] for p in (INSIDE, AFTER, LAST)] == [0, 0, 1]
    batches = {name: loop["epoch_loop.batch_progress"] for name, loop in loops.items()}
    assert batches[INSIDE.name]["is_last_batch"] is False
    assert batches[AFTER.name]["is_last_batch"] is True
    counted = [compat.epochs_trained(records[p.name]) for p in (INSIDE, AFTER, LAST)]
    assert counted == [0, 1, 1]


@pytest.mark.parametrize("into", ["its own run", "a new run"])
def test_a_checkpoint_after_the_last_epochs_last_batch_is_refused(work, monkeypatch, capsys, into):
    monkeypatch.chdir(work)
    extra = version("branch") if into == "a new run" else []
    line = refused_unchanged(work, capsys, [*epoch_args(*extra), "--ckpt_path", str(AFTER)])
    assert str(AFTER) in line, line
    assert "is at epoch 1 (step 2)" in line and "trainer.max_epochs is 1" in line, line
    assert "nothing is left to train" in line, line


def test_a_sweep_counts_it_as_at_its_end(work):
    assert at_its_end(work / AFTER) and at_its_end(work / LAST)
    assert not at_its_end(work / INSIDE)


def test_a_checkpoint_inside_the_last_epoch_finishes_it(work, monkeypatch, capsys):
    """Resumed into a new run (its own run's ``last.ckpt`` is later), it trains the epoch's
    second step and ends where the run ended; the run it came from is untouched."""
    monkeypatch.chdir(work)
    before = tree_state(work / RUN)
    capsys.readouterr()
    code = main([*epoch_args(*version("finished")), "--ckpt_path", str(INSIDE)])
    assert code == 0, capsys.readouterr().err[-2000:]
    finished = load(work / RUN.parent / "finished" / "checkpoints" / "last.ckpt")
    assert (finished["global_step"], finished["epoch"]) == (2, 1)
    assert compat.epochs_trained(finished) == 1
    assert tree_state(work / RUN) == before
