"""The extrapolation guide's changes against ``nope``'s are generated from their raw output
(region ``extrapolation-vs-nope``): the guide typed their ranges and "on every seed" by
hand, which no check read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from roformer_lit.errors import ConfigError
from roformer_lit.results.study import vs_nope
from roformer_lit.results.study.places import PLACES, read_from
from roformer_lit.results.study.regions import render

ROOT = Path(__file__).resolve().parent.parent


def _table(tmp_path: Path, edit=None) -> str:
    bench = tmp_path / "bench"
    shutil.copytree(ROOT / "docs" / "bench", bench)
    raw = bench / vs_nope.RAW
    if edit is not None:
        raw.write_text(edit(raw.read_text(encoding="utf-8")), encoding="utf-8")
    before = (PLACES.bench, PLACES.pages)
    read_from(bench, tmp_path)
    try:
        return vs_nope.table()
    finally:
        read_from(*before)


def _kerple_seed1_below(text: str) -> str:
    return text.replace(
        "kerple       change minus nope's change (4x 8x 16x) per seed: +0.025 +0.033 +0.023 | +0.002",
        "kerple       change minus nope's change (4x 8x 16x) per seed: +0.025 +0.033 +0.023 | -0.002",
    )


def _rope_two_seeds(text: str) -> str:
    return text.replace("| +0.162 +0.492 +1.511", "")


@pytest.mark.parametrize(
    ("edit", "row", "cell"),
    [
        (None, "| rope |", "+1.107 … +1.511 (3/3 above)"),
        (None, "| kerple |", "+0.002 … +0.039 (3/3 above)"),
        (_kerple_seed1_below, "| kerple |", "-0.002 … +0.039 (2/3 above)"),
        (None, "| learned |", "refused"),
    ],
)
def test_each_cell_is_the_raw_outputs_range_and_count(tmp_path, edit, row, cell) -> None:
    line = next(x for x in _table(tmp_path, edit).splitlines() if x.startswith(row))
    assert cell in line, line


def test_a_line_with_a_seed_missing_is_one_error_naming_it(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"line \d+: rope_plain needs 3 seeds of 3 values"):
        _table(tmp_path, _rope_two_seeds)


def test_the_guide_states_no_change_against_nope_by_hand() -> None:
    guide = ROOT / "docs" / "guide" / "extrapolation.md"
    text = guide.read_text(encoding="utf-8")
    assert "<!-- generated: extrapolation-vs-nope -->" in text
    for typed in ("+0.12 to +0.25", "−0.022 to +0.004", "+0.06 to +0.17", "+0.002 to +0.056"):
        assert typed not in text, typed
    assert render(text, str(guide)) == text
