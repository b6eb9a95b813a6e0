"""``python -m roformer_lit sweep``: grid expansion, validation, real tiny fits as subprocesses,
skip/resume/retry, dry runs, GPU slots and the SLURM job array."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from cli_helpers import CONFIGS, fit_preempted, write_fake_run_config

from roformer_lit import POSITION_SCHEMES
from roformer_lit.commands import EXIT_PREEMPTED, main
from roformer_lit.sweep import runner, slurm
from roformer_lit.sweep.spec import expand, version_names

VERSION = "--trainer.logger.init_args.version"

#: The TINY settings as sweep overrides: every run is a few-second CPU fit.
TINY_OVERRIDES = {
    "model.hidden_size": 32,
    "model.num_layers": 1,
    "model.num_heads": 2,
    "model.intermediate_size": 64,
    "model.warmup_steps": 2,
    "data.max_length": 32,
    "data.batch_size": 8,
    "data.max_train_blocks": 64,
    "data.max_val_blocks": 8,
    "trainer.enable_progress_bar": False,
    "trainer.enable_model_summary": False,
    "trainer.max_steps": 2,
    "trainer.val_check_interval": 2,
}
GRID4 = {"model.position": ["nope", "rope"], "model.attention": ["softmax", "linear"]}
NAMES4 = ["nope-softmax", "nope-linear", "rope-softmax", "rope-linear"]


def write_sweep(path: Path, grid=None, name: str = "tiny", base=None, **overrides) -> Path:
    tiny = dict(TINY_OVERRIDES)
    if base is not None:  # a position task's config: no corpus setting
        tiny.pop("data.max_train_blocks")
    data = {
        "name": name,
        "base": str(base or CONFIGS / "rope.yaml"),
        "grid": grid or GRID4,
        "overrides": {**tiny, **overrides},
    }
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def arg(argv, flag: str) -> str:
    return argv[argv.index(flag) + 1]


class Launches:
    """Stands in for ``runner.launch``: records every argv; runs the real ``fit`` when
    ``real``, else fakes one (writes ``last.ckpt``) and returns ``code``."""

    def __init__(self, real: bool = False, code: int = 0) -> None:
        self.real, self.code, self.argv, self.env = real, code, [], []
        self.real_launch = runner.launch

    def __call__(self, argv, *, cwd, env, stdout, stderr, started=None):
        self.argv.append(list(argv))
        self.env.append(dict(env))
        if self.real:
            return self.real_launch(
                argv, cwd=cwd, env=env, stdout=stdout, stderr=stderr, started=started
            )
        run = Path(cwd) / arg(argv, "--trainer.logger.init_args.save_dir")
        run = run / arg(argv, "--trainer.logger.init_args.name") / arg(argv, VERSION)
        (run / "checkpoints").mkdir(parents=True, exist_ok=True)
        (run / "checkpoints" / "last.ckpt").write_bytes(b"fake")
        write_fake_run_config(run, argv)
        return self.code

    def versions(self) -> list[str]:
        return [arg(a, VERSION) for a in self.argv]


def commanded(line: str) -> list[str]:
    """The argv of a printed command line, without the environment it sets
    (``OMP_NUM_THREADS=1 python -m roformer_lit ...``)."""
    words = shlex.split(line)
    while words and "=" in words[0] and not words[0].startswith("-"):
        words.pop(0)
    return words


def no_launch(*args, **kwargs):
    raise AssertionError("no fit process may start")


@pytest.fixture(scope="module")
def grid4(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, Launches]:
    """The 4-run sweep (nope/rope x softmax/linear), run once for real in its own directory."""
    work = tmp_path_factory.mktemp("grid4")
    write_sweep(work / "sweep.yaml")
    launches = Launches(real=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        mp.setattr(runner, "launch", launches)
        code = main(["sweep", "--config", "sweep.yaml"])
    return work, code, launches


# --- end to end with real fits ------------------------------------------------------------


def test_grid_runs_every_combination_then_skips_them(grid4, monkeypatch, capsys):
    work, code, launches = grid4
    assert code == 0
    assert sorted(launches.versions()) == sorted(NAMES4)
    assert all(a[:3] == [sys.executable, "-m", "roformer_lit"] for a in launches.argv)
    # children inherit the environment (the session's private tokenizer cache)
    assert all(e["ROFORMER_LIT_CACHE"] == os.environ["ROFORMER_LIT_CACHE"] for e in launches.env)
    sweep_dir = work / "runs" / "tiny"
    status = runner.read_json(sweep_dir / "sweep_status.json")
    assert set(status["runs"]) == set(NAMES4)
    for version in NAMES4:
        assert (sweep_dir / version / "checkpoints" / "last.ckpt").is_file()
        assert (sweep_dir / version / "config.yaml").is_file()
        assert (sweep_dir / version / "sweep_done.json").is_file()
        assert status["runs"][version]["status"] == "finished"
        assert status["runs"][version]["exit_code"] == 0
        assert (sweep_dir / "sweep_logs" / f"{version}.err").stat().st_size > 0
    config = yaml.safe_load((sweep_dir / "rope-linear" / "config.yaml").read_text())
    assert (config["model"]["position"], config["model"]["attention"]) == ("rope", "linear")
    assert config["model"]["hidden_size"] == 32

    # a second invocation trains nothing
    copy = work.parent / "grid4-again"
    shutil.copytree(work, copy)
    monkeypatch.chdir(copy)
    monkeypatch.setattr(runner, "launch", no_launch)
    capsys.readouterr()
    assert main(["sweep", "--config", "sweep.yaml"]) == 0
    out = capsys.readouterr().out
    for version in NAMES4:
        assert f"skipped {version} (finished)" in out
    assert "all 4 runs finished" in out


def test_compare_tables_and_plots_the_four_run_sweep(grid4, tmp_path, capsys):
    work, code, _ = grid4
    assert code == 0
    capsys.readouterr()
    assert main(["compare", str(work / "runs" / "tiny"), "--out", str(tmp_path)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    variants = {row.split("|")[1].strip(): row for row in rows[2:]}
    assert set(variants) == {"nope-softmax", "nope-linear", "rope-softmax", "rope-linear"}
    for row in variants.values():
        final_loss = float(row.split("|")[3].strip())
        assert 0 < final_loss < 20
    for name in ("val_loss_vs_step.png", "val_loss_vs_time.png"):
        assert (tmp_path / name).stat().st_size > 1000
    csv_rows = (tmp_path / "compare.csv").read_text().strip().splitlines()
    assert len(csv_rows) == 1 + 4


def test_a_run_killed_after_its_last_checkpoint_is_finished(grid4, tmp_path, monkeypatch):
    """Its ``last.ckpt`` is at the run's end but no marker was written: nothing is left to
    train (a resume would be refused), so the sweep counts it finished and starts nothing."""
    work, code, _ = grid4
    assert code == 0
    shutil.copytree(work, tmp_path, dirs_exist_ok=True)
    run = tmp_path / "runs" / "tiny" / "rope-linear"
    (run / "sweep_done.json").unlink()  # as if killed after its last checkpoint
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    assert main(["sweep", "--config", "sweep.yaml"]) == 0
    status = runner.read_json(tmp_path / "runs" / "tiny" / runner.STATUS_FILE)
    assert status["runs"]["rope-linear"]["status"] == "finished"


def test_a_run_at_its_end_is_finished_whatever_its_time_limit(grid4, tmp_path, monkeypatch):
    """A run that reached its max_steps is skipped under another trainer.max_time: the limit
    did not stop it (a run its time limit stopped short is refused: EDITED_TRAINER)."""
    work, code, _ = grid4
    assert code == 0
    shutil.copytree(work, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    write_sweep(tmp_path / "sweep.yaml", **{"trainer.max_time": "00:01:00:00"})
    assert main(["sweep", "--config", "sweep.yaml"]) == 0


def test_resume_an_interrupted_run_from_its_last_checkpoint(tmp_path, monkeypatch, capsys):
    """A run preempted at step 2 of 4 (its own fit command, run here) is resumed by the
    sweep from its ``last.ckpt`` to its end."""
    write_sweep(
        tmp_path / "sweep.yaml", grid={"model.position": ["rope"]}, **{"trainer.max_steps": 4}
    )
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--config", "sweep.yaml", "--dry-run"]) == 0
    (command,) = [commanded(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert command[:3] == [sys.executable, "-m", "roformer_lit"]
    assert fit_preempted(command[3:], 2) == EXIT_PREEMPTED
    run = tmp_path / "runs" / "tiny" / arg(command, VERSION)
    ckpt = run / "checkpoints" / "last.ckpt"
    assert torch.load(ckpt, map_location="cpu", weights_only=False)["global_step"] == 2
    launches = Launches(real=True)
    monkeypatch.setattr(runner, "launch", launches)
    assert main(["sweep", "--config", "sweep.yaml"]) == 0
    assert arg(launches.argv[0], "--ckpt_path") == str(ckpt.relative_to(tmp_path))
    assert torch.load(ckpt, map_location="cpu", weights_only=False)["global_step"] == 4
    assert (run / "sweep_done.json").is_file()
    assert not list(run.parent.glob("*.failed-*"))
    record = runner.read_json(run.parent / "sweep_logs" / f"{run.name}.json")
    assert (record["status"], record["action"], record["attempts"]) == ("finished", "resume", 1)


def test_a_failing_run_does_not_stop_the_others_and_is_retried_alone(tmp_path, monkeypatch, capsys):
    # an absurd but finite learning rate passes every check and diverges in training (exit 3)
    grid = {"model.learning_rate": [5e-4, 1e30]}
    write_sweep(tmp_path / "sweep.yaml", grid=grid, name="fails", **{"trainer.max_steps": 4})
    monkeypatch.chdir(tmp_path)
    launches = Launches(real=True)
    monkeypatch.setattr(runner, "launch", launches)
    assert main(["sweep", "--config", "sweep.yaml"]) == 1
    good, bad = "learning_rate0.0005", "learning_rate1e+30"
    assert launches.versions() == [good, bad]
    out = capsys.readouterr().out
    table = out[out.index("version") :]
    assert good in table and "finished" in table
    failed_row = next(line for line in table.splitlines() if line.startswith(bad))
    assert "failed" in failed_row and " 3 " in failed_row and "training diverged" in failed_row
    assert f"1 of 2 runs failed: {bad}" in out
    sweep_dir = tmp_path / "runs" / "fails"
    assert (sweep_dir / good / "sweep_done.json").is_file()
    status = runner.read_json(sweep_dir / "sweep_status.json")["runs"]
    assert status[good]["status"] == "finished"
    assert (status[bad]["status"], status[bad]["exit_code"]) == ("failed", 3)
    assert any("training diverged" in line for line in status[bad]["stderr_tail"])
    assert "training diverged" in (sweep_dir / "sweep_logs" / f"{bad}.err").read_text()

    # the retry launches only the failed run (faked here: it fails again)
    retry = Launches(code=3)
    monkeypatch.setattr(runner, "launch", retry)
    assert main(["sweep", "--config", "sweep.yaml"]) == 1
    assert retry.versions() == [bad]
    record = runner.read_json(sweep_dir / "sweep_logs" / f"{bad}.json")
    assert (record["attempts"], record["exit_code"]) == (2, 3)


# --- signals: a sweep stops its fits as a fit stops itself ---------------------------------


def wait_for(path: Path, proc: subprocess.Popen, timeout: float = 240) -> None:
    end = time.monotonic() + timeout
    while not path.is_file():
        assert proc.poll() is None, f"the sweep ended first: {proc.communicate()[1][-2000:]}"
        assert time.monotonic() < end, f"no {path} after {timeout}s"
        time.sleep(0.05)


@pytest.mark.parametrize(
    "signum,code",
    [
        (signal.SIGTERM, 75),
        pytest.param(signal.SIGINT, 130, marks=pytest.mark.slow),
    ],
)
def test_a_signal_stops_the_running_fit_with_its_checkpoint_and_starts_nothing_new(
    signum, code, tmp_path
):
    """Three runs, one at a time, each far too long to finish: the signal reaches the
    sweep once the first has a checkpoint. The sweep passes it on (the fit saves
    ``last.ckpt`` and exits as a fit stopped by it does), starts neither queued run, and
    exits with the fit's code at once; the same command then resumes the stopped run."""
    grid = {"seed_everything": [0, 1, 2]}
    write_sweep(
        tmp_path / "sweep.yaml",
        grid=grid,
        name="sig",
        **{"trainer.max_steps": 100_000, "trainer.val_check_interval": 2},
    )
    sweep = [sys.executable, "-m", "roformer_lit", "sweep", "--config", "sweep.yaml"]
    proc = subprocess.Popen(
        sweep, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    sweep_dir = tmp_path / "runs" / "sig"
    first = sweep_dir / "seed0" / "checkpoints" / "last.ckpt"
    wait_for(first, proc)
    proc.send_signal(signum)
    t0 = time.monotonic()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err[-3000:]
    assert time.monotonic() - t0 < 90  # the fit's step and save, not 100 000 steps
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(f"sweep stopped by {signum.name}")
    record = runner.read_json(sweep_dir / "sweep_logs" / "seed0.json")
    assert record["exit_code"] == code  # the fit itself stopped by the signal, not killed
    fit_err = (sweep_dir / "sweep_logs" / "seed0.err").read_text()
    stopped = "interrupted by Ctrl-C" if signum == signal.SIGINT else "preempted by SIGTERM"
    assert f"{stopped} at step " in fit_err
    step = int(fit_err.split(f"{stopped} at step ")[1].split(":")[0])
    assert torch.load(first, map_location="cpu", weights_only=False)["global_step"] == step
    assert not (sweep_dir / "seed1").exists() and not (sweep_dir / "seed2").exists()
    assert "start seed1" not in out and "start seed2" not in out
    assert not (sweep_dir / "seed0" / "sweep_done.json").exists()

    dry = subprocess.run(
        [*sweep, "--dry-run"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert dry.returncode == 0, dry.stderr[-2000:]
    commands = [shlex.split(line) for line in dry.stdout.strip().splitlines()]
    assert [arg(c, VERSION) for c in commands] == ["seed0", "seed1", "seed2"]
    assert arg(commands[0], "--ckpt_path") == "runs/sig/seed0/checkpoints/last.ckpt"
    assert all("--ckpt_path" not in c for c in commands[1:])


# --- without real fits ---------------------------------------------------------------------


def test_dry_run_prints_the_commands_and_creates_nothing(tmp_path, monkeypatch, capsys):
    write_sweep(tmp_path / "sweep.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    assert main(["sweep", "--config", "sweep.yaml", "--dry-run"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4
    commands = [shlex.split(line) for line in lines]
    assert [arg(c, VERSION) for c in commands] == NAMES4
    for command in commands:
        assert command[0].startswith("OMP_NUM_THREADS=")  # as it runs: see the threads test
        command.pop(0)
        assert command[:4] == [sys.executable, "-m", "roformer_lit", "fit"]
        assert arg(command, "--config") == str(CONFIGS / "rope.yaml")
        assert arg(command, "--trainer.logger.init_args.name") == "tiny"
        assert arg(command, "--trainer.logger.init_args.save_dir") == "runs"
        assert arg(command, "--trainer.max_steps") == "2"
        assert "--ckpt_path" not in command
    assert (arg(commands[3], "--model.position"), arg(commands[3], "--model.attention")) == (
        "rope",
        "linear",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]

    assert main(["sweep", "--config", "sweep.yaml", "--dry-run", "--devices", "0,1"]) == 0
    for line in capsys.readouterr().out.strip().splitlines():
        assert line.endswith("--trainer.accelerator gpu --trainer.devices 1")


def test_devices_run_one_process_per_gpu_at_a_time(tmp_path, monkeypatch):
    write_sweep(tmp_path / "sweep.yaml")
    monkeypatch.chdir(tmp_path)
    active, peak, seen = [0], [0], []
    lock = threading.Lock()
    fake = Launches()

    def slow(argv, **kw):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            seen.append(kw["env"]["CUDA_VISIBLE_DEVICES"])
        time.sleep(0.2)
        code = fake(argv, **kw)
        with lock:
            active[0] -= 1
        return code

    monkeypatch.setattr(runner, "launch", slow)
    assert main(["sweep", "--config", "sweep.yaml", "--devices", "0,1"]) == 0
    assert peak[0] == 2
    assert sorted(seen) == ["0", "0", "1", "1"]
    assert sorted(fake.versions()) == sorted(NAMES4)
    for argv in fake.argv:
        assert argv[-4:] == ["--trainer.accelerator", "gpu", "--trainer.devices", "1"]


#: A bad --devices list -> the words its one line names (every bad entry, in order).
BAD_DEVICES = {
    "a GPU twice": ("0,0", ["'0,0'", "'0' lists GPU 0 twice"]),
    "a GPU twice, spelled two ways": ("0,1,00", ["'00' lists GPU 0 twice"]),
    "an empty entry": ("0,,1", ["entry 2 is empty"]),
    "nothing": ("", ["entry 1 is empty"]),
    "a negative id": ("-1", ["'-1' is not a GPU id"]),
    "not an integer": ("0,x,1.5", ["'x' is not a GPU id", "'1.5' is not a GPU id"]),
    "a digit that is not ASCII": ("\u00b2", ["'\u00b2' is not a GPU id"]),
    "every kind at once": ("1,,a,1", ["entry 2 is empty; 'a' is not a GPU id; '1' lists GPU 1"]),
}


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
@pytest.mark.parametrize("case", list(BAD_DEVICES))
def test_a_bad_devices_list_is_one_line_and_runs_nothing(
    case, dry_run, tmp_path, monkeypatch, capsys
):
    """``--devices 0,0`` ran two runs at once on GPU 0, exit 0; ``--devices 0,,1`` and a
    non-ASCII digit were other words for malformed lists."""
    devices, words = BAD_DEVICES[case]
    write_sweep(tmp_path / "sweep.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    argv = ["sweep", "--config", "sweep.yaml", f"--devices={devices}"]
    assert main([*argv, *(["--dry-run"] if dry_run else [])]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: sweep: argument --devices: "), err
    assert all(word in err[0] for word in [*words, "valid: distinct GPU ids"]), err[0]
    assert captured.out == "" and sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]


def test_a_devices_list_is_read_as_cuda_takes_it():
    """Spaces around an id and leading zeros are the id itself."""
    from roformer_lit.sweep import gpu_ids

    assert gpu_ids(" 0, 01,2 ") == ["0", "1", "2"]


def test_partial_run_without_checkpoint_is_moved_aside_and_restarted(tmp_path, monkeypatch):
    write_sweep(tmp_path / "sweep.yaml", grid={"model.position": ["nope"]})
    partial = tmp_path / "runs" / "tiny" / "nope"
    partial.mkdir(parents=True)
    (partial / "events.out.tfevents.partial").write_text("x")
    monkeypatch.chdir(tmp_path)
    fake = Launches()
    monkeypatch.setattr(runner, "launch", fake)
    assert main(["sweep", "--config", "sweep.yaml"]) == 0
    assert fake.versions() == ["nope"]
    assert "--ckpt_path" not in fake.argv[0]
    aside = tmp_path / "runs" / "tiny" / "nope.failed-1"
    assert (aside / "events.out.tfevents.partial").read_text() == "x"
    assert (partial / "sweep_done.json").is_file()
    record = runner.read_json(tmp_path / "runs" / "tiny" / "sweep_logs" / "nope.json")
    assert record["action"] == "restart" and record["moved_aside"] == str(aside)


def test_exit_0_without_a_checkpoint_is_not_finished(tmp_path, monkeypatch):
    write_sweep(tmp_path / "sweep.yaml", grid={"model.position": ["nope"]})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", lambda argv, **kw: 0)
    assert main(["sweep", "--config", "sweep.yaml"]) == 1
    assert not (tmp_path / "runs" / "tiny" / "nope" / "sweep_done.json").exists()


BAD = {
    "unknown top-level key": (
        {"name": "x", "base": "BASE", "grid": {"model.position": ["nope"]}, "grids": {}},
        "unknown key 'grids'; valid keys: name, base, grid, exclude, overrides",
    ),
    "grid value not a list": (
        {"name": "x", "base": "BASE", "grid": {"model.position": "nope"}},
        "grid key 'model.position' must map to a non-empty list",
    ),
    "empty grid list": (
        {"name": "x", "base": "BASE", "grid": {"model.position": []}},
        "grid key 'model.position' must map to a non-empty list",
    ),
    "missing base": (
        {"name": "x", "grid": {"model.position": ["nope"]}},
        "missing required key 'base'",
    ),
    "missing grid": ({"name": "x", "base": "BASE"}, "missing required key 'grid'"),
    "base not found": (
        {"name": "x", "base": "configs/nothing.yaml", "grid": {"model.position": ["nope"]}},
        "base config not found: configs/nothing.yaml",
    ),
    "unknown grid key": (
        {
            "name": "x",
            "base": "BASE",
            "grid": {"model.position": ["nope"], "model.no_such_key": [1]},
        },
        "model.no_such_key",
    ),
    "wrong value type": (
        {"name": "x", "base": "BASE", "grid": {"data.max_length": ["long"]}},
        "data.max_length",
    ),
    "unsafe name": (
        {"name": "../up", "base": "BASE", "grid": {"model.position": ["nope"]}},
        "name '../up' is not a safe directory name",
    ),
    "owned key": (
        {"name": "x", "base": "BASE", "grid": {"trainer.logger.init_args.version": ["a"]}},
        "is set by the sweep itself",
    ),
    # argparse takes an unambiguous prefix for the option: the run was named seed_everythin1
    "an abbreviated grid key": (
        {"name": "x", "base": "BASE", "grid": {"seed_everythin": [1]}},
        "key 'seed_everythin' abbreviates seed_everything: write the setting's name in full",
    ),
    "an abbreviated override key": (
        {
            "name": "x",
            "base": "BASE",
            "grid": {"model.position": ["nope"]},
            "overrides": {"trainer.max_step": 4},
        },
        "key 'trainer.max_step' abbreviates trainer.max_steps",
    ),
    "invalid yaml": ("name: x\ngrid: {model.position: [nope\n", "not valid YAML"),
    "not a mapping": ("- name\n- base\n", "a sweep file must be a mapping"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_sweep_files_are_refused_before_anything_runs(case, tmp_path, monkeypatch, capsys):
    content, message = BAD[case]
    if isinstance(content, dict):
        if content.get("base") == "BASE":
            content["base"] = str(CONFIGS / "rope.yaml")
        content = yaml.safe_dump(content)
    (tmp_path / "sweep.yaml").write_text(content, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    assert main(["sweep", "--config", "sweep.yaml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")
    assert message in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]


def test_a_sweep_directory_no_write_could_make_is_one_line_before_preparing(
    tmp_path, monkeypatch, capsys
):
    """``--root`` is checked when parsed; the sweep's own directory, ``<root>/<name>``, as soon
    as its name is read: a file there was an error after the corpus was prepared."""
    from roformer_lit.commands import prepare

    write_sweep(tmp_path / "sweep.yaml")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "tiny").write_text("keep me\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)

    def never(*args, **kwargs):
        raise AssertionError("prepared before the sweep directory was checked")

    monkeypatch.setattr(prepare, "prepare_runs", never)
    assert main(["sweep", "--config", "sweep.yaml"]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert (
        len(lines) == 1
        and lines[0].startswith("error: sweep: --root runs")
        and "Traceback" not in err
    )
    assert "tiny is an existing file, not a directory" in lines[0], lines
    assert (tmp_path / "runs" / "tiny").read_text(encoding="utf-8") == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs", "sweep.yaml"]


def test_base_relative_to_the_sweep_file(tmp_path, monkeypatch, capsys):
    sweeps = tmp_path / "configs" / "sweeps"
    sweeps.mkdir(parents=True)
    shutil.copy(CONFIGS / "rope.yaml", tmp_path / "configs" / "rope.yaml")
    data = {"name": "rel", "base": "../rope.yaml", "grid": {"model.position": ["nope"]}}
    (sweeps / "rel.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--config", "configs/sweeps/rel.yaml", "--dry-run"]) == 0
    command = shlex.split(capsys.readouterr().out.strip())
    assert arg(command, "--config") == str((tmp_path / "configs" / "rope.yaml").resolve())


def test_a_shipped_sweep_runs_from_any_directory(tmp_path, monkeypatch, capsys):
    """A shipped sweep names its base from the repository root (``configs/probes/...``):
    found from another directory through the folders above the sweep file."""
    monkeypatch.chdir(tmp_path)
    sweep_file = CONFIGS / "sweeps" / "study_plans.yaml"
    base = yaml.safe_load(sweep_file.read_text())["base"]
    assert not Path(base).is_absolute() and not (tmp_path / base).exists()
    argv = ["sweep", "--config", str(sweep_file), "--dry-run", "--root", str(tmp_path / "r")]
    assert main([*argv, "--only", "seed_everything=0"]) == 0
    command = shlex.split(capsys.readouterr().out.strip().splitlines()[0])
    assert arg(command, "--config") == str((CONFIGS.parent / base).resolve())


@pytest.mark.parametrize("path", sorted((CONFIGS / "sweeps").glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_sweep_files_are_valid(path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(CONFIGS.parent)
    if path.stem.startswith("finetune"):  # its checkpoint glob needs runs: two fake ones
        (tmp_path / "configs").symlink_to(CONFIGS, target_is_directory=True)
        for experiment in ("positions", "position_lr"):
            for run in ("nope-softmax-seed0", "rope-softmax-seed0"):
                (tmp_path / "runs" / experiment / run / "checkpoints").mkdir(parents=True)
                (tmp_path / "runs" / experiment / run / "checkpoints" / "last.ckpt").touch()
        monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    # the scheme study names the example plugins by import path (examples/, not installed)
    monkeypatch.syspath_prepend(str(CONFIGS.parent / "examples"))
    # --root: an empty one, so that no finished run of a checkout's own runs/ is skipped
    config = str(path.relative_to(CONFIGS.parent))
    root = str(tmp_path / "sweep-root")
    assert main(["sweep", "--config", config, "--dry-run", "--root", root]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    expected = {
        "positions": 3 * len(POSITION_SCHEMES),  # every registered scheme, three seeds
        "positions_quick": 6,
        "kernels": 8,
        "deberta_terms": 3,
        "lengths": 30,
        "document_mask": 18,
        "position_lr": 6,  # t5 and fire, three seeds, at ten times the position learning rate
        "finetune": 2 * 3,  # two (fake) pretrained checkpoints, three fine-tuning seeds
        "finetune_cpu": 2 * 3,  # two (fake) pretrained checkpoints, three fine-tuning seeds
        "finetune_cpu_position_lr": 2,  # two (fake) checkpoints, one fine-tuning seed
        # every scheme x 4 tasks x random positions off/on x 3 seeds, less nope x on
        "probes": len(POSITION_SCHEMES) * 4 * 2 * 3 - 4 * 3,
        "probes_quick": 4 * 3 * 2 * 3 - 3 * 3,
        "probes_others": 6 * 3 * 2 * 3,  # the six other schemes, all of which read positions
        "probes_sort": len(POSITION_SCHEMES) * 2 * 3 - 3,  # every scheme x sort, less nope x on
        "probes_prope": 2 * 4 * 3,  # two unrotated fractions x four tasks x three seeds
        "probes_recall": len(POSITION_SCHEMES) * 3,  # every scheme x three seeds
        "probes_recall_rp": (len(POSITION_SCHEMES) - 1) * 3,  # the schemes reading positions
        # {rope, learned} x {copy, reverse} x random positions off/on x 2 rates x 5 seeds
        "study_budget_lr": 2 * 2 * 2 * 2 * 5,
        # its session-sized slices: {rope, learned} x one task x random positions off/on x 5 seeds
        "study_budget_copy": 2 * 2 * 5,
        "study_budget_reverse": 2 * 2 * 5,
        "study_budget_copy_rate": 2 * 2 * 5,  # study_budget_copy at the other rate, 1e-3
        "study_budget_reverse_rate": 2 * 2 * 5,
        "study_budget_copy_long": 2 * 2 * 5,  # study_budget_copy to 12,000 steps
        "study_budget_reverse_long": 2 * 2 * 5,
        # (every scheme + rope at base 100 and p-RoPE at base 100 + the plugins cope and ssmax
        # over rope) x 4 tasks x 3 rates x 5 seeds
        "study_schemes_selected": (len(POSITION_SCHEMES) + 2 + 2) * 4 * 3 * 5,
        # four layer plans x four tasks x five seeds
        "study_plans": 4 * 4 * 5,
        "study_plans_recall": 4 * 5,  # the four plans on recall at longer contexts
        "study_plans_mlm": 5 * 4,  # the four plans on MLM, seeds first
        "study_plans_recall_short": 6 * 5,  # recall at 2-4 pairs, 32 symbols; two orders
        "study_plans_recall_placement": 5 * 5,  # five more plans of that setting
        "study_plans_recall_long": 2,  # the 16x pilot: two plans, one seed
        "study_plans_recall_seeds": 2 * 5,  # the headline pair at seeds 5-9
        "study_plans_recall_data_seeds": 2 * 9,  # the headline pair at data seeds 1-9
        "study_plans_last": 4 * 5,  # global NoPE last on the four tasks
        "study_plans_mlm_last": 5,  # global NoPE last on MLM
        "study_plans_mlm_seeds": 2 * 5,  # MLM's pair at seeds 5-9
        "study_plans_mlm_data_seeds": 2 * 5,  # MLM's pair at data seeds 1-5
        "study_plans_recall_interleave8": 2 * 5,  # 8 layers: the 1:3 interleave, all-global
        "study_plans_recall_long_seeds": 2 * 2,  # the 16x pilot's two plans at seeds 1-2
        "study_plans_recall_long_budget": 1,  # all-global RoPE at 48,000 steps
        # rope, alibi, kerple, fire, sized t5 (each at its selected rate) on reverse
        "study_schemes_reverse_seeds": 5 * 5,  # at seeds 5-9
        "study_schemes_reverse_data_seeds": 5 * 9,  # at data seeds 1-9
    }
    expected = expected[path.stem]
    assert len(lines) == expected


# --- the pre-launch check: every combination through fit's rules ----------------------------

#: A probe run's settings (the tiny overrides' corpus block limit is refused beside a probe).
PROBE = {"data.max_train_blocks": None, "data.max_length": 17, "data.probe_max_length": 8}
#: name -> (grid, extra overrides, the bad run's name, text of fit's rule in the line)
BAD_COMBINATIONS = {
    "unknown_task": (
        {"data.probe": ["copy", "copyy"]},
        # a task's base (its settings without a task would be refused beside a corpus)
        {
            "base": CONFIGS / "probes" / "copy.yaml",
            "data.max_length": 17,
            "data.probe_max_length": 8,
        },
        "copyy",
        "data.probe='copyy' is not a probe task",
    ),
    "probe_length_past_max_length": (
        {"data.probe_max_length": [8, 9]},
        {"data.max_train_blocks": None, "data.max_length": 17, "data.probe": "copy"},
        "probe_max_length9",
        "data.max_length=17 is too short for probe 'copy'",
    ),
    "random_positions_below_the_length": (
        {"data.random_positions": [64, 16]},
        {},
        "random_positions16",
        "data.random_positions must be >= data.max_length=32",
    ),
    "scheme_option_out_of_range": (
        {"model.position_kwargs": [{}, {"base": 0.5}]},
        {},
        "base=0.5",
        "rope base must be > 1 and finite, got 0.5",
    ),
    "kernel_cannot_take_the_scheme": (
        {"model.position": ["rope", "alibi"], "model.attention": ["linear"]},
        {},
        "alibi-linear",
        "position 'alibi' adds a score bias, which attention 'linear' cannot take",
    ),
    "random_positions_with_a_scheme_reading_none": (
        {"model.position": ["rope", "nope"]},
        {"data.random_positions": 64},
        "nope",
        "needs a position scheme that reads positions",
    ),
    "length_past_the_position_table": (
        {"model.max_positions": [64, 16]},
        {"model.position": "learned"},
        "max_positions16",
        "data.max_length=32 exceeds the 'learned' position table",
    ),
    "document_mask_with_a_kernel_that_cannot": (
        {"model.attention": ["softmax", "linear"]},
        {"data.document_mask": True},
        "linear",
        "data.document_mask true needs an attention kernel that keeps documents apart",
    ),
    "kernel_that_cannot_train_on_the_device": (
        {"model.attention_kwargs": [{"backend": "sdpa"}, {"backend": "flex"}]},
        {"model.position": "alibi", "trainer.accelerator": "cpu"},
        "backend=flex",
        "attention 'softmax', backend='flex' trains on cuda only",
    ),
    "huge_integer": (
        {"data.probe_symbols": [16, 2**63]},
        {**PROBE, "data.probe": "copy"},
        f"probe_symbols{2**63}",
        f"data.probe_symbols must be an integer in 2..2147483647, got {2**63}",
    ),
}


@pytest.mark.parametrize("dry_run", [True, False])
@pytest.mark.parametrize("case", list(BAD_COMBINATIONS))
def test_every_combination_goes_through_fits_rules_before_anything_starts(
    case, dry_run, tmp_path, monkeypatch, capsys
):
    grid, overrides, bad_run, rule = BAD_COMBINATIONS[case]
    write_sweep(tmp_path / "sweep.yaml", grid=grid, name="bad", **overrides)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    capsys.readouterr()
    code = main(["sweep", "--config", "sweep.yaml", *(["--dry-run"] if dry_run else [])])
    captured = capsys.readouterr()
    assert code == 2, captured.err[-2000:]
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in captured.err, captured.err[-2000:]
    assert f": run {bad_run} (" in errors[0] and rule in errors[0], errors[0]
    assert captured.out == ""  # not one command printed, not one run announced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]


#: Registries' lines as the refusal quotes them (the valid names of each).
UNKNOWN_POSITION = "unknown position 'foo'; valid choices: "
UNKNOWN_ATTENTION = "unknown attention 'bar'; valid choices: linear, softmax"
#: name -> (grid, the parts the one line names, in grid order)
SEVERAL_BAD_VALUES = {
    "two, each in a run with good values": (
        {"model.position": ["nope", "foo"], "model.attention": ["softmax", "bar"]},
        [
            f"2 grid values are not valid: run foo-softmax (model.position=foo, "
            f"model.attention=softmax): {UNKNOWN_POSITION}",
            f"; run nope-bar (model.position=nope, model.attention=bar): {UNKNOWN_ATTENTION}",
        ],
    ),
    "three, in every run": (
        {
            "model.position": ["nope", "foo"],
            "model.attention": ["softmax", "bar"],
            "model.max_positions": ["long"],
        },
        [
            "3 grid values are not valid: model.position=foo (on the base config's settings "
            f"for model.attention, model.max_positions): {UNKNOWN_POSITION}",
            f"; model.attention=bar (on the base config's settings for model.position, "
            f"model.max_positions): {UNKNOWN_ATTENTION}",
            "; model.max_positions=long (on the base config's settings for model.position, "
            "model.attention): model.max_positions: expected an integer, got 'long'",
        ],
    ),
    "three, two of one key": (
        {"model.position": ["foo", "rope", "fooo"], "model.max_positions": [512, "long"]},
        [
            "3 grid values are not valid: run foo-max_positions512 (",
            "; run fooo-max_positions512 (",
            "; run rope-long (model.position=rope, model.max_positions=long): "
            "model.max_positions: expected an integer",
        ],
    ),
}


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
@pytest.mark.parametrize("case", list(SEVERAL_BAD_VALUES))
def test_every_bad_grid_value_is_named_in_one_line(case, dry_run, tmp_path, monkeypatch, capsys):
    """With several bad grid values the line named the first failed run's alone: the user
    fixed it, ran again, and met the next."""
    grid, parts = SEVERAL_BAD_VALUES[case]
    write_sweep(tmp_path / "sweep.yaml", grid=grid, name="bad")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    code = main(["sweep", "--config", "sweep.yaml", *(["--dry-run"] if dry_run else [])])
    captured = capsys.readouterr()
    assert code == 2, captured.err[-2000:]
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in captured.err, captured.err[-2000:]
    at = 0
    for part in parts:  # each, in order
        assert part in errors[0][at:], (part, errors[0])
        at = errors[0].index(part, at) + len(part)
    assert captured.out == "" and sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]


def test_fit_and_sweep_share_one_pre_launch_check(monkeypatch, tmp_path):
    """The sweep's check of a combination is the very function fit calls before it starts."""
    from roformer_lit.commands import prelaunch, pretrain

    seen = []
    real = prelaunch.check_fit_config
    monkeypatch.setattr(
        pretrain, "check_fit_config", lambda c, **kw: seen.append(c) or real(c, **kw)
    )
    write_sweep(tmp_path / "sweep.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    assert main(["sweep", "--config", "sweep.yaml", "--dry-run"]) == 0
    # each combination (the base with the overrides alone is only parsed: the grid completes it)
    assert [(c.model.position, c.model.attention) for c in seen] == [
        ("nope", "softmax"),
        ("nope", "linear"),
        ("rope", "softmax"),
        ("rope", "linear"),
    ]


# --- exclusions ---------------------------------------------------------------------------


EXCLUDE_GRID = {"a": [1, 2, 3], "b": ["x", "y"], "c": [None, 7]}


@pytest.mark.parametrize(
    "exclude",
    [
        [{"a": 1}],
        [{"a": 2, "b": "y"}],
        [{"b": "x", "c": 7}, {"a": 3}],
        [{"c": None}],
    ],
)
def test_exclude_drops_exactly_the_matching_combinations(exclude):
    import itertools

    kept = [dict(run.values) for run in expand(EXCLUDE_GRID, exclude=exclude)]
    every = [
        dict(zip(EXCLUDE_GRID, v, strict=True)) for v in itertools.product(*EXCLUDE_GRID.values())
    ]
    expected = [c for c in every if not any(all(c[k] == v for k, v in e.items()) for e in exclude)]
    assert kept == expected and len(kept) < len(every)
    assert len({run.version for run in expand(EXCLUDE_GRID, exclude=exclude)}) == len(kept)


@pytest.mark.parametrize(
    "exclude,words",
    [
        ({"model.position": "nope"}, ["exclude must be a list"]),
        ([{"model.attention": "softmax"}], ["exclude key", "model.attention", "grid keys"]),
        ([{"model.position": "xl"}], ["exclude value", "'xl'", "model.position"]),
        ([{}], ["exclude must be a list"]),
    ],
)
def test_a_bad_exclude_is_one_line(exclude, words, tmp_path, monkeypatch, capsys):
    sweep = tmp_path / "s.yaml"
    data = {
        "name": "s",
        "base": str(CONFIGS / "rope.yaml"),
        "grid": {"model.position": ["nope", "rope"]},
        "exclude": exclude,
    }
    sweep.write_text(yaml.safe_dump(data))
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--config", str(sweep), "--dry-run"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and all(w in errors[0] for w in words), errors


#: Values that compare equal in Python but are different settings (as YAML writes them).
LOOKALIKES = [True, 1, 1.0, "1"]


@pytest.mark.parametrize("excluded", LOOKALIKES)
def test_exclude_matches_by_type_and_value(excluded):
    grid = {"a": list(LOOKALIKES), "b": ["x"]}
    kept = [dict(run.values)["a"] for run in expand(grid, exclude=[{"a": excluded}])]
    # the oracle: identity of the YAML value, by its type and its text
    expected = [v for v in LOOKALIKES if (type(v), repr(v)) != (type(excluded), repr(excluded))]
    assert [(type(v), v) for v in kept] == [(type(v), v) for v in expected]


@pytest.mark.parametrize(
    "grid,exclude,shown",
    [
        ({"seed_everything": [0, 1]}, [{"seed_everything": True}], "True"),
        ({"data.document_mask": [True, False]}, [{"data.document_mask": 1}], "1"),
        ({"model.warmup_steps": [1, 2]}, [{"model.warmup_steps": 1.0}], "1.0"),
    ],
)
def test_an_exclude_value_of_another_type_is_one_line(
    grid, exclude, shown, tmp_path, monkeypatch, capsys
):
    data = {"name": "s", "base": str(CONFIGS / "rope.yaml"), "grid": grid, "exclude": exclude}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--config", "s.yaml", "--dry-run"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"exclude value {shown} of " in errors[0], errors
    assert "by type and value" in errors[0]


@pytest.mark.parametrize("dry_run", [True, False])
def test_excluding_every_combination_is_one_line_and_runs_nothing(
    dry_run, tmp_path, monkeypatch, capsys
):
    data = {
        "name": "s",
        "base": str(CONFIGS / "rope.yaml"),
        "grid": {"model.position": ["nope", "rope"], "seed_everything": [0, 1]},
        "exclude": [{"model.position": "nope"}, {"model.position": "rope"}],
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    capsys.readouterr()
    assert main(["sweep", "--config", "s.yaml", *(["--dry-run"] if dry_run else [])]) == 2
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert (
        len(errors) == 1 and "exclude removes every one of the grid's 4 combinations" in errors[0]
    )
    assert captured.out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


# --- run names ----------------------------------------------------------------------------


def test_a_layer_plan_in_the_grid_is_named_as_fit_names_it():
    from roformer_lit.plan_labels import plan_label

    plans = [
        None,
        {"pattern": ["global", "local"], "types": {"local": {"window": 8}}},
        {"pattern": ["global", "local"], "types": {"global": {"position": "nope"}}},
    ]
    names = [run.version for run in expand({"model.layer_plan": plans, "seed_everything": [0]})]
    assert names[1:] == [f"{plan_label(p)}-seed0" for p in plans[1:]]
    assert names[0] == "layer_plan=none-seed0" and len(set(names)) == 3


def test_version_names_are_readable_and_unique():
    runs = expand(
        {
            "model.position": ["xl", "deberta"],
            "model.position_kwargs": [{}, {"c2p": True, "p2c": False}],
            "seed_everything": [0, 1],
            "model.pre_norm": [True],
        }
    )
    names = [r.version for r in runs]
    assert names[0] == "xl-default-seed0-pre_norm=true"
    assert "deberta-c2p+no-p2c-seed1-pre_norm=true" in names
    assert len(set(names)) == len(names) == 8
    # the same string under two keys is ambiguous: key=value pairs instead
    clash = version_names([(("a.x", "v"), ("b.y", "w")), (("a.x", "w"), ("b.y", "v"))])
    assert clash == ["v-w", "w-v"]
    clash = version_names([(("a.x", "v w"), ("b.y", "z")), (("a.x", "v_w"), ("b.y", "z"))])
    assert clash[0] != clash[1] and all(c.startswith("x=v_w,y=z") for c in clash)


def test_the_data_seed_and_the_run_seed_are_told_apart_in_names():
    """``data.seed`` and ``seed_everything`` both end in "seed": a name must say which."""
    names = [r.version for r in expand({"seed_everything": [0, 1], "data.seed": [2, 3]})]
    assert names == ["seed0-dataseed2", "seed0-dataseed3", "seed1-dataseed2", "seed1-dataseed3"]
    assert [r.version for r in expand({"data.seed": [4]})] == ["dataseed4"]


def test_slurm_time_formats():
    assert [slurm.minutes(t) for t in ("90", "1:30", "2:00:00", "1-12", "1-00:00:01")] == [
        90,
        2,
        120,
        2160,
        1441,
    ]


# --- SLURM --------------------------------------------------------------------------------


def test_slurm_without_submitit_says_how_to_install(tmp_path, monkeypatch, capsys):
    write_sweep(tmp_path / "sweep.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "submitit", None)
    assert main(["sweep", "--config", "sweep.yaml", "--launcher", "slurm"]) == 2
    assert "pip install submitit" in capsys.readouterr().err


def test_slurm_debug_array_runs_the_local_commands(tmp_path, monkeypatch, capsys):
    pytest.importorskip("submitit")
    write_sweep(tmp_path / "sweep.yaml")
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--config", "sweep.yaml", "--dry-run"]) == 0
    local = [commanded(line) for line in capsys.readouterr().out.strip().splitlines()]
    fake = Launches()
    monkeypatch.setattr(runner, "launch", fake)
    argv = ["sweep", "--config", "sweep.yaml", "--launcher", "slurm", "--slurm.cluster", "debug"]
    assert main([*argv, "--wait"]) == 0
    assert fake.argv == local
    out = capsys.readouterr().out
    assert "submitted 4 array tasks to debug" in out and "all 4 runs finished" in out
    for version in NAMES4:
        assert (tmp_path / "runs" / "tiny" / version / "sweep_done.json").is_file()
    # finished runs are not submitted again
    monkeypatch.setattr(runner, "launch", no_launch)
    assert main(argv) == 0


def test_slurm_job_array_script_and_tasks(tmp_path, monkeypatch, capsys):
    submitit = pytest.importorskip("submitit")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    copy = tmp_path / "submitted.sh"
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(f'#!/bin/sh\ncp "$1" {copy}\necho "Submitted batch job 4242"\n')
    sbatch.chmod(0o755)
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 0\n")  # submitit checks srun exists
    (bin_dir / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    write_sweep(tmp_path / "sweep.yaml")
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--config", "sweep.yaml", "--dry-run"]) == 0
    local = [commanded(line) for line in capsys.readouterr().out.strip().splitlines()]
    monkeypatch.setattr(runner, "launch", no_launch)
    args = ["--slurm.cluster", "slurm", "--slurm.partition", "gpu", "--slurm.time", "2:00:00"]
    args += ["--slurm.gpus_per_node", "2", "--slurm.setup", "module load cuda"]
    assert main(["sweep", "--config", "sweep.yaml", "--launcher", "slurm", *args]) == 0
    out = capsys.readouterr().out
    assert "submitted 4 array tasks to slurm" in out and "4242_3  rope-linear" in out
    script = copy.read_text()
    for line in (
        "#SBATCH --array=0-3%4",
        "#SBATCH --partition=gpu",
        "#SBATCH --time=120",
        "#SBATCH --gpus-per-node=2",
        "#SBATCH --job-name=sweep-tiny",
        "module load cuda",
    ):
        assert line in script
    tasks = {}
    for pkl in (tmp_path / "runs" / "tiny" / "sweep_logs" / "slurm").rglob("*_submitted.pkl"):
        delayed = submitit.helpers.DelayedSubmission.load(pkl)
        tasks[pkl.name.split("_")[1]] = delayed.function
    assert sorted(tasks) == ["0", "1", "2", "3"]
    assert [tasks[str(i)].argv for i in range(4)] == local
    assert all(t.raise_on_failure and hasattr(t, "checkpoint") for t in tasks.values())
    status = runner.read_json(tmp_path / "runs" / "tiny" / "sweep_status.json")["runs"]
    assert status["nope-linear"] == {
        "version": "nope-linear",
        "status": "submitted",
        "job_id": "4242_1",
    }


def write_slurm_sweep(path: Path, slurm_section: dict | None) -> Path:
    """:func:`write_sweep`, plus a ``slurm:`` section when given."""
    write_sweep(path)
    if slurm_section is not None:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        path.write_text(yaml.safe_dump({**data, "slurm": slurm_section}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("extra", "slurm_section"),
    [
        ([], None),
        (["--wait"], None),
        (["--slurm.cluster", "slurm", "--slurm.partition", "gpu"], None),
        ([], {"partition": "gpu", "time": "1:00:00"}),
    ],
)
def test_slurm_without_sbatch_is_one_line_and_launches_nothing(
    extra, slurm_section, tmp_path, monkeypatch, capsys
):
    """No local fallback: without SLURM's commands on PATH, one line before anything is
    prepared, created, launched or submitted."""
    import roformer_lit.commands.prepare as prepare_cli

    pytest.importorskip("submitit")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    write_slurm_sweep(tmp_path / "sweep.yaml", slurm_section)
    monkeypatch.chdir(tmp_path)
    for module, name in ((runner, "launch"), (slurm, "submit"), (prepare_cli, "prepare_runs")):
        monkeypatch.setattr(module, name, no_launch)
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["sweep", "--config", "sweep.yaml", "--launcher", "slurm", *extra])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: --launcher slurm needs SLURM's sbatch")
    assert "--launcher local" in lines[0]
    assert out == "" and sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("gpus_per_node", "-1"),
        ("cpus_per_task", "0"),
        ("mem_gb", "-4"),
        ("mem_gb", "nan"),
        ("array_parallelism", "0"),
        ("cpus_per_task", "1.5"),
    ],
)
def test_slurm_numbers_out_of_range_are_one_line(option, value, tmp_path, monkeypatch, capsys):
    write_sweep(tmp_path / "sweep.yaml")
    monkeypatch.chdir(tmp_path)
    argv = ["sweep", "--config", "sweep.yaml", "--launcher", "slurm", "--dry-run"]
    assert main([*argv, f"--slurm.{option}", value]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: sweep: --slurm: slurm option")
    assert repr(option) in lines[0] and "must be" in lines[0]
    assert not (tmp_path / "runs").exists()


def fake_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """sbatch and srun stand-ins first on PATH; sbatch copies the script it gets to the
    returned path and answers as SLURM does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    copy = tmp_path / "submitted.sh"
    (bin_dir / "sbatch").write_text(f'#!/bin/sh\ncp "$1" {copy}\necho "Submitted batch job 77"\n')
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 0\n")
    for command in ("sbatch", "srun"):
        (bin_dir / command).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return copy


#: --slurm.* options -> (the dry run's setting lines, the #SBATCH lines submitit then writes)
DRY_RUN_CASES = [
    (
        [],
        [
            "cluster: slurm",
            "partition: SLURM's default",
            "time: 24:00:00 (1440 min)",
            "array: 4 tasks, at most 4 at once (--array=0-3%4)",
            "gpus_per_node: 1",
            "cpus_per_task: SLURM's default",
            "mem_gb: SLURM's default",
            "job_name: sweep-tiny",
        ],
        ["--time=1440", "--array=0-3%4", "--gpus-per-node=1", "--job-name=sweep-tiny"],
    ),
    (
        ["--slurm.partition", "gpu", "--slurm.time", "2:00:00", "--slurm.cpus_per_task", "8"]
        + ["--slurm.mem_gb", "32", "--slurm.array_parallelism", "2"]
        + ["--slurm.gpus_per_node", "2", "--slurm.job_name", "ablate"],
        [
            "partition: gpu",
            "time: 2:00:00 (120 min)",
            "array: 4 tasks, at most 2 at once (--array=0-3%2)",
            "gpus_per_node: 2",
            "cpus_per_task: 8",
            "mem_gb: 32.0",
            "job_name: ablate",
        ],
        ["--partition=gpu", "--time=120", "--array=0-3%2", "--gpus-per-node=2"]
        + ["--cpus-per-task=8", "--mem=32GB", "--job-name=ablate"],
    ),
]


@pytest.mark.parametrize(("options", "settings", "sbatch_lines"), DRY_RUN_CASES)
def test_slurm_dry_run_shows_the_settings_submitit_then_submits(
    options, settings, sbatch_lines, tmp_path, monkeypatch, capsys
):
    """The dry run (which needs no SLURM) prints the array's settings; submitting the same
    sweep to a stand-in sbatch writes exactly those settings into the job script."""
    pytest.importorskip("submitit")
    write_sweep(tmp_path / "sweep.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    argv = ["sweep", "--config", "sweep.yaml", "--launcher", "slurm", *options]
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    with monkeypatch.context() as no_slurm:
        no_slurm.setenv("PATH", str(empty))
        assert main([*argv, "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    described = [line.removeprefix("#").strip() for line in out if line.startswith("#")]
    commands = [line for line in out if not line.startswith("#")]
    assert all(setting in described for setting in settings), described
    assert len(commands) == 4 and not (tmp_path / "runs").exists()
    script = fake_slurm(tmp_path, monkeypatch)
    assert main(argv) == 0
    assert "submitted 4 array tasks to slurm" in capsys.readouterr().out
    written = script.read_text()
    for line in sbatch_lines:
        assert f"#SBATCH {line}\n" in written, line


@pytest.mark.parametrize(
    ("flags", "environ", "expected"),
    [
        ([], {}, "1"),  # the default, whatever --jobs
        (["--jobs", "2"], {}, "1"),
        (["--jobs", "3", "--threads", "2"], {}, "2"),
        (["--threads", "4"], {"OMP_NUM_THREADS": "5"}, "4"),  # the flag wins over yours
        (["--jobs", "2"], {"OMP_NUM_THREADS": "5"}, "5"),  # yours wins over the default
    ],
)
def test_every_run_gets_the_same_threads_whatever_jobs_is(
    flags, environ, expected, tmp_path, monkeypatch
):
    """The thread count a run sees (the environment its fit is launched with) is
    ``--threads``, else the user's ``OMP_NUM_THREADS``, else 1: never a share of the cores
    that --jobs or the machine decides, so a resumed or rerun sweep gives the same numbers."""
    write_sweep(tmp_path / "sweep.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(6)), raising=False)
    fake = Launches()
    seen: list[str | None] = []

    def record(argv, **kw):
        seen.append(kw["env"].get("OMP_NUM_THREADS"))
        return fake(argv, **kw)

    monkeypatch.setattr(runner, "launch", record)
    assert main(["sweep", "--config", "sweep.yaml", *flags]) == 0
    assert seen == [expected] * 4


@pytest.mark.parametrize(
    ("flags", "environ", "expected"),
    [
        ([], {}, "1"),
        (["--threads", "2"], {}, "2"),
        (["--threads", "4"], {"OMP_NUM_THREADS": "5"}, "4"),
        ([], {"OMP_NUM_THREADS": "5"}, None),  # yours, inherited as the run inherits it
    ],
)
def test_a_dry_run_prints_each_command_with_the_threads_it_runs_with(
    flags, environ, expected, tmp_path, monkeypatch, capsys
):
    """A command run as printed gives the sweep's numbers: its thread count is in it."""
    write_sweep(tmp_path / "sweep.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(runner, "launch", no_launch)
    assert main(["sweep", "--config", "sweep.yaml", "--dry-run", *flags]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4
    for line in lines:
        first = shlex.split(line)[0]
        if expected is None:
            assert first == sys.executable
        else:
            assert first == f"OMP_NUM_THREADS={expected}"


# --- --only: one slice of a sweep ---------------------------------------------------------


@pytest.mark.parametrize(
    "only", [["seed_everything=1"], ["model.position=rope", "seed_everything=0"]]
)
def test_only_runs_a_slice_under_the_whole_grids_names(only, tmp_path, monkeypatch, capsys):
    data = {
        "name": "s",
        "base": str(CONFIGS / "rope.yaml"),
        "grid": {"model.position": ["nope", "rope"], "seed_everything": [0, 1]},
        "overrides": {"trainer.max_steps": 2},
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--config", "s.yaml", "--dry-run"]) == 0
    every = {
        arg(shlex.split(line), VERSION): shlex.split(line)
        for line in capsys.readouterr().out.splitlines()
    }
    args = [a for item in only for a in ("--only", item)]
    assert main(["sweep", "--config", "s.yaml", "--dry-run", *args]) == 0
    sliced = [shlex.split(line) for line in capsys.readouterr().out.splitlines()]
    wanted = [item.split("=") for item in only]
    # the oracle: the whole grid's commands whose arguments carry every KEY VALUE
    expected = [c for c in every.values() if all(arg(c, f"--{k}") == v for k, v in wanted)]
    assert sliced == expected and 0 < len(sliced) < len(every)


@pytest.mark.parametrize(
    "only,words",
    [
        ("seed=1", ["--only 'seed=1'", "grid keys: model.position, seed_everything"]),
        ("seed_everything", ["--only 'seed_everything'", "KEY=VALUE"]),
        ("seed_everything=7", ["'7'", "grid values [0, 1]"]),
        ("seed_everything=true", ["'true'", "by type and value"]),
        ("model.position=alibi", ["'alibi'", "['nope', 'rope']"]),
    ],
)
def test_a_bad_only_is_one_line_and_creates_nothing(only, words, tmp_path, monkeypatch, capsys):
    data = {
        "name": "s",
        "base": str(CONFIGS / "rope.yaml"),
        "grid": {"model.position": ["nope", "rope"], "seed_everything": [0, 1]},
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    assert main(["sweep", "--config", "s.yaml", "--only", only]) == 2
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and all(w in errors[0] for w in words), errors
    assert captured.out == "" and sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


# --- a finished run is skipped only as the run the sweep asks for ---------------------------

#: (the plan a finished run ran with, the plan the edited sweep asks for under the same
#: name, whether the run is still the one asked for).
EDITED_PLANS = {
    "the same plan": (
        {"pattern": ["local", "global"], "types": {"local": {"window": 8}}},
        None,
        True,
    ),
    "the same plan as layers": (
        {"pattern": ["local", "global"], "types": {"local": {"window": 8}}},
        {"layers": ["local", "global"], "types": {"local": {"window": 8}}},
        True,
    ),
    "another window": (
        {"pattern": ["local", "global"], "types": {"local": {"window": 8}}},
        {"pattern": ["local", "global"], "types": {"local": {"window": 4}}},
        False,
    ),
    "another global scheme": (
        {"pattern": ["local", "global"], "types": {"global": {"position": "nope"}}},
        {"pattern": ["local", "global"], "types": {"global": {"position": "alibi"}}},
        False,
    ),
}


def finished_run(
    tmp_path: Path, seeds: tuple[int, ...] = (0,), finished: bool = True, **overrides: object
) -> tuple[Any, Path]:
    """A sweep ``s.yaml`` over ``seeds`` with ``overrides``, and its last run as a finished
    run leaves it (an empty ``last.ckpt``, the finished marker, its ``config.yaml`` as plain
    data), or, not ``finished``, as an interrupted one does (no marker: resumed from its
    ``last.ckpt``): the run and its directory."""
    write_sweep(tmp_path / "s.yaml", {"seed_everything": list(seeds)}, **overrides)
    from roformer_lit.sweep.spec import load_sweep

    sweep = load_sweep("s.yaml")
    run = sweep.runs[-1]
    finished_dir = tmp_path / "runs" / "tiny" / run.version
    (finished_dir / "checkpoints").mkdir(parents=True)
    (finished_dir / "checkpoints" / "last.ckpt").write_bytes(b"")
    if finished:
        (finished_dir / runner.MARKER).write_text("{}", encoding="utf-8")
    config = json.loads(json.dumps(sweep.resolved[run.version].as_dict(), default=str))
    (finished_dir / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return run, finished_dir


def sweep_edited_to(tmp_path: Path, capsys, same: bool, **settings: object) -> str:
    """``sweep`` run again on ``s.yaml`` rewritten with ``settings`` (seed 0): where the
    finished run is still the one asked for (``same``), exit 0 and no error (returns "");
    else exit 2, one ``error:`` line and no traceback, the line returned."""
    write_sweep(tmp_path / "s.yaml", {"seed_everything": [0]}, **settings)
    capsys.readouterr()
    code = main(["sweep", "--config", "s.yaml"])
    err = capsys.readouterr().err
    if same:
        assert code == 0 and "error" not in err
        return ""
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


@pytest.mark.parametrize("case", sorted(EDITED_PLANS))
def test_a_finished_run_with_other_settings_is_refused_not_skipped(
    case, tmp_path, monkeypatch, capsys
):
    """The issue's case: a sweep edited from one plan to another under the same run name
    skipped the new plan as finished, using the old run."""
    ran, asked, same = EDITED_PLANS[case]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    overrides = {**TINY_OVERRIDES, "model.num_layers": 2}
    run, finished = finished_run(tmp_path, **overrides, **{"model.layer_plan": ran})
    edited = {**overrides, "model.layer_plan": asked or ran}
    error = sweep_edited_to(tmp_path, capsys, same, **edited)
    if same:
        return
    assert run.version in error and "model.layer_plan" in error
    assert sorted(p.name for p in finished.iterdir()) == [
        "checkpoints",
        "config.yaml",
        runner.MARKER,
    ]


#: A callback that ends a run before its max_steps, exit 0.
EARLY_STOP = {
    "class_path": "lightning.pytorch.callbacks.EarlyStopping",
    "init_args": {"monitor": "val/loss", "patience": 0},
}
#: (trainer setting, the value a finished run ran with, the value the edited sweep asks for,
#: whether the run is still the one asked for).
EDITED_TRAINER = {
    "a longer run": ("trainer.max_steps", 2, 4, False),
    "fewer validation batches": ("trainer.limit_val_batches", None, 1, False),
    "one batch is not the whole set": ("trainer.limit_val_batches", 1.0, 1, False),
    "another clipping algorithm": ("trainer.gradient_clip_algorithm", None, "value", False),
    "precision 32 is 32-true": ("trainer.precision", "32-true", "32", True),
    "another validation interval": ("trainer.val_check_interval", 2, 4, False),
    "every batch is not once an epoch": ("trainer.val_check_interval", 1.0, 1, False),
    "validation every other epoch": ("trainer.check_val_every_n_epoch", None, 2, False),
    # the run's checkpoint is short of its end: its max_time stopped it (exit 0, marker)
    "a time limit lifted": ("trainer.max_time", "00:00:00:08", None, False),
    "a longer time limit": ("trainer.max_time", "00:00:00:08", "00:00:01:00", False),
    "a time limit set": ("trainer.max_time", None, "00:00:01:00", False),
    "one time limit written two ways": ("trainer.max_time", "00:00:01:00", {"minutes": 1}, True),
    "early stopping dropped": ("trainer.callbacks", [EARLY_STOP], None, False),
    "early stopping added": ("trainer.callbacks", None, [EARLY_STOP], False),
    "the same early stopping": ("trainer.callbacks", [EARLY_STOP], [EARLY_STOP], True),
    "a later minimum": ("trainer.min_steps", None, 4, False),
}


@pytest.mark.parametrize("case", sorted(EDITED_TRAINER))
def test_a_finished_run_with_other_trainer_settings_is_refused_not_skipped(
    case, tmp_path, monkeypatch, capsys
):
    """A sweep whose trainer.max_steps grew skipped its shorter finished runs as finished
    (``0 of 4 runs to go``), so compare tabled the old length as the new sweep's."""
    key, ran, asked, same = EDITED_TRAINER[case]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    run, finished = finished_run(tmp_path, **{key: ran})
    before = {p.name: p.read_bytes() for p in finished.rglob("*") if p.is_file()}
    error = sweep_edited_to(tmp_path, capsys, same, **{key: asked})
    if same:
        return
    assert run.version in error and key in error
    assert {p.name: p.read_bytes() for p in finished.rglob("*") if p.is_file()} == before


#: A setting a finished run's ``config.yaml`` does not name (the run predates it) -> (the
#: value the sweep now asks for, whether that is the run it built: the setting's default).
PREDATING = {
    "a model setting now set": ("model.lr_schedule", "constant", False),
    "a model setting at its default": ("model.lr_schedule", "linear", True),
    "a data setting now set": ("data.random_positions", 64, False),
    "a data setting at its default": ("data.random_positions", None, True),
}


@pytest.mark.parametrize("case", sorted(PREDATING))
def test_a_finished_run_from_before_a_setting_is_compared_at_its_default(
    case, tmp_path, monkeypatch, capsys
):
    """A run whose config.yaml predates a setting (lr_schedule, added since) built with its
    default; a sweep now setting another value skipped it as finished (compared only the
    settings both named), so compare tabled a linear-schedule run as the constant one."""
    key, asked, same = PREDATING[case]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    run, finished = finished_run(tmp_path)
    config = yaml.safe_load((finished / "config.yaml").read_text(encoding="utf-8"))
    section, name = key.split(".")
    for holder in (config[section], config[section].get("init_args") or {}):
        holder.pop(name, None)
    (finished / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    error = sweep_edited_to(tmp_path, capsys, same, **{key: asked})
    if not same:
        assert run.version in error and key in error, error


def test_a_finished_run_on_other_data_is_refused_not_skipped(tmp_path, monkeypatch, capsys):
    """The same settings name files whose content changed since the run (an edited corpus,
    a regenerated tokenizer): a finished run that recorded other data is not the run the
    sweep asks for, so it is not skipped as finished."""
    from roformer_lit.commands.prepare import datamodule_of
    from roformer_lit.sweep.spec import load_sweep
    from roformer_lit.training.data_identity import short_identity, write_record

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    run, finished = finished_run(tmp_path)
    now = datamodule_of(load_sweep("s.yaml").fit_args(run, "runs")).data_identity()
    write_record(finished, now, "the bundled corpus")
    assert sweep_edited_to(tmp_path, capsys, True) == ""  # the same data: skipped
    write_record(finished, "0" * 64, "the bundled corpus, as it was")
    before = {p.name: p.read_bytes() for p in finished.rglob("*") if p.is_file()}
    error = sweep_edited_to(tmp_path, capsys, False)
    assert run.version in error and "data 00000000" in error, error
    assert f"data 00000000 -> {short_identity(now)}" in error, error
    assert {p.name: p.read_bytes() for p in finished.rglob("*") if p.is_file()} == before


#: Grid values written two ways that ``fit`` reads as one -> the grid.
SAME_RUN_GRIDS: dict[str, dict[str, list[Any]]] = {
    "a learning rate as 0.001 and as 1e-3 (a string in YAML 1.1)": {
        "model.learning_rate": [0.001, "1e-3"]
    },
    "a seed and its text": {"seed_everything": [1, "1"]},
    "a dropout and its text": {"model.dropout": [0.1, "0.1"]},
    "null and its text": {"data.random_positions": [None, "null"]},
    "options and their JSON text": {"model.position_kwargs": [{}, "{}"]},
    "a built-in scheme and its import path": {
        "model.position": ["rope", "roformer_lit.positions.rope:RotaryPosition"]
    },
    "a built-in kernel and its import path": {
        "model.attention": ["softmax", "roformer_lit.attention.softmax:SoftmaxAttention"]
    },
    "a plan as pattern and as layers": {
        "model.layer_plan": [
            {"pattern": ["l"], "types": {"l": {"window": 8}}},
            {"layers": ["l"], "types": {"l": {"window": 8}}},
        ]
    },
    "a plan type naming the model's scheme": {
        "model.layer_plan": [
            {"pattern": ["l"], "types": {"l": {"window": 8}}},
            {"pattern": ["l"], "types": {"l": {"window": 8, "position": "rope"}}},
        ]
    },
    "a plan type with the model's options written": {
        "model.layer_plan": [
            {"pattern": ["l"], "types": {"l": {"window": 8}}},
            {"pattern": ["l"], "types": {"l": {"window": 8, "position_kwargs": {"base": 10000}}}},
        ]
    },
    "an odd window and the even one below it": {  # both read 32 keys each side
        "model.layer_plan": [
            {"pattern": ["l"], "types": {"l": {"window": 64}}},
            {"pattern": ["l"], "types": {"l": {"window": 65}}},
        ]
    },
    "a scheme's option at its default and none": {  # rope's base is 10000 either way
        "model.position_kwargs": [{"base": 10000}, {}],
    },
    "a kernel's option at its default and none": {
        "model.attention_kwargs": [{}, {"backend": "auto"}],
    },
    "a scheme's option at its default and null": {
        "model.position": ["t5"],
        "model.position_kwargs": [None, {"num_buckets": 32}],
    },
    "a block's option at BERT's and none": {  # layernorm is BERT's norm either way
        "model.block": [{"mlp": "swiglu"}, {"mlp": "swiglu", "norm": "layernorm"}],
    },
    "BERT's block written out and null": {"model.block": [None, {"mlp": "gelu"}]},
    "no block options and null": {"model.block": [None, {}]},
    "attention dropout at the dropout and null": {"model.attention_dropout": [None, 0.1]},
    "a plan's type named otherwise": {
        "model.layer_plan": [
            {"pattern": ["l"], "types": {"l": {"window": 8}}},
            {"pattern": ["local"], "types": {"local": {"window": 8}}},
        ]
    },
    "a plan's two names for one layer": {
        "model.layer_plan": [
            {"pattern": ["a", "b"], "types": {"a": {"window": 8}, "b": {"window": 8}}},
            {"pattern": ["a"], "types": {"a": {"window": 8}}},
        ]
    },
    "a plan as layers and as a pattern of other names": {
        "model.layer_plan": [
            {"layers": ["x", "y"], "types": {"x": {"window": 8}}},
            {"pattern": ["l", "g"], "types": {"l": {"window": 8}}},
        ]
    },
    "a plan type's scheme and its import path": {
        "model.layer_plan": [
            {"pattern": ["a"], "types": {"a": {"position": "rope"}}},
            {
                "pattern": ["a"],
                "types": {"a": {"position": "roformer_lit.positions.rope:RotaryPosition"}},
            },
        ]
    },
}


#: The cases of :data:`SAME_RUN_GRIDS` that need other overrides (a plan of two layers).
SAME_RUN_OVERRIDES: dict[str, dict[str, Any]] = {
    "a plan's two names for one layer": {"model.num_layers": 2},
    "a plan as layers and as a pattern of other names": {"model.num_layers": 2},
}


@pytest.mark.parametrize("case", sorted(SAME_RUN_GRIDS))
def test_two_runs_with_the_same_settings_are_refused(case, tmp_path, monkeypatch, capsys):
    """Grid values written two ways (``[0.001, 1e-3]``) passed the duplicate check, which
    compares them as YAML wrote them, and ran one experiment twice under two names (exit 0),
    which ``compare`` tabled as two learning rates: now one line naming both runs, before
    anything is created. The model section is compared in the architecture's one spelling
    (a block option at BERT's, a plan's type names, are none of the model's)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    write_sweep(tmp_path / "s.yaml", SAME_RUN_GRIDS[case], **SAME_RUN_OVERRIDES.get(case, {}))
    for dry in ([], ["--dry-run"]):
        code = main(["sweep", "--config", "s.yaml", *dry])
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert code == 2 and len(errors) == 1 and "Traceback" not in err, err
        assert "the same run" in errors[0], errors[0]
        assert not (tmp_path / "runs").exists()


#: ``seed_everything: true`` beside seeds -> (the user's PL_GLOBAL_SEED, the grid, the seed
#: each run is parsed and launched with, or None: refused as one run twice). Lightning's
#: ``true`` is PL_GLOBAL_SEED, else 0: never a random seed.
SEED_TRUE_GRIDS: dict[str, tuple[str | None, list[Any], dict[str, int] | None]] = {
    "true beside 0": (None, [True, 0], None),
    "0 beside true": (None, [0, True], None),
    "true before 5": (None, [True, 5], {"seed=true": 0, "seed5": 5}),
    "true after 5": (None, [5, True], {"seed5": 5, "seed=true": 0}),
    "true beside PL_GLOBAL_SEED's 7": ("7", [True, 7], None),
    "true after 3 under PL_GLOBAL_SEED 7": ("7", [3, True], {"seed3": 3, "seed=true": 7}),
}


@pytest.mark.parametrize("case", sorted(SEED_TRUE_GRIDS))
def test_seed_true_is_the_seed_lightning_takes_and_parsing_leaves_it(
    case, tmp_path, monkeypatch, capsys
):
    """Parsing a run seeded the sweep's own process and wrote its seed to PL_GLOBAL_SEED,
    which every later parse and every launched fit inherited: ``[true, 5]`` trained seed 5
    twice (exit 0), ``[5, true]`` was refused as one run. Now each run is parsed and
    launched with the seed Lightning gives ``true`` in the user's environment
    (PL_GLOBAL_SEED, else 0), and a grid whose ``true`` is one of its seeds is one line."""
    from roformer_lit.sweep.spec import load_sweep

    env, values, seeds = SEED_TRUE_GRIDS[case]
    if env is None:
        monkeypatch.delenv("PL_GLOBAL_SEED", raising=False)
    else:
        monkeypatch.setenv("PL_GLOBAL_SEED", env)
    monkeypatch.chdir(tmp_path)
    launches = Launches()
    monkeypatch.setattr(runner, "launch", launches if seeds else no_launch)
    write_sweep(tmp_path / "s.yaml", {"seed_everything": values})
    code = main(["sweep", "--config", "s.yaml"])
    err = capsys.readouterr().err
    assert os.environ.get("PL_GLOBAL_SEED") == env
    if seeds is None:
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert code == 2 and len(errors) == 1 and "Traceback" not in err, err
        assert f"both as {int(env or 0)};" in errors[0] and "seed_everything=true" in errors[0]
        assert not (tmp_path / "runs").exists()
        return
    assert code == 0, err
    assert [e.get("PL_GLOBAL_SEED") for e in launches.env] == [env, env]
    resolved = load_sweep(tmp_path / "s.yaml").resolved
    assert {v: resolved[v]["seed_everything"] for v in resolved} == seeds
    assert os.environ.get("PL_GLOBAL_SEED") == env


def test_seed_everything_help_says_what_true_does(capsys):
    """Lightning's help said ``true`` gives "a random seed"; it gives PL_GLOBAL_SEED, else 0."""
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "random seed. (" not in out and "true takes the seed in the environment" in out


#: A sweep run once with GRID4, then edited -> (its grid, its overrides, the runs that
#: train now; every other run is skipped as the finished run of its settings).
REORDERED_SWEEPS: dict[str, tuple[dict[str, list[Any]], dict[str, Any], list[str]]] = {
    "keys reordered": (
        {"model.attention": ["softmax", "linear"], "model.position": ["nope", "rope"]},
        {},
        [],
    ),
    "keys reordered, a value added": (
        {"model.attention": ["softmax", "linear"], "model.position": ["nope", "rope", "learned"]},
        {},
        ["softmax-learned", "linear-learned"],
    ),
    "keys reordered, an override changed": (
        {"model.attention": ["softmax", "linear"], "model.position": ["nope", "rope"]},
        {"trainer.max_steps": 3},
        ["softmax-nope", "softmax-rope", "linear-nope", "linear-rope"],
    ),
    "the same order": (GRID4, {}, []),
}


@pytest.mark.parametrize("case", sorted(REORDERED_SWEEPS))
def test_a_reordered_grid_skips_the_runs_finished_under_their_old_names(
    case, tmp_path, monkeypatch, capsys
):
    """Run names follow the grid's key order, so a sweep file whose keys were reordered
    named every run anew and trained each again beside the finished one (two rows of one
    run for ``compare``). Names do not change (that would retrain existing studies); a run
    a finished run of the sweep's directory ran with the same settings under another name
    is skipped as finished there, and said so, as a run finished under its own name is."""
    monkeypatch.chdir(tmp_path)
    launches = Launches()
    monkeypatch.setattr(runner, "launch", launches)
    write_sweep(tmp_path / "s.yaml")
    assert main(["sweep", "--config", "s.yaml"]) == 0
    capsys.readouterr()
    grid, overrides, trained = REORDERED_SWEEPS[case]
    write_sweep(tmp_path / "s.yaml", grid, **overrides)
    assert main(["sweep", "--config", "s.yaml", "--dry-run"]) == 0
    dry = capsys.readouterr()
    assert sorted(arg(commanded(line), VERSION) for line in dry.out.splitlines()) == sorted(trained)
    launches.argv.clear()
    assert main(["sweep", "--config", "s.yaml"]) == 0
    out = capsys.readouterr().out
    assert sorted(launches.versions()) == sorted(trained)
    if case == "the same order":
        return
    for old in NAMES4 if not trained or "learned" in trained[0] else ():
        new = "-".join(reversed(old.split("-")))
        assert f"skipped {new} (finished as {old}:" in out, out
        assert f"# skipped {new} (finished as {old}:" in dry.err, dry.err
        assert not (tmp_path / "runs" / "tiny" / new).exists()
    status = runner.read_json(tmp_path / "runs" / "tiny" / runner.STATUS_FILE)["runs"]
    assert {v for v, r in status.items() if r["status"] == "finished"} == {
        "-".join(reversed(n.split("-"))) for n in NAMES4
    } | set(trained)


#: How a run's ``config.yaml`` can fail to say what it ran with -> how to damage it.
DAMAGED_CONFIGS: dict[str, Callable[[Path], object]] = {
    "deleted": lambda path: path.unlink(),
    "not YAML": lambda path: path.write_text("model: [\n", encoding="utf-8"),
    "not a mapping": lambda path: path.write_text("- 1\n", encoding="utf-8"),
    "no model section": lambda path: path.write_text("seed_everything: 0\n", encoding="utf-8"),
    "not UTF-8": lambda path: path.write_bytes(b"model: \xff\n"),
    "a directory": lambda path: (path.unlink(), path.mkdir()),
}


@pytest.mark.parametrize("finished", [True, False], ids=["finished", "interrupted"])
@pytest.mark.parametrize("case", sorted(DAMAGED_CONFIGS))
def test_a_run_whose_config_cannot_be_read_is_refused_not_skipped(
    case, finished, tmp_path, monkeypatch, capsys
):
    """A finished run whose ``config.yaml`` was deleted or damaged was skipped as finished
    without any comparison, so a sweep edited since (another dropout) reported the old run
    as the new setting, exit 0: now one line naming the run and its file, nothing changed."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    run, run_dir = finished_run(tmp_path, finished=finished)
    DAMAGED_CONFIGS[case](run_dir / "config.yaml")
    before = sorted(str(p) for p in run_dir.rglob("*"))
    error = sweep_edited_to(tmp_path, capsys, False)
    assert run.version in error and "config.yaml" in error, error
    assert sorted(str(p) for p in run_dir.rglob("*")) == before


#: (setting, the value an interrupted run ran with, the value the edited sweep asks for)
EDITED_INTERRUPTED = {
    # fit takes it on resume with a note: the run would go on as a mix of the two
    "a dropout": ("model.dropout", 0.1, 0.0),
    # the resumed fit refuses it, but only at its own launch, after the runs before it ran
    "a size": ("model.hidden_size", 32, 64),
    "a longer run": ("trainer.max_steps", 2, 4),
}


@pytest.mark.parametrize("case", sorted(EDITED_INTERRUPTED))
def test_an_interrupted_run_with_other_settings_is_refused_before_any_run_starts(
    case, tmp_path, monkeypatch, capsys
):
    """A sweep edited after its run ``seed1`` was interrupted trained ``seed0`` first and
    then resumed ``seed1`` as a mix of both settings, or failed it at its launch: now the
    sweep is one line naming the run and the setting, and no run starts."""
    key, ran, asked = EDITED_INTERRUPTED[case]
    monkeypatch.chdir(tmp_path)
    run, interrupted = finished_run(tmp_path, (0, 1), finished=False, **{key: ran})
    before = {p.name: p.read_bytes() for p in interrupted.rglob("*") if p.is_file()}
    write_sweep(tmp_path / "s.yaml", {"seed_everything": [0, 1]}, **{key: asked})
    launches = Launches()
    monkeypatch.setattr(runner, "launch", launches)
    capsys.readouterr()
    code = main(["sweep", "--config", "s.yaml"])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "Traceback" not in err, err
    assert f"run {run.version} was interrupted" in errors[0] and key in errors[0], errors[0]
    assert launches.argv == []
    assert sorted(p.name for p in (tmp_path / "runs" / "tiny").iterdir()) == [run.version]
    assert {p.name: p.read_bytes() for p in interrupted.rglob("*") if p.is_file()} == before


def hold_sweep(sweep_dir: Path) -> subprocess.Popen:
    """Another process holding ``sweep_dir`` as a running sweep does (its lock), until
    killed."""
    code = (
        "import os, sys, time; from roformer_lit.training import run_dir; "
        "os.makedirs(sys.argv[1], exist_ok=True); run_dir.lock(sys.argv[1], 'sweep'); "
        "print('locked', flush=True); time.sleep(300)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(sweep_dir)], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"locked"
    return proc


@pytest.mark.parametrize("runs", ["none yet", "an interrupted one, edited"])
def test_a_second_sweep_on_a_directory_is_refused_before_it_reads_plans_or_prepares(
    runs, tmp_path, monkeypatch, capsys
):
    """The lock was taken after the sweep had planned its runs, printed the plan and
    prepared their data, so a second sweep said it had runs to go before its refusal, and
    checked the first one's runs: a run the first sweep was training from an edited file
    was refused as interrupted with other settings. Now the lock comes first: one line
    naming the directory and the other process, nothing printed, prepared or launched."""
    monkeypatch.chdir(tmp_path)
    sweep_dir = tmp_path / "runs" / "tiny"
    if runs == "none yet":
        write_sweep(tmp_path / "s.yaml", {"seed_everything": [0, 1]})
    else:
        finished_run(tmp_path, (0, 1), finished=False, **{"model.dropout": 0.1})
        write_sweep(tmp_path / "s.yaml", {"seed_everything": [0, 1]}, **{"model.dropout": 0.0})
    before = {p.name: p.read_bytes() for p in sweep_dir.rglob("*") if p.is_file()}
    holder = hold_sweep(sweep_dir)
    try:
        launches = Launches()
        monkeypatch.setattr(runner, "launch", launches)
        capsys.readouterr()
        code = main(["sweep", "--config", "s.yaml"])
        out, err = capsys.readouterr()
    finally:
        holder.kill()
        holder.wait()
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "Traceback" not in err, err
    assert str(sweep_dir) in errors[0] and f"pid {holder.pid}" in errors[0], errors[0]
    assert out == "" and launches.argv == []
    assert {p.name: p.read_bytes() for p in sweep_dir.rglob("*") if p.is_file()} == before


def test_two_sweeps_started_together_train_each_run_once(tmp_path):
    """Two ``sweep`` processes on one sweep file, started at the same instant: one takes the
    directory and trains every run once; the other is one line naming the directory and
    the first one's pid, having printed and launched nothing (were it slower than the whole
    sweep, it would find every run finished and skip them all)."""
    write_sweep(tmp_path / "s.yaml", {"seed_everything": [0, 1]})
    command = [sys.executable, "-m", "roformer_lit", "sweep", "--config", "s.yaml"]
    procs = [
        subprocess.Popen(
            command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    results = [(p, *p.communicate(timeout=600)) for p in procs]
    sweep_dir = tmp_path / "runs" / "tiny"
    refused = [(p, out, err) for p, out, err in results if p.returncode == 2]
    ran = [(p, out, err) for p, out, err in results if p.returncode == 0]
    assert len(ran) + len(refused) == 2, [(p.returncode, err[-1000:]) for p, _, err in results]
    for _, out, err in refused:
        (other,) = (p for p, _, _ in ran)
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "Traceback" not in err, err
        named = f"sweep {sweep_dir} is being written by another process (pid {other.pid})"
        assert named in errors[0], errors[0]
        assert out == "", out
    if not refused:  # the second started after the first had finished everything
        assert any("(2 finished, 0 to run)" in out for _, out, _ in ran)
    for version in ("seed0", "seed1"):
        record = runner.read_json(sweep_dir / "sweep_logs" / f"{version}.json")
        assert (record["status"], record["attempts"], record["action"]) == (
            "finished",
            1,
            "fresh",
        )
        log = (sweep_dir / "sweep_logs" / f"{version}.err").read_text(encoding="utf-8")
        assert log.count("=== attempt") == 1
    assert sorted(p.name for p in sweep_dir.iterdir() if p.is_dir()) == [
        "seed0",
        "seed1",
        "sweep_logs",
    ]
