"""A seed study's cells and the tables and sentences a study page states about them.

A :class:`SeedStudy` holds, per task, variant and evaluated length, each seed's test
accuracy and exact match (or, for MLM, masked-token loss: lower is better), the task's
baselines on the same sequences, and a reference variant. It writes the three regions a study page has: the table (mean [95 % t-interval] ·
seeds solving, ▲ when every seed is above the best baseline), each variant against the
reference paired by seed (Holm over the whole table), and the findings, every count and
list taken from the same cells. Used by :mod:`.selected` and :mod:`.plans`; statistics
from :mod:`roformer_lit.results.statistics` (the pairs: :mod:`.paired`).
"""

from __future__ import annotations

import functools
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from roformer_lit.errors import ConfigError
from roformer_lit.results.statistics import mean_interval, verdict
from roformer_lit.results.study.chance import by_chance, caveat
from roformer_lit.results.study.paired import Pair, by_common_seed, cell, holm_family, power
from roformer_lit.results.study.reading import csv_rows
from roformer_lit.results.study.words import NOT_RUN, SOLVED, names

#: The columns of an ``extrapolate --csv`` file a study reads, and their types.
TEST_COLUMNS = {"name": str, "metric": str, "length": int, "value": float}
#: ``parse(checkpoint name) -> (task, variant, seed)`` or None (a row of another study).
Parse = Callable[[str], "tuple[str, str, int] | None"]


def join_seed(cells: dict, key: tuple, seed: int, value: float, where: str) -> None:
    """``cells[key][seed] = value``, or a ConfigError naming ``where`` when that seed of the
    cell holds another value already: one run is one seed, and two values for it (rows of
    two evaluations in one file, a run in two files) would leave the page to whichever
    came last."""
    by_seed = cells.setdefault(key, {})
    if by_seed.get(seed, value) != value:
        task, name, n, metric = key
        raise ConfigError(
            f"{where}: {name} seed {seed} on {task} at {n} ({metric}) is {value} here and "
            f"{by_seed[seed]} in an earlier row: one seed, two values (rows of two "
            "evaluations mixed?)"
        )
    by_seed[seed] = value


def join_cells(into: dict, cells: dict, where: str) -> None:
    """Every seed of ``cells`` added to ``into`` (:func:`join_seed`, never replacing one)."""
    for key, by_seed in cells.items():
        for seed, value in by_seed.items():
            join_seed(into, key, seed, value, where)


def read_test_csv(
    path: Path, parse: Parse, metric: str = "acc", split: str = "test"
) -> tuple[dict, dict]:
    """``(task, variant, n, metric) -> seed -> value`` and ``(task, rule, n) -> value`` of
    the ``baseline:<rule>`` rows in ``metric`` of an ``extrapolate --csv`` file whose rows
    are one task's (``parse`` says which task a run is; baselines take the task of the
    file's runs). Its rows must be of ``split`` where the file names one
    (:func:`~.reading.csv_rows`)."""
    cells: dict = {}
    baselines: dict = {}
    pending = []
    tasks = set()
    for line, row in enumerate(csv_rows(path, TEST_COLUMNS, split), start=2):
        n, value = row["length"], row["value"]
        if row["name"].startswith("baseline:"):
            if row["metric"] == metric:
                pending.append((row["name"].removeprefix("baseline:"), n, value, line))
            continue
        parsed = parse(row["name"])
        if parsed is None:
            continue
        task, name, seed = parsed
        tasks.add(task)
        join_seed(cells, (task, name, n, row["metric"]), seed, value, f"{path}: line {line}")
    if len(tasks) == 1:
        (task,) = tasks
        for rule, n, value, line in pending:
            if baselines.setdefault((task, rule, n), value) != value:
                raise ConfigError(
                    f"{path}: line {line}: baseline {rule} at {n} is {value} here and "
                    f"{baselines[(task, rule, n)]} in an earlier row: two evaluations mixed?"
                )
    return cells, baselines


def merge_file(
    study: SeedStudy,
    path: Path,
    parse: Parse,
    metric: str = "acc",
    rules: Mapping[str, str] | None = None,
) -> bool:
    """Add the cells of another raw output of the same setting to ``study``: its seeds join
    each cell's seeds (never replace them), and its baselines (their rules renamed by
    ``rules`` where the study names them otherwise) must equal those read already
    (ValueError otherwise: its runs were scored on other sequences). False when absent."""
    if not path.is_file():
        return False
    cells, baselines = read_test_csv(path, parse, metric, study.split)
    baselines = renamed(baselines, rules)
    for key, value in baselines.items():
        if key in study.baselines and study.baselines[key] != value:
            raise ValueError(
                f"{path.name}: baseline {key} is {value}, not {study.baselines[key]}: its runs "
                "were scored on other test sequences"
            )
    join_cells(study.cells, cells, str(path))
    study.baselines.update(baselines)
    return True


def renamed(baselines: dict, rules: Mapping[str, str] | None) -> dict:
    """``(task, rule, n) -> value`` with each rule named as ``rules`` names it."""
    rules = rules or {}
    return {(t, rules.get(r, r), n): value for (t, r, n), value in baselines.items()}


def by_data_seed(
    study: SeedStudy,
    paths: Path | Sequence[Path],
    parse: Parse,
    run_seed: int = 0,
    data_seed: int = 0,
    rules: Mapping[str, str] | None = None,
) -> SeedStudy:
    """``study``'s runs of ``seed_everything`` ``run_seed`` (trained and scored with
    ``data.seed`` ``data_seed``) keyed by that data seed, with the runs of ``paths``, raw
    outputs whose ``parse`` gives each run's ``data.seed`` as its seed (one initialisation,
    each data seed its own training stream and test set, shared by the variants of that
    data seed: paired by data seed). The first path must exist (an empty study otherwise),
    later ones join where they exist; no data seed may be in two places. Baselines: the
    mean over every test set (each file's rows are already the mean over its own seeds, so
    each counts as many times as it has seeds), its rules renamed by ``rules`` where the
    study names them otherwise."""
    paths = [paths] if isinstance(paths, Path) else list(paths)
    empty = SeedStudy(study.lengths, study.reference, metric=study.metric, split=study.split)
    if not study.cells or not paths or not paths[0].is_file():
        return empty
    result = SeedStudy(
        study.lengths,
        study.reference,
        cells={
            key: {data_seed: by_seed[run_seed]}
            for key, by_seed in study.cells.items()
            if run_seed in by_seed
        },
        order={task: list(names_) for task, names_ in study.order.items()},
        metric=study.metric,
        length_name=study.length_name,
        references=study.references,
        split=study.split,
    )
    seen = {data_seed}
    weighted = dict(study.baselines)
    counted = dict.fromkeys(study.baselines, 1)  # test sets each baseline's sum holds
    for path in (p for p in paths if p.is_file()):
        cells, baselines = read_test_csv(path, parse, study.metric, study.split)
        seeds = {s for by_seed in cells.values() for s in by_seed}
        if seeds & seen:
            raise ValueError(
                f"{path.name}: data seed {min(seeds & seen)} is already read (the study's "
                "own runs or an earlier file)"
            )
        seen |= seeds
        for key, by_seed in cells.items():
            result.cells.setdefault(key, {}).update(by_seed)
        for key, value in renamed(baselines, rules).items():
            if key in weighted:
                weighted[key] += value * len(seeds)
                counted[key] += len(seeds)
    # a baseline every test set has: the mean over all of them
    result.baselines = {
        key: weighted[key] / len(seen) for key in weighted if counted[key] == len(seen)
    }
    return result


@dataclass
class SeedStudy:
    """See the module docstring. ``order``: task -> its variants, in the order shown;
    ``extra``: an optional column (head, ``(task, variant) -> text``) after the variant;
    ``metric``: the cells' measure, ``acc`` (higher is better) or ``loss`` (MLM: lower is
    better, no exact match, so no "solved"); ``length_name``: how a length is written;
    ``references``: baseline rows shown in the table but never the baseline a finding
    compares with (a reference fitted to the scored tokens themselves); ``split``: the
    ``extrapolate --split`` its raw outputs must hold (``test``, held-out sequences; an MLM
    study's is ``val``, a corpus run's one held-out split)."""

    lengths: list[int]
    reference: str
    cells: dict = field(default_factory=dict)
    baselines: dict = field(default_factory=dict)
    order: dict[str, list[str]] = field(default_factory=dict)
    extra: tuple[str, Mapping[tuple[str, str], str]] | None = None
    metric: str = "acc"
    length_name: str = "n"
    references: tuple[str, ...] = ()
    split: str = "test"

    def only(self, names: list[str], task: str | None = None) -> SeedStudy:
        """A new study of these variants (in this order) on every task they are in, or on
        ``task`` alone: their cells copied, the same baselines, reference and settings."""
        tasks = [t for t in self.order if task in (None, t)]
        return SeedStudy(
            self.lengths,
            self.reference,
            cells={
                key: dict(by_seed)
                for key, by_seed in self.cells.items()
                if key[0] in tasks and key[1] in names
            },
            baselines={key: v for key, v in self.baselines.items() if key[0] in tasks},
            order={t: [n for n in names if n in self.order[t]] for t in tasks},
            metric=self.metric,
            length_name=self.length_name,
            references=self.references,
            split=self.split,
        )

    @property
    def lower_is_better(self) -> bool:
        return self.metric == "loss"

    def better(self, a: float, b: float) -> bool:
        """``a`` is better than ``b`` in the study's metric."""
        return a < b if self.lower_is_better else a > b

    def times(self, n: int) -> str:
        return f"{self.length_name}={n} ({n // self.lengths[0]}×)"

    def tasks(self) -> list[str]:
        return [t for t in self.order if any(key[0] == t for key in self.cells)]

    def values(self, task: str, name: str, n: int, metric: str | None = None) -> dict[int, float]:
        return self.cells.get((task, name, n, metric or self.metric), {})

    def best_baseline(self, task: str, n: int) -> tuple[str, float]:
        rules = {
            r: v
            for (t, r, m), v in self.baselines.items()
            if (t, m) == (task, n) and r not in self.references
        }
        pick = min if self.lower_is_better else max
        rule = pick(rules, key=lambda r: rules[r])
        return rule, rules[rule]

    def above_baseline(self, task: str, name: str, n: int) -> bool:
        """Every seed better than the task's best baseline at ``n``."""
        values = self.values(task, name, n)
        best = self.best_baseline(task, n)[1]
        return bool(values) and all(self.better(v, best) for v in values.values())

    def below_baseline(self, task: str, name: str, n: int) -> bool:
        """Every seed worse than the task's best baseline at ``n``."""
        values = self.values(task, name, n)
        best = self.best_baseline(task, n)[1]
        return bool(values) and all(self.better(best, v) for v in values.values())

    def solved(self, task: str, name: str, n: int) -> tuple[int, int]:
        """(seeds with exact match >= :data:`SOLVED`, seeds)."""
        exact = self.values(task, name, n, "exact")
        return sum(v >= SOLVED for v in exact.values()), len(exact)

    def solved_every(self, task: str, name: str, n: int) -> bool:
        """Every seed of the cell solves ``n`` (and it has seeds)."""
        solved, seeds = self.solved(task, name, n)
        return solved == seeds > 0

    def table(self) -> str:
        if not self.tasks():
            return NOT_RUN
        extra_head = [self.extra[0]] if self.extra else []
        head = ["task", "variant", *extra_head, *(self.times(n) for n in self.lengths)]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for task in self.tasks():
            for rule in sorted({r for t, r, _ in self.baselines if t == task}):
                row = [
                    f"{self.baselines.get((task, rule, n), float('nan')):.3f}" for n in self.lengths
                ]
                blank = ["–"] if self.extra else []
                lines.append("| " + " | ".join([task, f"baseline: {rule}", *blank, *row]) + " |")
            for name in self.order[task]:
                row = []
                for n in self.lengths:
                    values = self.values(task, name, n)
                    if not values:
                        row.append("–")
                        continue
                    k, seeds = self.solved(task, name, n)
                    mark = " ▲" if self.above_baseline(task, name, n) else ""
                    interval = mean_interval(list(values.values()))
                    text = (interval if self.lower_is_better else interval.clipped()).text()
                    solved = f" · {k}/{seeds} solved" if seeds else ""
                    row.append(f"{text}{mark}{solved}")
                extra = [self.extra[1].get((task, name), "–")] if self.extra else []
                lines.append("| " + " | ".join([task, f"`{name}`", *extra, *row]) + " |")
        return "\n".join(lines)

    @functools.cached_property
    def pairs(self) -> dict[tuple[str, str, int], Pair]:
        """``(task, variant, n) -> (reference by seed, variant by seed, Holm p)``: one family."""
        found = {}
        for task in self.tasks():
            for name in self.order[task]:
                if name == self.reference:
                    continue
                for n in self.lengths:
                    ref, other = self.values(task, self.reference, n), self.values(task, name, n)
                    sides = by_common_seed(ref, other)
                    if sides is not None:
                        found[(task, name, n)] = sides
        return holm_family(found)

    def pairs_table(self) -> str:
        """Each variant minus the reference, paired by seed, Holm over the table."""
        if not self.pairs:
            return NOT_RUN
        head = ["task", f"variant − `{self.reference}`", *(self.times(n) for n in self.lengths)]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for task in self.tasks():
            for name in self.order[task]:
                if not any((task, name, n) in self.pairs for n in self.lengths):
                    continue
                row = [  # a length a variant was not evaluated at: a dash, not a crash
                    cell(*self.pairs[(task, name, n)]) if (task, name, n) in self.pairs else "–"
                    for n in self.lengths
                ]
                lines.append(f"| {task} | `{name}` | " + " | ".join(row) + " |")
        return "\n".join(lines)

    def separated(self, task: str, above: bool) -> list[str]:
        return [
            f"`{name}` at {self.times(n)}"
            for (t, name, n), (ref, other, p) in self.pairs.items()
            if t == task
            and verdict(p) != "n.s."
            and (statistics.fmean(other) > statistics.fmean(ref)) == above
        ]

    def against_reference(self, task: str) -> str:
        """The sentence of a task's paired separations from the reference, better side
        first (above it for accuracy, lower for loss)."""
        better, worse = (
            ("lower (better)", "higher (worse)")
            if self.lower_is_better
            else ("above it", "below it")
        )
        return (
            f"Against `{self.reference}` (paired by seed, Holm over all {len(self.pairs)} "
            f"cells): separated {better}: {names(self.separated(task, not self.lower_is_better))}; "
            f"{worse}: {names(self.separated(task, self.lower_is_better))}; every other cell not "
            "separated."
        )

    def every_seed_counts(self, task: str) -> tuple[int, int, list[int]]:
        """Over every (variant, length) cell of ``task`` with seeds: how many are better than
        the best baseline on every seed, how many worse on every seed, and each cell's seed
        count (what :mod:`.chance` needs)."""
        cells = [(v, n) for v in self.order[task] for n in self.lengths if self.values(task, v, n)]
        better = sum(self.above_baseline(task, v, n) for v, n in cells)
        worse = sum(self.below_baseline(task, v, n) for v, n in cells)
        return better, worse, [len(self.values(task, v, n)) for v, n in cells]

    def multiplicity(self, task: str) -> str:
        """The "on every seed" counts of the sentences before it read together: how many
        cells were tested and how many a variant at its baseline's level would pass on every
        seed by chance alone, above (:func:`~.chance.caveat`) and below."""
        above, below, seeds = self.every_seed_counts(task)
        if not seeds:
            return ""
        return (
            f"Read together, above on every seed: {caveat(above, seeds, 'cells')}. Below on "
            f"every seed: {below} of {len(seeds)} cells, about {by_chance(seeds):.1f} by chance "
            "alone. "
        )

    def loss_findings(self) -> str:
        """Per task, for a loss study: who is below the best baseline's loss on every seed
        at each length, and what the paired tests separate (lower is better)."""
        parts = []
        for task in self.tasks():
            order = self.order[task]
            text = f"**`{task}`**: "
            for n in self.lengths:
                rule, value = self.best_baseline(task, n)
                below = [f"`{v}`" for v in order if self.above_baseline(task, v, n)]
                text += (
                    f"Below the `{rule}` loss ({value:.3f}) on every seed at "
                    f"{self.times(n)}: {names(below)}. "
                )
            better, _, seeds = self.every_seed_counts(task)
            text += (
                "Read together, below the best baseline's loss on every seed: "
                f"{caveat(better, seeds, 'cells')}. "
            )
            text += self.against_reference(task)
            parts.append(text)
        return "\n\n".join([*parts, power(self.pairs, "nats")])

    def findings(self) -> str:
        """Per task: who solves at 1× (every seed, some seeds), who solves past it, who is
        above the best baseline on every seed past it, and what the paired tests separate."""
        if not self.tasks():
            return NOT_RUN
        if self.lower_is_better:
            return self.loss_findings()
        first = self.lengths[0]
        parts = []
        for task in self.tasks():
            order = self.order[task]
            every = [
                f"`{v}`"
                for v in order
                if self.solved(task, v, first)[0] == self.solved(task, v, first)[1] > 0
            ]
            some = [
                f"`{v}` ({self.solved(task, v, first)[0]}/{self.solved(task, v, first)[1]})"
                for v in order
                if 0 < self.solved(task, v, first)[0] < self.solved(task, v, first)[1]
            ]
            past = [
                f"`{v}` at {self.times(n)} ({self.solved(task, v, n)[0]}/{self.solved(task, v, n)[1]})"
                for v in order
                for n in self.lengths[1:]
                if self.solved(task, v, n)[0] > 0
            ]
            text = (
                f"**`{task}`**: solved at 1× on every seed (exact match ≥ {SOLVED}) by "
                f"{names(every)}" + (f"; on some seeds by {names(some)}" if some else "") + ". "
            )
            text += (
                f"Past 1×, runs that solve: {names(past)}. " if past else "No run solves past 1×. "
            )
            for n in self.lengths:
                rule, value = self.best_baseline(task, n)
                above = [f"`{v}`" for v in order if self.above_baseline(task, v, n)]
                below = [f"`{v}`" for v in order if self.below_baseline(task, v, n)]
                text += (
                    f"At {self.times(n)} against the best baseline (`{rule}`, {value:.3f}), "
                    f"above on every seed: {names(above)}; below on every seed: {names(below)}. "
                )
            text += self.multiplicity(task)
            text += self.against_reference(task)
            parts.append(text)
        return "\n\n".join([*parts, power(self.pairs)])


def run_pattern(sweep: str, variant: str, tasks: list[str], tail: str = "") -> re.Pattern[str]:
    """``<sweep>/<variant>-<task><tail>-seed<N>/``, with named groups for each part."""
    return re.compile(
        rf"{sweep}/{variant}-(?P<task>{'|'.join(tasks)}){tail}-seed(?P<seed>\d+)(?:/|$)"
    )
