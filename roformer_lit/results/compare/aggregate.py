"""Mean and spread over seeds: ``aggregate(runs) -> list[VariantRow]``.

For every metric, ``mean`` is over the runs of the variant that logged it and ``std`` is
the sample standard deviation (``ddof=1``) over those runs; with a single run ``std`` is
None (the table then shows the mean alone and the CSV leaves the std cell empty). Rows are
sorted by mean final ``val/loss``, variants without one last. A row's ``notes`` say which of
its runs had unreadable files or no ``val/loss`` (the table's note column).

Each seed counts once: runs of one variant with the same seeds (``seed_everything`` and the
data ``seed``) are the same experiment run twice (``fit`` run again goes to
``...-seed0-2``; two logdirs holding copies of one run), not two replicates, and counting
both would shrink the std and the interval with no new evidence. The first by path is kept
(``-seed0`` before ``-seed0-2``) and each one left out is one ``warning:`` line.

Only finished runs count (:attr:`RunSummary.finished`): a run that has not validated at its
last step, its ``trainer.max_steps`` or where its epochs end (still training, stopped,
crashed after a checkpoint) holds numbers of another length, and averaging
them with finished seeds would report neither. It stays in the row's seeds and notes
(``seed 2: unfinished: last validated at step 110 of 1500; left out of the means``) and in
``runs.csv``, and no mean, std or interval reads it; a row whose runs are all unfinished
shows no numbers.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roformer_lit.results.compare.runs import Report, RunSummary
from roformer_lit.run_files import warn

#: Metric attribute of RunSummary -> column heading, in table order.
METRICS: dict[str, str] = {
    "final_val_loss": "final val/loss",
    "best_val_loss": "best val/loss",
    "val_acc": "val/acc",
    "val_ppl": "val/ppl",
    "steps": "steps",
    "tokens_per_s": "tokens/s",
    "peak_mem_mb": "peak mem (MB)",
    "wall_time_s": "wall time (s)",
}


#: What an unfinished run's note adds (:class:`VariantRow`).
LEFT_OUT = "left out of the means"


@dataclass(frozen=True)
class Stat:
    """Mean and sample std over ``n`` runs; ``std`` is None when ``n < 2``."""

    mean: float | None
    std: float | None
    n: int

    @classmethod
    def of(cls, values: Sequence[float | None]) -> Stat:
        finite = [float(v) for v in values if v is not None and math.isfinite(v)]
        if not finite:
            return cls(None, None, 0)
        std = statistics.stdev(finite) if len(finite) > 1 else None
        return cls(statistics.fmean(finite), std, len(finite))


@dataclass
class VariantRow:
    """One variant: its runs (one per seed) and a :class:`Stat` per metric of METRICS."""

    variant: str
    runs: list[RunSummary]
    stats: dict[str, Stat]
    #: Its runs that have not validated at their last step: listed, never averaged.
    unfinished: list[RunSummary] = field(default_factory=list)
    #: Its runs that stopped on a non-finite loss (:attr:`RunSummary.diverged`): listed,
    #: never averaged, never a seed of the variant.
    diverged: list[RunSummary] = field(default_factory=list)

    @property
    def n(self) -> int:
        """The runs its means are over (finished runs, one per seed)."""
        return len(self.runs)

    @property
    def seeds(self) -> list[int | None]:
        return [r.seed for r in self.runs]

    @property
    def notes(self) -> list[str]:
        """Each run's notes (unreadable files, no val/loss, a metric that is not finite,
        unfinished), prefixed with its seed; an unfinished run's says it is left out of the
        means."""
        notes = [f"{_run_label(r)}: {note}" for r in self.runs for note in r.notes]
        notes += [f"{_run_label(r)}: {note}" for r in self.runs for note in _non_finite(r)]
        for run in [*self.unfinished, *self.diverged]:
            notes += [f"{_run_label(run)}: {note}" for note in run.notes]
            notes[-1] += f"; {LEFT_OUT}"
        return notes

    @property
    def first(self) -> RunSummary:
        """A run of the variant (all share its hyperparameters): the first averaged one,
        else the first unfinished one."""
        return (self.runs or self.unfinished or self.diverged)[0]

    @property
    def position(self) -> str:
        return self.first.position

    @property
    def attention(self) -> str:
        return self.first.attention


def _non_finite(run: RunSummary) -> list[str]:
    """``final val/loss is nan (diverged?): not in its mean``: a metric a finished run logged
    as NaN or infinite, which :meth:`Stat.of` leaves out of that metric's mean, std and
    interval, so a reader sees that mean is over fewer seeds than the row counts."""
    return [
        f"{label} is {value} (diverged?): not in its mean"
        for metric, label in METRICS.items()
        if isinstance(value := getattr(run, metric), float) and not math.isfinite(value)
    ]


def _run_label(run: RunSummary) -> str:
    return f"seed {run.seed}" if run.seed is not None else Path(run.path).name


def seeds_of(run: RunSummary) -> tuple[int, Any] | None:
    """What makes ``run`` a replicate of its variant: its ``seed_everything`` and data
    ``seed``; None where its seed is unknown (never taken for another run's)."""
    if run.seed is None:
        return None
    return (run.seed, run.hparams.get("seed"))


def once_per_seed(members: Sequence[RunSummary], report: Report = warn) -> list[RunSummary]:
    """``members`` (one variant's runs) with one run per seeds (:func:`seeds_of`), the
    first by path; each run left out is reported."""
    kept: dict[tuple[int, Any], RunSummary] = {}
    out = []
    for run in sorted(members, key=lambda r: str(r.path)):
        seeds = seeds_of(run)
        first = kept.setdefault(seeds, run) if seeds is not None else run
        if first is not run:
            report(
                f"{run.path}: the same variant with the same seeds (seed_everything "
                f"{run.seed}, data seed {run.hparams.get('seed')}) as {first.path}: the same "
                "experiment twice, not another seed; counted once, as that run"
            )
            continue
        out.append(run)
    return out


def aggregate(runs: Sequence[RunSummary], report: Report = warn) -> list[VariantRow]:
    """Group ``runs`` by ``variant`` and summarise each group, best final val/loss first;
    each seed counts once (:func:`once_per_seed`, a warning per run left out), and only its
    finished runs are averaged (module docstring)."""
    groups: dict[str, list[RunSummary]] = {}
    for run in runs:
        groups.setdefault(run.variant, []).append(run)
    rows = []
    for variant, members in groups.items():
        diverged = sorted((r for r in members if r.diverged), key=lambda r: str(r.path))
        members = once_per_seed([r for r in members if not r.diverged], report)
        members = sorted(members, key=lambda r: (r.seed is None, r.seed or 0, str(r.path)))
        finished = [r for r in members if r.finished]
        stats = {m: Stat.of([getattr(r, m) for r in finished]) for m in METRICS}
        unfinished = [r for r in members if not r.finished]
        rows.append(VariantRow(variant, finished, stats, unfinished, diverged))
    return sorted(rows, key=_sort_key)


def _sort_key(row: VariantRow) -> tuple[bool, float, str]:
    mean = row.stats["final_val_loss"].mean
    return (mean is None, mean if mean is not None else 0.0, row.variant)
