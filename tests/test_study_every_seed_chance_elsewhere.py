"""The "on every seed" counts outside ``SeedStudy.findings`` carry how many cells were read
and how many would pass by chance alone (:func:`~roformer_lit.results.study.chance.caveat`),
and their bold leads say against what and at which confidence: ``rp-counts`` stated "19 are
higher with randomized positions on every seed", ``hybrid-long-findings`` "above the best
baseline on every seed" per plan, and the extrapolation guide "on every seed" a dozen times
under the bold "RoPE without scaling degrades past its training length", each without a
chance count; ``training-length`` bolded and called cells "solved" with no baseline
beside the threshold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from study_helpers import guide_stale_line, region_body, region_stale_line, tampered_bench

from roformer_lit.results.study.drift import regions
from roformer_lit.results.study.mlm import MLM_RAW

ROOT = Path(__file__).resolve().parent.parent
GUIDE = "extrapolation.md"
CHANCE = re.compile(r"about (\d+\.\d) of (\d+) would pass by chance alone")

#: Regions of docs/studies pages, each with an "on every seed" count.
STUDY_REGIONS = [
    ("position-tasks.md", "rp-counts"),
    ("layer-plans.md", "hybrid-long-findings"),
]
#: Regions of the extrapolation guide, each with an "on every seed" count.
GUIDE_REGIONS = ["extrapolation-nope", "extrapolation-findings", "extrapolation-at-1x"]


def _guide_body(name: str) -> str:
    text = (ROOT / "docs" / "guide" / GUIDE).read_text(encoding="utf-8")
    return next(body for region, _, body in regions(text) if region == name)


@pytest.mark.parametrize(("page", "name"), STUDY_REGIONS, ids=[n for _, n in STUDY_REGIONS])
def test_a_study_region_states_its_chance_count(page, name) -> None:
    body = region_body(page, name)
    assert "on every seed" in body
    assert CHANCE.search(body), body[:300]


@pytest.mark.parametrize("name", GUIDE_REGIONS)
def test_a_guide_region_states_its_chance_count_and_floor(name) -> None:
    body = _guide_body(name)
    assert "on every seed" in body
    assert CHANCE.search(body), body[:300]
    assert "floor p = 0.25" in body, body[:300]


def test_rp_counts_counts_both_every_seed_claims() -> None:
    body = region_body("position-tasks.md", "rp-counts")
    assert len(CHANCE.findall(body)) == 2, body
    assert "of 27 pairs pass" in body and "of 36 scheme × length cells past 1× pass" in body


def test_every_bold_lead_of_the_findings_says_against_what_and_how_sure() -> None:
    """No bold lead states a direction as a finding without its comparison and confidence
    (the old "**RoPE without scaling degrades past its training length**")."""
    leads = re.findall(r"^- \*\*(.+?)\*\*", _guide_body("extrapolation-findings"), re.M)
    assert len(leads) == 5, leads
    for lead in leads[:4]:
        assert "against" in lead and ("not test-backed" in lead or "not a test" in lead), lead


def test_training_length_puts_the_best_baseline_beside_its_thresholds() -> None:
    body = region_body("position-tasks.md", "training-length")
    assert re.search(r"best baseline .* accuracy 0\.\d{3} and exact match 0\.\d{3}", body), body
    assert "floor p = 0.25" in body


@pytest.mark.parametrize(("page", "name"), STUDY_REGIONS, ids=[n for _, n in STUDY_REGIONS])
def test_a_study_chance_count_edited_by_hand_names_its_region(tmp_path, page, name) -> None:
    found = CHANCE.search(region_body(page, name))
    assert found

    def edit(text: str) -> str:
        return text.replace(found[0], f"about 9.9 of {found[2]} would pass by chance alone", 1)

    stale = region_stale_line(tmp_path, page, name, tampered_bench(tmp_path), edit)
    assert f"region {name!r}" in stale and "9.9" in stale, stale


@pytest.mark.parametrize("name", GUIDE_REGIONS)
def test_a_guide_chance_count_edited_by_hand_names_its_region(tmp_path, name) -> None:
    found = CHANCE.search(_guide_body(name))
    assert found

    def edit(text: str) -> str:
        return text.replace(found[0], f"about 9.9 of {found[2]} would pass by chance alone", 1)

    stale = guide_stale_line(tmp_path, GUIDE, page=edit)
    assert f"region {name!r}" in stale and "9.9" in stale, stale


def test_a_seed_flipped_in_a_raw_output_changes_nopes_count(tmp_path) -> None:
    """``nope`` seed 0 at 4× set above its 1× loss: 1 of 2 lengths is below on every seed."""
    assert "2 of 2 lengths below 1× pass" in _guide_body("extrapolation-nope")
    stale = guide_stale_line(
        tmp_path,
        GUIDE,
        MLM_RAW,
        "| nope | softmax | 6.060 | 6.010 |",
        "| nope | softmax | 6.060 | 6.070 |",
    )
    assert "region 'extrapolation-nope'" in stale, stale
