"""Rewrite the generated regions of the study pages from the raw outputs in ``docs/bench/``.

    python scripts/study_pages.py           # rewrite every generated region
    python scripts/study_pages.py --check   # exit 0 only if the pages equal what the data give

A region is the text between ``<!-- generated: NAME -->`` and ``<!-- end generated -->`` on
a page of ``docs/studies/``; :data:`REGIONS` maps each name to the function that writes it.
Every table, and every sentence that states a count, an ordering or "on every seed", lives
in such a region, so a page cannot drift from its data: the default test suite runs
``--check``.

Raw outputs read: the ``extrapolate`` outputs ``docs/bench/cpu-2026-11-24-probes-*-extrapolate*.txt``
(per-checkpoint rows; a file ending ``-random-positions.txt`` was evaluated at random
positions, ``--positions random``, the others at the ordinary positions). Baselines are
computed here on the very sequences those runs were evaluated on (data seed 0, 256
sequences per length: the study's settings), by :mod:`roformer_lit.data.probes.baselines`.
Statistics: :mod:`roformer_lit.results.statistics` (paired t-test by seed, Holm over every
off/on cell compared, 95 % t-intervals).
"""

from __future__ import annotations

import argparse
import functools
import math
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import study_plans
import study_selected

from roformer_lit.data.probes import PROBE_TASKS, ProbeValidation, baseline_scores
from roformer_lit.results.statistics import holm, mean_interval, paired_t_test, spearman, verdict

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "docs" / "bench"
PAGES = ROOT / "docs" / "studies"
RAW = "cpu-2026-11-24-probes-*-extrapolate*.txt"
START = re.compile(r"<!-- generated: (?P<name>[a-z0-9_-]+) -->\n")
END = "<!-- end generated -->"
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
TASKS = ["copy", "reverse", "odds_first"]
LENGTHS = [16, 32, 64, 128, 256]
TIMES = {16: "1×", 32: "2×", 64: "4×", 128: "8×", 256: "16×"}
VAL_SEQUENCES, DATA_SEED = 256, 0


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
    """A per-checkpoint row of an ``extrapolate`` table as (run, ``n -> (acc, exact)``)."""
    match = RUN.search(line)
    if not line.startswith("| ") or match is None:
        return None
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


@functools.cache
def runs() -> dict[Key, dict[int, tuple[float, float]]]:
    """Every run of every raw output, its cells merged over the files that hold it."""
    found: dict[Key, dict[int, tuple[float, float]]] = {}
    for path in sorted(BENCH.glob(RAW)):
        protocol = "random" if path.name.endswith("-random-positions.txt") else "ordinary"
        lengths: list[int] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("| checkpoint |"):
                lengths = [int(c.strip()[2:]) for c in line.strip("|").split("|")[3:]]
                continue
            parsed = parse_row(line, protocol, lengths)
            if parsed is not None:
                found.setdefault(parsed[0], {}).update(parsed[1])
    return found


def seeds(
    sweeps: tuple[str, ...], scheme: str, task: str, rp: bool, protocol: str, unrotated: float = 0.0
) -> dict[int, dict[int, tuple[float, float]]]:
    """``seed -> n -> (acc, exact)`` of one variant."""
    return {
        k.seed: cells
        for k, cells in runs().items()
        if k.sweep in sweeps
        and k.scheme == scheme
        and k.task == task
        and k.rp == rp
        and k.protocol == protocol
        and k.unrotated == unrotated
    }


MAIN = ("probes_quick", "probes_others", "probes_sort")


@functools.cache
def baseline(task: str, n: int) -> dict[str, float]:
    """Each baseline's accuracy on the study's evaluation sequences of ``task`` at ``n``."""
    symbols = 32 if task == "recall" else 16
    data = ProbeValidation(
        PROBE_TASKS[task], symbols=symbols, length=n, count=VAL_SEQUENCES, seed=DATA_SEED
    )
    scores = baseline_scores(
        PROBE_TASKS[task], data.input_ids.numpy(), data.labels.numpy(), symbols
    )
    return {s.rule: s.acc for s in scores}


def best_baseline(task: str, n: int) -> float:
    return max(baseline(task, n).values())


def span(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.3f}" if f"{low:.3f}" == f"{high:.3f}" else f"{low:.3f}–{high:.3f}"


def names(items: list[str]) -> str:
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# -- regions -------------------------------------------------------------------------------


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
    return "\n".join(lines)


def beyond() -> str:
    """Without randomized positions: the pairs above the best baseline at 2× on every seed."""
    above, total = [], 0
    for scheme in SCHEMES:
        for task in [*TASKS, "sort"]:
            by_seed = seeds(MAIN, scheme, task, False, "ordinary")
            total += 1
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
        f"that length. The largest mean margins over the baseline at 2×: {names(largest)}.",
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


@functools.cache
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
    keys = list(cells)
    adjusted = holm([paired_t_test(*cells[k]) for k in keys])
    return {k: (*cells[k], p) for k, p in zip(keys, adjusted, strict=True)}


def _mark(before: list[float], after: list[float], p: float) -> str:
    if verdict(p) == "n.s.":
        return "n.s."
    return ("▲ " if statistics.fmean(after) > statistics.fmean(before) else "▼ ") + verdict(p)


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
                    f"{_mark(before, after, p)}"
                )
            lead = f"| {scheme} | " + (f"{task} | " if with_task else "")
            lines.append(lead + " | ".join(row) + " |")
    return "\n".join(lines)


def rp_pairs() -> str:
    return _pairs_table(TASKS, True)


def rp_sort() -> str:
    return _pairs_table(["sort"], False)


def rp_counts() -> str:
    """The counts the randomized-positions paragraphs state."""
    cells = off_on()
    family = len(cells)

    def count(tasks: list[str], n: int) -> tuple[int, int, int, int]:
        up = down = ns = every = 0
        for scheme in SCHEMES[1:]:
            for task in tasks:
                before, after, p = cells[(scheme, task, n)]
                mark = _mark(before, after, p)
                up += mark.startswith("▲")
                down += mark.startswith("▼")
                ns += mark == "n.s."
                every += all(a > b for a, b in zip(after, before, strict=True))
        return up, down, ns, every

    pairs = len(SCHEMES[1:]) * len(TASKS)
    up2, down2, ns2, every2 = count(TASKS, 32)
    up1, down1, ns1, _ = count(TASKS, 16)
    sort_up = [n for n in LENGTHS[1:] if count(["sort"], n)[0] == len(SCHEMES[1:])]
    sort_every = [n for n in LENGTHS[1:] if count(["sort"], n)[3] == len(SCHEMES[1:])]
    return (
        f"Paired t-test by seed (three seeds), Holm-corrected over all {family} off/on cells "
        f"of both tables. Of the {pairs} scheme × task pairs on `copy`, `reverse` and "
        f"`odds_first`, at 2× {up2} are separated upwards, {down2} downwards and {ns2} are "
        f"n.s. ({every2} are higher with randomized positions on every seed, which with "
        "three seeds a sign test would give p = 0.25 each). At the training length "
        f"{down1} are separated downwards (a cost), {up1} upwards, {ns1} n.s. On `sort`, all "
        f"nine schemes are higher on every seed at "
        f"{names([TIMES[n] for n in sort_every]) if sort_every else 'no length past 1×'}, "
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
                        paired_t_test(
                            [full[s][n][0] for s in common], [by_seed[s][n][0] for s in common]
                        )
                    )
    separated = sum(verdict(p) != "n.s." for p in holm(tests))
    lines += [
        "",
        f"Against full `rope` by seed (paired t-test, Holm over the {len(tests)} cells): "
        f"{separated} separated, {len(tests) - separated} n.s.",
    ]
    return "\n".join(lines)


# -- the MLM positions sweep (docs/studies/positions-sweep.md) -----------------------------

MLM_RAW = "cpu-2026-11-23-extrapolation-every-scheme.txt"
POSITION_LR_RAW = "cpu-2026-11-23-position-lr.txt"


#: the MLM training length and the columns of MLM_RAW's tables (L=128 is column 3)
MLM_LENGTHS = {128: 3, 512: 4}


@functools.cache
def mlm_losses(length: int = 128) -> dict[str, list[float]]:
    """``scheme -> [val/loss of seed 0, 1, 2]`` at ``length`` (128, the training length, where
    extrapolate equals validate, or 512 = 4×), from each scheme's block without scheme
    options; a scheme with a seed not evaluated at ``length`` is left out."""
    losses: dict[str, list[float]] = {}
    block = None
    for line in (BENCH / MLM_RAW).read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            block = line[3:].strip()
            continue
        match = RUN.search(line.replace("runs/positions/", "runs/probes_x/"))
        if block is None or " " in block or match is None or not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        try:
            losses.setdefault(block, []).append(float(cells[MLM_LENGTHS[length]]))
        except ValueError:  # "refused (...)": not evaluated at this length
            losses[block].append(math.nan)
    return {k: v for k, v in losses.items() if not any(math.isnan(x) for x in v)}


@functools.cache
def position_lr_losses() -> dict[str, list[float]]:
    """``t5`` / ``fire`` at 10x the position learning rate: per seed final val/loss."""
    found: dict[str, list[float]] = {}
    for line in (BENCH / POSITION_LR_RAW).read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"(t5|fire)-softmax position_lr_scale=10\.0,(\d),([0-9.]+)", line)
        if match:
            found.setdefault(match[1], []).append(float(match[3]))
    return found


def _every_below(a: list[float], b: list[float]) -> bool:
    return max(a) < min(b)


def mlm_sweep() -> str:
    losses = mlm_losses()
    order = sorted(losses, key=lambda k: statistics.fmean(losses[k]))
    lines = [
        "| variant | val/loss, seeds 0 / 1 / 2 | mean [95 % t-interval] |",
        "| --- | --- | ---: |",
    ]
    for scheme in order:
        seeds_text = " / ".join(f"{v:.3f}" for v in losses[scheme])
        lines.append(
            f"| {scheme}-softmax | {seeds_text} | {mean_interval(losses[scheme]).text(3)} |"
        )
    settled = [
        f"`{a}` < `{b}`"
        for i, a in enumerate(order)
        for b in order[i + 1 :]
        if _every_below(losses[a], losses[b])
    ]
    overlapping = [
        f"`{a}` / `{b}`"
        for a, b in zip(order, order[1:], strict=False)
        if not _every_below(losses[a], losses[b])
    ]
    lines += [
        "",
        f"Neighbours in this order whose seeds overlap (no ordering holds on every seed): "
        f"{names(overlapping)}. Every other neighbouring pair is ordered on every seed "
        f"(every seed of one below every seed of the other); in all, {len(settled)} of "
        f"{len(order) * (len(order) - 1) // 2} pairs of schemes are.",
    ]
    return "\n".join(lines)


def position_lr() -> str:
    tenfold, base = position_lr_losses(), mlm_losses()
    parts = []
    for scheme in ("fire", "t5"):
        gains = [b - a for a, b in zip(tenfold[scheme], base[scheme], strict=True)]
        below = [o for o in base if o != scheme and _every_below(tenfold[scheme], base[o])]
        above = [o for o in base if o != scheme and _every_below(base[o], tenfold[scheme])]
        parts.append(
            f"`{scheme}` ×10 is lower than ×1 on every seed by {min(gains):.2f}–{max(gains):.2f} "
            f"nats; every seed of it is below every seed of {names([f'`{o}`' for o in below])} "
            f"and above every seed of {names([f'`{o}`' for o in above])}"
        )
    return (
        "Per seed (final val/loss, `docs/bench/" + POSITION_LR_RAW + "`): " + "; ".join(parts) + "."
    )


def bridge() -> str:
    """Probe accuracy (each scheme at its selected learning rate, test sequences) against the
    MLM validation loss of the positions sweep (600 steps, seeds 0-2), at 1× (probe n = 16,
    MLM L = 128) and at 4× (n = 64, L = 512), per task and averaged over the tasks run:
    Spearman's ρ with its interval and p-value; then the numbers it is computed from."""
    tasks = study_selected.tasks()
    if not tasks:
        return "_No slice of the scheme study has been run yet._"
    first = study_selected.LENGTHS[0]
    scales = [(1, first, 128), (4, 4 * first, 512)]

    def variant_of(task: str, scheme: str) -> str | None:
        names_ = study_selected.variants(task)
        if scheme in names_:
            return scheme
        sized = [v for v in names_ if v.startswith(f"{scheme} (")]
        return sized[0] if len(sized) == 1 else None

    def probe_acc(scheme: str, task_list: list[str], n: int) -> float | None:
        accs = []
        for t in task_list:
            name = variant_of(t, scheme)
            values = study_selected.reported(t, name, n) if name else {}
            if not values:
                return None
            accs.append(statistics.fmean(values.values()))
        return statistics.fmean(accs)

    groups = [*tasks, "mean"] if len(tasks) > 1 else tasks
    rows = []
    for times, n, length in scales:
        losses = mlm_losses(length)
        for task in groups:
            pairs = []
            for scheme in losses:
                acc = probe_acc(scheme, tasks if task == "mean" else [task], n)
                if acc is not None:
                    pairs.append((acc, statistics.fmean(losses[scheme])))
            if len(pairs) < 4:
                continue
            result = spearman([a for a, _ in pairs], [b for _, b in pairs])
            label = f"`{task}`" if task != "mean" else f"mean of {names([f'`{t}`' for t in tasks])}"
            holds = (
                "not separated from 0" if result.low <= 0.0 <= result.high else "separated from 0"
            )
            rows.append(
                f"| {times}× (n={n}; MLM L={length}) | {label} | {result.text()} | {holds} |"
            )
    beside = []
    for scheme in mlm_losses(128):
        cells = []
        for _, n, _length in scales:
            acc = probe_acc(scheme, tasks, n)
            cells.append("–" if acc is None else f"{acc:.3f}")
        for _, _, length in scales:
            values = mlm_losses(length).get(scheme)
            cells.append("–" if values is None else mean_interval(values).text())
        beside.append(f"| `{scheme}` | " + " | ".join(cells) + " |")
    task_list = names([f"`{t}`" for t in tasks])
    return "\n".join(
        [
            "| length | probe accuracy | rank correlation with MLM val/loss (600 steps) | "
            "interval |",
            "|---|---|---|---|",
            *rows,
            "",
            f"| scheme | probe accuracy at 1×, mean of {task_list} | at 4× | MLM val/loss at "
            "L=128 (1×), mean [95 % interval] over seeds 0–2 | at L=512 (4×) |",
            "|---|---|---|---|---|",
            *beside,
        ]
    )


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
        return (BENCH / self.ordinary).is_file() and (BENCH / self.random).is_file()


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
BUDGET_LENGTHS = [16, 32, 64]
SOLVED = 0.9
#: a budget cell's key: (task, learning rate, scheme)
Arm = tuple[str, float, str]


@functools.cache
def budget_cells() -> tuple[dict, dict]:
    """``(task, rate, scheme, rp on?, step, n, metric) -> {seed: value}`` (off at the
    ordinary positions, on at random positions: the study's paired protocol) and ``(task,
    rule, n, metric) -> baseline`` from the ordinary files' ``baseline:<rule>`` rows (the
    same test sequences at every rate)."""
    import csv

    cells: dict = {}
    baselines: dict = {}
    for part in BUDGET_SLICES:
        if not part.ready():
            continue
        for protocol, name in (("ordinary", part.ordinary), ("random", part.random)):
            with (BENCH / name).open(encoding="utf-8") as f:
                for row in csv.DictReader(f):
                    value = float(row["value"])
                    if row["name"].startswith("baseline:"):
                        if protocol == "ordinary":
                            key = (part.task, row["name"], int(row["length"]), row["metric"])
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
                        int(row["step"]),
                        int(row["length"]),
                        row["metric"],
                    )
                    seeds = cells.setdefault(key, {})
                    seed = int(match["seed"])
                    if seeds.get(seed, value) != value:
                        raise ValueError(
                            f"{name}: {row['name']} at n={row['length']} gives {value}, another "
                            f"slice's run of the same seed {seeds[seed]}: the page would mix runs"
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
                common = sorted(set(off) & set(on))
                if len(common) >= 2:
                    pairs[(*arm, step, n)] = ([off[s] for s in common], [on[s] for s in common])
    keys = list(pairs)
    adjusted = holm([paired_t_test(*pairs[k]) for k in keys])
    return {k: (*pairs[k], p) for k, p in zip(keys, adjusted, strict=True)}


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
                    f"{statistics.fmean(off):.3f} → {statistics.fmean(on):.3f} {_mark(off, on, p)}"
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
    return text


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
    import csv

    def accuracies(part: BudgetSlice) -> dict:
        values = {}
        for name in (part.ordinary, part.random):
            with (BENCH / name).open(encoding="utf-8") as f:
                for row in csv.DictReader(f):
                    match = BUDGET_RUN.search(row["name"])
                    if match is None or match["sweep"] != part.sweep or row["metric"] != "acc":
                        continue
                    key = (match["scheme"], match["rp"], match["seed"], row["step"], row["length"])
                    values[key] = float(row["value"])
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


REGIONS: dict[str, Callable[[], str]] = {
    "budget": budget,
    "budget-pairs": budget_pairs,
    "budget-findings": budget_findings,
    "budget-reruns": budget_reruns,
    "schemes-selected": study_selected.table,
    "schemes-pairs": study_selected.pairs_table,
    "schemes-findings": study_selected.findings,
    "schemes-prope": study_selected.prope,
    "bridge": bridge,
    "schemes-retrain": study_selected.retrain,
    "plans-table": lambda: study_plans.study().table(),
    "plans-pairs": lambda: study_plans.study().pairs_table(),
    "plans-findings": lambda: study_plans.study().findings(),
    "plans-recall-table": lambda: study_plans.recall_study().table(),
    "plans-recall-pairs": lambda: study_plans.recall_study().pairs_table(),
    "plans-recall-findings": lambda: study_plans.recall_study().findings(),
    "plans-recall-short-table": lambda: study_plans.recall_short_study().table(),
    "plans-recall-short-pairs": lambda: study_plans.recall_short_study().pairs_table(),
    "plans-recall-short-findings": lambda: study_plans.recall_short_study().findings(),
    "plans-mlm-table": lambda: study_plans.mlm_study().table(),
    "plans-mlm-pairs": lambda: study_plans.mlm_study().pairs_table(),
    "plans-mlm-findings": lambda: study_plans.mlm_study().findings(),
    "mlm-sweep": mlm_sweep,
    "position-lr": position_lr,
    "training-length": training_length,
    "beyond-2x": beyond,
    "rp-pairs": rp_pairs,
    "rp-sort": rp_sort,
    "rp-counts": rp_counts,
    "recall": recall,
    "prope": prope,
}


def render(text: str, where: str) -> str:
    """``text`` with every generated region rewritten; a ValueError naming an unknown or
    unclosed region."""
    out, position = [], 0
    for match in START.finditer(text):
        if match.start() < position:
            continue
        name = match["name"]
        if name not in REGIONS:
            raise ValueError(
                f"{where}: unknown generated region {name!r}; known: {', '.join(REGIONS)}"
            )
        end = text.find(END, match.end())
        if end < 0:
            raise ValueError(f"{where}: region {name!r} has no {END!r}")
        out += [text[position : match.end()], REGIONS[name]().rstrip("\n") + "\n"]
        position = end
    out.append(text[position:])
    return "".join(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 on a difference")
    ns = parser.parse_args(argv)
    stale = []
    for page in sorted(PAGES.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        new = render(text, str(page))
        if new != text:
            stale.append(page)
            if not ns.check:
                page.write_text(new, encoding="utf-8")
    if ns.check and stale:
        print(
            "stale generated regions: "
            + ", ".join(str(p.relative_to(ROOT)) for p in stale)
            + " (run python scripts/study_pages.py)",
            file=sys.stderr,
        )
        return 1
    for page in stale:
        print(f"rewrote {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
