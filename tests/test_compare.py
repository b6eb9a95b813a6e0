"""``compare``: tables, CSV and plots from real tiny runs, checked against the raw events."""

from __future__ import annotations

import csv
import dataclasses
import shutil
import statistics
from pathlib import Path

import matplotlib.image
import pytest
from cli_helpers import CONFIGS, TINY

from roformer_lit.commands import main
from roformer_lit.results.compare import (
    COLUMNS,
    RunSummary,
    aggregate,
    assign_variants,
    collect_runs,
    csv_columns,
    to_csv,
    to_markdown,
    val_loss_figure,
    variant_labels,
)
from roformer_lit.results.events import read_run
from roformer_lit.run_files import TOTAL_STEPS_TAG

SCHEMES = ("nope", "rope")
SEEDS = (1, 2)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """2 schemes x 2 seeds of 6 steps each, a validate of one of them, and a validate-only
    run directory beside them."""
    workdir = tmp_path_factory.mktemp("sweep")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        for scheme in SCHEMES:
            for seed in SEEDS:
                args = [
                    "fit",
                    "--config",
                    str(CONFIGS / "rope.yaml"),
                    *TINY,
                    "--trainer.max_steps",
                    "6",
                    "--trainer.val_check_interval",
                    "3",
                    "--trainer.log_every_n_steps",
                    "2",
                    "--model.learning_rate",
                    "3e-3",
                    "--model.position",
                    scheme,
                    "--seed_everything",
                    str(seed),
                ]
                assert main(args) == 0
        run = workdir / "runs" / "mlm" / "rope-softmax-seed1"
        validate = ["validate", "--config", str(CONFIGS / "rope.yaml"), *TINY]
        validate += [
            "--seed_everything",
            "1",
            "--ckpt_path",
            str(run / "checkpoints" / "last.ckpt"),
        ]
        assert main(validate) == 0  # its results go into the run it evaluates
    # a validate-only run directory as older versions wrote them (events, no checkpoints)
    legacy = run.with_name("rope-softmax-seed1-validate")
    if not legacy.exists():
        legacy.mkdir()
        for path in run.iterdir():
            if path.is_file() and path.name != "evaluations.jsonl":
                shutil.copy(path, legacy / path.name)
    return workdir / "runs"


def _table_rows(text: str) -> dict[str, list[str]]:
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == COLUMNS
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0].endswith("-validate"):  # the evaluation-only table
            continue
        rows[cells[0]] = cells
    return rows


def test_compare_prints_one_row_per_variant(sweep, capsys):
    assert main(["compare", str(sweep)]) == 0
    out = capsys.readouterr().out
    training_table = out.split("\n\n")[0]
    rows = _table_rows(training_table)
    assert set(rows) == {"nope-softmax", "rope-softmax"}
    for cells in rows.values():
        assert cells[1].startswith("2 (1, 2)")
        assert len(cells) == len(COLUMNS)
        for cell in cells[2:]:
            assert "nan" not in cell.lower() and cell != "–", cells
            assert "±" in cell
    # sorted by mean final val/loss
    means = [float(rows[v][2].split("±")[0]) for v in rows]
    assert means == sorted(means)
    # the validate run is reported apart, never as a seed of a variant
    assert "rope-softmax-seed1-validate" in out.split("\n\n")[1]


def test_mean_and_std_match_the_raw_events(sweep):
    rows = {row.variant: row for row in aggregate(collect_runs(sweep))}
    row = rows["rope-softmax"]
    assert row.n == 2 and row.seeds == [1, 2]
    events = [read_run(sweep / "mlm" / f"rope-softmax-seed{s}") for s in SEEDS]
    final = [e.scalars["val/loss"][-1].value for e in events]
    best = [min(s.value for s in e.scalars["val/loss"]) for e in events]
    acc = [e.scalars["val/acc"][-1].value for e in events]
    ppl = [e.scalars["val/ppl"][-1].value for e in events]
    tokens = [statistics.median(s.value for s in e.scalars["perf/tokens_per_s"]) for e in events]
    memory = [max(s.value for s in e.scalars["perf/peak_mem_mb"]) for e in events]
    # every metric's scalars: the run's length record (logged when training starts) is none
    metrics = [{t: p for t, p in e.scalars.items() if t != TOTAL_STEPS_TAG} for e in events]
    every = [[s for series in m.values() for s in series] for m in metrics]
    steps = [max(s.step for s in points) + 1 for points in every]
    # wall time runs from the length record (logged as training starts), not from the
    # first metric, which comes only after a step has trained
    starts = [min(s.wall_time for s in e.scalars[TOTAL_STEPS_TAG]) for e in events]
    wall = [max(s.wall_time for s in p) - t0 for p, t0 in zip(every, starts, strict=True)]
    assert all(t0 < min(s.wall_time for s in p) for p, t0 in zip(every, starts, strict=True))
    expected = {
        "final_val_loss": final,
        "best_val_loss": best,
        "val_acc": acc,
        "val_ppl": ppl,
        "tokens_per_s": tokens,
        "peak_mem_mb": memory,
        "steps": steps,
        "wall_time_s": wall,
    }
    assert steps == [6, 6]
    for metric, values in expected.items():
        stat = row.stats[metric]
        assert stat.n == 2
        assert stat.mean == pytest.approx(statistics.fmean(values), rel=1e-9), metric
        assert stat.std == pytest.approx(statistics.stdev(values), rel=1e-9, abs=1e-12), metric
    series = row.runs[0].val_loss_series
    assert [(s, t, v) for s, t, v in series] == [
        (p.step, p.wall_time - starts[0], p.value) for p in events[0].scalars["val/loss"]
    ]


def test_out_writes_csv_and_plots(sweep, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["compare", str(sweep), "--out", str(out)]) == 0
    with open(out / "compare.csv", newline="") as f:
        records = list(csv.DictReader(f))
    rows = aggregate(collect_runs(sweep))
    assert [r["variant"] for r in records] == [row.variant for row in rows]
    assert list(records[0]) == csv_columns(rows)
    for name in ("final_val_loss", "val_acc", "tokens_per_s", "wall_time_s"):
        assert f"{name}_mean" in records[0] and f"{name}_std" in records[0]
    for record, row in zip(records, rows, strict=True):
        assert record["n_seeds"] == "2"
        assert float(record["final_val_loss_mean"]) == row.stats["final_val_loss"].mean
        assert float(record["final_val_loss_std"]) == row.stats["final_val_loss"].std
    assert (out / "compare.md").read_text().strip() == to_markdown(rows)
    for name in ("val_loss_vs_step.png", "val_loss_vs_time.png"):
        image = matplotlib.image.imread(out / name)
        assert image.shape[0] > 100 and image.shape[1] > 100


@pytest.mark.parametrize("axis", ["step", "time"])
def test_figure_lines_are_the_variants(sweep, axis):
    rows = aggregate(collect_runs(sweep))
    fig = val_loss_figure(rows, axis)
    ax = fig.axes[0]
    _, labels = ax.get_legend_handles_labels()
    assert labels == [row.variant for row in rows]
    assert ax.get_xlabel() == (
        "optimizer steps done (as the table's steps column)"
        if axis == "step"
        else "wall time since run start (s)"
    )
    if axis == "step":  # the last point sits at the table's steps, not one before
        last = max(max(line.get_xdata()) for line in ax.get_lines())
        assert last == max(row.stats["steps"].mean for row in rows)
    assert "val/loss" in ax.get_ylabel()
    assert ax.get_title()


def _summary(position: str, seed: int, **hparams) -> RunSummary:
    hp = {"position": position, "attention": "softmax", "hidden_size": 32, "seed": 0, **hparams}
    return RunSummary(
        path=f"runs/{position}-{seed}",
        position=position,
        attention="softmax",
        seed=seed,
        hparams=hp,
        final_val_loss=float(seed),
    )


#: runs of one variant -> the seeds its row counts (each seed once; the first by path kept).
SAME_SEEDS = {
    "a run made twice (-2)": (
        [("runs/rope-0", 0, 0), ("runs/rope-0-2", 0, 0), ("runs/rope-1", 1, 0)],
        ["runs/rope-0", "runs/rope-1"],
    ),
    "another data seed is another replicate": (
        [("runs/rope-0", 0, 0), ("runs/rope-0-data1", 0, 1)],
        ["runs/rope-0", "runs/rope-0-data1"],
    ),
    "unknown seeds are never taken for one another": (
        [("runs/a", None, 0), ("runs/b", None, 0)],
        ["runs/a", "runs/b"],
    ),
}


@pytest.mark.parametrize("case", list(SAME_SEEDS))
def test_each_seed_counts_once_in_a_variant(case):
    given, kept = SAME_SEEDS[case]
    runs = [
        RunSummary(
            path=path,
            position="rope",
            attention="softmax",
            seed=seed,
            hparams={"position": "rope", "attention": "softmax", "seed": data_seed},
            final_val_loss=float(len(path)),
        )
        for path, seed, data_seed in given
    ]
    reported: list[str] = []
    (row,) = aggregate(assign_variants(runs), report=reported.append)
    assert sorted(str(r.path) for r in row.runs) == kept
    assert row.stats["final_val_loss"].n == len(kept)
    left_out = sorted({p for p, _, _ in given} - set(kept))
    assert [line.split(":")[0] for line in reported] == left_out


def test_a_non_finite_metric_is_left_out_of_its_mean_and_said_so():
    """A finished seed whose final val/loss is NaN: the mean is over the other seeds (the
    value 1.0 + 3.0 written below, averaged by hand) and the row says which seed is out."""
    runs = [_summary("rope", seed) for seed in (1, 2, 3)]
    runs[1] = dataclasses.replace(runs[1], final_val_loss=float("nan"))
    (row,) = aggregate(assign_variants(runs))
    assert row.n == 3 and row.stats["final_val_loss"].n == 2
    assert row.stats["final_val_loss"].mean == pytest.approx((1.0 + 3.0) / 2)
    assert row.notes == ["seed 2: final val/loss is nan (diverged?): not in its mean"]
    assert "seed 2: final val/loss is nan" in to_markdown([row])


def test_deberta_term_ablation_gives_two_variants():
    runs = assign_variants(
        [
            _summary("deberta", 0, position_kwargs={"c2p": True, "p2c": False}),
            _summary("deberta", 1, position_kwargs={"c2p": True, "p2c": False}),
            _summary("deberta", 0, position_kwargs={"c2p": False, "p2c": True}),
            _summary("rope", 0, position_kwargs={}),
        ]
    )
    rows = aggregate(runs)
    # each option at its default (c2p and p2c are on) is the run without it
    assert sorted(row.variant for row in rows) == [
        "deberta-softmax c2p=false",
        "deberta-softmax p2c=false",
        "rope-softmax",
    ]
    assert {row.variant: row.n for row in rows}["deberta-softmax p2c=false"] == 2


def test_variants_split_on_other_hyperparameters_but_never_on_seeds():
    labels = variant_labels(
        [
            {"position": "rope", "attention": "softmax", "max_length": 128, "seed": 0},
            {"position": "rope", "attention": "softmax", "max_length": 512, "seed": 3},
            {"position": "rope", "attention": "softmax", "max_length": 512, "seed": 4},
        ]
    )
    assert labels == [
        "rope-softmax max_length=128",
        "rope-softmax max_length=512",
        "rope-softmax max_length=512",
    ]


def test_a_saved_as_argument_missing_from_a_newer_run_compares_as_its_default():
    """A position-task run saved by the flat data module of earlier versions carries the
    corpus's ``requested_vocab_size`` (``vocab_size`` saved under another name) at its
    default; the same run from the probe data module has no such key. Same variant: the
    default is read from the corpus data module's constructor under its saved name."""
    import inspect

    from roformer_lit.data.corpus_module import CorpusDataModule

    default = inspect.signature(CorpusDataModule.__init__).parameters["vocab_size"].default
    base = {"position": "rope", "attention": "softmax", "probe": "copy"}
    labels = variant_labels(
        [{**base, "requested_vocab_size": default, "seed": 0}, {**base, "seed": 1}]
    )
    assert labels[0] == labels[1] == "rope-softmax"
    other = variant_labels([{**base, "requested_vocab_size": default + 1}, base])
    assert other[0] != other[1]  # another value is still a difference


def test_single_seed_shows_mean_without_std():
    rows = aggregate(assign_variants([_summary("rope", 7)]))
    assert rows[0].stats["final_val_loss"].std is None
    line = to_markdown(rows).splitlines()[-1]
    assert "| 7.0000 |" in line and "±" not in line


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_compare_without_runs_is_a_one_line_error(tmp_path, capsys, make):
    target = tmp_path / "nothing"
    if make == "empty":
        (target / "sub").mkdir(parents=True)
    assert main(["compare", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err
    assert str(target) in err


def test_a_row_whose_metrics_cannot_all_be_read_says_so():
    damaged = _summary("rope", 2)
    damaged.problems = ["config.yaml: not valid YAML at line 1"]
    damaged.final_val_loss = None
    rows = aggregate(assign_variants([_summary("rope", 1), damaged, _summary("nope", 3)]))
    header, *lines = to_markdown(rows).splitlines()
    assert header.strip("| ").split(" | ")[-1] == "note"
    cells = {line.split("|")[1].strip(): line.split("|")[-2].strip() for line in lines[1:]}
    assert cells["rope-softmax"] == (
        "seed 2: config.yaml: not valid YAML at line 1; seed 2: no val/loss logged"
    )
    assert cells["nope-softmax"] == ""
    records = {r["variant"]: r for r in csv.DictReader(to_csv(rows).splitlines())}
    assert records["rope-softmax"]["note"] == cells["rope-softmax"]
    assert records["nope-softmax"]["note"] == ""
    # without notes the markdown table has no note column
    assert "note" not in to_markdown(aggregate([_summary("rope", 1)])).splitlines()[0]


def test_a_run_with_unreadable_hyperparameters_does_not_split_its_variant():
    full = _summary("rope", 1, max_steps=600)
    partial = _summary("rope", 2)  # its config.yaml could not be read: max_steps unknown
    partial.problems = ["config.yaml: not valid YAML"]
    other = _summary("rope", 3, max_steps=300)
    labels = [r.variant for r in assign_variants([full, partial, other])]
    assert labels == ["rope-softmax max_steps=600", "rope-softmax", "rope-softmax max_steps=300"]
    labels = [r.variant for r in assign_variants([full, partial])]
    assert labels == ["rope-softmax", "rope-softmax"]
    # a run that simply does not set the key is a different variant
    labels = [r.variant for r in assign_variants([full, _summary("rope", 2)])]
    assert labels == ["rope-softmax max_steps=600", "rope-softmax"]


def test_a_key_an_older_run_never_saved_counts_as_its_default():
    """Runs from before ``document_mask`` existed are the same variant as new runs with it
    off (its default, read from CorpusDataModule's signature), and differ from runs with it on."""
    import inspect

    from roformer_lit.data.corpus_module import CorpusDataModule

    default = inspect.signature(CorpusDataModule.__init__).parameters["document_mask"].default
    old = {"position": "rope", "attention": "softmax", "seed": 0}
    new = {"position": "rope", "attention": "softmax", "seed": 1, "document_mask": default}
    other = {**new, "document_mask": not default}
    assert variant_labels([old, new]) == ["rope-softmax", "rope-softmax"]
    labels = variant_labels([old, new, other])
    assert labels[0] != labels[2] and labels[1] != labels[2]
    # a key without a known default still splits: unknown is not equal
    assert len(set(variant_labels([old, {**new, "made_up_option": 1}]))) == 2


def test_a_failed_attempt_a_sweep_moved_aside_is_never_a_seed(sweep, tmp_path):
    """A sweep that restarts a run killed before its first checkpoint moves the partial
    directory aside (``<version>.failed-<k>``, events included); compare must not count it as
    another seed of its variant."""
    root = tmp_path / "runs"
    run = root / "mlm" / "nope-softmax-seed1"
    shutil.copytree(sweep / "mlm" / "nope-softmax-seed1", run)
    shutil.copytree(
        run,
        run.with_name("nope-softmax-seed1.failed-1"),
        ignore=shutil.ignore_patterns("checkpoints"),
    )
    reports: list[str] = []
    runs = collect_runs(root, report=reports.append)
    assert [r.seed for r in runs] == [1]
    assert [r.path.name for r in runs] == ["nope-softmax-seed1"]
    assert len(reports) == 1 and "nope-softmax-seed1.failed-1" in reports[0], reports


def test_compare_reads_the_constructor_defaults_without_importing_them():
    """The defaults compare reads from source equal the live signatures (the oracle), and
    reading runs imports none of the training stack."""
    import inspect
    import subprocess
    import sys

    from roformer_lit.data import CorpusDataModule, PretrainDataModule, ProbeDataModule
    from roformer_lit.encoder_config import EncoderConfig
    from roformer_lit.finetune.datamodule import TaskDataModule
    from roformer_lit.finetune.module import SequenceClassifier
    from roformer_lit.module import MaskedLM
    from roformer_lit.module_arguments import FLAT_KEYS
    from roformer_lit.results.compare.variants import SAVED_CLASSES, constructor_defaults
    from roformer_lit.training_config import TrainingConfig

    classes = (EncoderConfig, TrainingConfig, PretrainDataModule, CorpusDataModule, ProbeDataModule)
    live = {c.__name__: c for c in (*classes, SequenceClassifier, TaskDataModule)}
    package = Path(roformer_lit_root())
    for source, name in SAVED_CLASSES:
        read = constructor_defaults(package / source, name)
        signature = inspect.signature(live[name].__init__).parameters
        saved_as = getattr(live[name], "SAVED_AS", {})  # the name the class saves it under
        expected = {
            saved_as.get(k, k): p.default
            for k, p in signature.items()
            if p.default is not inspect.Parameter.empty
        }
        assert read == expected, name
    # MaskedLM saves the two configs' fields: read from source, they are its flat defaults
    flat = {
        k: p.default
        for k, p in inspect.signature(MaskedLM.__init__).parameters.items()
        if k in FLAT_KEYS
    }
    read = {}
    for source, name in SAVED_CLASSES[:2]:
        read |= constructor_defaults(package / source, name)
    assert read == flat
    probe = (
        "import sys; import roformer_lit.results.compare as c; c.variants.saved_defaults(); "
        "print(any(m in sys.modules for m in ('roformer_lit.module', "
        "'roformer_lit.data.datamodule', 'roformer_lit.finetune.module')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def roformer_lit_root() -> str:
    import roformer_lit

    return str(Path(roformer_lit.__file__).parent)


#: checkpoints of one variant (path, replicate) -> the seeds extrapolate's table counts.
REPLICATES = {
    "best and last of one run at one step": (
        [("r0/best.ckpt", ("seeds", 0, 0)), ("r0/last.ckpt", ("seeds", 0, 0))],
        None,  # one seed: no row over seeds
    ),
    "a run made twice (-2)": (
        [("r0/last.ckpt", ("seeds", 0, 0)), ("r0-2/last.ckpt", ("seeds", 0, 0))]
        + [("r1/last.ckpt", ("seeds", 1, 0))],
        2,
    ),
    "another data seed": (
        [("r0/last.ckpt", ("seeds", 0, 0)), ("d1/last.ckpt", ("seeds", 0, 1))],
        2,
    ),
    "unknown replicates stay apart": ([("a.ckpt", None), ("b.ckpt", None)], 2),
}


@pytest.mark.parametrize("case", list(REPLICATES))
def test_extrapolate_counts_each_replicate_once_over_seeds(case):
    from roformer_lit.results.extrapolate_seeds import CheckpointLosses, seed_table

    given, seeds = REPLICATES[case]
    checkpoints = [
        CheckpointLosses(
            hparams={"position": "rope", "attention": "softmax", "step": 2},
            losses=[float(i)],
            why_not=[None],
            path=path,
            replicate=replicate,
        )
        for i, (path, replicate) in enumerate(given)
    ]
    reported: list[str] = []
    table = seed_table(checkpoints, [16], report=reported.append)
    if seeds is None:
        assert table is None
    else:
        assert table.splitlines()[-1].split("|")[2].strip() == str(seeds)
    assert len(reported) == len(given) - (seeds or 1)


def test_a_failed_attempt_given_by_path_says_a_sweep_moved_it_aside(sweep, tmp_path, capsys):
    """A moved-aside attempt given to ``compare`` by path (a logdir's walk skips it) was
    tabled as an unfinished run with no word of what it is: now its note says a sweep
    moved it aside after a failed attempt at its run, and names that run."""
    run = sweep / "mlm" / "nope-softmax-seed1"
    aside = tmp_path / "mlm" / "nope-softmax-seed1.failed-2"
    shutil.copytree(run, aside, ignore=shutil.ignore_patterns("checkpoints"))
    (summary,) = collect_runs(aside, report=lambda line: None)
    (note,) = [n for n in summary.notes if "moved aside" in n]
    assert "failed attempt at run nope-softmax-seed1 " in note, note
    capsys.readouterr()
    assert main(["compare", str(aside)]) == 0
    assert (
        "failed attempt at run nope-softmax-seed1 that a sweep moved aside"
        in capsys.readouterr().out
    )
    # the run itself, under its own name, carries no such note
    (own,) = collect_runs(run, report=lambda line: None)
    assert not any("moved aside" in n for n in own.notes)


def _resumed_copy(sweep, root, seed: int, edit) -> None:
    """The sweep's ``nope`` run of ``seed`` under ``root``, with the
    ``config-resumed-1.yaml`` a resume writes: its ``config.yaml`` edited by ``edit``."""
    import yaml

    run = root / "mlm" / f"nope-softmax-seed{seed}"
    shutil.copytree(sweep / "mlm" / f"nope-softmax-seed{seed}", run)
    config = yaml.safe_load((run / "config.yaml").read_text())
    edit(config)
    (run / "config-resumed-1.yaml").write_text(yaml.safe_dump(config))


def _set(section: str, key: str, value):
    def edit(config):
        settings = config[section].get("init_args", config[section])
        settings[key] = value
        config["ckpt_path"] = "runs/mlm/x/checkpoints/last.ckpt"

    return edit


@pytest.mark.parametrize(
    ("edit", "variants"),
    [
        (_set("model", "dropout", 0.3), 2),  # resumed with --model.dropout 0.3
        (_set("data", "num_workers", 3), 1),  # the machine's: the same run
        (_set("model", "compile", False), 1),  # at the value it had: nothing changed
    ],
    ids=["dropout", "num_workers", "unchanged"],
)
def test_a_run_resumed_at_other_settings_is_not_averaged_with_runs_of_one(
    sweep, tmp_path, edit, variants
):
    """``fit --ckpt_path --model.dropout 0.3`` trains on at 0.3 (a ``note:`` line) and
    writes ``config-resumed-1.yaml``, while ``hparams.yaml`` keeps 0.1: compare tabled the
    run as a dropout-0.1 seed beside runs at 0.1 throughout. It is its own variant now,
    ``dropout=0.1 then 0.3``, with a note; a resume that changed nothing it compares is not."""
    root = tmp_path / "runs"
    _resumed_copy(sweep, root, 1, lambda config: None)
    _resumed_copy(sweep, root, 2, edit)
    runs = collect_runs(root, report=lambda line: None)
    rows = aggregate(runs)
    assert len(rows) == variants, [r.variant for r in rows]
    if variants == 2:
        (mixed,) = [r for r in runs if r.seed == 2]
        assert "dropout=0.1 then 0.3" in mixed.variant, mixed.variant
        assert any("model.dropout 0.1 then 0.3" in note for note in mixed.notes), mixed.notes
