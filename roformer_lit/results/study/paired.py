"""Paired comparisons by seed, with Holm's correction over a family of cells.

A family maps each cell to its two sides, values by seed in the same seed order; every
cell gets the exact two-sided sign-flip test (:func:`~.exact.sign_flip_p`: no normality
assumed, never p = 0; with ``n`` seeds it cannot go below ``2 / 2**n``) and the p-values
are adjusted together (:func:`~roformer_lit.results.statistics.holm`).
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Mapping
from typing import TypeVar

from roformer_lit.results.statistics import holm, verdict
from roformer_lit.results.study.exact import (
    ALPHA,
    POWER,
    can_separate,
    detectable,
    differences,
    effect,
    holm_floor,
    p_text,
    sign_flip_p,
    smallest_p,
)
from roformer_lit.results.study.words import names

K = TypeVar("K", bound=Hashable)

#: Two sides of a cell by seed, and the Holm-adjusted p-value of their sign-flip test.
Pair = tuple[list[float], list[float], float]


def by_common_seed(
    first: Mapping[int, float], second: Mapping[int, float], least: int = 2
) -> tuple[list[float], list[float]] | None:
    """The two sides on the seeds both have (sorted), or None for fewer than ``least``."""
    common = sorted(set(first) & set(second))
    if len(common) < least:
        return None
    return [first[s] for s in common], [second[s] for s in common]


def holm_family(cells: Mapping[K, tuple[list[float], list[float]]]) -> dict[K, Pair]:
    """Each cell with its sign-flip test's p-value, Holm-adjusted over all of ``cells``."""
    keys = list(cells)
    adjusted = holm([sign_flip_p(*cells[k]) for k in keys])
    return {k: (*cells[k], p) for k, p in zip(keys, adjusted, strict=True)}


def mark(before: list[float], after: list[float], p: float) -> str:
    """``n.s.``, or ▲/▼ (``after``'s mean higher/lower) with the verdict of ``p``."""
    if verdict(p) == "n.s.":
        return "n.s."
    return ("▲ " if statistics.fmean(after) > statistics.fmean(before) else "▼ ") + verdict(p)


def sides(before: list[float], after: list[float]) -> str:
    """``3↑0↓``: how many seeds ``after`` is above and below ``before``."""
    e = effect(before, after)
    return f"{e.up}↑{e.down}↓"


def cell(before: list[float], after: list[float], p: float) -> str:
    """A pairs-table cell: the mean difference ``after − before`` with the distribution-free
    interval of the median difference, seeds up/down, and the Holm-adjusted exact p
    (**bold** where separated)."""
    text = f"{effect(before, after).text()} {p_text(p)}"
    return f"**{text}**" if verdict(p) != "n.s." else text


def power(family: Mapping[K, Pair], unit: str = "accuracy") -> str:
    """What a family of paired cells could detect: its seeds, the exact test's floor, how
    many cells have every seed on one side (the strongest evidence the seeds can give), the
    Holm family size, and the t-approximation's smallest detectable mean difference at the
    family's median spread of paired differences (:func:`~.exact.detectable`, before Holm)."""
    if not family:
        return ""
    sizes = sorted({len(a) for a, _, _ in family.values()})
    n = sizes[0]
    spread = statistics.median(
        statistics.stdev(differences(a, b)) for a, b, _ in family.values() if len(a) >= 2
    )
    floor = smallest_p(n)
    agree = sum((e := effect(a, b)).up == e.n or e.down == e.n for a, b, _ in family.values())
    if floor >= ALPHA:
        reach = (
            f"so no cell can be separated at α = {ALPHA} whatever the size of its difference, "
            'and "not separated" here is no evidence either way'
        )
    elif not can_separate(n, len(family)):
        reach = (
            f"and Holm over {len(family)} cells lifts that to p = "
            f"{holm_floor(n, len(family)):.3g} at best, so no cell can be separated at "
            f'α = {ALPHA} whatever the size of its difference, and "not separated" here is no '
            "evidence either way"
        )
    else:
        reach = "which a cell reaches only if every seed agrees in sign"
    return (
        f"*What this family could detect*: {names([str(s) for s in sizes])} seeds per cell, "
        f"{len(family)} cells under Holm; the exact sign-flip test cannot go below "
        f"p = {floor:.4g} with {n} seeds, {reach}. {agree} of {len(family)} cells have every "
        f"seed's difference on one side (unadjusted p = {floor:.4g} each, the strongest "
        f"evidence {n} seeds give; the `↑↓` counts in the pairs table). At the median spread "
        f"of the paired differences (s = {spread:.3f} {unit}), a t-test of {n} seeds would "
        f"need a mean difference of about {detectable(spread, n):.3f} to detect it with "
        f"{POWER:.0%} power at α = {ALPHA} before Holm. Per-sequence results are not in the "
        "raw outputs (each run's mean per length only), so a sequence-level paired bootstrap "
        "is not available."
    )
