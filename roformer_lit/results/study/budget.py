"""The training-budget study: accuracy by checkpoint step with and without randomized
positions, per task and learning rate. Regions ``budget``, ``budget-pairs``,
``budget-findings`` and ``budget-reruns`` of ``docs/studies/position-tasks.md``.

Raw outputs read: each :class:`BudgetSlice`'s two ``extrapolate --budget --csv`` files in
``docs/bench/``. Statistics: off against on paired by seed (:mod:`.paired`), Holm over the
whole table.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from roformer_lit.errors import ConfigError
from roformer_lit.results.statistics import mean_interval, verdict
from roformer_lit.results.study.paired import by_common_seed, holm_family, mark, power, sides
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.reading import csv_rows, optional
from roformer_lit.results.study.seed_study import TEST_COLUMNS
from roformer_lit.results.study.words import PROBE_LENGTHS, SOLVED, TIMES, names


@dataclass(frozen=True)
class BudgetSlice:
    """One session-sized slice of ``configs/sweeps/study_budget_lr.yaml``: its sweep (the
    run folder), task, learning rate and its two ``extrapolate --budget`` CSVs in
    ``docs/bench/`` (runs without randomized positions at the ordinary positions, runs with
    them at random positions)."""

    sweep: str
    task: str
    rate: float
    ordinary: str
    random: str

    def ready(self) -> bool:
        """A slice counts once both of its evaluations are there."""
        return bench_file(self.ordinary).is_file() and bench_file(self.random).is_file()


#: The slices on the page. At the study's rate (3e-3) the runs to 12,000 steps give every
#: step (one run per seed serves every budget, all on one machine); study_budget_copy.yaml
#: and study_budget_reverse.yaml's runs of 2026-11-25 (6,000 steps, on another machine:
#: :data:`EARLIER_BUDGET_RUNS`) stay in docs/bench as that day's record: they are other runs
#: of the same seeds, and budget_cells refuses to mix runs at a shared step.
BUDGET_SLICES = [
    BudgetSlice(
        "study_budget_copy_long",
        "copy",
        3e-3,
        "cpu-2026-11-26-study-budget-copy-long.csv",
        "cpu-2026-11-26-study-budget-copy-long-random-positions.csv",
    ),
    BudgetSlice(
        "study_budget_reverse_long",
        "reverse",
        3e-3,
        "cpu-2026-11-26-study-budget-reverse-long.csv",
        "cpu-2026-11-26-study-budget-reverse-long-random-positions.csv",
    ),
    BudgetSlice(
        "study_budget_copy_rate",
        "copy",
        1e-3,
        "cpu-2026-11-26-study-budget-copy-rate.csv",
        "cpu-2026-11-26-study-budget-copy-rate-random-positions.csv",
    ),
    BudgetSlice(
        "study_budget_reverse_rate",
        "reverse",
        1e-3,
        "cpu-2026-11-26-study-budget-reverse-rate.csv",
        "cpu-2026-11-26-study-budget-reverse-rate-random-positions.csv",
    ),
]
BUDGET_RUN = re.compile(
    r"(?P<sweep>study_budget_[a-z_]+)/(?P<scheme>[a-z0-9]+)-random_positions"
    r"(?:=none|(?P<rp>\d+))-seed(?P<seed>\d+)/"
)
BUDGET_LENGTHS = PROBE_LENGTHS[:3]
#: The columns of an ``extrapolate --budget --csv`` file: a test file's, and the step
#: (empty on the baseline rows).
BUDGET_COLUMNS = {**TEST_COLUMNS, "step": optional(int)}
#: a budget cell's key: (task, learning rate, scheme)
Arm = tuple[str, float, str]


@cached
def budget_cells() -> tuple[dict, dict]:
    """``(task, rate, scheme, rp on?, step, n, metric) -> {seed: value}`` (off at the
    ordinary positions, on at random positions: the study's paired protocol) and ``(task,
    rule, n, metric) -> baseline`` from the ordinary files' ``baseline:<rule>`` rows (the
    same test sequences at every rate)."""
    cells: dict = {}
    baselines: dict = {}
    for part in BUDGET_SLICES:
        if not part.ready():
            continue
        for protocol, name in (("ordinary", part.ordinary), ("random", part.random)):
            for row in csv_rows(bench_file(name), BUDGET_COLUMNS, "test"):
                value = row["value"]
                if row["name"].startswith("baseline:"):
                    if protocol == "ordinary":
                        key = (part.task, row["name"], row["length"], row["metric"])
                        baselines[key] = value
                    continue
                match = BUDGET_RUN.search(row["name"])
                if match is None or match["sweep"] != part.sweep:
                    continue
                on = match["rp"] is not None
                if on != (protocol == "random"):
                    continue
                key = (
                    part.task,
                    part.rate,
                    match["scheme"],
                    on,
                    row["step"],
                    row["length"],
                    row["metric"],
                )
                seeds = cells.setdefault(key, {})
                seed = int(match["seed"])
                if seeds.get(seed, value) != value:
                    raise ConfigError(
                        f"{bench_file(name)}: {row['name']} at n={row['length']} gives {value}, "
                        f"another slice's run of the same seed {seeds[seed]}: the page would "
                        "mix runs"
                    )
                seeds[seed] = value
    return cells, baselines


def budget_arms() -> list[Arm]:
    """Every (task, rate, scheme) with cells, by task, then rate from high to low."""
    arms = {key[:3] for key in budget_cells()[0]}
    return sorted(arms, key=lambda arm: (arm[0], -arm[1], arm[2]))


def budget_steps(arm: Arm | None = None) -> list[int]:
    """The checkpoint steps evaluated (of ``arm``'s runs, or of any)."""
    return sorted({key[4] for key in budget_cells()[0] if arm is None or key[:3] == arm})


def budget_tests() -> dict[tuple[str, float, str, int, int], tuple[list, list, float]]:
    """``(task, rate, scheme, step, n) -> (off, on, Holm p)``: accuracy by seed, one family."""
    cells, _ = budget_cells()
    pairs = {}
    for arm in budget_arms():
        for step in budget_steps():
            for n in BUDGET_LENGTHS:
                off = cells.get((*arm, False, step, n, "acc"), {})
                on = cells.get((*arm, True, step, n, "acc"), {})
                sides = by_common_seed(off, on)
                if sides is not None:
                    pairs[(*arm, step, n)] = sides
    return holm_family(pairs)


def budget() -> str:
    """The budget table: accuracy mean [95 % t-interval] over seeds, runs solving (exact
    match >= 0.9) out of seeds, by task, rate, scheme, randomized positions and step."""
    cells, baselines = budget_cells()
    head = (
        "| task | rate | scheme | randomized positions | step | "
        + " | ".join(f"n={n} ({TIMES[n]})" for n in BUDGET_LENGTHS)
        + " |"
    )
    lines = [head, "|---|---|---|---|---|" + "---|" * len(BUDGET_LENGTHS)]
    for task in sorted({arm[0] for arm in budget_arms()}):
        rules = sorted({rule for t, rule, _, _ in baselines if t == task})
        for rule in rules:
            row = [
                f"{baselines.get((task, rule, n, 'acc'), float('nan')):.3f}" for n in BUDGET_LENGTHS
            ]
            lines.append(f"| {task} | – | {rule} | – | – | " + " | ".join(row) + " |")
        for arm in (a for a in budget_arms() if a[0] == task):
            for on in (False, True):
                for step in budget_steps(arm):
                    row = []
                    for n in BUDGET_LENGTHS:
                        acc = cells.get((*arm, on, step, n, "acc"), {})
                        exact = cells.get((*arm, on, step, n, "exact"), {})
                        if not acc:
                            row.append("–")
                            continue
                        solved = sum(v >= SOLVED for v in exact.values())
                        row.append(
                            f"{mean_interval(list(acc.values())).clipped().text()} · "
                            f"{solved}/{len(acc)} solved"
                        )
                    label = "on (R = 1024), at random positions" if on else "off"
                    lines.append(
                        f"| {task} | {arm[1]:g} | {arm[2]} | {label} | {step:,} | "
                        + " | ".join(row)
                        + " |"
                    )
    return "\n".join(lines)


def budget_pairs() -> str:
    """Off against on by seed at every step and length (Holm over the whole table)."""
    tests = budget_tests()
    head = (
        "| task | rate | scheme | step | "
        + " | ".join(f"n={n} ({TIMES[n]})" for n in BUDGET_LENGTHS)
        + " |"
    )
    lines = [head, "|---|---|---|---|" + "---|" * len(BUDGET_LENGTHS)]
    for arm in budget_arms():
        for step in budget_steps(arm):
            row = []
            for n in BUDGET_LENGTHS:
                if (*arm, step, n) not in tests:
                    row.append("–")
                    continue
                off, on, p = tests[(*arm, step, n)]
                row.append(
                    f"{statistics.fmean(off):.3f} → {statistics.fmean(on):.3f} {mark(off, on, p)} "
                    f"{sides(off, on)}"
                )
            lines.append(
                f"| {arm[0]} | {arm[1]:g} | {arm[2]} | {step:,} | " + " | ".join(row) + " |"
            )
    return "\n".join(lines)


def budget_findings() -> str:
    """The sentences the budget section states, from the same cells."""
    cells, _ = budget_cells()
    tests = budget_tests()
    steps = budget_steps()
    parts = []
    for arm in budget_arms():
        gaps = []
        own = budget_steps(arm)
        for step in (own[0], own[-1]):
            off, on, p = tests[(*arm, step, 16)]
            gaps.append(
                f"{statistics.fmean(off) - statistics.fmean(on):+.3f} at step {step:,} "
                f"({verdict(p)})"
            )
        parts.append(f"`{arm[2]}` × `{arm[0]}` at rate {arm[1]:g}: {gaps[0]}, {gaps[1]}")
    solved_past = [
        f"`{arm[2]}` × `{arm[0]}` at rate {arm[1]:g} {'with' if on else 'without'} randomized "
        f"positions at step {step:,}, n={n}: "
        f"{sum(v >= SOLVED for v in cells[(*arm, on, step, n, 'exact')].values())} of "
        f"{len(cells[(*arm, on, step, n, 'exact')])} seeds"
        for arm in budget_arms()
        for on in (False, True)
        for step in budget_steps(arm)
        for n in BUDGET_LENGTHS[1:]
        if any(v >= SOLVED for v in cells.get((*arm, on, step, n, "exact"), {}).values())
    ]
    text = (
        "The 1× cost of randomized positions (mean accuracy off minus on, paired by seed, "
        f"Holm over the {len(tests)} cells of the table above): " + "; ".join(parts) + ". "
    )
    rising = []  # past 1x with randomized positions: the largest budget against the smallest
    for arm in budget_arms():
        own = budget_steps(arm)
        for n in BUDGET_LENGTHS[1:]:
            first = cells.get((*arm, True, own[0], n, "acc"))
            last = cells.get((*arm, True, own[-1], n, "acc"))
            if first and last:
                rising.append(statistics.fmean(last.values()) > statistics.fmean(first.values()))
    text += (
        "With randomized positions, the mean accuracy past 1× is higher at an arm's largest "
        f"budget than at its smallest in {sum(rising)} of {len(rising)} (arm, length) cells. "
    )
    if solved_past:
        text += (
            "Runs that solve a length past 1× (exact match ≥ 0.9): " + "; ".join(solved_past) + "."
        )
    else:
        schemes = sorted({arm[2] for arm in budget_arms()})
        tasks = sorted({arm[0] for arm in budget_arms()})
        rates = sorted({arm[1] for arm in budget_arms()})
        text += (
            f"No run of the {len(schemes)} schemes on {names([f'`{t}`' for t in tasks])}, "
            f"at {names([f'{r:g}' for r in rates])}, with or without randomized positions, "
            f"at any of the steps {', '.join(f'{s:,}' for s in steps)}, reaches exact match "
            "≥ 0.9 past 1×."
        )
    return text + "\n\n" + power(tests)


#: The earlier 6,000-step runs of the 3e-3 slices (2026-11-25) -> the sweep that replaced
#: them on the page.
EARLIER_BUDGET_RUNS = {
    BudgetSlice(
        "study_budget_copy",
        "copy",
        3e-3,
        "cpu-2026-11-25-study-budget-copy.csv",
        "cpu-2026-11-25-study-budget-copy-random-positions.csv",
    ): "study_budget_copy_long",
    BudgetSlice(
        "study_budget_reverse",
        "reverse",
        3e-3,
        "cpu-2026-11-25-study-budget-reverse.csv",
        "cpu-2026-11-25-study-budget-reverse-random-positions.csv",
    ): "study_budget_reverse_long",
}


def budget_reruns() -> str:
    """How many accuracy cells the earlier runs share with the runs that replaced them (same
    seed, step, length and protocol), and how many of those are equal bit for bit."""

    def accuracies(part: BudgetSlice) -> dict:
        values = {}
        for name in (part.ordinary, part.random):
            for row in csv_rows(bench_file(name), BUDGET_COLUMNS, "test"):
                match = BUDGET_RUN.search(row["name"])
                if match is None or match["sweep"] != part.sweep or row["metric"] != "acc":
                    continue
                key = (match["scheme"], match["rp"], match["seed"], row["step"], row["length"])
                values[key] = row["value"]
        return values

    parts = []
    for earlier, later in EARLIER_BUDGET_RUNS.items():
        replacing = next((part for part in BUDGET_SLICES if part.sweep == later), None)
        if replacing is None or not replacing.ready() or not earlier.ready():
            continue
        old, new = accuracies(earlier), accuracies(replacing)
        shared = set(old) & set(new)
        same = sum(old[key] == new[key] for key in shared)
        parts.append(
            f"`{earlier.sweep}.yaml` against `{later}.yaml`: {same} of {len(shared)} shared "
            "accuracy cells equal bit for bit"
        )
    return ("; ".join(parts) + ".") if parts else "_Not run yet._"
