"""The scheme study at selected learning rates: the regions ``schemes-*`` of
``docs/studies/position-tasks.md`` (written by ``scripts/study_pages.py``).

Runs: ``configs/sweeps/study_schemes_selected.yaml`` (every scheme variant × task × learning
rate 1e-3 / 3e-3 / 1e-2 × seeds 0-4, 1,500 steps), run one task and rate at a time with
``sweep --only data.probe=TASK --only model.learning_rate=RATE``; each group is selected
over the rates its own runs have (the findings say which). Raw outputs read, all in ``docs/bench/``:

The two example plugins (``examples/``: CoPE, and scalable softmax over ``nope`` and over
``rope``) are rows of the same sweep file, named by import path; they ran a day later, so
their raw outputs are files of their own (the second of each list below), scored on the very
same test sequences (checked: their baseline rows must equal the first files').

* :data:`SELECTION_FILES`: ``compare``'s ``runs.csv`` (one row per run): ``val_acc``, the
  accuracy each run logged at its last validation, on validation sequences at the training
  length. The learning rate of each (task, variant) is chosen here, from this file alone, by
  :func:`roformer_lit.results.compare.select.best_value`, the rule ``compare --select
  learning_rate --by val_acc`` applies: the best mean over seeds.
* :data:`TEST_FILES`: ``extrapolate --split test --csv`` of every run's last checkpoint
  (held-out sequences from another generator stream, at 1×, 2× and 4× the training length),
  with the task's ``baseline:<rule>`` rows on the very same sequences. Only the chosen
  learning rate's runs are reported; the selection never reads this file.

Statistics (:mod:`roformer_lit.results.statistics`): 95 % Student-t intervals over seeds; each
variant against ``rope`` (base 10,000) by the exact sign-flip test over seeds, Holm-corrected over every
cell of the comparison table.
"""

from __future__ import annotations

import math
import re
import statistics

from roformer_lit.errors import ConfigError
from roformer_lit.results.compare.runs import DIVERGED, UNFINISHED
from roformer_lit.results.compare.select import best_value
from roformer_lit.results.statistics import (
    mean_interval,
    prediction_interval,
    verdict,
)
from roformer_lit.results.study.paired import cell
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.reading import csv_rows, optional
from roformer_lit.results.study.seed_study import (
    TEST_COLUMNS,
    SeedStudy,
    join_cells,
    read_test_csv,
)
from roformer_lit.results.study.words import PROBE_LENGTHS, STUDY_TASKS

SELECTION_FILES = (
    "cpu-2026-11-25-study-schemes-runs.csv",
    "cpu-2026-11-27-study-schemes-plugins-runs.csv",
)
TEST_FILES = (
    "cpu-2026-11-25-study-schemes-{task}.csv",
    "cpu-2026-11-27-study-schemes-plugins-{task}.csv",
)
LENGTHS = PROBE_LENGTHS[:3]
REFERENCE = "rope"
RUN = re.compile(
    r"study_schemes_selected/(?P<scheme>[A-Za-z0-9_.]+)-(?P<options>.+?)-(?P<task>"
    + "|".join(STUDY_TASKS)
    + r")-learning_rate(?P<lr>[0-9.e-]+)-seed(?P<seed>\d+)(?:/|$)"
)
#: A plugin's run-name label (its import path, ``:`` written ``_``) -> the name the page
#: gives it, marked as a plugin.
PLUGINS = {
    "roformer_lit_examples.cope_CoPE": "cope",
    "roformer_lit_examples.ssmax_ScalableSoftmax": "ssmax",
}


def variant(scheme: str, options: str) -> str:
    """``rope`` for the defaults, ``rope (base=100.0)`` with options; a plugin
    ``ssmax (plugin)``, ``ssmax (plugin, inner=rope)``."""
    plain = options == "default"
    if scheme in PLUGINS:
        extra = "" if plain else ", " + options.replace("+", ", ")
        return f"{PLUGINS[scheme]} (plugin{extra})"
    return scheme if plain else f"{scheme} ({options.replace('+', ', ')})"


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


@cached
def selection_scores() -> dict[tuple[str, str], dict[float, dict[int, float]]]:
    """``(task, variant) -> learning rate -> seed -> val_acc`` from :data:`SELECTION_FILES`.

    A run ``compare`` noted as unfinished (its ``val_acc`` is of another length, and
    ``compare --select`` makes it no candidate) is refused, as is a seed with two values
    (two copies of a run that differ): either would choose the rate on other numbers than
    the page says, in one line naming the file and line."""
    scores: dict = {}
    for file_name in SELECTION_FILES:
        path = bench_file(file_name)
        if not path.is_file():
            continue
        rows = csv_rows(path, {"path": str, "val_acc": optional(float)})
        for line, row in enumerate(rows, start=2):
            parsed = _parse(row["path"])
            if parsed is None or row["val_acc"] is None:
                continue
            at = f"{path}: line {line}: {row['path']}"
            notes = (row.get("note") or "").split("; ")
            unfinished = [n for n in notes if n.startswith((f"{UNFINISHED}:", DIVERGED))]
            if unfinished:
                raise ConfigError(
                    f"{at} is {unfinished[0]}: the selection reads finished runs only "
                    "(finish the run, or leave its row out of the file)"
                )
            task, name, lr, seed = parsed
            by_seed = scores.setdefault((task, name), {}).setdefault(lr, {})
            if by_seed.setdefault(seed, row["val_acc"]) != row["val_acc"]:
                raise ConfigError(
                    f"{at}: val_acc {row['val_acc']}, and {by_seed[seed]} in an earlier row "
                    f"of the same seed {seed}: one seed, two values"
                )
    return scores


@cached
def chosen() -> dict[tuple[str, str], float]:
    """``(task, variant) -> learning rate``: the best mean ``val_acc`` among the rates every
    seed of the group finished (the seeds of the group's most complete rate)."""
    picks = {}
    for group, by_lr in selection_scores().items():
        seeds = max(len(s) for s in by_lr.values())
        means = {lr: statistics.fmean(s.values()) for lr, s in by_lr.items() if len(s) == seeds}
        picks[group] = best_value(means, "val_acc")
    return picks


def _selection_text(task: str, name: str) -> str:
    pick = chosen()[(task, name)]
    return ", ".join(
        f"**{lr:g}: {statistics.fmean(s.values()):.3f}**"
        if lr == pick
        else f"{lr:g}: {statistics.fmean(s.values()):.3f}"
        for lr, s in sorted(selection_scores()[(task, name)].items())
    )


@cached
def study() -> SeedStudy:
    """The chosen learning rate's runs of every (task, variant) with a test file."""
    picks = chosen()
    result = SeedStudy(
        LENGTHS,
        REFERENCE,
        extra=("learning rate: mean val acc (chosen **bold**)", {}),
    )

    def parse(name: str) -> tuple[str, str, int] | None:
        parsed = _parse(name)
        if parsed is None or picks.get((parsed[0], parsed[1])) != parsed[2]:
            return None  # another study's run, or a rate not chosen
        return parsed[0], parsed[1], parsed[3]

    for task in STUDY_TASKS:
        paths = [bench_file(f.format(task=task)) for f in TEST_FILES]
        if not paths[0].is_file():
            continue
        for path in (p for p in paths if p.is_file()):
            cells, baselines = read_test_csv(path, parse)
            join_cells(result.cells, cells, str(path))
            _same_sequences(result.baselines, baselines, path.name)
            result.baselines.update(baselines)
        result.order[task] = [name for t, name in selection_scores() if t == task]
        for name in result.order[task]:
            result.extra[1][(task, name)] = _selection_text(task, name)  # type: ignore[index]
    return result


def _same_sequences(known: dict, more: dict, file_name: str) -> None:
    """A later file's runs must have been scored on the study's test sequences: its
    baseline rows (computed on the sequences it evaluated) equal the ones already read."""
    for key, value in more.items():
        if key in known and known[key] != value:
            raise ValueError(
                f"{file_name}: baseline {key} is {value}, not {known[key]}: its runs were "
                "scored on other sequences than the study's"
            )


def tasks() -> list[str]:
    return study().tasks()


def variants(task: str) -> list[str]:
    return study().order.get(task, [])


def reported(task: str, name: str, n: int, metric: str = "acc") -> dict[int, float]:
    """Seed -> the test value of the chosen learning rate's runs."""
    return study().values(task, name, n, metric)


def table() -> str:
    return study().table()


def pairs_table() -> str:
    return study().pairs_table()


def findings() -> str:
    """The study's findings, then how many groups chose each rate."""
    if not tasks():
        return study().findings()
    groups = [g for g in chosen() if g[0] in tasks()]
    counts = ", ".join(
        f"{sum(chosen()[g] == lr for g in groups)} chose {lr:g}"
        for lr in sorted(set(chosen().values()))
    )
    # each group against the top of its own grid: the rates its runs have
    top = [g for g in groups if chosen()[g] == max(selection_scores()[g])]
    by_task = "; ".join(
        f"`{task}`: " + ", ".join(f"`{name}`" for t, name in top if t == task)
        for task in tasks()
        if any(t == task for t, _ in top)
    )
    edge = (
        f" {len(top)} of {len(groups)} chose the largest rate of their grid ({by_task}), so "
        "their best rate may lie above it: these cells are a lower bound on what tuning gives."
        if top
        else " No group chose the largest rate of its grid."
    )
    grids: dict[tuple[float, ...], list[str]] = {}
    for task in tasks():
        rates = sorted({lr for g in groups if g[0] == task for lr in selection_scores()[g]})
        grids.setdefault(tuple(rates), []).append(f"`{task}`")
    rates_run = "; ".join(
        f"{', '.join(names)} over {', '.join(f'{lr:g}' for lr in rates)}"
        for rates, names in grids.items()
    )
    head = (
        f"Slices run: {', '.join(f'`{t}`' for t in tasks())} ({len(groups)} task × variant "
        f"groups; rates: {rates_run}; {counts})."
    )
    return head + edge + " " + rate_effect(groups) + "\n\n" + study().findings()


#: A change of mean validation accuracy between two rates that the findings name.
RATE_EFFECT = 0.25


def rate_effect(groups: list[tuple[str, str]]) -> str:
    """The groups whose mean validation accuracy moves by more than :data:`RATE_EFFECT`
    between the grid's rates, against the spread between variants at their chosen rates."""
    moved = []
    spread = []
    for task, name in groups:
        means = {
            lr: statistics.fmean(s.values()) for lr, s in selection_scores()[(task, name)].items()
        }
        low, high = min(means.values()), max(means.values())
        if high - low > RATE_EFFECT:
            worst = min(means, key=means.__getitem__)
            moved.append(f"`{name}` on `{task}` ({low:.3f} at {worst:g} → {high:.3f})")
    for task in tasks():
        at_chosen = [
            statistics.fmean(selection_scores()[g][chosen()[g]].values())
            for g in groups
            if g[0] == task
        ]
        spread.append(f"`{task}` {min(at_chosen):.3f}–{max(at_chosen):.3f}")
    return (
        f"The rate moves the mean validation accuracy by more than {RATE_EFFECT} for "
        f"{len(moved)} of {len(groups)} groups: {', '.join(moved) or 'none'}; at their chosen "
        f"rates the variants span {', '.join(spread)}."
    )


#: ``extrapolate --csv`` of cells retrained with the sweep's own command, and where: on the
#: machine the study's copy slice ran on (a fresh clone, the same day), and on another
#: processor a day later at the same thread count (one per run: ``sweep``'s default).
RETRAIN_FILES = {
    "cpu-2026-11-25-study-schemes-retrain.csv": "fresh clone, the study's machine (2026-11-25)",
    "cpu-2026-11-26-study-schemes-retrain.csv": "another machine: Intel Xeon (2026-11-26)",
    "cpu-2026-11-27-study-schemes-retrain.csv": (
        "Intel Xeon, the ten-seed rerun's machine (2026-11-27, subnormals kept)"
    ),
}


def retrain() -> str:
    """Cells retrained (:data:`RETRAIN_FILES`) beside the study's value of the same run and
    the study's interval, with how many land inside it and how many equal it bit for bit,
    per machine."""
    if not tasks() or not any(bench_file(name).is_file() for name in RETRAIN_FILES):
        return "_Not run yet._"
    lines = [
        "| retrained on | run | length | accuracy retrained | the study's run | the study's mean [95 % interval] | 95 % prediction interval for one run | inside it | bit-identical |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    summaries = []
    for name, where in RETRAIN_FILES.items():
        path = bench_file(name)
        if not path.is_file():
            continue
        cells = inside_count = identical_count = 0
        for row in csv_rows(path, TEST_COLUMNS, "test"):
            parsed = _parse(row["name"])
            if parsed is None or row["metric"] != "acc":
                continue
            task, variant_name, lr, seed = parsed
            n = row["length"]
            study_values = reported(task, variant_name, n)
            if chosen().get((task, variant_name)) != lr or seed not in study_values:
                continue
            interval = mean_interval(list(study_values.values())).clipped()
            one_run = prediction_interval(list(study_values.values()))
            value = row["value"]
            inside = one_run.low <= value <= one_run.high
            identical = value == study_values[seed]
            cells, inside_count = cells + 1, inside_count + inside
            identical_count += identical
            lines.append(
                f"| {where} | `{variant_name}` × `{task}`, rate {lr:g}, seed {seed} | {n} | "
                f"{value:.4f} | {study_values[seed]:.4f} | {interval.text()} | "
                f"[{one_run.low:.3f}, {one_run.high:.3f}] | {'yes' if inside else 'no'} | "
                f"{'yes' if identical else 'no'} |"
            )
        summaries.append(
            f"{where}: {inside_count} of {cells} retrained cells lie inside the study's "
            f"prediction interval for one run, {identical_count} of {cells} equal the "
            "study's own run of the same seed exactly."
        )
    return "\n".join(lines) + "\n\n" + " ".join(summaries)


#: p-RoPE's own comparison: the unrotated quarter removed, everything else equal (base 100).
PROPE = "rope (base=100.0, unrotated_fraction=0.25)"
PROPE_REFERENCE = "rope (base=100.0)"


def prope() -> str:
    """p-RoPE against RoPE at the same base, paired by seed, per task and length, with
    Holm's correction over these cells only (a family of its own: a
    :class:`~roformer_lit.results.study.seed_study.SeedStudy` of the two variants)."""
    result = study()
    control = SeedStudy(
        LENGTHS,
        PROPE_REFERENCE,
        cells=result.cells,
        baselines=result.baselines,
        order={task: [PROPE_REFERENCE, PROPE] for task in result.tasks()},
    )
    if not control.pairs:
        return "_Not run yet._"
    head = ["task", *(control.times(n) for n in LENGTHS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    separated = []
    for task in control.tasks():
        row = []
        for n in LENGTHS:
            if (task, PROPE, n) not in control.pairs:
                row.append("–")
                continue
            ref, other, p = control.pairs[(task, PROPE, n)]
            diff = statistics.fmean(other) - statistics.fmean(ref)
            if verdict(p) != "n.s.":
                separated.append(f"`{task}` at n={n} ({diff:+.3f})")
            row.append(cell(ref, other, p))
        lines.append(f"| {task} | " + " | ".join(row) + " |")
    summary = (
        f"p-RoPE minus RoPE, both at base 100 (accuracy, paired by seed, exact sign-flip test, Holm over these "
        f"{len(control.pairs)} cells): "
        + (
            "separated at " + ", ".join(separated) + "; every other cell not separated."
            if separated
            else "no cell separated."
        )
    )
    return "\n".join(lines) + "\n\n" + summary


#: The study encoder's head size (hidden 64 / 4 heads, ``configs/probes/study.yaml``) and
#: its longest training sequence (n = 16: 16 symbols, ``[SEP]``, 16 answer slots).
HEAD_SIZE = 16
TRAINING_TOKENS = 33
PROPE_FRACTION = 0.25


def unrotated_turns(base: float) -> list[float]:
    """The largest angle (rad) each frequency pair p-RoPE leaves unrotated would turn over
    the training sequence: ``(T - 1) · base^(-2i/d)`` for the lowest ``u · d/2`` pairs
    (RoPE's ``inv_freq``; :class:`~roformer_lit.positions.rope.RotaryPosition`)."""
    pairs = HEAD_SIZE // 2
    kept = math.floor((1 - PROPE_FRACTION) * pairs + 1e-9)
    return [(TRAINING_TOKENS - 1) * base ** (-2 * i / HEAD_SIZE) for i in range(kept, pairs)]


def prope_turns() -> str:
    """The sentence of how far p-RoPE's unrotated pairs would turn at base 10,000 and 100."""
    pairs = HEAD_SIZE // 2
    low_base, high_base = unrotated_turns(10000.0), unrotated_turns(100.0)
    return (
        f"With head size {HEAD_SIZE} ({pairs} frequency pairs), p-RoPE with unrotated "
        f"fraction {PROPE_FRACTION:g} leaves the lowest {len(low_base)} pairs unrotated. Over "
        f"a {TRAINING_TOKENS}-token training sequence those pairs would turn by at most "
        f"{max(low_base):.3f} rad at base 10,000, so there p-RoPE equals RoPE almost by "
        f"construction, and by {min(high_base):.2f}–{max(high_base):.2f} rad at base 100."
    )
