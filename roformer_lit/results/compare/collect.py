"""``collect_runs(logdir)``: the summarised runs of one or several logdirs, with the variant
labels that tell them apart (:mod:`roformer_lit.results.compare.runs` finds and summarises runs,
:mod:`roformer_lit.results.compare.variants` labels them)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from roformer_lit.errors import ConfigError
from roformer_lit.results.compare.runs import Report, RunSummary, find_run_dirs, summarize_run
from roformer_lit.results.compare.variants import assign_variants
from roformer_lit.run_files import warn


def collect_runs(
    logdir: str | Path | Sequence[str | Path],
    *,
    with_evaluation: bool = False,
    report: Report = warn,
) -> list[RunSummary]:
    """Summaries of the training runs under ``logdir`` (one directory or several) with
    variant labels assigned.

    ``with_evaluation=True`` keeps evaluation-only runs too (flagged ``evaluation_only``).
    Damaged runs are reported (one line per problem) and tabled from what can be read, or
    skipped if nothing can. Raises ConfigError if a ``logdir`` does not exist or there is no
    usable run at all.
    """
    roots = [logdir] if isinstance(logdir, (str, Path)) else list(logdir)
    where = ", ".join(str(r) for r in roots)
    dirs = _once(d for root in roots for d in find_run_dirs(root, report))
    if not dirs:
        raise ConfigError(f"no runs (TensorBoard event files or config.yaml) under {where}")
    runs = []
    for run_dir in dirs:
        run = summarize_run(run_dir)
        if run.unusable is not None:
            report(f"{run_dir}: {run.unusable}; skipped")
            continue
        for problem in run.problems:
            report(f"{run_dir}: {problem}; its row shows what could be read")
        runs.append(run)
    if not runs:
        raise ConfigError(
            f"no usable runs under {where}: all {len(dirs)} run directories were skipped "
            "(see the warnings)"
        )
    training = assign_variants([r for r in runs if not r.evaluation_only])
    if not with_evaluation:
        return training
    return training + [r for r in runs if r.evaluation_only]


def _once(dirs: Iterable[Path]) -> list[Path]:
    """``dirs`` sorted, each real directory once: a run reached through two logdirs, or
    through a link and its target, is one run (the first path by sort order is kept)."""
    kept: dict[str, Path] = {}
    for path in sorted(set(dirs)):
        kept.setdefault(os.path.realpath(path), path)
    return sorted(kept.values())
