"""Fault tolerance end to end: SIGKILL + resume == uninterrupted, SIGTERM/SIGUSR1 save and
exit 75, atomic checkpoint writes, non-finite loss stops (exit 3) or skips, sweeps."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from cli_helpers import CONFIGS, TINY, fit_args, fit_in
from lightning.pytorch import Callback

from roformer_lit.commands import EXIT_DIVERGED, EXIT_PREEMPTED, main
from roformer_lit.data.dataset import EpochSampler, ResumableDataLoader
from roformer_lit.module import MaskedLM
from roformer_lit.results.events import read_run
from roformer_lit.training.checkpoint_io import AtomicCheckpointIO, atomic_torch_save

STEPS = 40
#: 16 batches per epoch (128 blocks / 8): a run of 40 steps crosses two epoch boundaries.
ARGS = fit_args(
    "rope.yaml",
    STEPS,
    "--trainer.val_check_interval",
    "10",
    "--trainer.log_every_n_steps",
    "1",
    "--checkpoint.every_n_train_steps",
    "3",
)
RUN = Path("runs") / "mlm" / "rope-softmax-seed0"
VERSION = "--trainer.logger.init_args.version"
LAST = RUN / "checkpoints" / "last.ckpt"


def ckpt_step(path: Path) -> int:
    return torch.load(path, map_location="cpu", weights_only=True, mmap=True)["global_step"]


def series(run_dir: Path, tag: str) -> dict[int, float]:
    """step -> value (a resumed run's later events win)."""
    values: dict[int, float] = {}
    for scalar in read_run(run_dir).scalars.get(tag, []):
        values[scalar.step] = scalar.value
    return values


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fit_in(tmp_path_factory, "uninterrupted", ARGS) / RUN


def assert_same_run(resumed: Path, reference: Path, after_step: int) -> None:
    ref_val, got_val = series(reference, "val/loss"), series(resumed, "val/loss")
    assert sorted(got_val) == sorted(ref_val)
    for step, value in ref_val.items():
        assert math.isclose(got_val[step], value, abs_tol=1e-5), (step, got_val[step], value)
    ref_train, got_train = series(reference, "train/loss"), series(resumed, "train/loss")
    later = [s for s in ref_train if s >= after_step]
    assert later and all(s in got_train for s in later)
    assert [got_train[s] for s in later] == pytest.approx([ref_train[s] for s in later], abs=1e-6)
    assert ckpt_step(resumed / "checkpoints" / "last.ckpt") == STEPS


def start_fit(work: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "roformer_lit", *ARGS, *extra],
        cwd=work,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_checkpoint(proc: subprocess.Popen, path: Path, step: int, timeout: float = 240) -> int:
    """Poll until ``path`` holds a step >= ``step``; returns that step."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, f"fit ended before step {step}: {proc.stderr.read()[-2000:]}"
        if path.is_file():
            try:
                reached = ckpt_step(path)
            except Exception:  # noqa: BLE001 - an atomic writer never exposes a partial file
                raise AssertionError(f"unreadable {path} while the run was writing") from None
            if reached >= step:
                return reached
        time.sleep(0.02)
    proc.kill()
    raise AssertionError(f"no checkpoint at step {step} after {timeout}s")


# --- 1. exact resume after SIGKILL ------------------------------------------------------


def test_sigkill_mid_epoch_then_resume_matches_uninterrupted(uninterrupted, tmp_path, monkeypatch):
    proc = start_fit(tmp_path)
    killed_at = wait_for_checkpoint(proc, tmp_path / LAST, 18)  # inside the second epoch
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    assert killed_at < STEPS
    assert not list((tmp_path / RUN / "checkpoints").glob("last.ckpt.*"))
    monkeypatch.chdir(tmp_path)
    assert main([*ARGS, "--ckpt_path", str(LAST)]) == 0
    assert_same_run(tmp_path / RUN, uninterrupted, after_step=killed_at)


class Pairs(torch.utils.data.Dataset):
    """Item ``(epoch, i)`` -> i."""

    def __len__(self) -> int:
        return 20

    def __getitem__(self, key):
        return key[1]


def test_resumable_loader_skips_the_batches_already_seen():
    data = Pairs()
    sampler = EpochSampler(len(data), shuffle=True, seed=3)
    full = ResumableDataLoader(data, batch_size=4, sampler=sampler)
    sampler.set_epoch(1)
    reference = [b.tolist() for b in full]
    it = iter(full)
    next(it), next(it)
    state = full.state_dict()
    assert state == {"epoch": 1, "batches": 2}
    fresh = ResumableDataLoader(data, batch_size=4, sampler=EpochSampler(20, shuffle=True, seed=3))
    fresh.load_state_dict(state)
    assert [b.tolist() for b in fresh] == reference[2:]
    assert fresh.state_dict() == {"epoch": 1, "batches": 5}
    # the next pass (a new epoch) starts at its beginning
    fresh.sampler.set_epoch(2)
    assert len([b for b in fresh]) == 5


# --- 2. preemption ------------------------------------------------------------------------


class SignalAt(Callback):
    """Sends ``sig`` to this process during train step ``step`` or inside the validation
    after step ``in_validation_at``."""

    def __init__(self, sig: int, step: int | None = None, in_validation_at: int | None = None):
        self.sig, self.step, self.in_validation_at = sig, step, in_validation_at
        self.sent = False

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if not self.sent and trainer.global_step + 1 == self.step:
            self.sent = True
            os.kill(os.getpid(), self.sig)

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        if (
            not self.sent
            and not trainer.sanity_checking
            and trainer.global_step == (self.in_validation_at)
        ):
            self.sent = True
            os.kill(os.getpid(), self.sig)


@pytest.mark.parametrize(
    ("sig", "where", "stopped_at"),
    [
        (signal.SIGTERM, {"step": 7}, 7),
        # during the training part of a step with a validation: it runs, then the run stops
        (signal.SIGTERM, {"step": 10}, 10),
        # during a validation: the validation finishes first, then the run stops
        (signal.SIGUSR1, {"in_validation_at": 20}, 20),
    ],
    ids=["sigterm-mid-epoch", "sigterm-before-validation", "sigusr1-during-validation"],
)
def test_signal_saves_last_ckpt_exits_75_and_resumes_exactly(
    sig, where, stopped_at, uninterrupted, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    import roformer_lit.commands.pretrain as cli

    original = cli.RoformerCLI.instantiate_trainer

    def with_signal(self, **kwargs):
        trainer = original(self, **kwargs)
        trainer.callbacks.append(SignalAt(sig, **where))
        return trainer

    monkeypatch.setattr(cli.RoformerCLI, "instantiate_trainer", with_signal)
    assert main(ARGS) == EXIT_PREEMPTED
    err = capsys.readouterr().err.strip().splitlines()
    name = signal.Signals(sig).name
    assert err[-1] == (
        f"preempted by {name} at step {stopped_at}: saved {LAST}; continue with --ckpt_path {LAST}"
    )
    assert ckpt_step(tmp_path / LAST) == stopped_at
    if stopped_at % 10 == 0:  # that validation finished and was logged (steps are 0-based)
        assert stopped_at - 1 in series(tmp_path / RUN, "val/loss")
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL  # handlers restored
    monkeypatch.setattr(cli.RoformerCLI, "instantiate_trainer", original)
    assert main([*ARGS, "--ckpt_path", str(LAST)]) == 0
    assert sorted(p.name for p in (tmp_path / RUN / "checkpoints").iterdir()) == [
        "best.ckpt",
        "last.ckpt",
    ]  # a resumed run overwrites its own files, never adds last-v1.ckpt
    assert_same_run(tmp_path / RUN, uninterrupted, after_step=0)


@pytest.mark.parametrize(
    "where", [{"step": STEPS}, {"in_validation_at": STEPS}], ids=["last-step", "last-validation"]
)
def test_a_signal_during_the_last_step_lets_the_run_finish(
    where, uninterrupted, tmp_path, monkeypatch, capsys
):
    """Stopped there, the run would leave a checkpoint at its end and the advice to continue
    it, which a resume refuses (nothing is left to train): it finishes instead, exit 0."""
    monkeypatch.chdir(tmp_path)
    import roformer_lit.commands.pretrain as cli

    original = cli.RoformerCLI.instantiate_trainer
    sender = SignalAt(signal.SIGTERM, **where)

    def with_signal(self, **kwargs):
        trainer = original(self, **kwargs)
        trainer.callbacks.append(sender)
        return trainer

    monkeypatch.setattr(cli.RoformerCLI, "instantiate_trainer", with_signal)
    assert main(ARGS) == 0
    assert sender.sent
    err = capsys.readouterr().err
    assert "preempted" not in err and "Traceback" not in err, err[-2000:]
    assert_same_run(tmp_path / RUN, uninterrupted, after_step=0)


def test_sigterm_to_a_real_process_exits_75_with_one_line(tmp_path):
    proc = start_fit(tmp_path)
    wait_for_checkpoint(proc, tmp_path / LAST, 12)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_PREEMPTED, err[-2000:]
    assert "Traceback" not in err
    assert "Received SIGTERM" not in err  # Lightning's own line: ours is the one below
    line = err.strip().splitlines()[-1]
    assert line.startswith("preempted by SIGTERM at step ") and str(LAST) in line
    step = int(line.split("at step ")[1].split(":")[0])
    assert ckpt_step(tmp_path / LAST) == step
    MaskedLM.load_from_checkpoint(tmp_path / LAST, map_location="cpu")


# --- atomic writes ------------------------------------------------------------------------


def test_a_crash_during_a_save_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "checkpoints" / "last.ckpt"
    io = AtomicCheckpointIO()
    io.save_checkpoint({"global_step": 1, "w": torch.ones(1000)}, path)
    before = path.read_bytes()
    real_save = torch.save

    def crash(obj, f, *args, **kwargs):
        f.write(b"PK\x03\x04 partial")
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(OSError, match="simulated"):
        io.save_checkpoint({"global_step": 2, "w": torch.zeros(1000)}, path)
    monkeypatch.setattr(torch, "save", real_save)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["last.ckpt"]
    assert torch.load(path, weights_only=True)["global_step"] == 1
    # a temporary file of a killed writer (dead pid) is cleaned up by the next save
    stale = path.parent / ".last.ckpt.tmp-999999999"
    stale.write_bytes(b"partial")
    atomic_torch_save({"global_step": 3}, path)
    assert not stale.exists() and torch.load(path, weights_only=True)["global_step"] == 3


def test_the_cli_installs_the_atomic_checkpoint_io(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    import roformer_lit.commands.pretrain as cli

    seen = []
    original = cli.RoformerCLI.instantiate_trainer

    def record(self, **kwargs):
        trainer = original(self, **kwargs)
        seen.append(type(trainer.strategy.checkpoint_io))
        return trainer

    monkeypatch.setattr(cli.RoformerCLI, "instantiate_trainer", record)
    assert main(fit_args("nope.yaml", 1)) == 0
    assert seen == [AtomicCheckpointIO]


# --- 3. non-finite loss -------------------------------------------------------------------


def test_divergence_in_a_real_process_exits_3_naming_the_step(tmp_path):
    # lr 1e6: deterministic NaN loss at step 3 (before any checkpoint) in float32 on CPU
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "roformer_lit",
            *fit_args(
                "rope.yaml", 8, "--model.learning_rate", "1e6", "--trainer.accelerator", "cpu"
            ),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == EXIT_DIVERGED
    assert "Traceback" not in proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("error: training diverged at step 3: train/loss is nan")
    assert not list(tmp_path.rglob("*.ckpt"))


def poison_loss_at(monkeypatch, step: int) -> None:
    """The training logits (so the loss) of optimiser step ``step`` (1-based) are NaN, once."""
    real = MaskedLM.masked_logits
    done = []

    def masked_logits(self, *args, **kwargs):
        logits, targets = real(self, *args, **kwargs)
        if self.training and not done and self.trainer.global_step + 1 == step:
            done.append(step)
            return logits * float("nan"), targets
        return logits, targets

    monkeypatch.setattr(MaskedLM, "masked_logits", masked_logits)


def test_nonfinite_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    poison_loss_at(monkeypatch, 14)
    assert main(ARGS) == EXIT_DIVERGED
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("error: training diverged at step 14: train/loss is nan")
    assert line.endswith(f"last checkpoint: {LAST} (step 12)")
    ckpt = torch.load(tmp_path / LAST, map_location="cpu", weights_only=True)
    assert ckpt["global_step"] == 12
    assert all(torch.isfinite(t).all() for t in ckpt["state_dict"].values())


def test_a_nonfinite_loss_before_any_update_does_not_blame_the_learning_rate(
    tmp_path, monkeypatch, capsys
):
    """At step 1 the weights are those the run started from: lowering the rate changes
    nothing, so the line says that and names what does (the model's scheme or kernel and
    the kit that checks them, or the data); a later step still points at the rate."""
    monkeypatch.chdir(tmp_path)
    poison_loss_at(monkeypatch, 1)
    assert main(ARGS) == EXIT_DIVERGED
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("error: training diverged at step 1: train/loss is nan at the weig")
    assert "the learning rate played no part" in line and "check_scheme" in line, line
    assert "lower model.learning_rate" not in line, line


def test_skip_nonfinite_skips_the_batch_and_counts_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    poison_loss_at(monkeypatch, 5)
    assert (
        main(
            [
                *fit_args("rope.yaml", 8),
                "--model.skip_nonfinite",
                "true",
                "--trainer.log_every_n_steps",
                "1",
            ]
        )
        == 0
    )
    ckpt = torch.load(tmp_path / LAST, map_location="cpu", weights_only=True)
    assert ckpt["global_step"] == 8 and ckpt["skipped_batches"] == 1
    assert all(torch.isfinite(t).all() for t in ckpt["state_dict"].values())
    skipped = series(tmp_path / RUN, "train/skipped_batches")
    assert max(skipped.values()) == 1.0 and min(skipped.values()) == 0.0


# --- 5. sweeps under failure --------------------------------------------------------------


@pytest.mark.slow
def test_sweep_reports_a_nan_crash_and_a_killed_run_and_retries_only_them(
    tmp_path, monkeypatch, capsys
):
    import yaml

    from roformer_lit.sweep import runner

    overrides = dict(zip(TINY[::2], TINY[1::2], strict=True))
    overrides = {k.removeprefix("--"): yaml.safe_load(v) for k, v in overrides.items()}
    overrides.update({"trainer.max_steps": 6, "trainer.val_check_interval": 2})
    sweep = {
        "name": "faults",
        "base": str(CONFIGS / "rope.yaml"),
        "grid": {"model.learning_rate": [1e-3, 1e6, 2e-3]},
        "overrides": overrides,
    }
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep, sort_keys=False))
    monkeypatch.chdir(tmp_path)
    real_launch = runner.launch
    launched: list[list[str]] = []

    def arg(argv, flag):
        return argv[argv.index(flag) + 1]

    def launch(argv, *, cwd, env, stdout, stderr, started=None):
        launched.append(list(argv))
        if len(launched) != 3:
            return real_launch(argv, cwd=cwd, env=env, stdout=stdout, stderr=stderr)
        # the third run is killed once it has a checkpoint
        proc = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), stdout=stdout, stderr=stderr)
        run = Path(cwd) / arg(argv, "--trainer.logger.init_args.save_dir")
        ckpt = run / arg(argv, "--trainer.logger.init_args.name") / arg(argv, VERSION)
        ckpt = ckpt / "checkpoints" / "last.ckpt"
        end = time.monotonic() + 240
        while proc.poll() is None and not ckpt.is_file() and time.monotonic() < end:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        return proc.wait()

    monkeypatch.setattr(runner, "launch", launch)
    assert main(["sweep", "--config", "sweep.yaml"]) == 1
    out = capsys.readouterr().out
    ok, nan, killed = (arg(a, VERSION) for a in launched)
    rows = {line.split()[0]: line for line in out[out.index("version") :].splitlines()[1:] if line}
    assert "finished" in rows[ok]
    assert "failed" in rows[nan] and f" {EXIT_DIVERGED} " in rows[nan]
    assert "training diverged at step" in rows[nan]
    assert "failed" in rows[killed] and " -9 " in rows[killed]
    assert (
        f"2 of 3 runs failed: {nan}, {killed}" in out
        or f"2 of 3 runs failed: {killed}, {nan}" in out
    )

    # the re-run retries only the two failed runs; the killed one resumes and finishes
    launched.clear()
    monkeypatch.setattr(
        runner, "launch", lambda argv, **kw: launched.append(argv) or real_launch(argv, **kw)
    )
    assert main(["sweep", "--config", "sweep.yaml"]) == 1  # the NaN run fails again
    assert sorted(arg(a, VERSION) for a in launched) == sorted([nan, killed])
    status = runner.read_json(tmp_path / "runs" / "faults" / "sweep_status.json")["runs"]
    assert status[ok]["status"] == status[killed]["status"] == "finished"
    assert (status[nan]["status"], status[nan]["exit_code"]) == ("failed", EXIT_DIVERGED)
    assert ckpt_step(tmp_path / "runs" / "faults" / killed / "checkpoints" / "last.ckpt") == 6
