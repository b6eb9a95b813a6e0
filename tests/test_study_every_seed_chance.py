"""Every "on every seed" count of a seed study's findings (``SeedStudy.findings``: each
variant above or below the task's best baseline on every seed, per length) carries how many
cells were read and how many a variant at its baseline's level would pass by chance alone
(:mod:`roformer_lit.results.study.chance`): the findings regions stated the counts without
it, where the README's rows and the 2× table already had it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from study_helpers import region_body, region_stale_line, tampered_bench

from roformer_lit.results.study.pages import render_pages
from roformer_lit.results.study.seed_study import SeedStudy

ROOT = Path(__file__).resolve().parent.parent
TASKS_PAGE = "position-tasks.md"
PLANS_PAGE = "layer-plans.md"

#: Every region written by ``SeedStudy.findings`` (directly or through ``selected``), with
#: its page under docs/studies.
FINDINGS_REGIONS = [
    (TASKS_PAGE, "schemes-findings"),
    (TASKS_PAGE, "schemes-seeds-findings"),
    (TASKS_PAGE, "schemes-data-findings"),
    (PLANS_PAGE, "plans-findings"),
    (PLANS_PAGE, "plans-recall-findings"),
    (PLANS_PAGE, "plans-recall-short-findings"),
    (PLANS_PAGE, "hybrid-placement-findings"),
    (PLANS_PAGE, "hybrid-seeds-findings"),
    (PLANS_PAGE, "hybrid-data-findings"),
    (PLANS_PAGE, "hybrid-interleave8-findings"),
    (PLANS_PAGE, "plans-mlm-findings"),
    (PLANS_PAGE, "plans-mlm-seeds-findings"),
    (PLANS_PAGE, "plans-mlm-data-findings"),
]

CHANCE = re.compile(r"about (\d+\.\d) of (\d+) would pass by chance alone")


def _study(seeds: int, values: dict[str, list[float]], metric: str = "acc") -> SeedStudy:
    """One task ``t`` at one length, baseline ``majority`` at 0.5, a variant per entry."""
    cells = {("t", name, 8, metric): dict(enumerate(by_seed)) for name, by_seed in values.items()}
    cells |= {("t", name, 8, "exact"): dict.fromkeys(range(seeds), 0.0) for name in values}
    return SeedStudy(
        [8],
        "a",
        cells=cells,
        baselines={("t", "majority", 8): 0.5},
        order={"t": list(values)},
        metric=metric,
    )


@pytest.mark.parametrize(
    ("seeds", "values", "above", "below", "cells", "chance"),
    [
        # three seeds: one above on every seed, one below, one mixed
        (3, {"a": [0.6] * 3, "b": [0.4] * 3, "c": [0.4, 0.6, 0.6]}, 1, 1, 3, "0.4"),
        # five seeds: both above
        (5, {"a": [0.9] * 5, "b": [0.7] * 5}, 2, 0, 2, "0.1"),
        # none on one side
        (5, {"a": [0.4, 0.6, 0.4, 0.6, 0.4]}, 0, 0, 1, "0.0"),
    ],
)
def test_the_findings_count_cells_tested_and_chance(
    seeds, values, above, below, cells, chance
) -> None:
    text = _study(seeds, values).findings()
    assert f"above on every seed: {above} of {cells} cells pass, {seeds} seeds each" in text
    assert f"probability 1/{2**seeds}" in text
    assert f"about {chance} of {cells} would pass by chance alone" in text, text
    assert f"Below on every seed: {below} of {cells} cells, about {chance} by chance" in text


def test_a_loss_study_counts_its_cells_below_the_baseline_loss() -> None:
    text = _study(5, {"a": [0.4] * 5, "b": [0.6] * 5}, "loss").findings()
    assert "below the best baseline's loss on every seed: 1 of 2 cells pass" in text, text
    assert "about 0.1 of 2 would pass by chance alone" in text


@pytest.mark.parametrize(("page", "name"), FINDINGS_REGIONS, ids=[r for _, r in FINDINGS_REGIONS])
def test_every_task_paragraph_of_a_findings_region_carries_the_caveat(page, name) -> None:
    paragraphs = [p for p in region_body(page, name).split("\n\n") if p.startswith("**`")]
    assert paragraphs, name
    for paragraph in paragraphs:
        assert "on every seed" in paragraph.lower()
        assert CHANCE.search(paragraph), paragraph[:200]


@pytest.mark.parametrize(("page", "name"), FINDINGS_REGIONS, ids=[r for _, r in FINDINGS_REGIONS])
def test_a_chance_count_edited_by_hand_names_its_region(tmp_path, page, name) -> None:
    body = region_body(page, name)
    found = CHANCE.search(body)
    assert found, name
    assert (
        region_stale_line(tmp_path / "intact", page, name, tampered_bench(tmp_path / "intact"))
        == ""
    )

    def edit(text: str) -> str:
        return text.replace(found[0], f"about 9.9 of {found[2]} would pass by chance alone", 1)

    stale = region_stale_line(tmp_path, page, name, tampered_bench(tmp_path), edit)
    assert f"region {name!r}" in stale and "9.9" in stale, stale


def test_a_cell_flipped_in_a_raw_output_changes_the_count(tmp_path) -> None:
    """``fire`` on ``copy`` at n=32 is above the baseline on every seed; one seed set to
    0.10 in a copy of the raw output takes it off the count: the check names the region."""
    assert "above on every seed: 12 of 42 cells pass" in region_body(TASKS_PAGE, "schemes-findings")
    row = "fire-default-copy-learning_rate0.01-seed0/checkpoints/last.ckpt,32,acc,"
    raw = "cpu-2026-11-25-study-schemes-copy.csv"
    line = next(x for x in (ROOT / "docs" / "bench" / raw).read_text().splitlines() if row in x)
    bench = tampered_bench(tmp_path, raw, line + "\n", line.rsplit(",", 1)[0] + ",0.10\n")
    stale = region_stale_line(tmp_path, TASKS_PAGE, "schemes-findings", bench)
    assert "region 'schemes-findings'" in stale, stale
    rewritten, _ = render_pages(bench, tmp_path / "pages")
    (fresh,) = rewritten.values()
    copy = next(p for p in fresh.split("\n\n") if p.startswith("**`copy`**"))
    assert "above on every seed: 11 of 42 cells pass" in copy, copy
