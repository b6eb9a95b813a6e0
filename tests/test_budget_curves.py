"""Budget curves: learning-rate schedules that do not depend on the step count, and
checkpoints kept at chosen steps that ``extrapolate`` turns into accuracy against steps."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
import torch
from cli_helpers import probe_fit_args

from roformer_lit.commands import main
from roformer_lit.training.lifecycle import lr_factor, warmup_then_linear

CALLBACK = "roformer_lit.training.step_checkpoints.StepCheckpoints"


@pytest.mark.parametrize(("warmup", "total", "floor"), [(0, 10, 0.0), (3, 20, 0.1), (5, 6, 0.5)])
def test_schedules(warmup: int, total: int, floor: float) -> None:
    for step in range(total + 2):
        # the default is the schedule every run had, bit for bit
        assert lr_factor(step, warmup, total, floor) == warmup_then_linear(
            step, warmup, total, floor
        )
        ramp = (step + 1) / (warmup + 1)
        assert lr_factor(step, warmup, total, floor, "constant") == (ramp if step < warmup else 1.0)
        # wsd, from its definition: stable until the last 25 % of the post-warm-up steps
        decay = max(math.ceil(0.25 * (total - warmup)), 1)
        if step < warmup:
            expected = ramp
        elif step < total - decay:
            expected = 1.0
        else:
            expected = floor + (1 - floor) * (1 - min((step - (total - decay)) / decay, 1))
        got = lr_factor(step, warmup, total, floor, "wsd", 0.25)
        assert got == pytest.approx(expected, abs=1e-15)
    # constant ignores the total: the same rates for any budget
    assert [lr_factor(s, warmup, total, floor, "constant") for s in range(total)] == [
        lr_factor(s, warmup, 10 * total, floor, "constant") for s in range(total)
    ]


def _fit(workdir: Path, steps: int, *extra: str) -> Path:
    workdir.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        argv = probe_fit_args(
            "copy",
            steps,
            steps,
            4,
            "--model.lr_schedule",
            "constant",
            "--model.warmup_steps",
            "2",
            *extra,
        )
        assert main(argv) == 0
    (run,) = [p for p in workdir.glob("runs/probes/*") if p.is_dir()]
    return run


def test_one_constant_run_serves_several_budgets(tmp_path: Path, capsys) -> None:
    """The weights of ``step=3.ckpt`` of a 6-step constant-schedule run are those of a
    3-step run; extrapolate over the step checkpoints writes the step column."""
    long = _fit(
        tmp_path / "long",
        6,
        "--trainer.callbacks+=" + CALLBACK,
        "--trainer.callbacks.steps=[3, 6]",
    )
    short = _fit(tmp_path / "short", 3)
    kept = torch.load(long / "checkpoints" / "step=3.ckpt", weights_only=False)
    alone = torch.load(short / "checkpoints" / "last.ckpt", weights_only=False)
    assert kept["global_step"] == 3
    for name, tensor in alone["state_dict"].items():
        assert torch.equal(kept["state_dict"][name], tensor), name
    out = tmp_path / "budget.csv"
    ckpts = [str(long / "checkpoints" / f"step={n}.ckpt") for n in (3, 6)]
    capsys.readouterr()
    assert main(["extrapolate", *ckpts, "--lengths", "8", "--budget", str(out)]) == 0
    # one run at two budgets is not two seeds of one variant: no table over seeds
    assert "Over seeds" not in capsys.readouterr().out
    with out.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["metric"] == "acc"]
    assert {(r["name"].rsplit("/", 1)[-1], r["step"]) for r in rows if r["step"]} == {
        ("step=3.ckpt", "3"),
        ("step=6.ckpt", "6"),
    }
