"""What ``compare`` counts as one experiment: runs that differ in a trainer setting that
changes what is measured are never seeds of one variant, an unfinished run is never in a
mean or a selection, a directory reached twice (a link, two logdirs) is one run, and
fine-tunes are never silently left out of a selection among pretraining runs."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import tree_state
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


#: Validation schedules (a run's trainer settings), in groups of spellings of one schedule:
#: runs of one group validate at the same steps, runs of two groups at other steps.
VALIDATION_SCHEDULES = (
    (  # once an epoch: Lightning's defaults, unwritten or written
        {},
        {"val_check_interval": None, "check_val_every_n_epoch": 1},
        {"val_check_interval": 1.0},
    ),
    ({"val_check_interval": 1},),  # every batch: a count, not the fraction 1.0
    ({"val_check_interval": 0.5},),  # twice an epoch
    ({"check_val_every_n_epoch": 2},),  # every other epoch
    ({"val_check_interval": 10, "check_val_every_n_epoch": None},),  # every 10 batches
)


def test_runs_validating_at_other_steps_are_never_seeds_of_one_variant(tmp_path, capsys):
    """Runs differing in trainer.val_check_interval or check_val_every_n_epoch were averaged
    as seeds of one variant, though their best val/loss is the best of other validations."""
    seed, expected = 0, set()
    for group in VALIDATION_SCHEDULES:
        seeds = []
        for trainer in group:
            write_run(tmp_path / "runs" / f"r-seed{seed}", seed, 2.0 + seed, trainer=trainer)
            seeds.append(str(seed))
            seed += 1
        expected.add(f"{len(seeds)} ({', '.join(seeds)})")
    rows, _ = table(capsys, str(tmp_path / "runs"))
    assert {cells[1] for cells in rows.values()} == expected, rows
    assert len(rows) == len(VALIDATION_SCHEDULES)


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


# --- unfinished runs --------------------------------------------------------------------------


def test_an_unfinished_run_is_listed_but_never_averaged(tmp_path, capsys):
    """A seed stopped at step 10 of 30 (loss 9.0 there) moved the variant's mean from 2.5
    to 4.67 and its std with it, while the row said 3 seeds."""
    write_run(tmp_path / "runs" / "rope-seed0", 0, 2.0)
    write_run(tmp_path / "runs" / "rope-seed1", 1, 3.0)
    write_run(tmp_path / "runs" / "rope-seed2", 2, 9.0, steps=11)
    out = tmp_path / "out"
    rows, _ = table(capsys, str(tmp_path / "runs"), "--out", str(out))
    cells = rows["rope-softmax"]
    assert cells[1] == "2 (0, 1) + 1 unfinished"
    assert cells[2].startswith("2.5000 ± 0.7071")
    assert "seed 2: unfinished: last validated at step 10 of 30; left out of the means" in cells
    with (out / "compare.csv").open(newline="") as handle:
        (record,) = csv.DictReader(handle)
    assert float(record["final_val_loss_mean"]) == pytest.approx(2.5)
    assert record["n_seeds"] == "2" and record["seeds"] == "0 1"
    with (out / "runs.csv").open(newline="") as handle:  # every run is still listed
        assert len(list(csv.DictReader(handle))) == 3


def test_a_variant_of_unfinished_runs_alone_shows_no_numbers(tmp_path, capsys):
    write_run(tmp_path / "runs" / "rope-seed0", 0, 9.0, steps=11)
    rows, _ = table(capsys, str(tmp_path / "runs"))
    cells = rows["rope-softmax"]
    assert cells[1] == "0 + 1 unfinished" and cells[2] == "–"


def test_an_unfinished_run_is_never_a_candidate_of_a_selection(tmp_path, capsys):
    """lr 0.003's second seed, stopped at step 10 with a low loss of that length, made
    0.003 the best learning rate over seeds that had not finished."""
    runs = tmp_path / "runs"
    for seed, loss in enumerate((2.0, 2.2)):
        write_run(runs / f"lr1-seed{seed}", seed, loss)
    write_run(runs / "lr3-seed0", 0, 1.9, hparams={"learning_rate": 0.003})
    write_run(runs / "lr3-seed1", 1, 0.5, steps=11, hparams={"learning_rate": 0.003})
    out = tmp_path / "out"
    capsys.readouterr()
    argv = ["compare", str(runs), "--select", "learning_rate", "--by", "val_loss"]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    with (out / "compare.csv").open(newline="") as handle:
        (record,) = csv.DictReader(handle)
    assert float(record["learning_rate"]) == 0.001
    assert float(record["final_val_loss_mean"]) == pytest.approx(2.1)
    note = "learning_rate=0.003: seed 1 last validated at step 10 of 30, not a candidate"
    assert note in record["note"] and note in printed


def test_a_selection_with_no_finished_value_is_one_line(tmp_path, capsys):
    write_run(tmp_path / "runs" / "lr1-seed0", 0, 2.0, steps=11)
    capsys.readouterr()
    argv = ["compare", str(tmp_path / "runs"), "--select", "learning_rate", "--by", "val_loss"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error:") and "no group of runs has a candidate" in err[-1]
    assert "group rope-softmax: no value of learning_rate is a candidate" in err[0]


# --- one run, however it is reached -----------------------------------------------------------


def test_a_linked_run_counts_once_and_a_linked_variant_is_found(tmp_path, capsys):
    """A link to a run of the logdir (``latest``) was ignored and a linked run from another
    directory silently missing; the same directory given twice was warned about as a copy."""
    runs = tmp_path / "runs"
    write_run(runs / "rope-seed0", 0, 2.0)
    write_run(runs / "rope-seed1", 1, 3.0)
    write_run(tmp_path / "elsewhere" / "nope-seed0", 0, 4.0, hparams={"position": "nope"})
    os.symlink(runs / "rope-seed1", runs / "latest")
    os.symlink(tmp_path / "elsewhere" / "nope-seed0", runs / "nope-seed0")
    os.symlink(runs, runs / "rope-seed0" / "loop")  # a loop is walked once
    os.symlink(runs, tmp_path / "again")
    rows, err = table(capsys, str(runs), str(tmp_path / "again"), str(runs / "rope-seed0"))
    assert rows["rope-softmax"][1] == "2 (0, 1)" and rows["nope-softmax"][1] == "1 (0)"
    assert "warning" not in err


# --- fine-tunes and a selection -------------------------------------------------------------


def test_a_selection_over_runs_with_fine_tunes_is_refused(tmp_path, capsys):
    """The fine-tunes were left out of --select without a word (and fine-tunes alone gave
    'no hyperparameter of these runs')."""
    runs = tmp_path / "runs"
    pretrained = write_run(runs / "mlm" / "rope-seed0", 0, 2.0)
    ckpt = str(pretrained / "checkpoints" / "last.ckpt")
    finetune = {"task": "movie_polarity", "pretrained": ckpt}
    write_run(runs / "ft" / "ft-seed0", 0, 0.5, hparams=finetune)
    before = tree_state(runs)
    for logdir in (runs, runs / "ft"):
        capsys.readouterr()
        argv = ["compare", str(logdir), "--select", "learning_rate", "--by", "val_acc"]
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error:"), err
        assert "1 fine-tune run(s)" in err[0] and "without --select" in err[0]
    assert tree_state(runs) == before


# --- options written at their default ------------------------------------------------------

#: case -> (hparams of seed 0's run, of seed 1's run, whether they are one variant)
OPTION_CASES = {
    "rope base at its default": ({"position_kwargs": {"base": 10000}}, {}, True),
    "rope base as a float": ({"position_kwargs": {"base": 10000.0}}, {}, True),
    "the kernel's default backend": ({"attention_kwargs": {"backend": "auto"}}, {}, True),
    "another rope base": ({"position_kwargs": {"base": 500}}, {}, False),
    "another backend": ({"attention_kwargs": {"backend": "sdpa"}}, {}, False),
}


@pytest.mark.parametrize("case", sorted(OPTION_CASES))
def test_a_scheme_or_kernel_option_at_its_default_is_the_run_without_it(case, tmp_path, capsys):
    """``position_kwargs: {base: 10000}`` builds rope as ``{}`` does, bit for bit (and a
    layer plan's options are already read so), yet the two were tabled as two variants;
    an option at another value still splits them."""
    first, second, same = OPTION_CASES[case]
    write_run(tmp_path / "runs" / "a-seed0", 0, 2.0, hparams=first)
    write_run(tmp_path / "runs" / "b-seed1", 1, 3.0, hparams=second)
    rows, _ = table(capsys, str(tmp_path / "runs"))
    if same:
        assert list(rows) == ["rope-softmax"] and rows["rope-softmax"][1] == "2 (0, 1)", rows
        return
    assert len(rows) == 2 and {cells[1] for cells in rows.values()} == {"1 (0)", "1 (1)"}, rows


def test_a_selection_reads_an_option_unwritten_as_its_default(tmp_path, capsys):
    """``--select base`` over rope runs at ``base: 500``, ``base: 10000`` and no base: the
    last two are one candidate, 10000 (its two seeds averaged), never a ``None`` beside a
    ``10000`` holding one model twice."""
    runs = tmp_path / "runs"
    write_run(runs / "b500-seed0", 0, 2.5, hparams={"position_kwargs": {"base": 500}})
    write_run(runs / "b10k-seed0", 0, 2.0, hparams={"position_kwargs": {"base": 10000}})
    write_run(runs / "default-seed1", 1, 2.2)
    out = tmp_path / "out"
    capsys.readouterr()
    argv = ["compare", str(runs), "--select", "position_kwargs.base", "--by", "val_loss"]
    argv += ["--out", str(out)]
    assert main(argv) == 0, capsys.readouterr()
    with (out / "compare.csv").open(newline="") as handle:
        (record,) = csv.DictReader(handle)
    assert float(record["position_kwargs.base"]) == 10000, record
    assert float(record["final_val_loss_mean"]) == pytest.approx(2.1), record
    assert "None" not in record["candidates"], record


# --- runs of other data -----------------------------------------------------------------


def _with_data(run: Path, identity_digit: str) -> Path:
    from roformer_lit.training.data_identity import write_record

    write_record(run, identity_digit * 64, "test data")
    return run


@pytest.mark.parametrize("same_settings", [True, False])
def test_the_data_note_says_content_differed_only_for_runs_of_the_same_settings(
    same_settings, tmp_path, capsys
):
    """Runs of different data identities are tabled apart with one ``note:``. Its remark
    that the same settings named files whose content differed was printed even where the
    runs' data settings differed (another vocabulary), which explains their data."""
    runs = tmp_path / "runs"
    _with_data(write_run(runs / "a-seed0", 0, 3.0, hparams={"vocab_size": 100}), "a")
    other = {"vocab_size": 100 if same_settings else 200}
    _with_data(write_run(runs / "b-seed1", 1, 3.1, hparams=other), "b")
    _, err = table(capsys, str(runs))
    notes = [line for line in err.splitlines() if "different data sets" in line]
    assert len(notes) == 1, err
    assert ("content differed" in notes[0]) is same_settings, notes[0]
