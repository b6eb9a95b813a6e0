"""The sweeps guide's one-thread / two-thread accuracies are generated from
``docs/bench/cpu-2026-11-26-budget-numerics.txt`` (region ``sweeps-threads``): the guide
typed 0.995 and 0.825 by hand, beside a throughput figure (89 s against 56 s, 1.26×) that no
raw output states, now removed. A number changed in a copy of the raw output or of the
guide makes the check name the region; a raw output without both thread counts is one error
line."""

from __future__ import annotations

from pathlib import Path

import pytest
from study_helpers import guide_stale_line, tampered_bench

from roformer_lit.errors import ConfigError
from roformer_lit.results.study import numerics
from roformer_lit.results.study.places import PLACES, read_from

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide" / "sweeps.md"
TWO = "code a5c2925 OMP_NUM_THREADS=2 learned-random_positions=none-seed0/checkpoints/step=1500.ckpt,16,acc,0.825439453125"


def test_the_guide_states_what_the_raw_output_gives(tmp_path) -> None:
    assert "<!-- generated: sweeps-threads -->" in GUIDE.read_text(encoding="utf-8")
    assert guide_stale_line(tmp_path, "sweeps.md") == ""


def test_an_accuracy_changed_in_the_raw_output_names_the_region(tmp_path) -> None:
    stale = guide_stale_line(
        tmp_path, "sweeps.md", numerics.RAW, TWO, TWO.replace("0.825439453125", "0.725")
    )
    assert "region 'sweeps-threads'" in stale and "0.725" in stale, stale


def test_an_accuracy_changed_on_the_guide_names_the_region(tmp_path) -> None:
    stale = guide_stale_line(
        tmp_path, "sweeps.md", page=lambda text: text.replace("0.825 with two", "0.925 with two")
    )
    assert "region 'sweeps-threads'" in stale and "0.925" in stale, stale


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (TWO + "\n", "", "OMP_NUM_THREADS=1 and 2"),
        (TWO, TWO.replace(",acc,", ";acc;"), "not a 'code REV"),
    ],
)
def test_a_damaged_raw_output_is_one_error(tmp_path, old, new, message) -> None:
    bench = tampered_bench(tmp_path, numerics.RAW, old, new)
    before = (PLACES.bench, PLACES.pages)
    read_from(bench, tmp_path)
    try:
        with pytest.raises(ConfigError, match=message) as caught:
            numerics.threads()
    finally:
        read_from(*before)
    assert numerics.RAW in str(caught.value) and "\n" not in str(caught.value)


def test_the_guide_types_no_throughput_figure() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    for typed in ("89 s", "56 s", "1.26×"):
        assert typed not in text, typed
