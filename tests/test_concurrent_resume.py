"""Two processes resuming one run at once (two SLURM array tasks given one ``--ckpt_path``, a
job started twice): real ``fit`` processes on a run stopped at step 4 of 8. The second is
refused in one ``error:`` line and changes nothing -- while the first holds the run's lock,
and when the first ended between the second's reading the checkpoint and its locking
(:mod:`roformer_lit.training.resume_guard`) -- and the first ends as it would alone."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from cli_helpers import fit_args, fit_preempted, tree_state

from roformer_lit.commands import EXIT_PREEMPTED, EXIT_USER_ERROR, main
from roformer_lit.training import run_dir

RUN = Path("runs") / "mlm" / "rope-softmax-seed0"
LAST = RUN / "checkpoints" / "last.ckpt"
#: The command both processes run: the run's own, resumed from its last checkpoint.
RESUME = [*fit_args("rope.yaml", 8), "--ckpt_path", str(LAST)]
#: A real ``fit`` that stops once it holds the run's lock, until a line on its stdin.
PAUSED_AT_THE_LOCK = """
import sys
from roformer_lit.commands import main
from roformer_lit.training import run_dir
lock = run_dir.lock
def lock_and_wait(run, what="run"):
    lock(run, what)
    print("locked", flush=True)
    sys.stdin.readline()
run_dir.lock = lock_and_wait
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of 8 steps preempted at step 4 (a run a resume continues)."""
    work = tmp_path_factory.mktemp("stopped")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert fit_preempted(fit_args("rope.yaml", 8), 4) == EXIT_PREEMPTED
    return work


@pytest.fixture
def work(stopped: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the stopped run for one test, the working directory."""
    shutil.copytree(stopped / "runs", tmp_path / "runs")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def step(path: Path) -> int:
    return torch.load(path, map_location="cpu", weights_only=True, mmap=True)["global_step"]


def resume(work: Path, *script: str, **popen) -> subprocess.Popen:
    """``fit`` resuming the run in another process (``script``: ``-c <code>``, else the CLI)."""
    program = list(script) or ["-m", "roformer_lit"]
    return subprocess.Popen([sys.executable, *program, *RESUME], cwd=work, text=True, **popen)


def run_files(work: Path) -> dict[str, str]:
    """:func:`tree_state` of ``runs/`` but for the lock files, which hold their last holder's
    pid and no data."""
    return {k: v for k, v in tree_state(work / "runs").items() if not k.endswith(".lock")}


def one_error_line(err: str) -> str:
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err[-2000:]
    return errors[0]


def test_a_second_resume_while_the_first_runs_is_refused_and_changes_nothing(work):
    first = resume(
        work,
        "-c",
        PAUSED_AT_THE_LOCK,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        while (line := first.stdout.readline()) and line.strip() != "locked":
            pass
        assert line.strip() == "locked" and run_dir.holder(RUN) == first.pid
        before = tree_state(work / "runs")  # the lock file too: it names the first
        second = resume(work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, err = second.communicate(timeout=300)
        assert second.returncode == EXIT_USER_ERROR, err[-2000:]
        line = one_error_line(err)
        assert "being written by another process" in line and str(first.pid) in line, line
        assert tree_state(work / "runs") == before
        first.stdin.write("\n")
        first.stdin.close()
        assert first.wait(timeout=300) == 0
    finally:
        first.kill()
        first.wait()
    assert step(work / LAST) == 8


def test_a_resume_whose_run_was_finished_meanwhile_is_refused_and_changes_nothing(
    work, monkeypatch, capsys
):
    """The first ends between the second's reading the checkpoint (step 4, settings, steps
    left) and its taking the lock: the second holds a lock on a run it never checked."""
    lock, after_first = run_dir.lock, {}

    def first_runs_meanwhile(run, what="run"):
        first = resume(work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert first.wait(timeout=300) == 0
        after_first.update(run_files(work))
        lock(run, what)

    monkeypatch.setattr(run_dir, "lock", first_runs_meanwhile)
    capsys.readouterr()
    assert main(RESUME) == EXIT_USER_ERROR
    line = one_error_line(capsys.readouterr().err)
    assert str(LAST) in line and "replaced after this command read it" in line, line
    assert after_first and run_files(work) == after_first
    assert step(work / LAST) == 8
    assert run_dir.holder(RUN) is None
