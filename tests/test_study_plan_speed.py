"""The layer plans' step ratios in the README and the layer-plans guide are generated from
the ``bench --plans`` raw outputs (regions ``readme-plan-speed``, ``plans-speed-cpu``,
``plans-speed-h100``): both typed them by hand (0.23× … 1.25×, 40 ms → 1,876 ms, 2.25×),
with "the band pays only at long inputs" beside a 0.95× at 512 tokens. A number changed in
a copy of a raw output or of a page makes the check name the region and the cell; a damaged
plan row is one error line naming the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest
from study_helpers import guide_stale_line, readme_region_stale_line, tampered_bench

from roformer_lit.errors import ConfigError
from roformer_lit.results.study import plan_speed
from roformer_lit.results.study.places import PLACES, read_from
from roformer_lit.results.study.regions import render

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide" / "layer-plans.md"
REGION = "<!-- generated: readme-plan-speed -->"
CPU_ROW = "| rope | softmax | 8192 | 8125.5 | 1876.2 | 3265.0 | 0.23x | 0.42x |"
H100_ROW = "| rope | softmax | 8192 | 89.3 | 61.1 | 70.2 | 0.68x | 0.78x |"


def _readme(tmp_path: Path, raw: str | None = None, old: str = "", new: str = "", page=None):
    """``stale_line`` of the README's region (:func:`study_helpers.readme_region_stale_line`)."""
    return readme_region_stale_line(tmp_path, REGION, raw, old, new, page)


def _guide(tmp_path: Path, raw: str | None = None, old: str = "", new: str = "", page=None):
    return guide_stale_line(tmp_path, "layer-plans.md", raw, old, new, page)


def test_the_pages_state_what_the_raw_outputs_give(tmp_path) -> None:
    for page in (README, GUIDE):
        text = page.read_text(encoding="utf-8")
        assert render(text, str(page)) == text
    assert _readme(tmp_path / "readme") == ""
    assert _guide(tmp_path / "guide") == ""


@pytest.mark.parametrize(
    ("raw", "old", "new", "cell"),
    [
        (plan_speed.CPU_RAW, CPU_ROW, CPU_ROW.replace("0.23x", "0.33x"), "0.33×"),
        (plan_speed.H100_RAW, H100_ROW, H100_ROW.replace("0.78x", "0.88x"), "0.88×"),
    ],
)
def test_a_ratio_changed_in_a_raw_output_names_the_readme_region(tmp_path, raw, old, new, cell):
    stale = _readme(tmp_path, raw, old, new)
    assert "region 'readme-plan-speed'" in stale and cell in stale, stale


@pytest.mark.parametrize(
    ("raw", "old", "new", "region", "cell"),
    [
        (
            plan_speed.CPU_RAW,
            CPU_ROW,
            CPU_ROW.replace("1876.2", "1976.2"),
            "plans-speed-cpu",
            "1,976.2",
        ),
        (
            plan_speed.H100_BEFORE,
            "| 39.8 | 89.6 | 78.0 | 2.25x |",
            "| 39.8 | 89.6 | 78.0 | 2.35x |",
            "plans-speed-h100",
            "2.35×",
        ),
    ],
)
def test_a_number_changed_in_a_raw_output_names_the_guide_region(
    tmp_path, raw, old, new, region, cell
) -> None:
    stale = _guide(tmp_path, raw, old, new)
    assert f"region {region!r}" in stale and cell in stale, stale


def test_a_ratio_below_one_at_another_length_changes_where_the_band_pays(tmp_path) -> None:
    """The H100's 2:1 plan at 512 tokens set to 0.97×: both plans are then below 1 at 512
    too, and the README's sentence must say so."""
    row = "| rope | softmax | 512 | 44.0 | 41.7 | 40.9 | 0.95x | 1.07x |"
    stale = _readme(tmp_path, plan_speed.H100_RAW, row, row.replace("1.07x", "0.97x"))
    assert "region 'readme-plan-speed'" in stale, stale


@pytest.mark.parametrize(
    ("old", "new", "region"),
    [
        (
            "costs 0.98×, 0.93×, 0.56× and 0.23×",
            "costs 0.98×, 0.93×, 0.56× and 0.25×",
            "plans-speed-cpu",
        ),
        ("0.41× all-local, 0.62× 2:1", "0.41× all-local, 0.52× 2:1", "plans-speed-h100"),
    ],
)
def test_a_number_changed_on_the_guide_names_the_region(tmp_path, old, new, region) -> None:
    stale = _guide(tmp_path, page=lambda text: text.replace(old, new, 1))
    assert f"region {region!r}" in stale, stale


def test_a_number_changed_in_the_readme_names_the_region(tmp_path) -> None:
    stale = _readme(tmp_path, page=lambda text: text.replace("costs 0.23×", "costs 0.21×", 1))
    assert "region 'readme-plan-speed'" in stale and "0.21" in stale, stale


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (CPU_ROW, CPU_ROW.replace("| 0.42x |", "| 0.42 |"), "not a row of a plan table"),
        (CPU_ROW, CPU_ROW.replace("3265.0", "32x65"), "not a row of a plan table"),
    ],
)
def test_a_damaged_plan_row_is_one_error_naming_the_line(tmp_path, old, new, message) -> None:
    bench = tampered_bench(tmp_path, plan_speed.CPU_RAW, old, new)
    before = (PLACES.bench, PLACES.pages)
    read_from(bench, tmp_path)
    try:
        with pytest.raises(ConfigError, match=message) as caught:
            plan_speed.cpu()
    finally:
        read_from(*before)
    assert f"{plan_speed.CPU_RAW}: line " in str(caught.value)
    assert "\n" not in str(caught.value)


def test_no_typed_ratio_is_left_outside_the_regions() -> None:
    for page, typed in (
        (README, "the band pays only at long inputs"),
        (GUIDE, "40 ms → 1,876 ms"),
        (GUIDE, "about\nquadratically"),
    ):
        assert typed not in page.read_text(encoding="utf-8"), typed
