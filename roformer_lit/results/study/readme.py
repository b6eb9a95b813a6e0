"""The README's findings: a table of task × finding × evidence, every cell from the studies'
cells (region ``readme-findings`` of ``README.md``, written by ``scripts/study_pages.py``).

A finding with no separated paired cell says "no evidence either way" with the smallest
difference the family could have detected (:func:`~.paired.power`'s numbers).
"""

from __future__ import annotations

import statistics

from roformer_lit.results.statistics import verdict
from roformer_lit.results.study import budget, figures, hybrid, plans, scheme_seeds, selected
from roformer_lit.results.study.chance import caveat
from roformer_lit.results.study.exact import (
    detectable,
    differences,
    effect,
    floor_words,
    smallest_p,
)
from roformer_lit.results.study.paired import cell
from roformer_lit.results.study.seed_study import SeedStudy
from roformer_lit.results.study.streams import data_seeds
from roformer_lit.results.study.words import SOLVED, names

TASKS_PAGE = "docs/studies/position-tasks.md"
PLANS_PAGE = "docs/studies/layer-plans.md"


def _reach(family: dict) -> str:
    """How many paired cells are separated (or why none can be), how many have every seed on
    one side, and the t-approximation's smallest detectable difference."""
    if not family:
        return "not run"
    n = min(len(a) for a, _, _ in family.values())
    spread = statistics.median(statistics.stdev(differences(a, b)) for a, b, _ in family.values())
    separated = sum(verdict(p) != "n.s." for _, _, p in family.values())
    agree = sum((e := effect(a, b)).up == e.n or e.down == e.n for a, b, _ in family.values())
    floor = smallest_p(n)
    head = (
        f"{separated} of {len(family)} paired cells separated after Holm"
        if separated
        else f"no paired cell separated ({n} seeds: {floor_words(n, len(family))}): "
        "no test-backed evidence either way"
    )
    return (
        f"{head}; {agree} of {len(family)} cells have every seed on one side (unadjusted "
        f"p = {floor:.4g} each); a t-test would need a mean difference of "
        f"≈ {detectable(spread, n):.3f}"
    )


def _solved_every(study: SeedStudy, task: str, n: int) -> list[str]:
    return [
        f"`{v}`"
        for v in study.order[task]
        if study.solved(task, v, n)[1]
        and study.solved(task, v, n)[0] == study.solved(task, v, n)[1]
    ]


def _above(study: SeedStudy, task: str, n: int) -> list[str]:
    return [f"`{v}`" for v in study.order[task] if study.above_baseline(task, v, n)]


def _solving(study: SeedStudy) -> list[str]:
    """Each ``recall`` plan solving some length on every seed, with those lengths."""
    return [
        f"`{v}` at {names([study.times(n) for n in study.lengths if study.solved_every('recall', v, n)])}"
        for v in study.order["recall"]
        if any(study.solved_every("recall", v, n) for n in study.lengths)
    ]


def _counted(label: str, study: SeedStudy) -> str:
    """``label`` with its ``{}`` (if any) the most seeds a cell of ``study`` has."""
    return label.format(max(len(by_seed) for by_seed in study.cells.values()))


def _versus(study: SeedStudy) -> str:
    """Each variant minus the reference at every length, paired, with its Holm p (one
    variant: its cells in a row; several: each variant's, in turn)."""
    (task,) = study.tasks()
    others = [v for v in study.order[task] if v != study.reference]
    unit = " nats" if study.lower_is_better else ""
    parts = [
        (f"`{name}` " if len(others) > 1 else "")
        + "; ".join(
            f"{study.times(n)} {cell(*study.pairs[(task, name, n)])}"
            for n in study.lengths
            if (task, name, n) in study.pairs
        )
        for name in others
    ]
    if len(others) == 1:
        return f"`{others[0]}` minus `{study.reference}`{unit}: " + parts[0]
    return f"each minus `{study.reference}`{unit}: " + " · ".join(parts)


def findings() -> str:
    rows = []
    link = f"[position tasks]({TASKS_PAGE}#every-scheme-at-its-selected-learning-rate)"
    schemes = selected.study()
    for task in schemes.tasks():
        first, last = schemes.lengths[0], schemes.lengths[-1]
        past = sum(
            schemes.solved(task, v, n)[0] > 0
            for v in schemes.order[task]
            for n in schemes.lengths[1:]
        )
        above = "; ".join(
            f"{schemes.times(n)}: {names(_above(schemes, task, n))}" for n in schemes.lengths[1:]
        )
        tested = [
            (len(schemes.values(task, v, n)), schemes.above_baseline(task, v, n))
            for v in schemes.order[task]
            for n in schemes.lengths[1:]
        ]
        rows.append(
            (
                task,
                f"solved (exact ≥ {SOLVED}) on every seed at 1× by {names(_solved_every(schemes, task, first))}; "
                f"runs solving a length past 1× (up to {schemes.times(last)}): {past}",
                f"above the best baseline on every seed, {above} "
                f"({caveat(sum(p for _, p in tested), [s for s, _ in tested], 'cells past 1×')}); "
                f"{link}",
            )
        )
    rows.append(
        (
            "all four, against rope",
            f"each scheme minus `rope`, paired by seed, "
            f"{schemes.times(schemes.lengths[0])} to {schemes.times(schemes.lengths[-1])}",
            f"{_reach(schemes.pairs)}; {link}",
        )
    )
    tests = budget.budget_tests()
    if tests:
        rows.append(
            (
                "copy, reverse: budget",
                "randomized positions on minus off, paired by seed, at every budget and length",
                f"{_reach(tests)}; [budget]({TASKS_PAGE}#budget-does-the-1-cost-of-randomized-positions-close-with-training)",
            )
        )
    short = plans.recall_short_study()
    if short.tasks():
        rows.append(
            (
                "recall (32 symbols)",
                f"plans solving on every seed: {names(_solving(short))}; 16 keys cap the test "
                f"at {short.times(short.lengths[-1])}",
                f"{_reach(short.pairs)}; [layer plans]({PLANS_PAGE}#recall-where-the-all-global-model-learns-1)",
            )
        )
    further = f"[layer plans]({PLANS_PAGE}#the-hybrid-result-tested-further)"
    placement = hybrid.placement_study()
    if placement.tasks():
        rows.append(
            (
                "recall: where the NoPE layer goes",
                f"plans solving on every seed: {names(_solving(placement))}",
                f"{_reach(placement.pairs)}; {further}",
            )
        )
    reach = hybrid.long_reach()
    if reach:
        rows.append(
            (
                "recall to 16× (128 symbols, 16,000 steps unless named)",
                " · ".join(f"`{name}`: {text}" for name, text in reach.items()),
                (
                    "one seed per plan: a pilot, no interval and no test"
                    if (seeds := hybrid.long_seeds()) == 1
                    else f"{seeds} seeds for each 16,000-step plan: the exact test's floor p = "
                    f"{smallest_p(seeds):.4g}, no test-backed difference"
                )
                + f"; {further}",
            )
        )
    for label, study in (
        ("recall: ten seeds", hybrid.seeds_study()),
        ("recall: {} data seeds", hybrid.data_seeds_study()),
        ("recall: the 1:3 interleave at 8 layers", hybrid.interleave8_study()),
    ):
        if study.tasks():
            rows.append(
                (_counted(label, study), _versus(study), f"{_reach(study.pairs)}; {further}")
            )
    headline = f"[position tasks]({TASKS_PAGE}#the-headline-cell-at-ten-seeds-and-ten-data-seeds)"
    for label, study in (
        ("reverse: ten seeds", scheme_seeds.seeds_study()),
        ("reverse: {} data seeds", scheme_seeds.data_seeds_study()),
    ):
        if study.tasks():
            rows.append(
                (_counted(label, study), _versus(study), f"{_reach(study.pairs)}; {headline}")
            )
    mlm = plans.mlm_study()
    if mlm.tasks():
        lower = [
            f"`{v}`"
            for v in mlm.order["mlm"]
            if v != mlm.reference
            and all(
                statistics.fmean(mlm.values("mlm", v, n).values())
                < statistics.fmean(mlm.values("mlm", mlm.reference, n).values())
                for n in mlm.lengths
            )
        ]
        rows.append(
            (
                "MLM, 600 steps",
                f"mean loss below all-global RoPE's at every length (1×–16×): {names(lower)}",
                f"{_reach(mlm.pairs)} (nats); [layer plans]({PLANS_PAGE}#mlm-on-the-bundled-corpus)",
            )
        )
    for label, study in (
        ("MLM: ten seeds", plans.mlm_seeds_study()),
        ("MLM: {} data seeds", plans.mlm_data_seeds_study()),
    ):
        if study.tasks():
            rows.append(
                (
                    _counted(label, study),
                    _versus(study),
                    f"{_reach(study.pairs)} (nats); "
                    f"[layer plans]({PLANS_PAGE}#mlm-at-ten-seeds-and-six-data-seeds)",
                )
            )
    found = data_seeds()
    fixed = [name for name, (_, data) in found.items() if len(data) == 1]
    shared = sorted({v for name in fixed for v in found[name][1]})
    varied = [f"`{name}`" for name in found if name not in fixed]
    if fixed:
        rows.append(
            (
                "every study" if not varied else f"every study but {names(varied)}",
                f"seeds vary the initialisation only: every run has `data.seed` "
                f"{names([str(v) for v in shared])}, one training stream and one test set",
                "the intervals and tests cover initialisation, not the data"
                + (f" ({names(varied)}: the data varied, by `data.seed`)" if varied else "")
                + f"; [what the seeds vary]({TASKS_PAGE}#at-the-training-length)",
            )
        )
    # task names bare: a row starting "| `name` |" is the README's scheme table's form
    lines = ["| task | finding | evidence |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return (
        figures.embed("schemes", "test accuracy against length per scheme", "docs/studies/figures/")
        + "\n\n"
        + "\n".join(lines)
    )
