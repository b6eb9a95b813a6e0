"""The fine-tuning guide's claims under its table are generated (region
``finetune-findings``): the guide typed "13 of 18 runs", "132 of 144 pairs, p = 0.0006" and
"t5 0.615 ± 0.011" by hand. A number changed in a copy of a raw CSV or of the guide makes
the check name the region and the cell."""

from __future__ import annotations

from pathlib import Path

import pytest
from study_helpers import guide_stale_line

from roformer_lit.results.statistics import mann_whitney
from roformer_lit.results.study import finetune
from roformer_lit.results.study.finetune_claims import TENFOLD_RAW
from roformer_lit.results.study.regions import render

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide" / "finetuning.md"


def _check(tmp_path: Path, raw: str | None = None, old: str = "", new: str = "", page=None):
    return guide_stale_line(tmp_path, "finetuning.md", raw, old, new, page)


def test_the_checkouts_guide_equals_what_the_raw_outputs_give(tmp_path) -> None:
    text = GUIDE.read_text(encoding="utf-8")
    assert "<!-- generated: finetune-findings -->" in text
    assert render(text, str(GUIDE)) == text
    assert _check(tmp_path) == ""
    for typed in ("p = 0.0006", "within 0.03", "0.012 below alibi"):
        assert typed not in text, typed


def test_mann_whitney_counts_pairs_and_matches_the_normal_approximation() -> None:
    u, p = mann_whitney([3.0, 4.0, 5.0], [1.0, 2.0, 3.0])
    assert u == 8.5  # 8 pairs above, one tie
    assert 0.0 < p < 1.0
    assert mann_whitney([1.0], [1.0]) == (0.5, 1.0)


@pytest.mark.parametrize(
    ("raw", "old", "new", "cell"),
    [
        # t5 x10, pretraining seed 0: 0.626 -> 0.726 moves its mean ± std
        (
            TENFOLD_RAW,
            ",0.6264591217041016",
            ",0.7264591217041016",
            "page '0.615 ± 0.011', data '0.649 ± 0.068'",
        ),
        # a learned run lifted above every other scheme's lowest: 13 of 18 -> 12 of 18
        (
            finetune.RAW,
            "learned-softmax-seed1-ftseed0,0.5346",
            "learned-softmax-seed1-ftseed0,0.5706",
            "and 12 of their 18 runs",
        ),
    ],
)
def test_a_number_changed_in_a_raw_csv_names_the_region_and_cell(
    tmp_path, raw, old, new, cell
) -> None:
    stale = _check(tmp_path, raw, old, new)
    assert "region 'finetune-findings'" in stale and cell in stale, stale


@pytest.mark.parametrize(
    ("old", "new", "cell"),
    [
        ("in 132 of 144 pairs", "in 133 of 144 pairs", "page '133', data '132'"),
        ("t5 0.615 ± 0.011", "t5 0.615 ± 0.012", "page '0.012', data '0.011'"),
        ("and 13 of their 18 runs", "and 14 of their 18 runs", "page '14', data '13'"),
    ],
)
def test_a_number_changed_on_the_guide_names_the_region_and_cell(tmp_path, old, new, cell):
    stale = _check(tmp_path, page=lambda text: text.replace(old, new, 1))
    assert "region 'finetune-findings'" in stale and cell in stale, stale
