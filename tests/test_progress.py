"""The progress display (:mod:`roformer_lit.training.progress`) on a tiny model with a fake clock.

The model advances the clock by 1 s per training batch and 0.25 s per validation batch,
so every rate, elapsed time and ETA in the printed lines is known in advance: tokens/s
must leave validation time out, the ETA must count it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import lightning as L
import pytest
import torch
from cli_helpers import fit_args
from lightning.pytorch.callbacks import TQDMProgressBar
from torch.utils.data import DataLoader, Dataset

from roformer_lit.errors import ConfigError
from roformer_lit.training.progress import (
    StepProgress,
    default_progress_bar,
    format_duration,
    format_rate,
)

ROWS, WIDTH = 4, 8  # a batch: 4 blocks of 8 tokens
TOKENS = ROWS * WIDTH
TRAIN_BATCH_S, VAL_BATCH_S = 1.0, 0.25


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class Blocks(Dataset):
    def __init__(self, n: int) -> None:
        self.ids = torch.randint(0, 50, (n, WIDTH), generator=torch.Generator().manual_seed(n))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i]}


class Tiny(L.LightningModule):
    """Logs train/loss (recording each value) and val/test loss; moves the fake clock."""

    def __init__(self, clock: Clock, train_blocks: int = 16, lr: float = 0.1) -> None:
        super().__init__()
        self.clock, self.train_blocks, self.lr = clock, train_blocks, lr
        self.embed = torch.nn.Embedding(50, 4)
        self.out = torch.nn.Linear(4, 50)
        self.losses: dict[int, float] = {}

    def _loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        ids = batch["input_ids"]
        return torch.nn.functional.cross_entropy(
            self.out(self.embed(ids)).flatten(0, 1), ids.flatten()
        )

    def training_step(self, batch, batch_idx):
        self.clock.t += TRAIN_BATCH_S
        loss = self._loss(batch)
        self.losses[self.global_step] = float(loss.detach())
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        self.clock.t += VAL_BATCH_S
        self.log("val/loss", self._loss(batch))

    def test_step(self, batch, batch_idx):
        self.clock.t += VAL_BATCH_S
        self.log("test/loss", self._loss(batch))

    def predict_step(self, batch, batch_idx):
        return self(batch)

    def forward(self, batch):
        return self.out(self.embed(batch["input_ids"])).argmax(-1)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)

    def train_dataloader(self):
        return DataLoader(Blocks(self.train_blocks), batch_size=ROWS)

    def val_dataloader(self):
        return DataLoader(Blocks(8), batch_size=ROWS)  # 2 batches

    test_dataloader = predict_dataloader = val_dataloader


def run(tmp_path, bar: StepProgress, model: Tiny | None = None, fn: str = "fit", **trainer):
    clock = model.clock if model is not None else Clock()
    bar.clock = clock
    model = model or Tiny(clock)
    options = {
        "max_steps": 12,
        "val_check_interval": 6,
        "check_val_every_n_epoch": None,
        "num_sanity_val_steps": 0,
        "logger": False,
        "enable_checkpointing": False,
        "enable_model_summary": False,
        "default_root_dir": tmp_path,
        "callbacks": [bar],
        **trainer,
    }
    t = L.Trainer(accelerator="cpu", devices=1, **options)
    getattr(t, fn)(model)
    return model


TRAIN_LINE = re.compile(
    r"^(?P<where>.*step (?P<step>\d+)/(?P<total>\d+)) \| loss (?P<loss>[\d.]+) \| "
    r"lr (?P<lr>\S+) \| (?P<rate>\S+) tok/s \| elapsed (?P<elapsed>\S+) \| ETA (?P<eta>\S+)$"
)


def train_lines(out: str) -> list[dict[str, str]]:
    return [m.groupdict() for line in out.splitlines() if (m := TRAIN_LINE.match(line))]


def test_formatting():
    assert format_duration(0) == "0:00"
    assert format_duration(59.4) == "0:59"
    assert format_duration(3599) == "59:59"
    assert format_duration(3725) == "1:02:05"
    assert format_duration(float("nan")) == "?"
    assert format_rate(812.4) == "812"
    assert format_rate(48_213) == "48.2k"
    assert format_rate(1_350_000) == "1.35M"


def test_lines_every_n_steps_with_exact_rates_and_eta(tmp_path, capsys):
    model = run(tmp_path, StepProgress(every_n_steps=4, every_n_seconds=0, mode="lines"))
    out = capsys.readouterr().out
    lines = train_lines(out)
    assert [int(x["step"]) for x in lines] == [4, 8, 12]
    assert {x["total"] for x in lines} == {"12"}
    # 4 batches of TOKENS tokens in 4 s of training each time (the validation at step 6
    # took 0.5 s and is left out of the rate)
    assert {x["rate"] for x in lines} == {format_rate(4 * TOKENS / (4 * TRAIN_BATCH_S))}
    # elapsed: wall time since the start, validation included; ETA = remaining * elapsed/done
    walls = [4.0, 8.0 + 2 * VAL_BATCH_S, 12.0 + 2 * VAL_BATCH_S]
    for line, wall, step in zip(lines, walls, (4, 8, 12), strict=True):
        assert line["elapsed"] == format_duration(wall)
        assert line["eta"] == format_duration((12 - step) * wall / step)
        assert float(line["loss"]) == pytest.approx(model.losses[step - 1], abs=5e-5)
        assert line["lr"] == "1.0e-01"
    val = [line for line in out.splitlines() if "val/loss" in line]
    assert [line.split(" |")[0] for line in val] == ["step 6/12", "step 12/12"]
    assert all(line.endswith(f"| {2 * VAL_BATCH_S:.1f} s") for line in val)
    done = out.splitlines()[-1]
    assert done.startswith("done | step 12 |")
    assert f"| {format_rate(12 * TOKENS / 12.0)} tok/s |" in done


def test_a_line_when_every_n_seconds_pass_without_one(tmp_path, capsys):
    run(tmp_path, StepProgress(every_n_steps=100, every_n_seconds=3, mode="lines"))
    # steps end at t = 1..6, then 6.5 + (7..12 - 6): a line once 3 s passed since the last
    steps = [int(x["step"]) for x in train_lines(capsys.readouterr().out)]
    assert steps == [3, 6, 9, 12]


def test_epoch_based_run_shows_epoch_and_batch(tmp_path, capsys):
    bar = StepProgress(every_n_steps=4, every_n_seconds=0, mode="lines")
    run(
        tmp_path, bar, max_steps=-1, max_epochs=2, val_check_interval=1.0, check_val_every_n_epoch=1
    )
    wheres = [x["where"] for x in train_lines(capsys.readouterr().out)]
    assert wheres == ["epoch 1/2 batch 4/4 | step 4/8", "epoch 2/2 batch 4/4 | step 8/8"]


def test_gradient_accumulation_counts_optimiser_steps(tmp_path, capsys):
    bar = StepProgress(every_n_steps=2, every_n_seconds=0, mode="lines")
    run(tmp_path, bar, max_steps=4, val_check_interval=4, accumulate_grad_batches=2)
    lines = train_lines(capsys.readouterr().out)
    assert [(x["step"], x["total"]) for x in lines] == [("2", "4"), ("4", "4")]
    assert {x["rate"] for x in lines} == {format_rate(TOKENS / TRAIN_BATCH_S)}


def test_bar_on_a_terminal(tmp_path, capsys):
    run(tmp_path, StepProgress(mode="bar"))
    captured = capsys.readouterr()
    assert captured.out == ""  # everything goes to the terminal's stderr
    screens = captured.err.replace("\r", "\n").splitlines()
    assert any(
        re.match(r"^step 12/12 100%\|.*\| loss [\d.]+, [\d.]+ tok/s, 0:12<0:00", s) for s in screens
    )
    assert any(s.startswith("step 6/12 | val/loss ") for s in screens)  # lasting val line
    assert any(s.startswith("validating") for s in screens)  # its own short bar


def test_auto_mode_prints_lines_when_not_a_terminal(tmp_path, capsys):
    run(tmp_path, StepProgress(every_n_steps=6, every_n_seconds=0))  # pytest: no TTY
    captured = capsys.readouterr()
    assert [x["step"] for x in train_lines(captured.out)] == ["6", "12"]
    assert "%|" not in captured.err


@pytest.mark.parametrize("fn", ["validate", "test", "predict"])
def test_evaluation_without_training(tmp_path, capsys, fn):
    run(tmp_path, StepProgress(mode="lines"), fn=fn)
    lines = capsys.readouterr().out.splitlines()
    stage = {"validate": "val", "test": "test", "predict": None}[fn]
    (line,) = [x for x in lines if x.startswith(f"{fn} | 2 batches")]
    if stage:
        assert re.search(rf"\| {stage}/loss [\d.]+ \| 0\.5 s$", line), line
    assert not train_lines("\n".join(lines))


def test_disabled_bar_prints_nothing(tmp_path, capsys):
    bar = StepProgress(every_n_steps=1, mode="lines")
    bar.disable()  # what Lightning does on ranks other than 0
    run(tmp_path, bar)
    assert "step" not in capsys.readouterr().out


def test_default_progress_bar_respects_the_trainer_flag_and_explicit_bars():
    assert default_progress_bar({"enable_progress_bar": False, "callbacks": []}) == {}
    assert default_progress_bar({"callbacks": [TQDMProgressBar()]}) == {}
    mine = StepProgress()
    assert default_progress_bar({"callbacks": [mine]}) == {}
    other = L.Callback()
    (first, added) = default_progress_bar({"callbacks": [other]})["callbacks"]
    assert first is other and isinstance(added, StepProgress)
    assert isinstance(default_progress_bar({"callbacks": None})["callbacks"][0], StepProgress)


@pytest.mark.parametrize(
    "kwargs", [{"every_n_steps": 0}, {"every_n_seconds": -1.0}, {"mode": "fancy"}]
)
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ConfigError):
        StepProgress(**kwargs)


@pytest.mark.slow
def test_ddp_prints_each_line_once(tmp_path):
    """Two gloo ranks through the CLI, stdout piped: rank 0 alone prints."""
    args = fit_args("rope.yaml", 6, "--trainer.enable_progress_bar", "true")
    args += ["--trainer.callbacks+=roformer_lit.training.progress.StepProgress"]
    args += ["--trainer.callbacks.every_n_steps", "2", "--trainer.callbacks.every_n_seconds", "0"]
    args += ["--trainer.accelerator", "cpu", "--trainer.devices", "2", "--trainer.strategy", "ddp"]
    proc = subprocess.run(
        [sys.executable, "-m", "roformer_lit", *args],
        cwd=tmp_path,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    steps = [line.split(" |")[0] for line in lines if "| loss " in line]
    assert steps == ["step 2/6", "step 4/6", "step 6/6"]
    vals = [line.split(" |")[0] for line in lines if "| val/loss " in line]
    assert vals == ["step 3/6", "step 6/6"]  # fit_args validates every steps // 2
    assert sum(line.startswith("done |") for line in lines) == 1


class Scheduled(Tiny):
    """Tiny under a per-step schedule: step ``s`` (0-based) trains at ``lr / (s + 1)``."""

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 / (s + 1))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}


@pytest.mark.parametrize("accumulate", [1, 2])
def test_a_line_shows_the_rate_its_step_trained_at(tmp_path, capsys, accumulate):
    """``step N | lr`` is the rate step N used (what ``train/lr`` logs at it), not the next
    step's rate the scheduler has already moved to when the step ends."""
    run(
        tmp_path,
        StepProgress(every_n_steps=2, every_n_seconds=0, mode="lines"),
        Scheduled(Clock(), train_blocks=64),
        max_steps=6,
        val_check_interval=6 * accumulate,
        accumulate_grad_batches=accumulate,
    )
    lines = train_lines(capsys.readouterr().out)
    assert [(int(x["step"]), x["lr"]) for x in lines] == [
        (step, f"{0.1 / step:.1e}") for step in (2, 4, 6)
    ]
