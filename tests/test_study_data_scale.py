"""The corpus guide's data-at-scale table and the ratios under it are generated from
``docs/bench/cpu-2026-11-23-data-scale.txt`` (region ``corpus-data-scale``): the guide
typed the whole table, and the ratios read off it (1.09×, 1.01×, 96–111 %, 11.5 s, 193 MB),
by hand, with numbers no raw output states beside them (1.3 / 4.0 / 13.7 GB, 0.11 s,
about 1 %, 21 s, 57–87 %). A number changed in a copy of the raw output or of the guide
makes the check name the region and the cell; a damaged row is one error line."""

from __future__ import annotations

from pathlib import Path

import pytest
from study_helpers import guide_stale_line, tampered_bench

from roformer_lit.errors import ConfigError
from roformer_lit.results.study import data_scale
from roformer_lit.results.study.places import PLACES, read_from
from roformer_lit.results.study.regions import render

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide" / "corpus.md"
RAW = data_scale.RAW


def _check(tmp_path: Path, old: str = "", new: str = "", page=None) -> str:
    raw = RAW if old else None
    return guide_stale_line(tmp_path, "corpus.md", raw, old, new, page)


def test_the_checkouts_guide_equals_what_the_raw_output_gives(tmp_path) -> None:
    text = GUIDE.read_text(encoding="utf-8")
    assert "<!-- generated: corpus-data-scale -->" in text
    assert render(text, str(GUIDE)) == text
    assert _check(tmp_path) == ""


@pytest.mark.parametrize(
    ("old", "new", "cell"),
    [
        ("| 146 s / 856 MB |", "| 146 s / 956 MB |", "956 MB"),
        ("| 103 % / 96 % |", "| 103 % / 94 % |", "94"),
        ("| 96.5 M |", "| 98.5 M |", "98.5 M"),
        ("| 11.5 s / 721 MB | 8.9 s |", "| 12.5 s / 721 MB | 8.9 s |", "12.5 s"),
    ],
)
def test_a_number_changed_in_the_raw_output_names_the_region_and_cell(
    tmp_path, old, new, cell
) -> None:
    stale = _check(tmp_path, old, new)
    assert "region 'corpus-data-scale'" in stale and cell in stale, stale


@pytest.mark.parametrize(
    ("old", "new", "cell"),
    [
        ("| 27 s / 784 MB |", "| 25 s / 784 MB |", "page '25 s"),
        ("is 1.09× that at 25 MB", "is 1.05× that at 25 MB", "page '1.05×'"),
        ("at 96–111 % of the raw", "at 97–111 % of the raw", "97"),
        ("(`uint16`), 193 MB", "(`uint16`), 190 MB", "190"),
    ],
)
def test_a_number_changed_on_the_guide_names_the_region(tmp_path, old, new, cell) -> None:
    stale = _check(tmp_path, page=lambda text: text.replace(old, new, 1))
    assert "region 'corpus-data-scale'" in stale and cell in stale, stale


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("| 9.9 s |\n", "| 9.9 s\n", "cut short"),
        ("| 52 s / 839 MB |", "| 52 s, 839 MB |", "is not of the form"),
        ("| 106 % / 111 % |", "| 106 % / 111 % | x |", "a row of 9 cells"),
    ],
)
def test_a_damaged_row_is_one_error_naming_the_line(tmp_path, old, new, message) -> None:
    bench = tampered_bench(tmp_path, RAW, old, new)
    before = (PLACES.bench, PLACES.pages)
    read_from(bench, tmp_path)
    try:
        with pytest.raises(ConfigError, match=message) as caught:
            data_scale.table()
    finally:
        read_from(*before)
    assert f"{RAW}: line " in str(caught.value) and "\n" not in str(caught.value)


def test_the_guide_types_none_of_the_old_numbers() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    for typed in ("13.7 GB", "0.11 s", "about 1 %", "21 s to the first step", "57–87 %"):
        assert typed not in text, typed
