"""The positions-sweep page at three seeds: each "95 % t-interval" states its basis (n and
the t quantile, 4.30 at n = 3, a half-width of 2.48 sample standard deviations), and the
orderings on every seed come with the project's test (exact sign-flip by seed, Holm), which
cannot separate any pair at three seeds: the page had neither, and called ×10 "no longer
`nope`" on three seeds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from study_helpers import region_body, region_stale_line, tampered_bench

from roformer_lit.results.study.mlm import MLM_RAW, POSITION_LR_RAW, paired_result
from roformer_lit.results.study.t_basis import basis, head, quantile

ROOT = Path(__file__).resolve().parent.parent
PAGE = "positions-sweep.md"
REGIONS = ["mlm-sweep", "position-lr-table", "position-lr"]


@pytest.mark.parametrize(
    ("n", "t"),
    # scipy.stats.t.ppf(0.975, n - 1)
    [(2, 12.706204736), (3, 4.302652730), (5, 2.776445105), (10, 2.262157163)],
)
def test_the_quantile_is_students(n, t) -> None:
    assert quantile(n) == pytest.approx(t, rel=1e-8)


def test_the_words_name_n_the_quantile_and_the_width() -> None:
    assert head(3) == "mean [95 % t-interval, n = 3, t = 4.30]"
    text = basis(3)
    assert "n = 3 seeds" in text and "t(0.975, 2) = 4.30" in text
    assert "half-width of 2.48 sample standard deviations" in text
    assert "no test between two rows" in text
    with pytest.raises(ValueError, match="at least 2"):
        quantile(1)


@pytest.mark.parametrize(
    ("sides", "says"),
    [
        # three seeds: every seed on one side still cannot reach 0.05 (floor 0.25)
        (
            {"a / b": ([1.0, 2.0, 3.0], [5.0, 6.0, 7.0])},
            "none is separated (3 seeds: the exact test's floor p = 0.25 > 0.05)",
        ),
        # six seeds, one cell: floor 0.03125 < 0.05, so it is separated
        ({"a / b": ([1.0] * 6, [2.0, 2.1, 2.2, 2.3, 2.4, 2.5])}, "separated: a / b;"),
        # six seeds, two cells: Holm lifts the floor to 0.0625
        (
            {"a / b": ([1.0] * 6, [2.0] * 6), "a / c": ([1.0] * 6, [3.0] * 6)},
            "Holm over 2 cells: at best p = 0.0625 ≥ 0.05",
        ),
    ],
    ids=["three-seeds", "six-seeds-one-cell", "six-seeds-holm"],
)
def test_the_paired_result_is_the_projects_test(sides, says) -> None:
    assert says in paired_result(sides, "pairs"), paired_result(sides, "pairs")


def test_the_page_states_the_basis_and_separates_nothing() -> None:
    for name in ("mlm-sweep", "position-lr-table"):
        assert "mean [95 % t-interval, n = 3, t = 4.30]" in region_body(PAGE, name)
    for name in ("mlm-sweep", "position-lr"):
        body = region_body(PAGE, name)
        assert "t(0.975, 2) = 4.30" in body and "2.48 sample standard deviations" in body
        assert "none is separated (3 seeds: the exact test's floor p = 0.25 > 0.05)" in body
    page = (ROOT / "docs" / "studies" / PAGE).read_text(encoding="utf-8")
    assert "mean [95 % t-interval] |" not in page
    assert "no longer `nope`" not in page
    # "separated" only as "not separated" / "none is separated": the test separates nothing
    claims = re.findall(r"(\w+ (?:is )?separated)", page)
    assert claims and all(c in ("not separated", "none is separated") for c in claims), claims


#: (region, text on the page, the same text edited by hand)
EDITS = [
    ("mlm-sweep", "n = 3, t = 4.30]", "n = 3, t = 1.96]"),
    ("mlm-sweep", "floor p = 0.25 > 0.05", "floor p = 0.025 > 0.05"),
    ("position-lr-table", "n = 3, t = 4.30]", "n = 3]"),
    ("position-lr", "2.48 sample standard deviations", "1.13 sample standard deviations"),
    ("position-lr", "none is separated", "both are separated"),
]


@pytest.mark.parametrize(("name", "old", "new"), EDITS, ids=[f"{e[0]}-{e[2]}" for e in EDITS])
def test_a_word_edited_by_hand_names_its_region(tmp_path, name, old, new) -> None:
    assert (
        region_stale_line(tmp_path / "intact", PAGE, name, tampered_bench(tmp_path / "intact"))
        == ""
    )
    stale = region_stale_line(
        tmp_path, PAGE, name, tampered_bench(tmp_path), lambda body: body.replace(old, new, 1)
    )
    assert f"region {name!r}" in stale, stale


@pytest.mark.parametrize(
    ("name", "raw", "old", "new", "cell"),
    [
        ("mlm-sweep", MLM_RAW, "| rope | softmax | 4.702 |", "| rope | softmax | 4.902 |", "4.90"),
        ("position-lr-table", POSITION_LR_RAW, "10.0,0,4.80", "10.0,0,4.70", "4.70"),
        ("position-lr", POSITION_LR_RAW, "10.0,0,4.80", "10.0,0,4.70", "1.33"),
    ],
)
def test_a_number_changed_in_a_raw_output_names_the_region(
    tmp_path, name, raw, old, new, cell
) -> None:
    stale = region_stale_line(tmp_path, PAGE, name, tampered_bench(tmp_path, raw, old, new))
    assert f"region {name!r}" in stale and cell in stale, stale


def test_the_bridge_table_states_the_same_basis(tmp_path) -> None:
    """The position-tasks page tables the same three-seed MLM intervals (region
    ``bridge``): its heading names n and t too, and an edit of them is caught."""
    body = region_body("position-tasks.md", "bridge")
    assert "MLM val/loss at L=128 (1×), mean [95 % t-interval, n = 3, t = 4.30] over seeds" in body
    stale = region_stale_line(
        tmp_path,
        "position-tasks.md",
        "bridge",
        tampered_bench(tmp_path),
        lambda text: text.replace("n = 3, t = 4.30]", "n = 3, t = 1.96]", 1),
    )
    assert "region 'bridge'" in stale, stale
