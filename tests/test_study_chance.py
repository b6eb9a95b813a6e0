"""Counts of cells "above the best baseline on every seed" carry how many cells were read
and how many a variant at baseline level would pass by chance alone (1 in 2**seeds each):
the README's findings and the page's 2× table stated the counts without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from roformer_lit.results.study import probes, readme
from roformer_lit.results.study.chance import by_chance, caveat

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("seeds", "expected"),
    [([5] * 32, 1.0), ([3] * 40, 5.0), ([5, 3], 1 / 32 + 1 / 8), ([], 0.0), ([0, 5], 1 / 32)],
)
def test_by_chance_is_the_sum_of_one_over_two_to_the_seeds(seeds, expected) -> None:
    assert by_chance(seeds) == pytest.approx(expected)


def test_the_caveat_names_cells_tested_and_chance_count() -> None:
    text = caveat(6, [3] * 40, "pairs")
    assert "6 of 40 pairs pass" in text
    assert "probability 1/8" in text
    assert "about 5.0 of 40 would pass by chance alone" in text
    assert caveat(0, []) == "no cells tested"


@pytest.mark.parametrize(
    ("task", "phrase"),
    [
        ("reverse", "6 of 28 cells past 1× pass, 5 seeds each"),
        ("copy", "1 of 28 cells past 1× pass"),
        ("odds_first", "0 of 28 cells past 1× pass"),
    ],
)
def test_the_readme_rows_carry_the_multiplicity_caveat(task, phrase) -> None:
    row = next(r for r in readme.findings().splitlines() if r.startswith(f"| {task} |"))
    assert phrase in row and "about 0.9 of 28 would pass by chance alone" in row, row


def test_the_two_x_table_carries_the_multiplicity_caveat() -> None:
    text = probes.beyond()
    assert "6 of 40 pairs at 2× pass, 3 seeds each" in text
    assert "about 5.0 of 40 would pass by chance alone" in text
    page = (ROOT / "docs" / "studies" / "position-tasks.md").read_text(encoding="utf-8")
    assert "about 5.0 of 40 would pass by chance alone" in page
