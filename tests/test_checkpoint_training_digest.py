"""A checkpoint whose training settings were edited by hand is refused on resume in one
line, the run left as it was.

``torch.load``, change a training setting in ``hyper_parameters`` or the
``trainer_settings`` record, ``torch.save``: the architecture is sealed by its digest, the
training settings were not, and ``fit --ckpt_path`` resumed with exit 0. An edited
``learning_rate`` (1e-3 -> 0.5) was written to ``config-resumed-1.yaml`` while the
optimiser's restored state kept training at 1e-3; an edited ``warmup_steps``,
``min_lr_ratio`` or ``lr_schedule`` rebuilt the schedule from the edited value, another run
than the one the checkpoint holds. Every checkpoint now holds the digest of its training
settings (:mod:`roformer_lit.training.settings_digest`), and the one reader refuses a
mismatch. A checkpoint written before the digest resumes as before.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from cli_helpers import fit_args, fit_preempted, refused_unchanged

from roformer_lit.commands import EXIT_PREEMPTED, main
from roformer_lit.training.settings_digest import SETTINGS_DIGEST_KEY

ARGS = fit_args("rope.yaml", 6)
LAST = Path("runs") / "mlm" / "rope-softmax-seed0" / "checkpoints" / "last.ckpt"


def _hp(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda checkpoint: checkpoint["hyper_parameters"].__setitem__(key, value)


def _trainer(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda checkpoint: checkpoint["trainer_settings"].__setitem__(key, value)


#: case -> an edit of a training setting (the run's: rope.yaml with fit_args' TINY).
EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "learning_rate": _hp("learning_rate", 0.5),
    "warmup_steps": _hp("warmup_steps", 50),
    "min_lr_ratio": _hp("min_lr_ratio", 0.9),
    "lr_schedule": _hp("lr_schedule", "constant"),
    "weight_decay": _hp("weight_decay", 0.5),
    "a setting deleted": lambda checkpoint: checkpoint["hyper_parameters"].pop("warmup_steps"),
    "trainer accumulate_grad_batches": _trainer("accumulate_grad_batches", 2),
    "trainer gradient_clip_val": _trainer("gradient_clip_val", 0.01),
    "schedule_steps": lambda checkpoint: checkpoint.__setitem__("schedule_steps", 600),
}


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run preempted at step 3 of 6: its ``last.ckpt`` is one a resume continues."""
    work = tmp_path_factory.mktemp("stopped")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert fit_preempted(ARGS, 3) == EXIT_PREEMPTED
    return work


def _copy(stopped: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    work = tmp_path / "work"
    shutil.copytree(stopped, work)
    checkpoint = torch.load(work / LAST, weights_only=True)
    edit(checkpoint)
    torch.save(checkpoint, work / LAST)
    return work


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS)
def test_an_edited_training_setting_is_refused_on_resume(
    stopped, tmp_path, monkeypatch, capsys, edit
):
    work = _copy(stopped, tmp_path, edit)
    monkeypatch.chdir(work)
    line = refused_unchanged(work, capsys, [*ARGS, "--ckpt_path", str(LAST)])
    assert line.startswith(f"error: checkpoint {LAST} is damaged: its training settings")


def test_a_checkpoint_from_before_the_digest_resumes(stopped, tmp_path, monkeypatch):
    work = _copy(stopped, tmp_path, lambda checkpoint: checkpoint.pop(SETTINGS_DIGEST_KEY, None))
    monkeypatch.chdir(work)
    assert main([*ARGS, "--ckpt_path", str(LAST)]) == 0
