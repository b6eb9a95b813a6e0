"""The first position-task sweep (2026-11-24): every scheme on ``copy``, ``reverse``,
``odds_first`` and ``sort`` with and without randomized positions, ``recall``, and p-RoPE.
Regions ``training-length``, ``beyond-2x``, ``rp-pairs``, ``rp-sort``, ``rp-counts``,
``recall`` and ``prope`` of ``docs/studies/position-tasks.md``.

Raw outputs read: the ``extrapolate`` outputs :data:`RAW` in ``docs/bench/``
(per-checkpoint rows; a file ending ``-random-positions.txt`` was evaluated at random
positions, ``--positions random``, the others at the ordinary positions). Baselines are
computed here on the very sequences those runs were evaluated on (data seed 0, 256
sequences per length: the study's settings), by :mod:`roformer_lit.data.probes.baselines`.
The runs' accuracies are read at the tables' three decimals, so every comparison with a
baseline uses the baseline at those decimals too (:func:`printed`): a verdict agrees with
the numbers the table prints.
Statistics: :mod:`.exact` (exact sign-flip test by seed, Holm over every
off/on cell compared, 95 % t-intervals).
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from roformer_lit.data.probes import (
    PROBE_TASKS,
    BaselineScore,
    ProbeValidation,
    baseline_scores,
)
from roformer_lit.errors import ConfigError
from roformer_lit.results.statistics import holm, mean_interval, verdict
from roformer_lit.results.study.chance import caveat
from roformer_lit.results.study.exact import floor_words, sign_flip_p, smallest_p
from roformer_lit.results.study.paired import holm_family, mark, sides
from roformer_lit.results.study.places import PLACES, cached
from roformer_lit.results.study.reading import read_text
from roformer_lit.results.study.words import PROBE_LENGTHS, TIMES, names, span

RAW = "cpu-2026-11-24-probes-*-extrapolate*.txt"
#: The seeds of every variant of these sweeps (``seed_everything: [0, 1, 2]``): the tables
#: and sentences say "every seed of three".
SEEDS = (0, 1, 2)
#: A checkpoint of the sweep in a row of an ``extrapolate`` table.
RUN = re.compile(r"runs/(?P<sweep>probes_[a-z_]+)/(?P<name>[^/ ]+)/checkpoints/")
SCHEMES = [
    "nope",
    "learned",
    "rope",
    "deberta",
    "sinusoidal",
    "xl",
    "fire",
    "t5",
    "alibi",
    "kerple",
]
#: The sweep's tasks (``sort`` ran in a sweep of its own, ``probes_sort``).
TASKS = ["copy", "reverse", "odds_first"]
LENGTHS = PROBE_LENGTHS
VAL_SEQUENCES, DATA_SEED = 256, 0
#: Decimals of an ``extrapolate`` table's cells (``0.189 / 0.000``): the runs' accuracies are
#: known to this precision only, so the baselines they are compared with are rounded to it.
DECIMALS = 3


@dataclass(frozen=True)
class Key:
    """One run: sweep, scheme, task, randomized positions on, p-RoPE's unrotated fraction,
    how it was evaluated, seed."""

    sweep: str
    scheme: str
    task: str
    rp: bool
    unrotated: float
    protocol: str
    seed: int


def parse_row(line: str, protocol: str, lengths: list[int]) -> tuple[Key, dict[int, tuple]] | None:
    """A per-checkpoint row of an ``extrapolate`` table as (run, ``n -> (acc, exact)``);
    ValueError for a row cut short (no closing ``|``)."""
    match = RUN.search(line)
    if not line.startswith("| ") or match is None:
        return None
    if not line.rstrip().endswith("|"):
        raise ValueError("the row is cut short")
    name, sweep = match["name"], match["sweep"]
    parts = name.split("-")
    seed = int(re.search(r"seed(\d+)$", name).group(1))  # type: ignore[union-attr]
    task = (
        "recall"
        if sweep.startswith("probes_recall")
        else next(p for p in parts if p in PROBE_TASKS)
    )
    rp = re.search(r"random_positions\d+", name) is not None
    fraction = re.search(r"unrotated_fraction=([0-9.]+)", name)
    unrotated = float(fraction.group(1)) if fraction else 0.0
    cells = [c.strip() for c in line.strip().strip("|").split("|")][3:]
    values: dict[int, tuple] = {}
    for n, cell in zip(lengths, cells, strict=True):
        if " / " in cell:
            acc, exact = cell.split(" / ")
            values[n] = (float(acc), float(exact.split()[0]))
    return Key(sweep, parts[0], task, rp, unrotated, protocol, seed), values


@cached
def runs() -> dict[Key, dict[int, tuple[float, float]]]:
    """Every run of every raw output, its cells merged over the files that hold it; a line
    that starts a table or a row and cannot be read, or that gives a run's length another
    value than a row read already (two evaluations of one run), is refused (ConfigError:
    file, line)."""
    found: dict[Key, dict[int, tuple[float, float]]] = {}
    for path in sorted(PLACES.bench.glob(RAW)):
        protocol = "random" if path.name.endswith("-random-positions.txt") else "ordinary"
        lengths: list[int] = []
        for number, line in enumerate(read_text(path).splitlines(), start=1):
            try:
                if line.startswith("| checkpoint |"):
                    lengths = [int(c.strip()[2:]) for c in line.strip("|").split("|")[3:]]
                    continue
                parsed = parse_row(line, protocol, lengths)
            except (ValueError, AttributeError, StopIteration) as exc:
                raise ConfigError(
                    f"{path}: line {number}: not a row of an extrapolate table ({exc})"
                ) from None
            if parsed is None:
                continue
            cells = found.setdefault(parsed[0], {})
            for n, value in parsed[1].items():
                if cells.setdefault(n, value) != value:
                    raise ConfigError(
                        f"{path}: line {number}: {parsed[0].scheme} × {parsed[0].task} seed "
                        f"{parsed[0].seed} at n={n} is {value[0]} / {value[1]} here and "
                        f"{cells[n][0]} / {cells[n][1]} in an earlier row: one run, two values"
                    )
    return found


def seeds(
    sweeps: tuple[str, ...], scheme: str, task: str, rp: bool, protocol: str, unrotated: float = 0.0
) -> dict[int, dict[int, tuple[float, float]]]:
    """``seed -> n -> (acc, exact)`` of one variant: none, or each of :data:`SEEDS` once
    (ConfigError otherwise: a run missing, or one seed in two sweeps, would make "every
    seed" and the means be over other seeds than the pages say)."""
    found = [
        (k.seed, cells)
        for k, cells in runs().items()
        if k.sweep in sweeps
        and k.scheme == scheme
        and k.task == task
        and k.rp == rp
        and k.protocol == protocol
        and k.unrotated == unrotated
    ]
    if found and sorted(seed for seed, _ in found) != list(SEEDS):
        variant = f"{scheme} × {task}" + (" with randomized positions" if rp else "")
        raise ConfigError(
            f"{PLACES.bench / RAW}: {variant} ({protocol} positions) has seeds "
            f"{', '.join(str(seed) for seed, _ in sorted(found, key=lambda f: f[0]))}, not "
            f"{', '.join(map(str, SEEDS))}: its cells would be over other seeds than the "
            "page says"
        )
    return dict(found)


MAIN = ("probes_quick", "probes_others", "probes_sort")


@cached
def scores(task: str, n: int) -> dict[str, BaselineScore]:
    """Each baseline's scores on the study's evaluation sequences of ``task`` at ``n``."""
    symbols = 32 if task == "recall" else 16
    data = ProbeValidation(
        PROBE_TASKS[task], symbols=symbols, length=n, count=VAL_SEQUENCES, seed=DATA_SEED
    )
    found = baseline_scores(PROBE_TASKS[task], data.input_ids.numpy(), data.labels.numpy(), symbols)
    return {s.rule: s for s in found}


def printed(value: float) -> float:
    """``value`` at the precision of the raw outputs' cells (:data:`DECIMALS`), as the
    tables print it."""
    return round(value, DECIMALS)


def baseline(task: str, n: int) -> dict[str, float]:
    """Each baseline's accuracy on the study's evaluation sequences of ``task`` at ``n``, at
    the precision of the runs' accuracies it is compared with (:func:`printed`): a run's
    0.153 is "above" a baseline only if the tables print the baseline below 0.153."""
    return {rule: printed(score.acc) for rule, score in scores(task, n).items()}


def best_baseline(task: str, n: int) -> float:
    return max(baseline(task, n).values())


def training_length() -> str:
    """Accuracy at n = 16 (1×), ordinary positions, no randomized positions."""
    tasks = [*TASKS, "sort"]
    lines = [
        "| scheme | " + " | ".join(tasks) + " |",
        "|---|" + "---|" * len(tasks),
    ]
    solved = []
    for scheme in SCHEMES:
        cells = []
        for task in tasks:
            by_seed = seeds(MAIN, scheme, task, False, "ordinary")
            accs = [c[16][0] for c in by_seed.values()]
            text = span(accs)
            cells.append(f"**{text}**" if min(accs) >= 0.95 else text)
            if all(c[16][1] >= 0.9 for c in by_seed.values()):
                solved.append(f"`{scheme}` × `{task}`")
        lines.append(f"| {scheme} | " + " | ".join(cells) + " |")
    for rule in ("majority", "relative_place"):
        cells = [f"{baseline(t, 16)[rule]:.3f}" if rule in baseline(t, 16) else "–" for t in tasks]
        lines.append(f"| baseline:{rule} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        f"Solved (exact match ≥ 0.9 on every seed of three), {len(solved)} of "
        f"{len(SCHEMES) * len(tasks)} scheme × task cells: {names(solved)}."
    )
    lines.append("")
    lines.append(threshold_note(tasks))
    return "\n".join(lines)


def threshold_note(tasks: list[str]) -> str:
    """What bold and "solved" rest on: thresholds read off three runs, against baselines
    that reach neither, not a test."""
    exact = max(score.exact for task in tasks for score in scores(task, 16).values())
    acc = max(best_baseline(task, 16) for task in tasks)
    return (
        f'Bold and "solved" are thresholds met by each of three runs, not tests: the best '
        f"baseline of any of these tasks at 1× reaches accuracy {acc:.3f} and exact match "
        f"{exact:.3f}, and no cell is tested against it (three seeds: "
        f"{floor_words(len(SEEDS), 1)})."
    )


def beyond() -> str:
    """Without randomized positions: the pairs above the best baseline at 2× on every seed."""
    above, total, tested = [], 0, []
    for scheme in SCHEMES:
        for task in [*TASKS, "sort"]:
            by_seed = seeds(MAIN, scheme, task, False, "ordinary")
            total += 1
            tested.append(len(by_seed))
            if all(c[32][0] > best_baseline(task, 32) for c in by_seed.values()):
                above.append((scheme, task, by_seed))
    lines = [
        "| scheme | task | " + " | ".join(TIMES[n] for n in LENGTHS[1:]) + " |",
        "|---|---|" + "---|" * len(LENGTHS[1:]),
    ]
    for scheme, task, by_seed in above:
        cells = []
        for n in LENGTHS[1:]:
            accs = [c[n][0] for c in by_seed.values() if n in c]
            text = f"{statistics.fmean(accs):.3f} ({span(accs)})"
            cells.append(f"**{text}**" if min(accs) > best_baseline(task, n) else text)
        lines.append(f"| {scheme} | {task} | " + " | ".join(cells) + " |")
    for task in [*TASKS, "sort"]:
        rules = baseline(task, 32)
        best = max(rules, key=rules.__getitem__)
        cells = [f"{best_baseline(task, n):.3f}" for n in LENGTHS[1:]]
        lines.append(f"| baseline:{best} | {task} | " + " | ".join(cells) + " |")
    pairs = [f"`{s}` × `{t}`" for s, t, _ in above]
    margins = sorted(
        (
            (statistics.fmean(c[32][0] for c in by_seed.values()) - best_baseline(t, 32), s, t)
            for s, t, by_seed in above
        ),
        reverse=True,
    )
    largest = [f"`{s}` × `{t}` (+{m:.3f})" for m, s, t in margins[:2]]
    lines += [
        "",
        f"{len(above)} of {total} scheme × task pairs trained at the ordinary positions are "
        f"above the best baseline at 2× on every seed: {names(pairs)}; every other pair is at "
        "or below it on at least one seed. Bold: above the best baseline on every seed at "
        f"that length. The largest mean margins over the baseline at 2×: {names(largest)}. "
        f"Multiplicity: {caveat(len(above), tested, 'pairs at 2×')}.",
        "",
        past_one(),
    ]
    return "\n".join(lines)


def past_one() -> str:
    """Exact match past 1×, and sort's runs against the relative-place rule at 2×."""
    best = max(
        (cells[n][1], k.scheme, k.task, n)
        for k, cells in runs().items()
        if k.sweep in MAIN and k.task in TASKS
        for n in LENGTHS[1:]
        if n in cells
    )
    sort_runs = [
        cells[32][0]
        for k, cells in runs().items()
        if k.sweep in MAIN and k.task == "sort" and not k.rp and k.protocol == "ordinary"
    ]
    under = sum(acc <= baseline("sort", 32)["relative_place"] for acc in sort_runs)
    where = (
        "no run gets a single sequence entirely right"
        if best[0] == 0
        else f"the highest exact match of any run is {best[0]:.3f} (`{best[1]}` × `{best[2]}` "
        f"at n={best[3]})"
    )
    return (
        f"Past 1× on `copy`, `reverse` and `odds_first` (either protocol, with or without "
        f"randomized positions), {where}. On `sort`, {under} of the "
        f"{len(sort_runs)} runs trained at the ordinary positions are at or below the "
        f"relative-place rule at 2× ({baseline('sort', 32)['relative_place']:.3f})."
    )


@cached
def off_on() -> dict[tuple[str, str, int], tuple[list[float], list[float], float]]:
    """``(scheme, task, n) -> (off, on, Holm-adjusted p)``: accuracy by seed without and with
    randomized positions (on evaluated at random positions), every cell of copy, reverse,
    odds_first and sort in one family."""
    cells = {}
    for scheme in SCHEMES[1:]:
        for task in [*TASKS, "sort"]:
            off = seeds(MAIN, scheme, task, False, "ordinary")
            on = seeds(MAIN, scheme, task, True, "random")
            common = sorted(set(off) & set(on))
            for n in LENGTHS:
                if all(n in off[s] and n in on[s] for s in common):
                    cells[(scheme, task, n)] = (
                        [off[s][n][0] for s in common],
                        [on[s][n][0] for s in common],
                    )
    return holm_family(cells)


def _pairs_table(tasks: list[str], with_task: bool) -> str:
    cells = off_on()
    head = "| scheme | " + ("task | " if with_task else "")
    head += " | ".join(f"n={n} ({TIMES[n]})" for n in LENGTHS) + " |"
    lines = [head, "|---|" + ("---|" if with_task else "") + "---|" * len(LENGTHS)]
    for task in tasks:
        for scheme in SCHEMES[1:]:
            row = []
            for n in LENGTHS:
                before, after, p = cells[(scheme, task, n)]
                row.append(
                    f"{statistics.fmean(before):.3f} → {statistics.fmean(after):.3f} "
                    f"{mark(before, after, p)} {sides(before, after)}"
                )
            lead = f"| {scheme} | " + (f"{task} | " if with_task else "")
            lines.append(lead + " | ".join(row) + " |")
    return "\n".join(lines)


def rp_pairs() -> str:
    return _pairs_table(TASKS, True)


def rp_sort() -> str:
    return _pairs_table(["sort"], False)


#: What passes an off/on cell by chance: a run with randomized positions at the level of the
#: same seed's run without them is higher on each seed with probability 1/2.
NO_CHANGE = "a randomized-positions run at its off run's level"


def rp_counts() -> str:
    """The counts the randomized-positions paragraphs state; every "higher on every seed"
    count with how many cells were read and how many would pass by chance alone."""
    cells = off_on()
    family = len(cells)

    def count(tasks: list[str], n: int) -> tuple[int, int, int, int, list[int]]:
        up = down = ns = every = 0
        tested = []
        for scheme in SCHEMES[1:]:
            for task in tasks:
                before, after, p = cells[(scheme, task, n)]
                marked = mark(before, after, p)
                up += marked.startswith("▲")
                down += marked.startswith("▼")
                ns += marked == "n.s."
                every += all(a > b for a, b in zip(after, before, strict=True))
                tested.append(len(after))
        return up, down, ns, every, tested

    pairs = len(SCHEMES[1:]) * len(TASKS)
    up2, down2, ns2, every2, tested2 = count(TASKS, 32)
    up1, down1, ns1, _, _ = count(TASKS, 16)
    schemes = len(SCHEMES[1:])
    sort_cells = {n: count(["sort"], n) for n in LENGTHS[1:]}
    sort_up = [n for n, c in sort_cells.items() if c[0] == schemes]
    sort_every = [n for n, c in sort_cells.items() if c[3] == schemes]
    sort_passed = sum(c[3] for c in sort_cells.values())
    sort_tested = [s for c in sort_cells.values() for s in c[4]]
    return (
        f"Exact sign-flip test by seed (three seeds: it cannot go below "
        f"p = {smallest_p(3):g}, so no cell can be separated at α = 0.05), Holm-corrected over "
        f"all {family} off/on cells of both tables. Of the {pairs} scheme × task pairs on `copy`, `reverse` and "
        f"`odds_first`, at 2× {up2} are separated upwards, {down2} downwards and {ns2} are "
        f"n.s. Higher with randomized positions than without on every seed at 2×, the strongest "
        f"evidence three seeds can give: {caveat(every2, tested2, 'pairs', NO_CHANGE)}. At the "
        f"training length {down1} are separated downwards (a cost), {up1} upwards, {ns1} n.s. "
        f"On `sort`, all {schemes} schemes are higher on every seed at "
        f"{names([TIMES[n] for n in sort_every]) if sort_every else 'no length past 1×'} "
        f"({caveat(sort_passed, sort_tested, 'scheme × length cells past 1×', NO_CHANGE)}), "
        f"and separated upwards at "
        f"{names([TIMES[n] for n in sort_up]) if sort_up else 'no length'}."
    )


def recall() -> str:
    """Per seed accuracy / exact match at n = 8 and accuracy at n = 16."""
    lines = ["| scheme | n=8 (1×), seeds 0, 1, 2 | n=16 (2×), seeds 0, 1, 2 |", "|---|---|---|"]
    solved = []
    for scheme in SCHEMES:
        by_seed = seeds(("probes_recall",), scheme, "recall", False, "ordinary")
        one = ", ".join(
            f"**{c[8][0]:.3f} / {c[8][1]:.3f}**"
            if c[8][1] >= 0.9
            else f"{c[8][0]:.3f} / {c[8][1]:.3f}"
            for _, c in sorted(by_seed.items())
        )
        two = ", ".join(f"{c[16][0]:.3f}" for _, c in sorted(by_seed.items()))
        lines.append(f"| {scheme} | {one} | {two} |")
        hits = sum(c[8][1] >= 0.9 for c in by_seed.values())
        if hits:
            solved.append(f"`{scheme}` on {hits} of {len(by_seed)} seeds")
    lines.append(
        f"| baseline:majority | {baseline('recall', 8)['majority']:.3f} | "
        f"{baseline('recall', 16)['majority']:.3f} |"
    )
    lines += ["", f"Solved at 1× (exact match ≥ 0.9; bold): {names(solved)}."]
    return "\n".join(lines)


def prope() -> str:
    """p-RoPE: mean [95 % t-interval] by unrotated fraction; paired tests against 0."""
    lines = [
        "| task | unrotated | " + " | ".join(f"n={n} ({TIMES[n]})" for n in LENGTHS[:3]) + " |",
        "|---|---|" + "---|" * 3,
    ]
    tests = []
    for task in [*TASKS, "sort"]:
        full = seeds(
            ("probes_quick", "probes_others", "probes_sort"), "rope", task, False, "ordinary"
        )
        for fraction in (0.0, 0.25, 0.5):
            by_seed = (
                full
                if fraction == 0.0
                else seeds(("probes_prope",), "rope", task, False, "ordinary", fraction)
            )
            cells = [
                mean_interval([c[n][0] for c in by_seed.values()]).clipped().text(3)
                for n in LENGTHS[:3]
            ]
            lines.append(f"| {task} | {fraction:g} | " + " | ".join(cells) + " |")
            if fraction:
                common = sorted(set(full) & set(by_seed))
                for n in LENGTHS[:3]:
                    tests.append(
                        sign_flip_p(
                            [full[s][n][0] for s in common], [by_seed[s][n][0] for s in common]
                        )
                    )
    separated = sum(verdict(p) != "n.s." for p in holm(tests))
    lines += [
        "",
        f"Against full `rope` by seed (exact sign-flip test, Holm over the {len(tests)} cells): "
        f"{separated} separated, {len(tests) - separated} n.s.",
    ]
    return "\n".join(lines)
