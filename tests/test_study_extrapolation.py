"""The extrapolation guide's summary table, ``nope``'s movement with length and the
findings' ranges are generated from the raw outputs (regions ``extrapolation-table``,
``extrapolation-nope``, ``extrapolation-findings``): the guide typed them by hand (YaRN
0.71–1.14, factor 16 0.14–0.20, xl 4.26–4.36, the ×10 ranges, the locality shares), which
no check read. A number changed in a copy of a raw output or of the guide makes the check
name the region and the cell."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from study_helpers import guide_stale_line

from roformer_lit.errors import ConfigError
from roformer_lit.results.study import extrapolation
from roformer_lit.results.study.locality import LOCALITY_RAW
from roformer_lit.results.study.mlm import MLM_RAW, POSITION_LR_RAW
from roformer_lit.results.study.places import PLACES, read_from
from roformer_lit.results.study.regions import render

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide" / "extrapolation.md"


def _check(tmp_path: Path, raw: str | None = None, old: str = "", new: str = "", page=None):
    return guide_stale_line(tmp_path, "extrapolation.md", raw, old, new, page)


def test_the_checkouts_guide_equals_what_the_raw_outputs_give(tmp_path) -> None:
    text = GUIDE.read_text(encoding="utf-8")
    for name in (
        "extrapolation-table",
        "extrapolation-nope",
        "extrapolation-findings",
        "extrapolation-at-1x",
    ):
        assert f"<!-- generated: {name} -->" in text, name
    assert render(text, str(GUIDE)) == text
    assert _check(tmp_path) == ""


@pytest.mark.parametrize(
    ("raw", "old", "new", "region", "cell"),
    [
        (
            MLM_RAW,
            "| 3 | 4.434 ± 0.043 | 4.383",
            "| 3 | 4.534 ± 0.043 | 4.383",
            "extrapolation-table",
            "4.534 ± 0.043",
        ),
        (
            MLM_RAW,
            "| xl | softmax | 4.384 | 4.314 | 4.384 | 4.259 |",
            "| xl | softmax | 4.384 | 4.314 | 4.384 | 4.159 |",
            "extrapolation-findings",
            "4.16",
        ),
        (
            MLM_RAW,
            "| nope | softmax | 6.060 | 6.010 |",
            "| nope | softmax | 6.060 | 6.050 |",
            "extrapolation-nope",
            "0.01",
        ),
        (
            MLM_RAW,
            "| fire | softmax | 6.031 | 6.000 |",
            "| fire | softmax | 6.071 | 6.000 |",
            "extrapolation-at-1x",
            "+0.011",
        ),
        (
            LOCALITY_RAW,
            "| fire | 128 | 0.073 |",
            "| fire | 128 | 0.083 |",
            "extrapolation-at-1x",
            "0.083",
        ),
        (
            POSITION_LR_RAW,
            "| t5 | 2048 | 0.045 |",
            "| t5 | 2048 | 0.055 |",
            "extrapolation-findings",
            "0.055",
        ),
    ],
)
def test_a_number_changed_in_a_raw_output_names_the_region_and_cell(
    tmp_path, raw, old, new, region, cell
) -> None:
    stale = _check(tmp_path, raw, old, new)
    assert f"region {region!r}" in stale and cell in stale, stale


@pytest.mark.parametrize(
    ("old", "new", "region", "cell"),
    [
        (
            "| rope | 4.641 ± 0.063 |",
            "| rope | 4.641 ± 0.053 |",
            "extrapolation-table",
            "page '4.641 ± 0.053'",
        ),
        (
            "factor 8 is 0.71 to 1.14 nats",
            "factor 8 is 0.61 to 1.14 nats",
            "extrapolation-findings",
            "page '0.61', data '0.71'",
        ),
        ("4× is 0.03 to 0.06 nats", "4× is 0.03 to 0.07 nats", "extrapolation-nope", "page '0.07'"),
    ],
)
def test_a_number_changed_on_the_guide_names_the_region(tmp_path, old, new, region, cell) -> None:
    stale = _check(tmp_path, page=lambda text: text.replace(old, new, 1))
    assert f"region {region!r}" in stale and cell in stale, stale


def test_a_block_missing_a_seed_is_one_error_naming_it(tmp_path) -> None:
    bench = tmp_path / "bench"
    shutil.copytree(ROOT / "docs" / "bench", bench)
    raw = bench / MLM_RAW
    lines = raw.read_text(encoding="utf-8").splitlines(keepends=True)
    raw.write_text(
        "".join(x for x in lines if not x.startswith("| runs/positions/kerple-softmax-seed2/")),
        encoding="utf-8",
    )
    before = (PLACES.bench, PLACES.pages)
    read_from(bench, tmp_path)
    try:
        with pytest.raises(ConfigError, match=r"kerple has seeds \[0, 1\]"):
            extrapolation.table()
    finally:
        read_from(*before)


def test_the_guide_types_none_of_the_old_numbers() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    for typed in (
        "0.71–1.14",
        "0.14–0.20",
        "(4.26–4.36)",
        "+0.41 to +0.50",
        "0.37–0.38",
        "0.86–0.94",
        "0.69–0.81",
        "0.03–0.06",
    ):
        assert typed not in text, typed


def test_the_schemes_read_as_unlearnt_at_1x_are_each_compared_with_nope_seed_for_seed() -> None:
    """The guide read `learned`, `sinusoidal`, `t5` and `fire` as "at or above `nope`'s
    level at 1×", typed, while `fire` is below `nope`'s loss on every seed: the comparison
    is generated, each scheme's side counted from its own seeds."""
    text = extrapolation.at_training_length()
    nope = extrapolation._at("nope", 128)
    for scheme in extrapolation.UNLEARNT:
        gap = [a - b for a, b in zip(extrapolation._at(scheme, 128), nope, strict=True)]
        if all(g < 0 for g in gap):
            side = "below on every seed"
        elif all(g > 0 for g in gap):
            side = "above on every seed"
        else:
            side = f"above on {sum(g > 0 for g in gap)} of {len(gap)} seeds"
        assert f"`{scheme}` {min(gap):+.3f}" in text and f"{max(gap):+.3f} ({side})" in text
    assert "at or above `nope`'s level" not in GUIDE.read_text(encoding="utf-8")


def test_the_position_task_guide_names_the_schemes_above_nope_as_the_data_give() -> None:
    """The position-task guide opened with "half of the schemes sit on `nope`'s MLM
    plateau": `learned` and `sinusoidal` are above `nope`'s loss on every seed, not on it.
    Each scheme the guide's first paragraph puts above `nope` is above on every seed in the
    generated comparison, and each it puts within reach is not."""
    intro = (ROOT / "docs" / "guide" / "position-tasks.md").read_text(encoding="utf-8")
    intro = intro.split("\n\n")[1]
    assert "plateau" not in intro
    nope = extrapolation._at("nope", 128)
    for scheme, above in (("learned", True), ("sinusoidal", True), ("t5", False), ("fire", False)):
        assert f"`{scheme}`" in intro
        gap = [a - b for a, b in zip(extrapolation._at(scheme, 128), nope, strict=True)]
        assert all(g > 0 for g in gap) is above, (scheme, gap)
        assert above or max(abs(g) for g in gap) < 0.05, (scheme, gap)


def test_the_guide_describes_every_corpus_baseline_row_extrapolate_prints() -> None:
    """`extrapolate` on an MLM checkpoint prints `baseline:unigram` and
    `baseline:train_unigram`; the guide described the first only. The rules are read from
    the code that names the rows."""
    import inspect

    from roformer_lit.results import extrapolate_rows

    source = inspect.getsource(extrapolate_rows)
    rules = re.findall(r'\("([a-z_]+)", cell\.[a-z_]+_loss\)', source)
    assert "train_unigram" in rules, rules
    text = GUIDE.read_text(encoding="utf-8")
    for rule in rules:
        assert f"`baseline:{rule}`" in text, rule
