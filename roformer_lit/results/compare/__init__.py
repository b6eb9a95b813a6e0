"""Comparing runs: ``python -m roformer_lit compare LOGDIR [--out DIR]``.

    runs = collect_runs("runs/")        # list[RunSummary], variants assigned
    rows = aggregate(runs)              # list[VariantRow], mean ± std over seeds
    print(to_markdown(rows))            # the table the command prints
    fig = val_loss_figure(rows, "step") # or "time"; a matplotlib Figure

Modules: ``runs`` (finding and summarising runs), ``variants`` (which runs are seeds of
one experiment), ``aggregate`` (mean/std), ``table`` (markdown, CSV), ``plots`` (PNG),
``cli`` (the command).
"""

from roformer_lit.results.compare.aggregate import METRICS, Stat, VariantRow, aggregate
from roformer_lit.results.compare.cli import main
from roformer_lit.results.compare.collect import collect_runs
from roformer_lit.results.compare.plots import save_plots, val_loss_figure, variant_curve
from roformer_lit.results.compare.runs import RunSummary, find_run_dirs, summarize_run
from roformer_lit.results.compare.table import COLUMNS, csv_columns, to_csv, to_markdown
from roformer_lit.results.compare.variants import assign_variants, differing_keys, variant_labels

__all__ = [
    "COLUMNS",
    "METRICS",
    "RunSummary",
    "Stat",
    "VariantRow",
    "aggregate",
    "assign_variants",
    "collect_runs",
    "csv_columns",
    "differing_keys",
    "find_run_dirs",
    "main",
    "save_plots",
    "summarize_run",
    "to_csv",
    "to_markdown",
    "val_loss_figure",
    "variant_curve",
    "variant_labels",
]
