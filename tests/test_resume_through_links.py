"""A checkpoint named through a symlink belongs to the run the file is in.

``fit --ckpt_path link.ckpt`` (a symlink to ``runs/mlm/R/checkpoints/last.ckpt``) resumed
into a new run ``rope-softmax-seed0`` beside ``R``: the run split in two, ``R`` left at
the step it stopped, and ``R``'s lock not taken (a resume through the real path could run
at the same time). :func:`~roformer_lit.commands.pretrain.run_dir_of` now finds the run
where the file is, however it is named."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import fit_args, fit_preempted

from roformer_lit.commands import EXIT_PREEMPTED, main
from roformer_lit.commands.pretrain import run_dir_of

ARGS = fit_args("rope.yaml", 6)
RUN = Path("runs") / "mlm" / "rope-softmax-seed0"
LAST = RUN / "checkpoints" / "last.ckpt"


def _linked_file(work: Path) -> Path:
    (work / "elsewhere").mkdir(exist_ok=True)
    os.symlink(work / LAST, work / "elsewhere" / "link.ckpt")
    return work / "elsewhere" / "link.ckpt"


def _linked_run(work: Path) -> Path:
    os.symlink(work / RUN, work / "alias")
    return work / "alias" / "checkpoints" / "last.ckpt"


#: case -> how the checkpoint is named, given the work directory.
NAMES: dict[str, Callable[[Path], Path]] = {
    "its path": lambda work: LAST,
    "its absolute path": lambda work: work / LAST,
    "a path with ..": lambda work: Path("runs") / ".." / LAST,
    "a symlink to the file": _linked_file,
    "a path through a linked run": _linked_run,
}


def _fake_run(work: Path) -> None:
    (work / RUN / "checkpoints").mkdir(parents=True)
    (work / RUN / "config.yaml").write_text("{}\n")
    (work / LAST).write_bytes(b"")


@pytest.mark.parametrize("name", NAMES.values(), ids=NAMES)
def test_run_dir_of_finds_the_run_the_file_is_in(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _fake_run(tmp_path)
    found = run_dir_of(name(tmp_path))
    assert found is not None and found.resolve() == (tmp_path / RUN).resolve()


def test_a_resume_through_a_symlink_continues_the_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert fit_preempted(ARGS, 3) == EXIT_PREEMPTED
    link = _linked_file(tmp_path)
    assert main([*ARGS, "--ckpt_path", str(link)]) == 0
    assert sorted(p.name for p in (tmp_path / "runs" / "mlm").iterdir() if p.is_dir()) == [RUN.name]
    assert (tmp_path / RUN / "config-resumed-1.yaml").is_file()
