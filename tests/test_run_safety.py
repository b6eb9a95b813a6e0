"""Runs under careless and hostile use: run directories, losing work, files and disks, crafted
checkpoints. Each case asserts the exit code, one ``error:`` line (or the documented
one-line stop message), no traceback, and that nothing existing changed."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import pickle
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from cli_helpers import CONFIGS, fit_args, fit_preempted

from roformer_lit.commands import EXIT_INTERRUPTED, EXIT_PREEMPTED, EXIT_USER_ERROR, main
from roformer_lit.errors import ConfigError
from roformer_lit.safe_input import MAX_YAML_NODES, YAMLBombError, check_yaml_size
from roformer_lit.training import run_dir

RUN = Path("runs") / "mlm" / "rope-softmax-seed0"
LAST = RUN / "checkpoints" / "last.ckpt"
MARKER = "payload_ran"


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` -> its content hash (lock files hold only a pid)."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


def ckpt_step(path: Path) -> int:
    return torch.load(path, map_location="cpu", weights_only=True, mmap=True)["global_step"]


def run_cli(work: Path, *argv: str, timeout: float = 300, **popen) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "roformer_lit", *argv],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=timeout,
        **popen,
    )


def assert_one_error_line(result: subprocess.CompletedProcess, *needles: str) -> str:
    assert result.returncode == EXIT_USER_ERROR, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr[-2000:]
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


class Payload:
    """Unpickling this runs code: a crafted checkpoint."""

    def __reduce__(self):
        return (os.system, (f"touch {MARKER}",))


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with one tiny run preempted at step 4 of 8 (one that a resume continues;
    a finished run is not continued) and a crafted checkpoint."""
    work = tmp_path_factory.mktemp("hostile")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert fit_preempted(fit_args("rope.yaml", 8), 4) == EXIT_PREEMPTED
    crafted = work / "crafted" / "checkpoints"
    crafted.mkdir(parents=True)
    good = torch.load(work / LAST, map_location="cpu", weights_only=True)
    good["hyper_parameters"]["payload"] = Payload()
    with open(crafted / "last.ckpt", "wb") as f:
        torch.save(good, f, pickle_protocol=pickle.HIGHEST_PROTOCOL)
    return work


# --- security: a crafted checkpoint never runs -------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["fit", "--config", str(CONFIGS / "rope.yaml"), "--ckpt_path", "{ckpt}"],
        ["validate", "--config", str(CONFIGS / "rope.yaml"), "--ckpt_path", "{ckpt}"],
        ["export", "--ckpt_path", "{ckpt}", "--out", "exported"],
        ["extrapolate", "{ckpt}", "--lengths", "32"],
    ],
    ids=["fit", "validate", "export", "extrapolate"],
)
def test_a_crafted_checkpoint_is_refused_and_its_payload_never_runs(work, argv):
    ckpt = str(work / "crafted" / "checkpoints" / "last.ckpt")
    before = snapshot(work / "runs")
    result = run_cli(work, *[a.replace("{ckpt}", ckpt) for a in argv])
    assert not (work / MARKER).exists(), "the checkpoint's payload ran"
    assert_one_error_line(result, "crafted")
    assert snapshot(work / "runs") == before
    assert not (work / "exported").exists()


# --- run directories ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("version", "../../escaped"),
        ("version", "a/b"),
        ("version", ".."),
        ("name", "../outside"),
        ("name", "/tmp/abs"),
        ("version", " padded"),
    ],
)
def test_a_run_name_cannot_leave_the_runs_root(work, key, value, capsys, monkeypatch):
    monkeypatch.chdir(work)
    before = sorted(p.name for p in work.iterdir())
    code = main(fit_args("rope.yaml", 2, f"--trainer.logger.init_args.{key}", value))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USER_ERROR
    assert err[-1].startswith("error:") and repr(value) in err[-1]
    assert sorted(p.name for p in work.iterdir()) == before
    assert not (work.parent / "escaped").exists() and not (work.parent / "outside").exists()


def _claim(args: tuple[str, str]) -> str:
    root, stem = args
    version = run_dir.claim_new(root, "mlm", stem)
    time.sleep(0.5)  # hold the lock while the others claim
    return version


def test_runs_started_together_never_share_a_directory(tmp_path):
    with multiprocessing.get_context("spawn").Pool(6) as pool:
        versions = pool.map(_claim, [(str(tmp_path), "rope-softmax-seed0")] * 6)
    assert len(set(versions)) == 6
    assert sorted(p.name for p in (tmp_path / "mlm").iterdir() if p.is_dir()) == sorted(versions)


def test_a_second_writer_on_a_run_is_refused(work):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from roformer_lit.training import run_dir; run_dir.lock(sys.argv[1]); "
            "print('locked', flush=True); time.sleep(120)",
            str(work / RUN),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert run_dir.holder(work / RUN) == holder.pid
        before = snapshot(work / RUN)
        result = run_cli(work, *fit_args("rope.yaml", 8), "--ckpt_path", str(LAST), timeout=120)
        assert_one_error_line(result, "being written by another process", str(holder.pid))
        assert snapshot(work / RUN) == before
    finally:
        holder.kill()
        holder.wait()
    assert run_dir.holder(work / RUN) is None  # the kernel released it with the process


def test_a_failed_start_leaves_no_stub_run_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.txt").write_text("")
    code = main(fit_args("rope.yaml", 2, "--data.train_files", "[empty.txt]"))
    assert code == EXIT_USER_ERROR
    assert "empty" in capsys.readouterr().err
    assert not list(tmp_path.glob("runs/mlm/*"))


def test_a_sweep_directory_left_empty_goes_with_its_lock_file(tmp_path):
    """A sweep takes its directory before it prepares anything (``run_dir.claim_sweep``); a
    failure before any run starts removes the directories it created and the lock file
    beside them, as a failed ``fit`` removes its stub run."""
    run_dir.claim_sweep(tmp_path / "runs" / "tiny")
    assert run_dir.holder(tmp_path / "runs" / "tiny") == os.getpid()
    run_dir.discard_if_unused()
    assert list(tmp_path.iterdir()) == []


def test_a_file_where_the_runs_directory_belongs(tmp_path):
    (tmp_path / "runs").write_text("not a directory\n")
    result = run_cli(tmp_path, *fit_args("rope.yaml", 2))
    assert_one_error_line(result, "runs")
    assert (tmp_path / "runs").read_text() == "not a directory\n"


# --- validate belongs to the run it evaluates ---------------------------------------------


def test_validate_appends_to_the_evaluated_run_and_makes_no_new_one(work, monkeypatch, capsys):
    monkeypatch.chdir(work)
    runs_before = sorted(p.name for p in (work / "runs" / "mlm").iterdir())
    checkpoints_before = snapshot(work / RUN / "checkpoints")
    argv = [
        "validate",
        "--config",
        str(CONFIGS / "rope.yaml"),
        *fit_args("rope.yaml", 4)[3:],
        "--ckpt_path",
        str(LAST),
    ]
    assert main(argv) == 0
    assert sorted(p.name for p in (work / "runs" / "mlm").iterdir()) == runs_before
    assert snapshot(work / RUN / "checkpoints") == checkpoints_before
    records = [
        json.loads(line) for line in (work / RUN / "evaluations.jsonl").read_text().splitlines()
    ]
    record = records[-1]
    assert record["command"] == "validate" and record["step"] == ckpt_step(work / LAST)
    assert record["data"]["max_length"] == 32
    # the recorded loss is the one Lightning printed
    printed = capsys.readouterr().out
    shown = [line for line in printed.splitlines() if "val/loss" in line][-1]
    assert float(shown.split("│")[2]) == pytest.approx(record["metrics"]["val/loss"], rel=1e-6)


# --- losing work ----------------------------------------------------------------------------


def test_last_ckpt_follows_every_validation_even_without_improvement(tmp_path):
    """``checkpoint.mode max`` makes every validation after the first 'not improving', so
    only the refreshed ``last.ckpt`` can follow the run; SIGKILL then loses nothing."""
    args = fit_args(
        "rope.yaml", 400, "--trainer.val_check_interval", "3", "--checkpoint.mode", "max"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "roformer_lit", *args],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    last = tmp_path / LAST
    end = time.monotonic() + 240
    try:
        while time.monotonic() < end:
            assert proc.poll() is None, proc.stderr.read()[-2000:]
            if last.is_file() and ckpt_step(last) >= 9:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the run never reached step 9")
    finally:
        proc.kill()
        proc.wait()
    step = ckpt_step(last)
    assert step >= 9 and step % 3 == 0  # a validation step, after several non-improving ones
    assert ckpt_step(tmp_path / RUN / "checkpoints" / "best.ckpt") == 3


def test_ctrl_c_saves_last_ckpt_and_exits_130_with_one_line(tmp_path):
    # far more steps than can run before the signal: on an idle machine 400 tiny steps
    # finished within the 2 s wait, and the run exited 0 before Ctrl-C arrived
    proc = subprocess.Popen(
        [sys.executable, "-m", "roformer_lit", *fit_args("rope.yaml", 1_000_000)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    events = tmp_path / RUN
    end = time.monotonic() + 240
    while time.monotonic() < end and not list(events.glob("events.out.tfevents.*")):
        assert proc.poll() is None
        time.sleep(0.05)
    time.sleep(2.0)  # well inside training
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_INTERRUPTED, err[-2000:]
    assert "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert line.startswith("interrupted by Ctrl-C at step ") and str(LAST) in line
    assert ckpt_step(tmp_path / LAST) == int(line.split("at step ")[1].split(":")[0])


def test_a_full_disk_keeps_the_previous_checkpoint(work):
    before = snapshot(work / RUN / "checkpoints")

    def tiny_file_limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    result = run_cli(
        work,
        *fit_args("rope.yaml", 8),
        "--ckpt_path",
        str(LAST),
        preexec_fn=tiny_file_limit,
    )
    assert_one_error_line(result, "cannot write checkpoint", "kept")
    assert snapshot(work / RUN / "checkpoints") == before
    assert not list((work / RUN / "checkpoints").glob(".*tmp-*"))


def test_a_killed_sweep_takes_its_fit_down_and_a_second_sweep_is_refused(tmp_path):
    sweep = tmp_path / "sweep.yaml"
    tiny = dict(zip(fit_args("rope.yaml", 2)[3::2], fit_args("rope.yaml", 2)[4::2], strict=True))
    overrides = {key.removeprefix("--"): value for key, value in tiny.items()}
    overrides.update({"trainer.max_steps": 100000, "trainer.val_check_interval": 50})
    sweep.write_text(
        json.dumps(
            {
                "name": "s",
                "base": str(CONFIGS / "rope.yaml"),
                "grid": {"seed_everything": [0]},
                "overrides": overrides,
            }
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "roformer_lit", "sweep", "--config", str(sweep)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    run = tmp_path / "runs" / "s" / "seed0"  # the sweep names runs by what the grid varies
    end = time.monotonic() + 240
    while time.monotonic() < end and run_dir.holder(run) is None:
        assert proc.poll() is None
        time.sleep(0.1)
    fit_pid = run_dir.holder(run)
    assert fit_pid is not None
    second = run_cli(tmp_path, "sweep", "--config", str(sweep), timeout=120)
    assert_one_error_line(second, "sweep", "being written by another process")
    proc.kill()
    proc.wait()
    end = time.monotonic() + 120
    while time.monotonic() < end and run_dir.holder(run) is not None:
        time.sleep(0.1)
    while time.monotonic() < end and _alive(fit_pid):
        time.sleep(0.1)
    assert not _alive(fit_pid), "the fit outlived its killed sweep"
    assert run_dir.holder(run) is None
    assert ckpt_step(run / "checkpoints" / "last.ckpt") >= 1  # it saved on its way out


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for an absent parent to reap it)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "Z" not in state.split()[1]


# --- config files that hang or explode ----------------------------------------------------


def test_a_fifo_config_is_refused_without_hanging(tmp_path):
    os.mkfifo(tmp_path / "config.yaml")
    result = run_cli(tmp_path, "fit", "--config", "config.yaml", timeout=60)
    assert_one_error_line(result, "config.yaml", "not a regular file")


def _alias_bomb(levels: int) -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_is_refused_without_hanging(tmp_path):
    (tmp_path / "bomb.yaml").write_text(_alias_bomb(9))
    result = run_cli(tmp_path, "fit", "--config", "bomb.yaml", timeout=60)
    assert_one_error_line(result, "aliases expand")


def test_the_alias_limit_counts_every_use_of_an_anchor():
    """Oracle: 1 + 9 + ... nodes for k levels of 9-fold aliases, computed independently."""

    def expanded(levels: int) -> int:
        size = 1 + 9  # the innermost list and its 9 strings
        total = size
        for _ in range(1, levels):
            size = 1 + 9 * size
            total += size
        return total + 1 + levels  # the top mapping and its keys

    small = next(k for k in range(1, 12) if expanded(k + 1) > MAX_YAML_NODES)
    check_yaml_size(_alias_bomb(small))  # just under the limit: accepted
    with pytest.raises(YAMLBombError):
        check_yaml_size(_alias_bomb(small + 1))
    with pytest.raises(YAMLBombError):
        check_yaml_size("a: &a [1, *a]\n")


def test_check_name_refuses_every_path_trick():
    for bad in ["", ".", "..", "a/b", "a\\b", "x\x00", " x", "x" * 256]:
        with pytest.raises(ConfigError):
            run_dir.check_name(bad, "version")
    assert run_dir.check_name("rope-softmax-seed0-2", "version") == "rope-softmax-seed0-2"


@pytest.mark.parametrize(
    ("option", "says"),
    [
        ("trainer.logger.init_args.name", "is not a valid run name: it must be one directory name"),
        (
            "trainer.logger.init_args.version",
            "is not a valid run name: it must be one directory name",
        ),
        ("checkpoint.filename", "is not a valid file name: it must be one file name"),
    ],
)
def test_a_bad_name_is_called_what_it_names(tmp_path, monkeypatch, capsys, option, says):
    """``--checkpoint.filename a/b`` names a file, not a run: the one line says so."""
    monkeypatch.chdir(tmp_path)
    code = main(fit_args("rope.yaml", 2, f"--{option}", "a/b"))
    assert code == EXIT_USER_ERROR
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {option}='a/b' {says} (no '/', '..', leading or trailing spaces; at most "
        "255 bytes)"
    )


@pytest.mark.parametrize("inside", [False, True])
def test_a_default_root_dir_that_does_not_place_the_run_is_named(
    tmp_path, monkeypatch, capsys, inside
):
    """With a logger the run goes to ``<save_dir>/<name>/<version>`` whatever
    ``--trainer.default_root_dir`` says: a root elsewhere gets one note saying where the run
    went; the run's own directory (what the SLURM script passes, for Lightning's own
    ``hpc_ckpt`` files) gets none."""
    monkeypatch.chdir(tmp_path)
    root = RUN if inside else tmp_path / "elsewhere"
    code = main(fit_args("rope.yaml", 2, "--trainer.default_root_dir", str(root)))
    assert code == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "default_root_dir" in line]
    if inside:
        assert notes == []
    else:
        assert len(notes) == 1 and notes[0].startswith("note: trainer.default_root_dir=")
        assert str(RUN) in notes[0] and "--trainer.logger.init_args.save_dir" in notes[0]
    assert (tmp_path / LAST).is_file() and not (tmp_path / "elsewhere").exists()


def _dead_pid() -> int:
    """The pid of a process that has exited (a previous holder of a lock)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    return int(done.stdout)


@pytest.mark.parametrize("left_in_file", ["nothing", "a gone holder's pid"])
def test_a_refused_lock_names_a_holder_that_has_not_written_its_pid_yet(tmp_path, left_in_file):
    """A holder writes its pid right after taking the lock; a second process refused in
    between read an empty file ('pid another process') or the last holder's pid. It now
    waits for the holder's pid (a sweep started twice at once met this)."""
    target = tmp_path / "run"
    target.mkdir()
    lock_file = run_dir.lock_path(target.resolve())
    lock_file.write_text("" if left_in_file == "nothing" else f"{_dead_pid()}\n")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(0.5); "
            "os.pwrite(fd, f'{os.getpid():<23}\\n'.encode(), 0); time.sleep(120)",
            str(lock_file),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ConfigError, match=rf"\(pid {holder.pid}\)"):
            run_dir.lock(target)
    finally:
        holder.kill()
        holder.wait()
