"""Every fit ends with one line of its last validation and where the run is (training.run_report)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from cli_helpers import epochs_args, fit_args, probe_fit_args

from roformer_lit.commands import main
from roformer_lit.results.events import read_run
from roformer_lit.training.run_report import summary_line

METRICS = {"val/loss": 0.5, "val/acc": 0.75, "val/exact": 0.25, "train/loss": 0.4}


@pytest.mark.parametrize(
    ("step", "max_steps", "head"),
    [
        (10, 10, "finished at step 10/10"),
        (4, 10, "stopped at step 4/10"),
        (7, None, "finished at step 7"),
    ],
)
def test_the_head_says_whether_the_run_reached_its_limit(step, max_steps, head) -> None:
    assert summary_line(step, max_steps, METRICS, "runs/x").startswith(head + " |")


def test_validation_metrics_lead_in_order_and_nothing_else_shows() -> None:
    line = summary_line(10, 10, METRICS, "runs/x")
    assert "| val/loss 0.5000 | val/acc 0.7500 | val/exact 0.2500 | run runs/x" in line
    assert "train/loss" not in line


def test_non_finite_and_missing_metrics() -> None:
    line = summary_line(3, 3, {"val/loss": math.nan}, None)
    assert line == "finished at step 3/3 | no validation"


def _report_lines(out: str) -> list[str]:
    return [
        line for line in out.splitlines() if line.startswith(("finished at step", "stopped at"))
    ]


@pytest.mark.parametrize(
    "argv",
    [probe_fit_args("copy", 4, 2), fit_args("rope.yaml", 4, "--trainer.val_check_interval", "2")],
    ids=["position task", "corpus"],
)
def test_a_fit_prints_its_last_validation_once(tmp_path, monkeypatch, capsys, argv) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 0
    lines = _report_lines(capsys.readouterr().out)
    assert len(lines) == 1, lines
    (run,) = [p for p in Path("runs").glob("*/*") if p.is_dir()]
    assert lines[0].startswith("finished at step 4/4 |")
    assert lines[0].endswith(f"| run {run}")
    events = read_run(run)  # the oracle: what the run logged for TensorBoard
    for tag in ("val/loss", "val/acc"):
        shown = float(lines[0].split(f"{tag} ")[1].split(" ")[0])
        assert shown == pytest.approx(events.last(tag), abs=5e-5)
    assert ("val/exact" in lines[0]) == ("probes" in str(run))


@pytest.mark.parametrize("max_steps", ["-1", "100"], ids=["epochs alone", "epochs before steps"])
def test_a_run_that_completes_its_epochs_says_finished_at_its_end(
    tmp_path, monkeypatch, capsys, max_steps
) -> None:
    """One epoch, with no step limit or a step limit it never reaches: the line's end is
    where the epochs end (the end compare judges by), not the step limit (was
    ``stopped at step 2/100``), and that is the step the run's last checkpoint records."""
    monkeypatch.chdir(tmp_path)
    assert main(epochs_args("--trainer.max_steps", max_steps)) == 0
    (line,) = _report_lines(capsys.readouterr().out)
    (last,) = Path("runs").glob("*/*/checkpoints/last.ckpt")

    steps = torch.load(last, map_location="cpu", weights_only=False)["global_step"]
    assert line.startswith(f"finished at step {steps}/{steps} |"), line
