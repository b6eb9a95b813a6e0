"""What TensorBoard shows of a run, through the CLI: validation cadence, the learning rate
scalar, hyperparameters without private keys, timely flushes, the final validation, and
the progress lines of a run without a terminal. Read back with TensorBoard's own reader."""

from __future__ import annotations

import logging
import math
import time

import pytest
import torch
import yaml
from cli_helpers import CONFIGS, TINY, overridden
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import plugin_data_pb2

from roformer_lit.commands import main
from roformer_lit.module_arguments import FLAT_KEYS
from roformer_lit.results.events import read_run
from roformer_lit.training.run_logger import FLUSH_SECS, RunLogger

STEPS = 12
WARMUP = 2  # TINY's model.warmup_steps


def fit(workdir, version: str, steps: int, val_every: int, *extra: str) -> object:
    args = [
        "fit",
        "--config",
        str(CONFIGS / "rope.yaml"),
        *TINY,
        "--trainer.max_steps",
        str(steps),
        "--trainer.val_check_interval",
        str(val_every),
        "--trainer.log_every_n_steps",
        "1",
        "--trainer.logger.init_args.version",
        version,
    ]
    assert main(overridden(args, extra)) == 0
    return workdir / "runs" / "mlm" / version


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same run validated every 2 and every 3 steps."""
    workdir = tmp_path_factory.mktemp("curves")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        return {every: fit(workdir, f"val{every}", STEPS, every) for every in (2, 3)}


def _series(run, tag: str) -> list[tuple[int, float]]:
    return [(s.step, s.value) for s in read_run(run).scalars.get(tag, [])]


def test_validating_more_often_leaves_training_unchanged(runs):
    """Validation draws no random numbers that training uses (dropout is on: rope.yaml)."""
    often, rarely = _series(runs[2], "train/loss"), _series(runs[3], "train/loss")
    assert len(often) == STEPS
    assert often == rarely  # bit for bit, every step
    assert len(_series(runs[2], "val/loss")) == STEPS // 2
    assert len(_series(runs[3], "val/loss")) == STEPS // 3


def test_learning_rate_is_one_scalar_following_the_schedule(runs):
    config = yaml.safe_load((CONFIGS / "base.yaml").read_text())["model"]  # rope.yaml's base
    base, floor = float(config["learning_rate"]), float(config["min_lr_ratio"])
    tags = read_run(runs[2]).scalars
    assert not [tag for tag in tags if tag.startswith("lr-")]
    lrs = _series(runs[2], "train/lr")
    assert [step for step, _ in lrs] == list(range(STEPS))
    for step, value in lrs:  # warmup (s+1)/(w+1), then linear decay to floor at max_steps
        if step < WARMUP:
            factor = (step + 1) / (WARMUP + 1)
        else:
            factor = floor + (1 - floor) * (1 - (step - WARMUP) / (STEPS - WARMUP))
        assert value == pytest.approx(base * factor, rel=1e-6)


def test_hparams_tab_has_no_private_keys(runs):
    accumulator = EventAccumulator(str(runs[2]))
    accumulator.Reload()
    content = accumulator.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    keys = set(plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info.hparams)
    assert {"position", "attention", "learning_rate"} <= keys
    assert not [k for k in keys if k.startswith("_") or "/_" in k]
    saved = yaml.safe_load((runs[2] / "hparams.yaml").read_text())  # plain data
    assert set(FLAT_KEYS) <= set(saved)  # every key loading needs


def test_events_reach_the_disk_within_seconds(tmp_path):
    assert FLUSH_SECS <= 10
    logger = RunLogger(save_dir=str(tmp_path), name="x", version="v")
    logger.log_metrics({"train/loss": 1.5}, step=0)
    deadline = time.monotonic() + FLUSH_SECS + 5
    found = None
    while found is None and time.monotonic() < deadline:
        time.sleep(0.5)
        found = read_run(tmp_path / "x" / "v").last("train/loss")  # the writer is still open
    assert found == 1.5
    logger.finalize("success")


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def lightning_info():
    handler = _Lines()
    logger = logging.getLogger("lightning.pytorch")
    logger.addHandler(handler)
    yield handler.lines
    logger.removeHandler(handler)


BEYOND = (
    "trainer.val_check_interval=10 is beyond trainer.max_steps=5: validating once, after the "
    "last step (5)"
)
NOT_DIVIDING = (
    "trainer.val_check_interval=3 does not divide trainer.max_steps=7 (last scheduled "
    "validation at step 6): validating after the last step (7) too"
)


@pytest.mark.parametrize(
    ("steps", "every", "validated_at", "says"),
    [(5, 10, [4], BEYOND), (7, 3, [2, 5, 6], NOT_DIVIDING), (6, 3, [2, 5], None)],
)
def test_every_run_ends_with_a_validation(
    tmp_path, monkeypatch, lightning_info, steps, every, validated_at, says
):
    """Validation after step k is logged at step k - 1 (Lightning's 0-based step)."""
    monkeypatch.chdir(tmp_path)
    run = fit(tmp_path, "v", steps, every)
    assert [step for step, _ in _series(run, "val/loss")] == validated_at
    best = torch.load(run / "checkpoints" / "best.ckpt", map_location="cpu", weights_only=True)
    assert best["global_step"] in [step + 1 for step in validated_at]
    notes = [line for line in lightning_info if "val_check_interval" in line]
    assert notes == ([says] if says else [])


def test_piped_fit_prints_progress_lines(tmp_path, monkeypatch, capsys):
    """The CLI's default display, stdout not a terminal: step lines and validation lines."""
    monkeypatch.chdir(tmp_path)
    every = ["--trainer.callbacks+=roformer_lit.training.progress.StepProgress"]
    every += ["--trainer.callbacks.every_n_steps", "4"]
    run = fit(tmp_path, "v", 8, 4, "--trainer.enable_progress_bar", "true", *every)
    out = capsys.readouterr().out.splitlines()
    steps = [line for line in out if line.startswith("step ") and "| loss " in line]
    assert [line.split(" |")[0] for line in steps] == ["step 4/8", "step 8/8"]
    losses = dict(_series(run, "train/loss"))
    for line in steps:
        step = int(line.split()[1].split("/")[0])
        shown = float(line.split("| loss ")[1].split()[0])
        assert shown == pytest.approx(losses[step - 1], abs=5e-5)
    vals = [line for line in out if line.startswith("step ") and "| val/loss " in line]
    logged = _series(run, "val/loss")
    assert len(vals) == len(logged) == 2
    for line, (_, value) in zip(vals, logged, strict=True):
        assert float(line.split("| val/loss ")[1].split()[0]) == pytest.approx(value, abs=5e-5)
        assert "| val/acc " in line


def test_default_display_and_its_switch(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    fit(tmp_path, "on", 2, 2, "--trainer.enable_progress_bar", "true")
    out = capsys.readouterr().out
    assert "step 2/2 | loss " in out and "step 2/2 | val/loss " in out
    fit(tmp_path, "off", 2, 2)  # TINY: --trainer.enable_progress_bar false
    out = capsys.readouterr().out
    # no progress lines: only the run's one closing line (training/run_report.py)
    assert [line for line in out.splitlines() if "step 2/2" in line] == [
        line for line in out.splitlines() if line.startswith("finished at step 2/2 | val/loss ")
    ]
    assert "finished at step 2/2" in out and "| loss " not in out


def test_experiment_configs_validate_often():
    """At least a dozen points per curve, each validation as cheap as before."""
    base = yaml.safe_load((CONFIGS / "base.yaml").read_text())
    for path in sorted(CONFIGS.glob("*.yaml")):  # each composed on base.yaml, as the CLI does
        overlay = yaml.safe_load(path.read_text())
        config = {k: {**base.get(k, {}), **overlay.get(k, {})} for k in ("trainer", "data")}
        trainer = config["trainer"]
        assert trainer["max_steps"] / trainer["val_check_interval"] >= 12, path.name
        assert trainer["max_steps"] % trainer["val_check_interval"] == 0, path.name
        assert config["data"]["max_val_blocks"] <= 96, path.name
        assert math.isfinite(trainer["val_check_interval"])
