"""What ``compare`` counts as one experiment: runs that differ in a trainer setting that
changes what is measured are never seeds of one variant, an unfinished run is never in a
mean or a selection, a directory reached twice (a link, two logdirs) is one run, and
fine-tunes are never silently left out of a selection among pretraining runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from torch.utils.tensorboard import SummaryWriter

from roformer_lit.commands import main

STEPS = 30


def write_run(
    run: Path,
    seed: int,
    loss: float,
    *,
    steps: int = STEPS,
    trainer: dict[str, Any] | None = None,
    hparams: dict[str, Any] | None = None,
) -> Path:
    """A training run as ``fit`` leaves it: hparams, config.yaml (its trainer section with
    ``trainer``'s settings), a checkpoints folder and val/loss every 10 steps up to
    ``steps`` (of ``STEPS``)."""
    (run / "checkpoints").mkdir(parents=True)
    saved = {"position": "rope", "attention": "softmax", "learning_rate": 0.001, "seed": 0}
    (run / "hparams.yaml").write_text(yaml.safe_dump({**saved, **(hparams or {})}), "utf-8")
    config = {"seed_everything": seed, "trainer": {"max_steps": STEPS, **(trainer or {})}}
    (run / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    writer = SummaryWriter(str(run))
    for step in range(9, steps, 10):
        writer.add_scalar("val/loss", loss, step, walltime=1000.0 + step)
        writer.add_scalar("val/acc", 1.0 - loss / 10, step, walltime=1000.0 + step)
    writer.close()
    return run


def table(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[dict[str, list[str]], str]:
    """``compare *argv``'s markdown rows by variant, and its stderr."""
    capsys.readouterr()
    assert main(["compare", *argv]) == 0
    captured = capsys.readouterr()
    lines = [line for line in captured.out.splitlines() if line.startswith("| ")][2:]
    rows = {}
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows[cells[0]] = cells
    return rows, captured.err


# --- trainer settings that change what is measured -----------------------------------------

#: case -> (trainer settings of seed 0's run, of seed 1's run, whether they are one variant).
TRAINER_CASES = {
    "another epoch limit": ({"max_steps": -1, "max_epochs": 1}, {"max_steps": -1}, False),
    "fewer validation batches": ({"limit_val_batches": 2}, {}, False),
    "one validation batch is not all": (
        {"limit_val_batches": 1},
        {"limit_val_batches": 1.0},
        False,
    ),
    "fewer training batches": ({"limit_train_batches": 0.5}, {}, False),
    "another clipping algorithm": ({"gradient_clip_algorithm": "value"}, {}, False),
    "overfitting batches": ({"overfit_batches": 2}, {}, False),
    "precision 32 is 32-true": ({"precision": "32"}, {"precision": "32-true"}, True),
    "no limit is the whole set": ({"limit_val_batches": None}, {"limit_val_batches": 1.0}, True),
    "overfit 0 is off": ({"overfit_batches": 0}, {"overfit_batches": 0.0}, True),
}


@pytest.mark.parametrize("case", sorted(TRAINER_CASES))
def test_a_trainer_setting_that_changes_what_is_measured_splits_variants(case, tmp_path, capsys):
    """Runs of another epoch limit, other batch limits or another clipping algorithm were
    averaged as two seeds of one variant; spellings of one precision were two variants."""
    first, second, same = TRAINER_CASES[case]
    if "max_steps" in first:  # both runs end by epochs: the step limit is no difference
        second = {"max_steps": -1, **second}
    write_run(tmp_path / "runs" / "a-seed0", 0, 2.0, trainer=first)
    write_run(tmp_path / "runs" / "b-seed1", 1, 3.0, trainer=second)
    rows, _ = table(capsys, str(tmp_path / "runs"))
    if same:
        assert list(rows) == ["rope-softmax"] and rows["rope-softmax"][1] == "2 (0, 1)"
        return
    assert len(rows) == 2, rows
    key = next(iter({*first, *second} - {"max_steps"}))
    for variant, cells in rows.items():
        assert f"{key}=" in variant and cells[1] in ("1 (0)", "1 (1)")


def test_a_run_without_its_config_is_tabled_apart_and_says_why(tmp_path, capsys):
    """Its trainer settings are unknown: never a seed of a variant whose settings are known,
    and its row says so."""
    write_run(tmp_path / "runs" / "rope-seed0", 0, 2.0)
    (write_run(tmp_path / "runs" / "rope-seed1", 1, 3.0) / "config.yaml").unlink()
    rows, _ = table(capsys, str(tmp_path / "runs"))
    assert len(rows) == 2
    assert rows["rope-softmax"][-1] == (
        "seed 1: no config.yaml: its trainer settings are unknown, tabled apart"
    )
