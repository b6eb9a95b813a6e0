"""A resumed run keeps its length: ``fit --ckpt_path`` takes ``trainer.max_steps`` from the
checkpoint (a ``--config`` file cannot extend or shorten a run), refuses in one line a run
with nothing left to train, and takes a typed ``--trainer.max_steps`` only where the result
is the run planned so from the start (:mod:`roformer_lit.commands.checkpoint_settings`).

Every refusal is checked for its exit code, one ``error:`` line, no traceback, and a
``runs/`` directory whose listing and every file's bytes are unchanged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from cli_helpers import CONFIGS, TINY, fit_args, fit_preempted, refused_unchanged

from roformer_lit.commands import EXIT_PREEMPTED, main

EXPERIMENT = Path("runs") / "mlm"
#: A finished linear run of 4 steps; runs of 8 steps preempted at step 4 (constant, linear).
FINISHED, CONSTANT, LINEAR = "finished", "constant", "linear"
STOPPED_AT, PLANNED, LONGER = 4, 8, 12


def version(name: str) -> list[str]:
    return ["--trainer.logger.init_args.version", name]


def last(name: str) -> Path:
    return EXPERIMENT / name / "checkpoints" / "last.ckpt"


def constant(steps: int, *extra: str) -> list[str]:
    """A tiny run of the constant schedule, validated every 4 steps whatever its length."""
    every = ["--trainer.val_check_interval", "4"]
    return fit_args("rope.yaml", steps, "--model.lr_schedule", "constant", *every, *extra)


def step_of(path: Path) -> int:
    return torch.load(path, map_location="cpu", weights_only=True, mmap=True)["global_step"]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run, and two runs preempted before their end (constant and linear)."""
    work = tmp_path_factory.mktemp("resume-length")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert main(fit_args("rope.yaml", STOPPED_AT, *version(FINISHED))) == 0
        assert fit_preempted(constant(PLANNED, *version(CONSTANT)), STOPPED_AT) == EXIT_PREEMPTED
        assert fit_preempted(fit_args("rope.yaml", PLANNED, *version(LINEAR)), STOPPED_AT) == (
            EXIT_PREEMPTED
        )
    for name in (FINISHED, CONSTANT, LINEAR):
        assert step_of(work / last(name)) == STOPPED_AT
    return work


def test_a_checkpoint_records_its_runs_length(work):
    saved = torch.load(work / last(LINEAR), map_location="cpu", weights_only=True, mmap=True)
    assert saved["trainer_settings"]["max_steps"] == PLANNED
    assert saved["schedule_steps"] == PLANNED


ROPE = ["fit", "--config", str(CONFIGS / "rope.yaml")]
#: How a finished run (4 steps of 4) was asked to go on -> what its one line names.
FINISHED_ASKED = {
    "its own settings": (
        fit_args("rope.yaml", STOPPED_AT),
        ["is at step 4", "trainer.max_steps is 4", "has finished"],
    ),
    "the shipped config alone": (ROPE, ["is at step 4", "trainer.max_steps is 4"]),
    "a config file with more steps": (
        [*ROPE, "--config", "longer.yaml", *TINY],
        ["is at step 4", "trainer.max_steps is 4", "has finished"],
    ),
    "a typed larger max_steps": (
        fit_args("rope.yaml", LONGER),
        ["max_steps=4", "trainer.max_steps=12", "has finished"],
    ),
}


@pytest.mark.parametrize("case", sorted(FINISHED_ASKED))
def test_a_finished_run_is_refused_before_anything_is_written(work, monkeypatch, capsys, case):
    monkeypatch.chdir(work)
    (work / "longer.yaml").write_text(f"trainer:\n  max_steps: {LONGER}\n", encoding="utf-8")
    argv, named = FINISHED_ASKED[case]
    line = refused_unchanged(work, capsys, [*argv, "--ckpt_path", str(last(FINISHED))])
    assert str(last(FINISHED)) in line and "train a new run" in line, line
    assert all(words in line for words in named), line


def test_a_typed_longer_run_is_refused_where_its_schedule_has_decayed(work, monkeypatch, capsys):
    """Linear decay over 8 steps: at step 4 the rates already taken depend on the length."""
    monkeypatch.chdir(work)
    line = refused_unchanged(
        work, capsys, [*fit_args("rope.yaml", LONGER), "--ckpt_path", str(last(LINEAR))]
    )
    assert "max_steps=8" in line and "trainer.max_steps=12" in line and "'linear'" in line, line


def test_a_config_file_does_not_extend_a_run(work, monkeypatch, capsys):
    """A copy of the linear run stopped at 4 of 8 steps, resumed with a --config file of 12:
    it ends at its own 8, and the note says the file's value was replaced."""
    monkeypatch.chdir(work)
    (work / "longer.yaml").write_text(f"trainer:\n  max_steps: {LONGER}\n", encoding="utf-8")
    shutil.copytree(work / EXPERIMENT / LINEAR, work / EXPERIMENT / "linear-copy")
    ckpt = last("linear-copy")
    capsys.readouterr()
    argv = [*ROPE, "--config", "longer.yaml", *TINY, "--ckpt_path", str(ckpt)]
    assert main(argv) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert any(f"trainer.max_steps={LONGER} -> {PLANNED}" in note for note in notes), notes
    assert step_of(work / ckpt) == PLANNED


def test_a_constant_run_stopped_before_its_end_extends_exactly(work, monkeypatch, capsys, tmp_path):
    """Preempted at step 4 of 8 and resumed with a typed 12: one note, and the weights of a
    run planned for 12 steps from the start, bit for bit."""
    monkeypatch.chdir(tmp_path)
    assert main(constant(LONGER)) == 0
    (straight,) = tmp_path.glob("runs/mlm/*/checkpoints/last.ckpt")
    monkeypatch.chdir(work)
    capsys.readouterr()
    ckpt = last(CONSTANT)
    assert main([*constant(LONGER), "--ckpt_path", str(ckpt)]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert notes == [
        f"note: resuming with trainer.max_steps={LONGER}, the run trained at {PLANNED}"
    ]
    resumed = torch.load(work / ckpt, map_location="cpu", weights_only=True)
    reference = torch.load(straight, map_location="cpu", weights_only=True)
    assert resumed["global_step"] == reference["global_step"] == LONGER
    assert resumed["state_dict"].keys() == reference["state_dict"].keys()
    for name, tensor in reference["state_dict"].items():
        assert torch.equal(resumed["state_dict"][name], tensor), name
    # finished now, at 12 steps of 12: a further resume is refused in one line
    line = refused_unchanged(work, capsys, [*constant(LONGER), "--ckpt_path", str(ckpt)])
    assert f"is at step {LONGER}" in line and f"trainer.max_steps is {LONGER}" in line, line
