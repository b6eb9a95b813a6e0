"""``compare --select KEY --by METRIC``: each group at its own best value, chosen on the
logged validation metric and never on the reported evaluation; intervals in compare.csv;
unfinished runs marked."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml
from torch.utils.tensorboard import SummaryWriter

from roformer_lit.commands import main

STEPS = 30
#: (position, learning rate) -> val/acc per seed at the training length (selection) and
#: test-split accuracy at n=64 per seed (reported): the best value differs between the two.
SELECTION = {
    ("rope", 0.001): [0.90, 0.92, 0.91],
    ("rope", 0.003): [0.80, 0.82, 0.81],
    ("alibi", 0.001): [0.50, 0.52, 0.51],
    ("alibi", 0.003): [0.70, 0.71, 0.69],
}
REPORTED = {
    ("rope", 0.001): [0.30, 0.31, 0.32],
    ("rope", 0.003): [0.60, 0.61, 0.62],
    ("alibi", 0.001): [0.65, 0.66, 0.67],
    ("alibi", 0.003): [0.20, 0.21, 0.22],
}


def write_run(run: Path, position: str, lr: float, seed: int, acc: float, steps: int) -> None:
    (run / "checkpoints").mkdir(parents=True)
    hparams = {"position": position, "attention": "softmax", "learning_rate": lr}
    (run / "hparams.yaml").write_text(yaml.safe_dump(hparams), encoding="utf-8")
    config = {"seed_everything": seed, "trainer": {"max_steps": STEPS}}
    (run / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    writer = SummaryWriter(str(run))
    for step in range(9, steps, 10):
        writer.add_scalar("val/loss", 2.0 - acc, step, walltime=1000.0 + step)
        writer.add_scalar("val/acc", acc, step, walltime=1000.0 + step)
    writer.close()


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("select")
    rows = [["name", "length", "metric", "value", "split"]]
    for (position, lr), accs in SELECTION.items():
        for seed, acc in enumerate(accs):
            run = root / "runs" / f"{position}-lr{lr}-seed{seed}"
            write_run(run, position, lr, seed, acc, STEPS)
            ckpt = run / "checkpoints" / "last.ckpt"
            rows.append([str(ckpt), "64", "acc", repr(REPORTED[(position, lr)][seed]), "test"])
    report = root / "test.csv"
    with report.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return root, report


def _compare(root: Path, report: Path | None, out: Path, by: str = "val_acc") -> list[dict]:
    argv = ["compare", str(root / "runs"), "--out", str(out), "--select", "learning_rate"]
    argv += ["--by", by] + ([] if report is None else ["--report", str(report)])
    assert main(argv) == 0
    with (out / "compare.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_each_group_is_at_its_best_value_on_selection_never_on_the_report(sweep, tmp_path):
    root, report = sweep
    rows = {r["group"]: r for r in _compare(root, report, tmp_path / "a")}
    assert set(rows) == {"rope-softmax", "alibi-softmax"}
    # the selection split picks 1e-3 for rope and 3e-3 for alibi; the report would pick
    # the opposite: the choice follows selection
    assert float(rows["rope-softmax"]["learning_rate"]) == 0.001
    assert float(rows["alibi-softmax"]["learning_rate"]) == 0.003
    # the reported numbers are the chosen runs' (mean of the report's three seeds)
    assert float(rows["rope-softmax"]["report_acc_n64_mean"]) == pytest.approx(0.31)
    assert float(rows["alibi-softmax"]["report_acc_n64_mean"]) == pytest.approx(0.21)
    # a report that says otherwise changes nothing about the choice
    without = {r["group"]: r["learning_rate"] for r in _compare(root, None, tmp_path / "b")}
    assert without == {g: r["learning_rate"] for g, r in rows.items()}


@pytest.mark.parametrize(
    "logged,name",
    [("val/acc", "val_acc"), ("val/loss", "val_loss"), ("val/best_loss", "best_val_loss")],
)
def test_by_takes_the_metric_as_every_table_names_it(sweep, tmp_path, logged, name):
    root, _ = sweep
    rows = [_compare(root, None, tmp_path / by, by=by) for by in (logged, name)]
    for table in rows:  # the text that says which name was given aside
        for row in table:
            assert row.pop("selected_by").startswith("mean ")
    assert rows[0] == rows[1]


def test_intervals_are_student_t_over_seeds(sweep, tmp_path):
    stats = pytest.importorskip("scipy.stats")
    root, report = sweep
    rows = {r["group"]: r for r in _compare(root, report, tmp_path / "c")}
    accs = SELECTION[("rope", 0.001)]
    mean = sum(accs) / 3
    low, high = stats.t.interval(0.95, 2, loc=mean, scale=stats.sem(accs))
    row = rows["rope-softmax"]
    assert float(row["val_acc_mean"]) == pytest.approx(mean)
    assert float(row["val_acc_ci_low"]) == pytest.approx(low)
    assert float(row["val_acc_ci_high"]) == pytest.approx(high)
    reported = REPORTED[("rope", 0.001)]
    low, high = stats.t.interval(0.95, 2, loc=0.31, scale=stats.sem(reported))
    assert float(row["report_acc_n64_ci_low"]) == pytest.approx(low)


def test_a_loss_is_selected_at_its_minimum(sweep, tmp_path):
    root, _ = sweep
    rows = {r["group"]: r for r in _compare(root, None, tmp_path / "d", by="val_loss")}
    # val/loss = 2 - acc: the same choice as the highest accuracy
    assert float(rows["rope-softmax"]["learning_rate"]) == 0.001
    assert float(rows["alibi-softmax"]["learning_rate"]) == 0.003


_SELECT = ["--select", "learning_rate", "--by", "val_acc", "--report"]
#: --report files that are not extrapolate CSVs (the content follows "BAD:").
BAD_REPORT = {
    "header": [*_SELECT, "BAD:a,b\n1,2\n"],
    "value": [*_SELECT, "BAD:name,length,metric,value\nx/checkpoints/last.ckpt,64,acc,high\n"],
    "length": [*_SELECT, "BAD:name,length,metric,value\nx/checkpoints/last.ckpt,n,acc,0.5\n"],
    "split": [
        *_SELECT,
        "BAD:name,length,metric,value,split\nx/checkpoints/last.ckpt,64,acc,0.5,test\n"
        "y/checkpoints/last.ckpt,64,acc,0.5,val\n",
    ],
    # one run with two values: its last.ckpt and best.ckpt, or two evaluations in one file
    "twice": [
        *_SELECT,
        "BAD:name,length,metric,value,split\nx/checkpoints/last.ckpt,64,acc,0.5,test\n"
        "x/checkpoints/last.ckpt,64,acc,0.5,test\nx/checkpoints/best.ckpt,64,acc,0.7,test\n",
    ],
}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--select", "learning_rate"], "--select KEY and --by METRIC go together"),
        (["--select", "warmup", "--by", "val_acc"], "no hyperparameter of these runs"),
        (["--select", "learning_rate", "--by", "val_speed"], "valid: val_loss"),
        (["--select", "seed", "--by", "val_acc"], "seeds are the replicates"),
        (["--select", "seed_everything", "--by", "val_acc"], "seeds are the replicates"),
        (["--select", "model.position", "--by", "val_acc"], "cannot be selected"),
        (["--select", "warmup", "--by", "val_acc"], "keys that differ between them: learning_rate"),
        (BAD_REPORT["header"], "columns length, metric, name, value expected, found a, b"),
        (BAD_REPORT["value"], "line 2: length '64' and value 'high' must be"),
        (BAD_REPORT["length"], "line 2: length 'n' and value '0.5' must be"),
        (BAD_REPORT["split"], "holds split 'test' and 'val'; --report needs split 'test'"),
        (BAD_REPORT["twice"], "line 4: x/checkpoints/best.ckpt acc at 64 is 0.7, and 0.5 on"),
    ],
)
def test_bad_selection_is_one_line(sweep, tmp_path, capsys, argv, message):
    root, _ = sweep
    capsys.readouterr()
    if argv[-1].startswith("BAD:"):  # a --report file of that content
        report = tmp_path / "report.csv"
        report.write_text(argv[-1].removeprefix("BAD:"), encoding="utf-8")
        argv = [*argv[:-1], str(report)]
    assert main(["compare", str(root / "runs"), "--out", str(tmp_path / "e"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error:") and message in err[-1]
    assert not (tmp_path / "e").exists()


def test_a_report_from_before_the_split_column_is_read_as_test_with_a_warning(
    sweep, tmp_path, capsys
):
    """An extrapolate --csv file written before the split column names no split: it is
    still read (the study's committed files are such files), and one warning line says
    that it is taken as the test split."""
    root, report = sweep
    old = tmp_path / "old.csv"
    with report.open(newline="") as handle, old.open("w", newline="") as target:
        writer = csv.writer(target)
        for row in csv.reader(handle):
            writer.writerow(row[:4])  # name, length, metric, value
    capsys.readouterr()
    rows = {r["group"]: r for r in _compare(root, old, tmp_path / "f")}
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning:" in line]
    assert len(warnings) == 1 and str(old) in warnings[0], warnings
    assert "names no split" in warnings[0] and "--split test" in warnings[0]
    with_split = {r["group"]: r for r in _compare(root, report, tmp_path / "g")}
    assert rows == with_split


def test_a_run_still_training_is_marked_unfinished(tmp_path, capsys):
    write_run(tmp_path / "runs" / "rope-seed0", "rope", 0.001, 0, 0.5, STEPS)
    write_run(tmp_path / "runs" / "rope-seed1", "rope", 0.001, 1, 0.5, 11)
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "seed 1: unfinished: last validated at step 10 of 30" in out
    assert "seed 0: unfinished" not in out


def test_the_markdown_cell_gives_the_t_interval():
    stats = pytest.importorskip("scipy.stats")
    from roformer_lit.results.compare.aggregate import Stat
    from roformer_lit.results.compare.table import format_stat

    values = [4.38, 4.46, 4.46]
    low, high = stats.t.interval(0.95, 2, loc=sum(values) / 3, scale=stats.sem(values))
    text = format_stat(Stat.of(values), 3, with_interval=True)
    assert text.endswith(f"[{low:.3f}, {high:.3f}]") and " ± " in text
    assert "[" not in format_stat(Stat.of(values), 3)
