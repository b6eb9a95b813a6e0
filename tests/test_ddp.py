"""DDP on two CPU processes (gloo), end to end through the CLI.

Exact resume must hold per rank: a run SIGKILLed mid-epoch, or preempted (every rank sent
SIGTERM), and resumed logs the same losses as one that was never interrupted, which needs
rank 1's dropout generator back too (its gradients reach rank 0 through the all-reduce). A
non-finite loss on one rank only must stop every rank (exit 3), not leave the others
waiting in the all-reduce. How the run ended is one line, not one per rank.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_fault_tolerance import (
    ARGS,
    LAST,
    RUN,
    STEPS,
    assert_same_run,
    ckpt_step,
    wait_for_checkpoint,
)

from roformer_lit.commands import EXIT_DIVERGED, EXIT_PREEMPTED

DDP = ["--trainer.accelerator", "cpu", "--trainer.devices", "2", "--trainer.strategy", "ddp"]
TIMEOUT = 240

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity"), reason="needs Linux process control"
)


def _env() -> dict[str, str]:
    # one thread per rank: two ranks share the machine's cores
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def start(work: Path, *extra: str, script: Path | None = None) -> subprocess.Popen:
    program = [str(script)] if script else ["-m", "roformer_lit"]
    return subprocess.Popen(
        [sys.executable, *program, *ARGS, *DDP, *extra],
        cwd=work,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # rank 1 is rank 0's child: kill the whole group
    )


def finish(proc: subprocess.Popen) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError("the DDP run hung") from None
    return proc.returncode, err


def write_script(directory: Path, name: str, patch: str) -> Path:
    """A ``python -m roformer_lit`` stand-in that applies ``patch`` to MaskedLM first;
    Lightning's launcher re-runs it for rank 1, so the patch holds on every rank."""
    script = directory / name
    header = "import sys\nfrom roformer_lit.commands import main\nfrom roformer_lit.module import MaskedLM\n"
    footer = "\nsys.exit(main(sys.argv[1:]))\n"
    script.write_text(header + textwrap.dedent(patch) + footer)
    return script


#: Seeding every rank alike (Lightning's default) gives both ranks the same generator
#: states, which would hide a resume that handed rank 0's states to rank 1.
PER_RANK_SEEDS = """
    import torch

    def on_train_start(self):
        torch.manual_seed(1000 + self.global_rank)

    MaskedLM.on_train_start = on_train_start
"""


@pytest.fixture(scope="module")
def per_rank_seeds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_script(tmp_path_factory.mktemp("scripts"), "per_rank_seeds.py", PER_RANK_SEEDS)


@pytest.fixture(scope="module")
def uninterrupted_ddp(tmp_path_factory: pytest.TempPathFactory, per_rank_seeds: Path) -> Path:
    work = tmp_path_factory.mktemp("ddp-uninterrupted")
    code, err = finish(start(work, script=per_rank_seeds))
    assert code == 0, err[-3000:]
    return work / RUN


def test_ddp_sigkill_then_resume_matches_uninterrupted(uninterrupted_ddp, per_rank_seeds, tmp_path):
    proc = start(tmp_path, script=per_rank_seeds)
    killed_at = wait_for_checkpoint(proc, tmp_path / LAST, 18, timeout=TIMEOUT)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert killed_at < ckpt_step(uninterrupted_ddp / "checkpoints" / "last.ckpt")
    code, err = finish(start(tmp_path, "--ckpt_path", str(LAST), script=per_rank_seeds))
    assert code == 0, err[-3000:]
    assert_same_run(tmp_path / RUN, uninterrupted_ddp, after_step=killed_at)


#: Per-rank seeds, and a preemption of the whole job (SIGTERM to every rank, as a cluster
#: sends it) during step 21 of the first run; the resumed run (``--ckpt_path``) is left be.
PREEMPTED_ONCE = (
    PER_RANK_SEEDS
    + """
    import os
    import signal

    started = MaskedLM.on_train_batch_start

    def on_train_batch_start(self, batch, batch_idx):
        first_run = "--ckpt_path" not in sys.argv
        if first_run and self.global_rank == 0 and self.trainer.global_step == 20:
            os.killpg(os.getpgid(0), signal.SIGTERM)
        return started(self, batch, batch_idx)

    MaskedLM.on_train_batch_start = on_train_batch_start
"""
)


@pytest.mark.slow  # two more two-process runs (each starts two interpreters): over a minute
def test_ddp_preempted_then_resumed_matches_uninterrupted(uninterrupted_ddp, tmp_path):
    """Every rank takes the SIGTERM: the run saves ``last.ckpt`` after the step, says so in
    one line (not one per rank) and exits 75; resumed, it is the uninterrupted run."""
    script = write_script(tmp_path, "preempted_once.py", PREEMPTED_ONCE)
    work = tmp_path / "work"
    work.mkdir()
    code, err = finish(start(work, script=script))
    assert code == EXIT_PREEMPTED, err[-3000:]
    reports = [line for line in err.splitlines() if line.startswith("preempted by SIGTERM")]
    assert len(reports) == 1 and "Traceback" not in err, err[-3000:]
    stopped_at = ckpt_step(work / LAST)
    assert f"at step {stopped_at}: saved {LAST}" in reports[0], reports
    assert 20 < stopped_at < STEPS
    code, err = finish(start(work, "--ckpt_path", str(LAST), script=script))
    assert code == 0, err[-3000:]
    assert_same_run(work / RUN, uninterrupted_ddp, after_step=stopped_at)


def test_a_nan_loss_on_one_rank_stops_every_rank(tmp_path):
    script = write_script(
        tmp_path,
        "nan_on_rank_1.py",
        """
        real = MaskedLM.masked_logits

        def masked_logits(self, *args, **kwargs):
            logits, targets = real(self, *args, **kwargs)
            if self.training and self.global_rank == 1 and self.trainer.global_step == 4:
                return logits * float("nan"), targets
            return logits, targets

        MaskedLM.masked_logits = masked_logits
        """,
    )
    code, err = finish(start(tmp_path, script=script))
    assert code == EXIT_DIVERGED, err[-3000:]
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, "\n".join(errors)  # one line for the run, not one per rank
    assert errors[0].startswith("error: training diverged at step 5: train/loss is nan on rank 1")
