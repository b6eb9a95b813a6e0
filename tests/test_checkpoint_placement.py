"""Where a run's checkpoints go is the run's business: no ``--checkpoint.*`` option, logger
setting or resume can write into another run or outside the runs root, and resuming from
an earlier checkpoint never silently drops a run's later steps. Every refusal is one
``error:`` line, exit 2, with every existing file unchanged."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch
from cli_helpers import fit_args

from roformer_lit.commands import EXIT_USER_ERROR, main
from roformer_lit.training.checkpoint_io import atomic_torch_save

RUN = Path("runs") / "mlm" / "rope-softmax-seed0"


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


def step(path: Path) -> int:
    return torch.load(path, map_location="cpu", weights_only=True, mmap=True)["global_step"]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished run whose best.ckpt (step 2, mode max) is older than its last.ckpt, and
    a run without a logger in ``<work>/checkpoints``."""
    work = tmp_path_factory.mktemp("placement")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        args = fit_args("rope.yaml", 6, "--trainer.val_check_interval", "2")
        assert main([*args, "--checkpoint.mode", "max"]) == 0
        assert main([*fit_args("rope.yaml", 2), "--trainer.logger", "false"]) == 0
    assert step(work / RUN / "checkpoints" / "best.ckpt") < step(
        work / RUN / "checkpoints" / "last.ckpt"
    )
    assert list((work / "checkpoints").glob("*.ckpt"))
    return work


OTHER_RUN = str(RUN / "checkpoints")
CASES = {
    "dirpath-into-another-run": ["--checkpoint.dirpath", OTHER_RUN],
    "dirpath-outside-the-root": ["--checkpoint.dirpath", "/tmp/elsewhere"],
    "dirpath-relative-escape": ["--checkpoint.dirpath", "../../outside"],
    "filename-with-a-slash": ["--checkpoint.filename", "../rope-softmax-seed0/checkpoints/last"],
    "filename-dotdot": ["--checkpoint.filename", ".."],
    "no-logger-shared-checkpoints": ["--trainer.logger", "false"],
    "resume-from-best-drops-later-steps": ["--ckpt_path", str(RUN / "checkpoints" / "best.ckpt")],
    "resume-from-best-into-its-run-by-name": [
        "--ckpt_path",
        str(RUN / "checkpoints" / "best.ckpt"),
        "--trainer.logger.init_args.version",
        "rope-softmax-seed0",
    ],
}


@pytest.mark.parametrize("extra", CASES.values(), ids=CASES.keys())
def test_a_checkpoint_setting_cannot_touch_another_runs_files(work, monkeypatch, capsys, extra):
    monkeypatch.chdir(work)
    before = snapshot(work)
    capsys.readouterr()
    assert main([*fit_args("rope.yaml", 4), *extra]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err[-2000:]
    assert snapshot(work) == before
    assert not Path("/tmp/elsewhere").exists()


def test_resuming_from_best_into_a_new_run_is_a_branch_that_keeps_the_original(
    work, monkeypatch, tmp_path
):
    monkeypatch.chdir(work)
    original = snapshot(work / RUN)
    best = RUN / "checkpoints" / "best.ckpt"
    args = [*fit_args("rope.yaml", 4), "--ckpt_path", str(best)]
    assert main([*args, "--trainer.logger.init_args.version", "branch"]) == 0
    assert snapshot(work / RUN) == original
    assert step(work / "runs" / "mlm" / "branch" / "checkpoints" / "last.ckpt") == 4


def test_a_best_checkpoint_of_the_final_step_is_stored_once(tmp_path, monkeypatch):
    """The last validation was the best: best.ckpt is a hard link to last.ckpt (one copy of
    model and optimiser on disk); a later write of either name leaves the other intact."""
    monkeypatch.chdir(tmp_path)
    assert main(fit_args("rope.yaml", 4, "--trainer.val_check_interval", "4")) == 0
    checkpoints = tmp_path / RUN / "checkpoints"
    best, last = checkpoints / "best.ckpt", checkpoints / "last.ckpt"
    assert best.stat().st_ino == last.stat().st_ino and step(best) == 4
    # every checkpoint write is a rename: writing last.ckpt again leaves best.ckpt intact
    before = hashlib.sha256(best.read_bytes()).hexdigest()
    atomic_torch_save({"global_step": 99}, last)
    assert step(last) == 99 and step(best) == 4
    assert hashlib.sha256(best.read_bytes()).hexdigest() == before
