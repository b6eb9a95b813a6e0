"""Paired comparisons by seed, with Holm's correction over a family of cells.

A family maps each cell to its two sides, values by seed in the same seed order; every
cell gets a paired t-test (:func:`~roformer_lit.results.statistics.paired_t_test`) and the
p-values are adjusted together (:func:`~roformer_lit.results.statistics.holm`).
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Mapping
from typing import TypeVar

from roformer_lit.results.statistics import holm, paired_t_test, verdict

K = TypeVar("K", bound=Hashable)

#: Two sides of a cell by seed, and the Holm-adjusted p-value of their paired t-test.
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
    """Each cell with its paired t-test's p-value, Holm-adjusted over all of ``cells``."""
    keys = list(cells)
    adjusted = holm([paired_t_test(*cells[k]) for k in keys])
    return {k: (*cells[k], p) for k, p in zip(keys, adjusted, strict=True)}


def mark(before: list[float], after: list[float], p: float) -> str:
    """``n.s.``, or ▲/▼ (``after``'s mean higher/lower) with the verdict of ``p``."""
    if verdict(p) == "n.s.":
        return "n.s."
    return ("▲ " if statistics.fmean(after) > statistics.fmean(before) else "▼ ") + verdict(p)
