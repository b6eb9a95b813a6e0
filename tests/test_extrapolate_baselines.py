"""``extrapolate`` on position-task runs: baseline rows, the long ``--csv``, each cell's
verdict and step, input lengths under the corpus minimum, and one warning per problem."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest
from cli_helpers import probe_fit_args

from roformer_lit.commands import main
from roformer_lit.data.probes import PROBE_TASKS, ProbeValidation


def _fit(workdir: Path, task: str, steps: int, *extra: str) -> Path:
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        assert main(probe_fit_args(task, steps, steps, 4, *extra)) == 0
    (ckpt,) = workdir.glob("runs/probes/*/checkpoints/last.ckpt")
    return ckpt


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def nope_copy(tmp_path_factory) -> Path:
    """A nope run on copy long enough to learn the one thing it can: the input's majority."""
    workdir = tmp_path_factory.mktemp("nope-copy")
    return _fit(
        workdir,
        "copy",
        200,
        "--model.position",
        "nope",
        "--model.warmup_steps",
        "10",
        "--data.max_val_blocks",
        "64",
    )


def test_csv_has_the_runs_and_the_majority_baseline_of_the_same_sequences(
    nope_copy: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "cells.csv"
    budget = tmp_path / "budget.csv"
    argv = ["extrapolate", str(nope_copy), "--lengths", "8", "16", "--csv", str(out)]
    assert main([*argv, "--budget", str(budget)]) == 0
    rows = _rows(out)
    assert list(rows[0]) == ["name", "length", "metric", "value", "split"]
    assert list(_rows(budget)[0]) == ["name", "step", "length", "metric", "value", "split"]
    assert {r["step"] for r in _rows(budget) if r["name"] == str(nope_copy)} == {"200"}
    runs = [r for r in rows if r["name"] == str(nope_copy)]
    assert {(r["length"], r["metric"]) for r in runs} == {
        (n, m) for n in ("8", "16") for m in ("acc", "exact", "loss")
    }
    for n in (8, 16):
        # oracle: the majority rule sequence by sequence on the run's validation sequences
        data = ProbeValidation(PROBE_TASKS["copy"], symbols=16, length=n, count=64, seed=0)
        hits = 0
        for ids in data.input_ids.tolist():
            counts = Counter(ids[:n])
            mode = min(s for s, c in counts.items() if c == max(counts.values()))
            hits += counts[mode]
        majority = hits / (64 * n)
        (row,) = [
            r
            for r in rows
            if r["name"] == "baseline:majority" and r["length"] == str(n) and r["metric"] == "acc"
        ]
        assert float(row["value"]) == pytest.approx(majority, abs=1e-12)
        (acc,) = [r for r in runs if r["length"] == str(n) and r["metric"] == "acc"]
        # nope can do no better than the majority symbol; trained, it gets near it
        assert majority - 0.08 <= float(acc["value"]) <= majority + 1e-6
    printed = capsys.readouterr().out
    assert "| baseline:majority |" in printed and "(step 200)" in printed


@pytest.fixture(scope="module")
def recall_run(tmp_path_factory) -> Path:
    return _fit(tmp_path_factory.mktemp("recall"), "recall", 2, "--data.max_length", "33")


def test_a_position_task_is_evaluated_at_input_lengths_under_the_corpus_minimum(
    recall_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "cells.csv"
    assert main(["extrapolate", str(recall_run), "--lengths", "4", "--csv", str(out)]) == 0
    lengths = {r["length"] for r in _rows(out) if r["name"] == str(recall_run)}
    assert lengths == {"4"}


def test_an_input_length_too_short_for_a_block_is_one_line_naming_the_shortest(
    nope_copy: Path, tmp_path: Path, capsys
) -> None:
    """copy's sequences are 2n + 1 tokens and a block needs 8: n = 3 (7 tokens) is refused
    in one line that says why and names n = 4 as the shortest; n = 4 evaluates."""
    capsys.readouterr()
    assert main(["extrapolate", str(nope_copy), "--lengths", "3"]) == 2
    out, err = capsys.readouterr()
    (line,) = err.strip().splitlines()
    assert out == "" and line.startswith("error:") and "see the warning" not in line, err
    assert "fewer than 8 tokens" in line and "valid --lengths: 4 to" in line, line
    out_csv = tmp_path / "cells.csv"
    assert main(["extrapolate", str(nope_copy), "--lengths", "4", "--csv", str(out_csv)]) == 0
    assert {r["length"] for r in _rows(out_csv) if r["name"] == str(nope_copy)} == {"4"}


def test_one_warning_per_problem_naming_the_lengths_it_concerns(tmp_path: Path, capsys) -> None:
    ckpt = _fit(tmp_path, "copy", 2, "--data.random_positions", "24")
    capsys.readouterr()
    argv = ["extrapolate", str(ckpt), "--positions", "random", "--lengths", "8", "16", "32"]
    assert main(argv) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning:" in line]
    assert len(warnings) == 1, warnings
    assert "--lengths 16 32" in warnings[0] and "random_positions=24" in warnings[0]
    assert "data.max_length" not in warnings[0]


@pytest.mark.parametrize(
    ("exact", "acc", "expected"),
    [(0.95, 0.99, "solved"), (0.5, 0.4, "> baseline"), (0.0, 0.2, ""), (0.9, 0.1, "solved")],
)
def test_a_cell_s_verdict(exact: float, acc: float, expected: str) -> None:
    from roformer_lit.results.extrapolate_rows import CellScores, seed_verdict, verdict

    cell = CellScores(8, acc=acc, exact=exact, baselines={"majority": (0.3, 0.0), "u": (0.1, 0)})
    assert verdict(cell) == expected
    below = CellScores(8, acc=0.25, exact=0.0, baselines={"majority": (0.3, 0.0)})
    assert seed_verdict([cell, cell]) == (
        "solved" if expected == "solved" else "> baseline on every seed" if expected else ""
    )
    assert seed_verdict([cell, below]) == ""


def test_split_test_evaluates_other_sequences_from_another_stream(
    recall_run: Path, tmp_path, capsys
):
    """``--split test``: held-out sequences (the ``test`` generator stream), baselines scored
    on them; a corpus run has no such split (one line)."""
    from roformer_lit.data.probes import baseline_scores

    got = {}
    for split, says in (("val", "validation sequences"), ("test", "held-out test sequences")):
        out = tmp_path / f"{split}.csv"
        argv = ["extrapolate", str(recall_run), "--lengths", "6", "--csv", str(out)]
        capsys.readouterr()
        assert main([*argv, "--split", split]) == 0
        got[split] = {(r["name"], r["metric"]): float(r["value"]) for r in _rows(out)}
        err = capsys.readouterr().err
        assert says in err  # the stderr line names the sequences evaluated
        if split == "test":  # held-out sequences are never what validate evaluates
            assert "(= validate's)" not in err
    task = PROBE_TASKS["recall"]
    for split, stream in (("val", "val"), ("test", "test")):
        data = ProbeValidation(task, symbols=32, length=6, count=16, seed=0, stream=stream)
        scores = baseline_scores(task, data.input_ids.numpy(), data.labels.numpy(), 32)
        majority = next(s.acc for s in scores if s.rule == "majority")
        assert got[split][("baseline:majority", "acc")] == pytest.approx(majority, abs=1e-12)
    val = ProbeValidation(task, symbols=32, length=6, count=16, seed=0)
    test = ProbeValidation(task, symbols=32, length=6, count=16, seed=0, stream="test")
    assert not (val.input_ids == test.input_ids).all()


def test_the_csv_names_its_split_and_compare_reports_the_test_split_alone(
    recall_run: Path, tmp_path, capsys
):
    """A ``--report`` written by ``extrapolate --split val`` (the sequences the selection
    was made on) was tabled by ``compare --select`` as the held-out evaluation: the file
    did not say which split it held. Every row now names it, and compare refuses another
    split in one line naming the file, its split and the one needed."""
    run = recall_run.parent.parent
    for split in ("val", "test"):
        out = tmp_path / f"{split}.csv"
        argv = ["extrapolate", str(recall_run), "--lengths", "6", "--split", split]
        assert main([*argv, "--csv", str(out)]) == 0
        rows = _rows(out)
        assert any(r["name"].startswith("baseline:") for r in rows)  # baselines too
        assert {r["split"] for r in rows} == {split}
        capsys.readouterr()
        select = ["--select", "learning_rate", "--by", "val_acc", "--report", str(out)]
        code = main(["compare", str(run), *select])
        err = capsys.readouterr().err
        if split == "test":
            assert code == 0 and "error" not in err and "warning" not in err, err
            continue
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert code == 2 and len(errors) == 1 and "Traceback" not in err, err
        assert str(out) in errors[0] and "split 'val'" in errors[0]
        assert "needs split 'test'" in errors[0]
