"""``python -m roformer_lit compare LOGDIR [LOGDIR ...] [--out DIR]``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from roformer_lit.errors import ConfigError
from roformer_lit.results.compare.aggregate import aggregate
from roformer_lit.results.compare.collect import collect_runs
from roformer_lit.results.compare.downstream import (
    aggregate_downstream,
    downstream_data_notes,
    is_finetune,
)
from roformer_lit.results.compare.downstream_plot import PLOT_FILE as DOWNSTREAM_PLOT
from roformer_lit.results.compare.downstream_plot import downstream_figure
from roformer_lit.results.compare.downstream_table import runs_csv as downstream_runs_csv
from roformer_lit.results.compare.downstream_table import to_csv as downstream_csv
from roformer_lit.results.compare.downstream_table import to_markdown as downstream_markdown
from roformer_lit.results.compare.out_files import Writer, text_file, write_out_files
from roformer_lit.results.compare.plots import PLOT_FILES, plot_files
from roformer_lit.results.compare.select import read_report, reported, select, selection_metric
from roformer_lit.results.compare.select import to_csv as selected_csv
from roformer_lit.results.compare.select import to_markdown as selected_markdown
from roformer_lit.results.compare.table import (
    evaluation_markdown,
    runs_csv,
    to_csv,
    to_markdown,
)
from roformer_lit.results.compare.variants import assign_variants, data_note
from roformer_lit.run_files import expand_arguments, output_target, warn
from roformer_lit.safe_input import missing_path_hint
from roformer_lit.tool_arguments import OUTPUT_DIRECTORY, ToolParser

USAGE = """Compare the training runs under LOGDIR (any depth; several LOGDIRs and quoted globs
are accepted): one markdown row per variant, mean ± std over seeds, best final val/loss
first. Variants are position-attention plus every hyperparameter that differs between runs,
never the seed, and the data the runs recorded (data=<first hex digits of its content
identity>) where the same settings named files whose content differed (one note line says
so). Damaged runs are tabled from what can be read (a note column says what is
missing) or skipped, with one warning line each. With --out DIR, also write compare.csv
(mean and std columns), compare.md, runs.csv (one row per run), val_loss_vs_step.png and
val_loss_vs_time.png into DIR; note lines first name the files DIR held that are
replaced, and those of an earlier comparison that this one leaves as they were.

Fine-tune runs (python -m roformer_lit finetune) get their own table: one row per task and
pretraining variant (the pretrained runs' position-attention and differing hyperparameters,
read from the run of each fine-tune's model.pretrained checkpoint), the task's metrics of
each run's best validation as mean ± std over fine-tuning seeds and over pretraining seeds,
beside the pretrained runs' MLM val/loss; --out adds downstream.csv, downstream.md,
downstream_runs.csv and downstream.png.

With --select KEY --by METRIC (e.g. --select learning_rate --by val_acc), runs that differ
only in KEY and seed form a group, and each group is reported at its own best KEY: the
value whose mean METRIC over seeds (logged at validation, at the training length) is best.
--report FILE (extrapolate --split test --csv FILE) adds the chosen runs' numbers from that
other evaluation; the choice never reads it, and a file of another split (extrapolate
--split val) is refused. compare.csv then has one row per group, the
chosen value in the column named after KEY, every mean with <metric>_ci_low and
<metric>_ci_high (95 % t-interval over seeds, cut to the metric's range). A run that has not validated at its
last step (its max_steps, or where its epochs end) is marked unfinished in the note column."""


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser("compare", description=USAGE)
    parser.add_argument(
        "logdir", nargs="+", help="directories holding runs, e.g. runs/ or runs/mlm"
    )
    parser.add_argument(
        "--out",
        type=OUTPUT_DIRECTORY,
        default=None,
        help="write CSV, markdown and PNG plots here",
    )
    parser.add_argument(
        "--select",
        default=None,
        metavar="KEY",
        help="report each group of runs at its best value of this hyperparameter",
    )
    parser.add_argument(
        "--by",
        default=None,
        metavar="METRIC",
        help="the selection metric (val_loss, best_val_loss, val_ppl: lowest; val_acc, "
        "val_exact: highest), as logged at validation",
    )
    parser.add_argument(
        "--report",
        default=None,
        metavar="CSV",
        help="with --select: an extrapolate --split test --csv file whose rows give the "
        "chosen runs' reported numbers (a file of another split is refused)",
    )
    return parser


def not_a_log_directory(path: Path) -> str:
    """What a LOGDIR that is a file is, and what compare reads instead: a run directory or
    one holding runs; a checkpoint's run is the directory holding its ``checkpoints/``."""
    path = Path(path)
    if path.parent.name == "checkpoints":
        return (
            f"not a directory: {path} is a checkpoint file; compare reads run directories "
            f"(give its run, {path.parent.parent}, or a directory holding runs)"
        )
    return f"not a directory: {path}; compare reads run directories or directories holding runs"


def log_directories(arguments: Sequence[str]) -> list[Path]:
    """The LOGDIR arguments as existing directories (quoted globs expanded). One that names
    nothing or no directory is a warning while another is usable, else a ConfigError."""
    paths, unmatched = expand_arguments(arguments)
    directories = [p for p in paths if os.path.isdir(p)]
    problems = [f"log directory not found: {a}{missing_path_hint(a)}" for a in unmatched]
    problems += [not_a_log_directory(p) for p in paths if not os.path.isdir(p)]
    if not directories:
        raise ConfigError("; ".join(problems))
    for problem in problems:
        warn(f"{problem}; skipped")
    return directories


#: Every file ``--out`` may receive.
OUT_FILES = (
    "compare.csv",
    "compare.md",
    "runs.csv",
    *PLOT_FILES.values(),
    "downstream.csv",
    "downstream.md",
    "downstream_runs.csv",
    DOWNSTREAM_PLOT,
)


def _check_out(out: Path, reads: Sequence[str]) -> None:
    """``--out`` names a directory that is no run's, in which each file can be written
    and none is read here."""
    output_target(out, "--out", directory=True)
    for name in OUT_FILES:
        output_target(out / name, "--out", reads)


def main(args: Sequence[str]) -> int:
    ns = build_parser().parse_args(list(args))
    if (ns.select is None) != (ns.by is None) or (ns.report is not None and ns.select is None):
        raise ConfigError("compare: --select KEY and --by METRIC go together (--report needs them)")
    if ns.by is not None:  # a wrong metric is refused before any run is read
        ns.by = selection_metric(ns.by)
    out = Path(ns.out) if ns.out is not None else None
    if out is not None:
        _check_out(out, [ns.report] if ns.report is not None else [])
    logdirs = log_directories(ns.logdir)
    where = ", ".join(str(d) for d in logdirs)
    runs = collect_runs(logdirs, with_evaluation=True)
    training = [r for r in runs if not r.evaluation_only]
    evaluation = [r for r in runs if r.evaluation_only]
    if not training:
        raise ConfigError(
            f"no training runs under {where} (only {len(evaluation)} evaluation-only runs)"
        )
    finetune = [r for r in training if is_finetune(r)]
    if finetune:  # MLM runs are labelled among themselves, without the fine-tunes
        mlm = [r for r in training if not is_finetune(r)]
        training = assign_variants(mlm) if mlm else []
    if ns.select is not None and finetune:  # a fine-tune is no candidate of a selection
        raise ConfigError(
            f"compare: --select chooses among pretraining runs, and {where} holds "
            f"{len(finetune)} fine-tune run(s) ({finetune[0].path}) that it would leave "
            "out; give the pretraining runs' directory alone, or compare the fine-tunes "
            "without --select"
        )
    notes = [n for n in [data_note(training), *downstream_data_notes(finetune)] if n]
    if ns.select is not None:
        return _main_selected(ns, training, out, notes)
    for note in notes:
        print(note, file=sys.stderr)
    rows = aggregate(training)
    table = to_markdown(rows) if training else ""
    if training:
        print(table)
    downstream = aggregate_downstream(finetune) if finetune else []
    downstream_table = downstream_markdown(downstream) if downstream else ""
    if downstream:
        if training:
            print()
        print(downstream_table)
    if evaluation:
        print()
        print(evaluation_markdown(evaluation))
    if out is not None:
        files: dict[str, Writer] = {}
        if training:
            files |= {
                "compare.csv": text_file(to_csv(rows)),
                "compare.md": text_file(table),
                "runs.csv": text_file(runs_csv(training)),
                **plot_files(rows),
            }
        if downstream:
            files |= {
                "downstream.csv": text_file(downstream_csv(downstream)),
                "downstream.md": text_file(downstream_table),
                "downstream_runs.csv": text_file(downstream_runs_csv(downstream)),
                DOWNSTREAM_PLOT: lambda path: downstream_figure(downstream).savefig(path),
            }
        write_out_files(out, files, OUT_FILES)
    return 0


def _main_selected(
    ns: argparse.Namespace, training: list, out: Path | None, notes: Sequence[str]
) -> int:
    """``--select KEY --by METRIC``: each group at its chosen value (see
    :mod:`roformer_lit.results.compare.select`). The ``notes`` on the runs' data are
    printed once the selection and its report are known to stand, so a refusal is the
    command's one line."""
    groups = select(training, ns.select, ns.by)
    if not groups:
        raise ConfigError(
            f"compare: --select {ns.select} --by {ns.by}: no group of runs has a candidate "
            f"value (each value needs every seed finished with {ns.by} logged; see the warnings)"
        )
    if ns.report is not None:
        reported(groups, read_report(Path(ns.report)))
    for note in notes:
        print(note, file=sys.stderr)
    table = selected_markdown(groups, ns.by)
    print(table)
    if out is not None:
        write_out_files(
            out,
            {
                "compare.csv": text_file(selected_csv(groups, ns.by)),
                "compare.md": text_file(table),
                "runs.csv": text_file(runs_csv(training)),
            },
            OUT_FILES,
        )
    return 0
