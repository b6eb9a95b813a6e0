"""``compare`` names a run that diverged (a ``fit`` stopped on a non-finite loss, exit 3)
as diverged, at the step its record gives, never as ``unfinished: no validation yet``, and
never as a seed of its variant: a rerun of the same seed that finished is that seed.

``fit`` records the divergence in the run directory
(:data:`~roformer_lit.training.divergence_record.DIVERGED_FILE`), which ``compare`` reads.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import fit_args
from test_compare_failed_runs import finished, scalars, settings
from test_compare_identity import write_run

from roformer_lit.commands import EXIT_DIVERGED, main
from roformer_lit.module import MaskedLM
from roformer_lit.run_files import TOTAL_STEPS_TAG
from roformer_lit.training.divergence_record import DIVERGED_FILE

#: What a run's record holds (JSON text) -> the note ``compare`` gives the run.
RECORDS: dict[str, tuple[str, str]] = {
    "a step": ('{"step": 7, "message": "training diverged at step 7"}', "diverged at step 7 of 30"),
    "no step": ('{"step": null, "message": ""}', "diverged"),
    "a step as text": ('{"step": "7"}', "diverged"),
    "a step as a boolean": ('{"step": true}', "diverged"),
    "a negative step": ('{"step": -1}', "diverged"),
    "not JSON": ("{step: 7", "diverged"),
    "a list": ("[7]", "diverged"),
    "empty": ("", "diverged"),
}


def diverged_run(run: Path, seed: int, record: str) -> None:
    """A run that stopped on a non-finite loss before validating: its settings, the
    length record fit logs as training starts, its divergence record."""
    run.mkdir(parents=True)
    settings(run, seed)
    scalars(run, TOTAL_STEPS_TAG)
    (run / DIVERGED_FILE).write_text(record, encoding="utf-8")


def finished_run(run: Path, seed: int) -> None:
    run.mkdir(parents=True)
    settings(run, seed)
    finished(run)


@pytest.mark.parametrize("case", sorted(RECORDS))
def test_a_diverged_run_is_named_so_and_is_no_seed(tmp_path, capsys, case):
    record, note = RECORDS[case]
    logdir = tmp_path / "runs"
    finished_run(logdir / "rope-softmax-seed0", 0)
    diverged_run(logdir / "rope-softmax-seed1", 1, record)
    assert main(["compare", str(logdir)]) == 0
    out = capsys.readouterr().out
    assert "1 (0) + 1 diverged" in out, out
    assert f"seed 1: {note}; left out of the means" in out, out
    assert "no validation yet" not in out and "unfinished" not in out, out


def test_a_diverged_run_that_logged_nothing_is_listed_as_diverged(tmp_path, capsys):
    """A diverged run without an event file (its logger wrote none) was skipped with 'no
    event file'; its record says what happened to it, so it is listed as diverged."""
    logdir = tmp_path / "runs"
    finished_run(logdir / "rope-softmax-seed0", 0)
    run = logdir / "rope-softmax-seed1"
    run.mkdir()
    settings(run, 1)
    (run / DIVERGED_FILE).write_text(json.dumps({"step": 1}), encoding="utf-8")
    assert main(["compare", str(logdir)]) == 0
    captured = capsys.readouterr()
    assert "1 (0) + 1 diverged" in captured.out, captured.out
    assert "seed 1: diverged at step 1 of 30; left out of the means" in captured.out
    assert "skipped" not in captured.err, captured.err


def test_a_seed_that_diverged_then_finished_on_a_rerun_is_that_seed(tmp_path, capsys):
    """``-seed0`` diverged, ``-seed0-2`` (the same settings run again) finished: the
    finished run is seed 0, not left out as the same experiment twice."""
    logdir = tmp_path / "runs"
    diverged_run(logdir / "rope-softmax-seed0", 0, json.dumps({"step": 3}))
    finished_run(logdir / "rope-softmax-seed0-2", 0)
    assert main(["compare", str(logdir)]) == 0
    captured = capsys.readouterr()
    assert "1 (0) + 1 diverged" in captured.out, captured.out
    assert "the same experiment twice" not in captured.err, captured.err


def test_a_diverged_run_is_named_so_where_a_selection_leaves_its_value_out(tmp_path, capsys):
    """lr 0.003's seed 1 validated at step 10, then diverged at step 12: its value is no
    candidate, and the note says it diverged, not how far it validated."""
    runs = tmp_path / "runs"
    for seed in (0, 1):
        write_run(runs / f"lr1-seed{seed}", seed, 2.0)
    write_run(runs / "lr3-seed0", 0, 1.9, hparams={"learning_rate": 0.003})
    diverged = write_run(runs / "lr3-seed1", 1, 0.5, steps=11, hparams={"learning_rate": 0.003})
    (diverged / DIVERGED_FILE).write_text(json.dumps({"step": 12}), encoding="utf-8")
    capsys.readouterr()
    assert main(["compare", str(runs), "--select", "learning_rate", "--by", "val_loss"]) == 0
    out = capsys.readouterr().out
    assert "learning_rate=0.003: seed 1 diverged at step 12 of 30, not a candidate" in out, out


def poison_loss_at(monkeypatch: pytest.MonkeyPatch, step: int) -> None:
    """The training logits (so the loss) of optimiser step ``step`` (1-based) are NaN."""
    real = MaskedLM.masked_logits

    def masked_logits(self, *args, **kwargs):
        logits, targets = real(self, *args, **kwargs)
        if self.training and self.trainer.global_step + 1 == step:
            return logits * float("nan"), targets
        return logits, targets

    monkeypatch.setattr(MaskedLM, "masked_logits", masked_logits)


@pytest.mark.trainer
def test_a_fit_that_diverges_records_it_and_compare_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    poison_loss_at(monkeypatch, 3)
    assert main(fit_args("rope.yaml", 8)) == EXIT_DIVERGED
    (record,) = (tmp_path / "runs").rglob(DIVERGED_FILE)
    assert json.loads(record.read_text())["step"] == 3
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "diverged at step 3 of 8" in out and "no validation yet" not in out, out
    assert "0 + 1 diverged" in out, out
