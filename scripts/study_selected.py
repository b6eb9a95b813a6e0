"""The scheme study at selected learning rates: the regions ``schemes-*`` of
``docs/studies/position-tasks.md`` (written by ``scripts/study_pages.py``).

Runs: ``configs/sweeps/study_schemes_selected.yaml`` (every scheme variant × task × learning
rate 1e-3 / 3e-3 × seeds 0-4, 1,500 steps), run one task at a time with ``sweep --only
data.probe=TASK``. Raw outputs read, all in ``docs/bench/``:

* :data:`SELECTION_FILE`: ``compare``'s ``runs.csv`` (one row per run): ``val_acc``, the
  accuracy each run logged at its last validation, on validation sequences at the training
  length. The learning rate of each (task, variant) is chosen here, from this file alone, by
  :func:`roformer_lit.results.compare.select.best_value`, the rule ``compare --select
  learning_rate --by val_acc`` applies: the best mean over seeds.
* :data:`TEST_FILES`: ``extrapolate --split test --csv`` of every run's last checkpoint
  (held-out sequences from another generator stream, at 1×, 2× and 4× the training length),
  with the task's ``baseline:<rule>`` rows on the very same sequences. Only the chosen
  learning rate's runs are reported; the selection never reads this file.

Statistics (:mod:`roformer_lit.results.statistics`): 95 % Student-t intervals over seeds; each
variant against ``rope`` (base 10,000) by a paired t-test over seeds, Holm-corrected over every
cell of the comparison table.
"""

from __future__ import annotations

import csv
import functools
import re
import statistics
from pathlib import Path

from roformer_lit.results.compare.select import best_value
from roformer_lit.results.statistics import holm, mean_interval, paired_t_test, verdict

BENCH = Path(__file__).resolve().parent.parent / "docs" / "bench"
SELECTION_FILE = "cpu-2026-11-25-study-schemes-runs.csv"
TEST_FILES = "cpu-2026-11-25-study-schemes-{task}.csv"
TASKS = ["copy", "reverse", "sort", "odds_first"]
LENGTHS = [16, 32, 64]
SOLVED = 0.9
REFERENCE = "rope"
RUN = re.compile(
    r"study_schemes_selected/(?P<scheme>[a-z0-9]+)-(?P<options>.+?)-(?P<task>"
    + "|".join(TASKS)
    + r")-learning_rate(?P<lr>[0-9.e-]+)-seed(?P<seed>\d+)(?:/|$)"
)


def times(n: int) -> str:
    return f"n={n} ({n // LENGTHS[0]}×)"


def variant(scheme: str, options: str) -> str:
    """``rope`` for the defaults, ``rope (base=100.0)`` with options."""
    return scheme if options == "default" else f"{scheme} ({options.replace('+', ', ')})"


def _parse(name: str) -> tuple[str, str, float, int] | None:
    match = RUN.search(name)
    if match is None:
        return None
    return (
        match["task"],
        variant(match["scheme"], match["options"]),
        float(match["lr"]),
        int(match["seed"]),
    )


@functools.cache
def selection_scores() -> dict[tuple[str, str], dict[float, dict[int, float]]]:
    """``(task, variant) -> learning rate -> seed -> val_acc`` from :data:`SELECTION_FILE`."""
    path = BENCH / SELECTION_FILE
    scores: dict = {}
    if not path.is_file():
        return scores
    with path.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            parsed = _parse(row["path"])
            if parsed is None or not row.get("val_acc"):
                continue
            task, name, lr, seed = parsed
            scores.setdefault((task, name), {}).setdefault(lr, {})[seed] = float(row["val_acc"])
    return scores


@functools.cache
def chosen() -> dict[tuple[str, str], float]:
    """``(task, variant) -> learning rate``: the best mean ``val_acc`` among the rates every
    seed of the group finished (the seeds of the group's most complete rate)."""
    picks = {}
    for group, by_lr in selection_scores().items():
        seeds = max(len(s) for s in by_lr.values())
        means = {lr: statistics.fmean(s.values()) for lr, s in by_lr.items() if len(s) == seeds}
        picks[group] = best_value(means, "val_acc")
    return picks


@functools.cache
def test_cells() -> tuple[dict, dict]:
    """``(task, variant, lr, n, metric) -> seed -> value`` and ``(task, rule, n) -> acc`` of
    the baselines, from :data:`TEST_FILES`."""
    cells: dict = {}
    baselines: dict = {}
    for task in TASKS:
        path = BENCH / TEST_FILES.format(task=task)
        if not path.is_file():
            continue
        with path.open(encoding="utf-8") as f:
            for row in csv.DictReader(f):
                n, value = int(row["length"]), float(row["value"])
                if row["name"].startswith("baseline:"):
                    if row["metric"] == "acc":
                        baselines[(task, row["name"].removeprefix("baseline:"), n)] = value
                    continue
                parsed = _parse(row["name"])
                if parsed is None or parsed[0] != task:
                    continue
                _, name, lr, seed = parsed
                cells.setdefault((task, name, lr, n, row["metric"]), {})[seed] = value
    return cells, baselines


def tasks() -> list[str]:
    """The tasks with both raw outputs, in :data:`TASKS` order."""
    have = {task for task, _ in chosen()} & {key[0] for key in test_cells()[0]}
    return [t for t in TASKS if t in have]


def variants(task: str) -> list[str]:
    """The task's variants in the sweep's order (as the selection file lists them)."""
    return [name for t, name in selection_scores() if t == task]


def reported(task: str, name: str, n: int, metric: str = "acc") -> dict[int, float]:
    """Seed -> the test value of the chosen learning rate's runs."""
    return test_cells()[0].get((task, name, chosen()[(task, name)], n, metric), {})


def best_baseline(task: str, n: int) -> tuple[str, float]:
    rules = {rule: v for (t, rule, m), v in test_cells()[1].items() if (t, m) == (task, n)}
    rule = max(rules, key=lambda r: rules[r])
    return rule, rules[rule]


def above_baseline(task: str, name: str, n: int) -> bool:
    """Every seed's test accuracy above the task's best baseline at ``n``."""
    values = reported(task, name, n)
    return bool(values) and all(v > best_baseline(task, n)[1] for v in values.values())


def solved(task: str, name: str, n: int) -> tuple[int, int]:
    """(seeds with exact match >= :data:`SOLVED`, seeds)."""
    exact = reported(task, name, n, "exact")
    return sum(v >= SOLVED for v in exact.values()), len(exact)


def table() -> str:
    """Per task: the baselines, then each variant at its chosen learning rate: the mean
    ``val_acc`` of both rates (selection), and the test accuracy mean [95 % interval] with
    how many seeds solve it, marked ▲ when every seed is above the best baseline."""
    if not tasks():
        return "_No slice of the sweep has been run yet._"
    head = "| task | variant | learning rate: mean val acc (chosen **bold**) | " + " | ".join(
        times(n) for n in LENGTHS
    )
    lines = [head + " |", "|---|---|---|" + "---|" * len(LENGTHS)]
    for task in tasks():
        rules = sorted({rule for t, rule, _ in test_cells()[1] if t == task})
        for rule in rules:
            row = [f"{test_cells()[1].get((task, rule, n), float('nan')):.3f}" for n in LENGTHS]
            lines.append(f"| {task} | baseline: {rule} | – | " + " | ".join(row) + " |")
        for name in variants(task):
            pick = chosen()[(task, name)]
            rates = ", ".join(
                (
                    f"**{lr:g}: {statistics.fmean(s.values()):.3f}**"
                    if lr == pick
                    else f"{lr:g}: {statistics.fmean(s.values()):.3f}"
                )
                for lr, s in sorted(selection_scores()[(task, name)].items())
            )
            row = []
            for n in LENGTHS:
                values = reported(task, name, n)
                if not values:
                    row.append("–")
                    continue
                k, seeds = solved(task, name, n)
                mark = " ▲" if above_baseline(task, name, n) else ""
                row.append(
                    f"{mean_interval(list(values.values())).text()}{mark} · {k}/{seeds} solved"
                )
            lines.append(f"| {task} | `{name}` | {rates} | " + " | ".join(row) + " |")
    return "\n".join(lines)


@functools.cache
def against_reference() -> dict[tuple[str, str, int], tuple[list[float], list[float], float]]:
    """``(task, variant, n) -> (reference by seed, variant by seed, Holm p)``: one family."""
    pairs = {}
    for task in tasks():
        for name in variants(task):
            if name == REFERENCE or (task, REFERENCE) not in chosen():
                continue
            for n in LENGTHS:
                ref, other = reported(task, REFERENCE, n), reported(task, name, n)
                common = sorted(set(ref) & set(other))
                if len(common) >= 2:
                    pairs[(task, name, n)] = ([ref[s] for s in common], [other[s] for s in common])
    keys = list(pairs)
    adjusted = holm([paired_t_test(*pairs[k]) for k in keys])
    return {k: (*pairs[k], p) for k, p in zip(keys, adjusted, strict=True)}


def _difference(ref: list[float], other: list[float], p: float) -> str:
    diff = statistics.fmean(other) - statistics.fmean(ref)
    if verdict(p) == "n.s.":
        return f"{diff:+.3f} n.s."
    return f"**{diff:+.3f}** (p={p:.2g})"


def pairs_table() -> str:
    """Each variant minus ``rope`` in test accuracy, paired by seed, Holm over the table."""
    tests = against_reference()
    if not tests:
        return "_No slice of the sweep has been run yet._"
    head = f"| task | variant − `{REFERENCE}` | " + " | ".join(times(n) for n in LENGTHS)
    lines = [head + " |", "|---|---|" + "---|" * len(LENGTHS)]
    for task in tasks():
        for name in variants(task):
            if (task, name, LENGTHS[0]) not in tests:
                continue
            row = [_difference(*tests[(task, name, n)]) for n in LENGTHS]
            lines.append(f"| {task} | `{name}` | " + " | ".join(row) + " |")
    return "\n".join(lines)


def names(items: list[str]) -> str:
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def findings() -> str:
    """The sentences the section states, each count taken from the same cells."""
    if not tasks():
        return "_No slice of the sweep has been run yet._"
    parts = []
    picks = chosen()
    run_tasks = tasks()
    groups = [(t, v) for t, v in picks if t in run_tasks]
    low = sorted({lr for lr in picks.values()})
    counts = ", ".join(f"{sum(picks[g] == lr for g in groups)} chose {lr:g}" for lr in low)
    parts.append(
        f"Slices run: {names([f'`{t}`' for t in run_tasks])} "
        f"({len(groups)} task × variant groups; {counts})."
    )
    for task in run_tasks:
        every = [
            f"`{v}`"
            for v in variants(task)
            if solved(task, v, LENGTHS[0])[0] == solved(task, v, LENGTHS[0])[1] > 0
        ]
        some = [
            f"`{v}` ({solved(task, v, LENGTHS[0])[0]}/{solved(task, v, LENGTHS[0])[1]})"
            for v in variants(task)
            if 0 < solved(task, v, LENGTHS[0])[0] < solved(task, v, LENGTHS[0])[1]
        ]
        past = [
            f"`{v}` at {times(n)} ({solved(task, v, n)[0]}/{solved(task, v, n)[1]})"
            for v in variants(task)
            for n in LENGTHS[1:]
            if solved(task, v, n)[0] > 0
        ]
        above = {
            n: [f"`{v}`" for v in variants(task) if above_baseline(task, v, n)] for n in LENGTHS[1:]
        }
        sentence = (
            f"**`{task}`**: solved at 1× on every seed (exact match ≥ {SOLVED}) by "
            f"{names(every)}" + (f"; on some seeds by {names(some)}" if some else "") + ". "
        )
        sentence += (
            f"Past 1×, runs that solve: {names(past)}. " if past else "No run solves past 1×. "
        )
        sentence += " ".join(
            f"Above the best baseline on every seed at {times(n)} "
            f"(best: `{best_baseline(task, n)[0]}`, {best_baseline(task, n)[1]:.3f}): "
            f"{names(above[n])}."
            for n in LENGTHS[1:]
        )
        better = [
            f"`{v}` at {times(n)}"
            for (t, v, n), (ref, other, p) in against_reference().items()
            if t == task
            and verdict(p) != "n.s."
            and statistics.fmean(other) > statistics.fmean(ref)
        ]
        worse = [
            f"`{v}` at {times(n)}"
            for (t, v, n), (ref, other, p) in against_reference().items()
            if t == task
            and verdict(p) != "n.s."
            and statistics.fmean(other) < statistics.fmean(ref)
        ]
        sentence += (
            f" Against `{REFERENCE}` (paired by seed, Holm over all {len(against_reference())} "
            f"cells): separated above it: {names(better)}; below it: {names(worse)}; every other "
            "cell not separated."
        )
        parts.append(sentence)
    return "\n\n".join(parts)
