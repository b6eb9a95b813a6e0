"""A run directory this process cannot write (an archived run, a colleague's, a read-only
mount): ``fit`` continuing it is refused in one line before anything is written, a sweep
directory likewise, and ``validate`` still evaluates it, saying in a ``note:`` that the
result is not recorded in the run.

As root every directory is writable, so most tests make :func:`run_dir.writable` (the one
place that asks the OS) say no; one test uses real permissions where the tests do not run
as root.
"""

from __future__ import annotations

import builtins
import errno
import hashlib
import os
from pathlib import Path

import pytest
from cli_helpers import CONFIGS, fit_args, fit_preempted

from roformer_lit.commands import EXIT_PREEMPTED, EXIT_USER_ERROR, main, pretrain
from roformer_lit.errors import ConfigError
from roformer_lit.training import run_dir

pytestmark = pytest.mark.trainer

RUN = Path("runs") / "mlm" / "rope-softmax-seed0"
LAST = RUN / "checkpoints" / "last.ckpt"


def every_file(root: Path) -> dict[str, str]:
    """Every file under ``root``, lock files included -> its content hash."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tiny run preempted at step 4 of 8: a run that ``--ckpt_path`` continues."""
    work = tmp_path_factory.mktemp("read-only")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert fit_preempted(fit_args("rope.yaml", 8), 4) == EXIT_PREEMPTED
    return work


def refusing(*directories: Path):
    """A stand-in for :func:`run_dir.writable` that says no for ``directories``."""
    refused = {d.resolve() for d in directories}
    real = run_dir.writable

    def writable(directory: Path) -> bool:
        return Path(directory).resolve() not in refused and real(directory)

    return writable


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize("unwritable", [RUN, RUN / "checkpoints"], ids=["run", "checkpoints"])
def test_continuing_a_run_it_cannot_write_is_refused_before_anything_is_written(
    work, unwritable, monkeypatch, capsys
):
    monkeypatch.chdir(work)
    before = every_file(work)
    monkeypatch.setattr(run_dir, "writable", refusing(work / unwritable))
    assert main([*fit_args("rope.yaml", 8), "--ckpt_path", str(LAST)]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = error_lines(err)
    assert str((work / unwritable).resolve()) + ":" in line and "not writable" in line
    assert "--trainer.logger.init_args.version" in line  # the way on
    assert every_file(work) == before  # the lock file's pid included


def test_a_sweep_directory_it_cannot_write_is_refused(tmp_path, monkeypatch):
    sweep = tmp_path / "sweeps" / "mine"
    sweep.mkdir(parents=True)
    monkeypatch.setattr(run_dir, "writable", refusing(sweep))
    with pytest.raises(ConfigError, match="cannot write sweep directory .*mine: it is not"):
        run_dir.claim_sweep(sweep)
    assert not run_dir.lock_path(sweep.resolve()).exists()
    run_dir.release_all()


def test_validate_of_a_run_it_cannot_write_prints_its_result_and_says_so(work, monkeypatch, capsys):
    monkeypatch.chdir(work)
    before = every_file(work)

    def no_append(path, mode="r", *args, **kwargs):
        if Path(path).name == pretrain.EVALUATIONS_FILE and "a" in mode:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return builtins.open(path, mode, *args, **kwargs)

    monkeypatch.setattr(pretrain, "open", no_append, raising=False)
    argv = ["validate", "--config", str(CONFIGS / "rope.yaml"), *fit_args("rope.yaml", 8)[3:]]
    assert main([*argv, "--ckpt_path", str(LAST)]) == 0
    captured = capsys.readouterr()
    assert "val/loss" in captured.out  # the result, printed
    notes = [line for line in captured.err.splitlines() if line.startswith("note:")]
    assert any(str(RUN / pretrain.EVALUATIONS_FILE) in n and "not appended" in n for n in notes)
    assert not error_lines(captured.err) and "Traceback" not in captured.err
    assert every_file(work) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through any permission")
def test_real_permissions_refuse_the_continued_run(work, monkeypatch, capsys):
    monkeypatch.chdir(work)
    checkpoints = work / RUN / "checkpoints"
    before = every_file(work)
    checkpoints.chmod(0o555)
    try:
        assert main([*fit_args("rope.yaml", 8), "--ckpt_path", str(LAST)]) == EXIT_USER_ERROR
    finally:
        checkpoints.chmod(0o755)
    (line,) = error_lines(capsys.readouterr().err)
    assert "not writable" in line
    assert every_file(work) == before
