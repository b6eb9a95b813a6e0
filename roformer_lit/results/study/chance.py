"""What "above the best baseline on every seed" is worth when many cells are read at once.

A variant whose accuracy sits at its baseline's level is above it on one seed with
probability 1/2 (ties aside), so on every one of ``s`` seeds with probability ``1 / 2**s``:
1 in 32 at five seeds, 1 in 8 at three. Read over many cells, some pass by chance alone;
:func:`caveat` says how many cells were read and how many that is, so the page never
states a count of passing cells without it.
"""

from __future__ import annotations

from collections.abc import Sequence


def by_chance(seeds: Sequence[int]) -> float:
    """The expected number of cells, of one per entry of ``seeds`` (its seed count), that a
    variant at baseline level passes on every seed: ``sum(1 / 2**s)``."""
    return sum(0.5**s for s in seeds if s > 0)


def caveat(
    passed: int,
    seeds: Sequence[int],
    what: str = "cells",
    null: str = "a variant at its baseline's level",
) -> str:
    """``passed`` of ``len(seeds)`` cells, with how many would pass by chance alone;
    ``null`` names what passes a cell with probability ``1 / 2**s`` (a variant at its
    baseline's level; for a comparison of one setting against another, that setting
    changing nothing)."""
    tested = [s for s in seeds if s > 0]
    if not tested:
        return f"no {what} tested"
    counts = sorted(set(tested))
    each = (
        f"{counts[0]} seeds each: {null} passes a cell with probability 1/{2 ** counts[0]}"
        if len(counts) == 1
        else f"{counts[0]}–{counts[-1]} seeds each: {null} passes a cell of s seeds with "
        "probability 1/2^s"
    )
    return (
        f"{passed} of {len(tested)} {what} pass, {each}, so about "
        f"{by_chance(tested):.1f} of {len(tested)} would pass by chance alone; a lone "
        "passing cell is a lead to rerun, not a finding"
    )
