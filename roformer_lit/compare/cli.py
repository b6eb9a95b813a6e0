"""``python -m roformer_lit compare LOGDIR [--out DIR]``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from roformer_lit.compare.aggregate import aggregate
from roformer_lit.compare.plots import save_plots
from roformer_lit.compare.runs import collect_runs
from roformer_lit.compare.table import (
    evaluation_markdown,
    runs_csv,
    to_csv,
    to_markdown,
    write_text,
)
from roformer_lit.errors import ConfigError

USAGE = """Compare the training runs under LOGDIR (any depth): one markdown row per variant,
mean ± std over seeds, best final val/loss first. Variants are position-attention plus every
hyperparameter that differs between runs, never the seed. With --out DIR, also write
compare.csv (mean and std columns), compare.md, runs.csv (one row per run),
val_loss_vs_step.png and val_loss_vs_time.png into DIR."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line through the CLI, no usage dump
        raise ConfigError(f"compare: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m roformer_lit compare", description=USAGE)
    parser.add_argument("logdir", help="directory holding runs, e.g. runs/ or runs/mlm")
    parser.add_argument("--out", default=None, help="write CSV, markdown and PNG plots here")
    return parser


def main(args: Sequence[str]) -> int:
    ns = build_parser().parse_args(list(args))
    runs = collect_runs(ns.logdir, with_evaluation=True)
    training = [r for r in runs if not r.evaluation_only]
    evaluation = [r for r in runs if r.evaluation_only]
    if not training:
        raise ConfigError(
            f"no training runs under {ns.logdir} (only {len(evaluation)} evaluation-only runs)"
        )
    rows = aggregate(training)
    table = to_markdown(rows)
    print(table)
    if evaluation:
        print()
        print(evaluation_markdown(evaluation))
    if ns.out is not None:
        out = Path(ns.out)
        written = [
            write_text(out / "compare.csv", to_csv(rows)),
            write_text(out / "compare.md", table),
            write_text(out / "runs.csv", runs_csv(training)),
            *save_plots(rows, out),
        ]
        for path in written:
            print(f"wrote {path}", file=sys.stderr)
    return 0
