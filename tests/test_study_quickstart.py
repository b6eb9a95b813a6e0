"""The README quick start's result is generated (region ``readme-quickstart``) from the
committed raw outputs of its three runs: the README typed "6.80 at step 50", "4.70",
"4.64 ± 0.06" and "32.8 ± 0.7 %" with no raw output named. A number changed in a copy of a
raw output or of the README makes the check name the region and the cell."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from study_helpers import guide_stale_line, readme_region_stale_line

from roformer_lit.errors import ConfigError
from roformer_lit.results.study import mlm, quickstart
from roformer_lit.results.study.mlm import MLM_RAW, POSITION_LR_RAW
from roformer_lit.results.study.places import PLACES, read_from
from roformer_lit.results.study.regions import render

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
REGION = "<!-- generated: readme-quickstart -->"


def _check(tmp_path: Path, raw: str | None = None, old: str = "", new: str = "", page=None):
    """``stale_line`` of the README's region (:func:`study_helpers.readme_region_stale_line`)."""
    return readme_region_stale_line(tmp_path, REGION, raw, old, new, page)


def test_the_readme_states_what_the_raw_outputs_give(tmp_path) -> None:
    text = README.read_text(encoding="utf-8")
    assert REGION in text and render(text, str(README)) == text
    assert _check(tmp_path) == ""
    for typed in ("6.80 at step 50", "3 % → 32 %"):
        assert typed not in text, typed
    # the two-command quick start stays intact
    assert "python -m roformer_lit fit --config configs/rope.yaml\n```" in text
    assert "```bash\npython -m pytest\n```" in text


@pytest.mark.parametrize(
    ("raw", "old", "new", "cell"),
    [
        (
            MLM_RAW,
            "| rope | softmax | 4.702 |",
            "| rope | softmax | 4.802 |",
            "data '4.802 / 4.576 / 4.643: **4.67 ± 0.12**",
        ),
        (POSITION_LR_RAW, "| 0.3282 ± 0.0066 |", "| 0.3382 ± 0.0066 |", "data '33.8"),
    ],
)
def test_a_number_changed_in_a_raw_output_names_the_region_and_cell(
    tmp_path, raw, old, new, cell
) -> None:
    stale = _check(tmp_path, raw, old, new)
    assert "region 'readme-quickstart'" in stale and cell in stale, stale


def test_a_number_changed_in_the_readme_names_the_region_and_cell(tmp_path) -> None:
    stale = _check(tmp_path, page=lambda text: text.replace("**4.64 ± 0.06**", "**4.64 ± 0.05**"))
    assert "region 'readme-quickstart'" in stale and "0.05" in stale, stale


def test_a_compare_row_over_other_seeds_is_one_error(tmp_path) -> None:
    bench = tmp_path / "bench"
    shutil.copytree(ROOT / "docs" / "bench", bench)
    raw = bench / POSITION_LR_RAW
    raw.write_text(
        raw.read_text(encoding="utf-8").replace(
            "| rope-softmax | 3 (0, 1, 2) |", "| rope-softmax | 3 (0, 1, 3) |"
        ),
        encoding="utf-8",
    )
    before = (PLACES.bench, PLACES.pages)
    read_from(bench, tmp_path)
    try:
        with pytest.raises(ConfigError, match=r"rope-softmax over seeds \(0, 1, 3\)"):
            quickstart.sentence()
    finally:
        read_from(*before)


GUIDE = ROOT / "docs" / "guide" / "quickstart.md"


def test_the_quickstart_guide_carries_the_generated_result(tmp_path) -> None:
    """The guide typed the same result again ("6.80 at step 50 to **4.70**", "3 % → 32 %",
    "perplexity 898 → 110", "**4.64 ± 0.06**"), the step-50 values from no raw output; it now
    holds the README's region, checked with the guides."""
    text = GUIDE.read_text(encoding="utf-8")
    assert REGION in text and render(text, str(GUIDE)) == text
    for typed in ("6.80 at step 50", "3 % → 32 %", "898 → 110", "a few\nhundredths"):
        assert typed not in text, typed
    assert guide_stale_line(tmp_path / "intact", "quickstart.md") == ""
    stale = guide_stale_line(
        tmp_path,
        "quickstart.md",
        MLM_RAW,
        "| rope | softmax | 4.702 |",
        "| rope | softmax | 4.802 |",
    )
    assert "quickstart.md" in stale and "region 'readme-quickstart'" in stale, stale
    assert "4.802 / 4.576 / 4.643" in stale, stale


# --- the rerun's per-step curve (quickstart.CURVES_RAW) -------------------------------------


def _curves_bench(tmp_path: Path, text: str) -> Path:
    """A copy of the raw outputs whose curve file is ``text``."""
    bench = tmp_path / "bench"
    shutil.copytree(ROOT / "docs" / "bench", bench)
    (bench / quickstart.CURVES_RAW).write_text(text, encoding="utf-8")
    return bench


def _synthetic(seeds=(0, 1, 2), steps=(50, 300, 600), header=True) -> tuple[str, dict]:
    """A curve file of ``seeds`` validated after ``steps`` optimiser steps (logged, as
    TensorBoard logs them, at the 0-based step: ``steps - 1``), and its values."""
    values = {
        (seed, step): (7.0 - step / 200 + 0.01 * seed * (step % 7), 0.03 + step / 2000 + seed / 1e3)
        for seed in seeds
        for step in steps
    }
    lines = ["# Some CPU (2 cores, 2 torch threads); torch 9.9; the command"] if header else []
    lines.append("seed,step,val_loss,val_acc")
    lines += [f"{seed},{step - 1},{v[0]!r},{v[1]!r}" for (seed, step), v in values.items()]
    return "\n".join(lines) + "\n", values


def _with_bench(bench: Path, tmp_path: Path, read):
    before = (PLACES.bench, PLACES.pages)
    read_from(bench, tmp_path)
    try:
        return read()
    finally:
        read_from(*before)


def test_the_curve_words_are_the_files_means_and_spreads(tmp_path) -> None:
    import numpy as np

    text, values = _synthetic()
    words = _with_bench(_curves_bench(tmp_path, text), tmp_path, quickstart.curve_words)
    for step in quickstart.CURVE_STEPS:
        losses = np.array([values[(seed, step)][0] for seed in (0, 1, 2)])
        expected = f"{losses.mean():.2f} ± {losses.std(ddof=1):.2f} after {step}"
        assert expected in words, (expected, words)
    acc = [100 * np.array([values[(s, step)][1] for s in (0, 1, 2)]) for step in (50, 600)]
    shown = [f"{a.mean():.1f} ± {a.std(ddof=1):.1f}" for a in acc]
    assert f"accuracy {shown[0]} % → {shown[1]} %" in words, words
    assert "Some CPU (2 cores, 2 torch threads)" in words and "seeds 0, 1, 2" in words


def test_one_seeds_curve_is_its_values(tmp_path) -> None:
    text, values = _synthetic(seeds=(0,))
    words = _with_bench(_curves_bench(tmp_path, text), tmp_path, quickstart.curve_words)
    assert "±" not in words and "seed 0 (the command as written)" in words, words
    for step in quickstart.CURVE_STEPS:
        assert f"{values[(0, step)][0]:.2f} after {step}" in words, words


def _drop_row(text: str, row_start: str) -> str:
    lines = text.splitlines(keepends=True)
    (dropped,) = [line for line in lines if line.startswith(row_start)]
    return "".join(line for line in lines if line is not dropped)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_synthetic(header=False)[0], "line 1 names no CPU"),
        (_drop_row(_synthetic()[0], "2,299,"), "after 300 steps, seeds [0, 1], not [0, 1, 2]"),
        (_synthetic(steps=(50, 600))[0], "after 300 steps, seeds [], not [0, 1, 2]"),
        (_synthetic(seeds=(0, 7))[0], "seeds [0, 7], not some of [0, 1, 2]"),
        (_synthetic()[0].replace(",599,", ",six hundred,", 1), "not seed,step,val_loss,val_acc"),
    ],
    ids=["no header", "a seed missing at a step", "a step missing", "a foreign seed", "a word"],
)
def test_a_damaged_curve_file_is_one_error(tmp_path, text, message) -> None:
    bench = _curves_bench(tmp_path, text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        _with_bench(bench, tmp_path, quickstart.curve_words)


def test_a_value_changed_in_the_curve_file_names_the_region_and_cell(tmp_path) -> None:
    import numpy as np

    rows = (ROOT / "docs" / "bench" / quickstart.CURVES_RAW).read_text().splitlines()[2:]
    at_50 = {r.split(",")[0]: r.split(",")[2] for r in rows if r.split(",")[1] == "49"}
    changed = {**{s: float(v) for s, v in at_50.items()}, "0": float(at_50["0"]) + 0.1}
    losses = np.array(list(changed.values()))
    expected = (
        f"{losses[0]:.2f}"
        if len(losses) == 1
        else (f"{losses.mean():.2f} ± {losses.std(ddof=1):.2f}")
    )
    stale = _check(
        tmp_path, quickstart.CURVES_RAW, f"0,49,{at_50['0']},", f"0,49,{changed['0']!r},"
    )
    assert "region 'readme-quickstart'" in stale and f"data '{expected}'" in stale, stale


@pytest.mark.parametrize("shift", [0.0, 0.001])
def test_each_seeds_final_loss_is_set_beside_the_first_machines(tmp_path, shift) -> None:
    """Each seed's final val/loss at the first machine's 3 printed decimals: equal words
    only when every seed rounds to its printed value (a mean of rounded values may differ
    from the mean of exact ones in its last digit when no seed does)."""
    first = dict(zip((0, 1, 2), mlm.mlm_losses()["rope"], strict=True))
    _, values = _synthetic()
    values.update({(s, 600): (first[s] + 0.0004 - shift * (s == 1), 0.3) for s in (0, 1, 2)})
    lines = ["# Some CPU (2 cores, 2 torch threads); torch 9.9; the command"]
    lines.append("seed,step,val_loss,val_acc")
    lines += [f"{s},{step - 1},{v[0]!r},{v[1]!r}" for (s, step), v in values.items()]
    text = "\n".join(lines) + "\n"
    words = _with_bench(_curves_bench(tmp_path, text), tmp_path, quickstart.curve_words)
    again = " / ".join(f"{values[(s, 600)][0]:.3f}" for s in (0, 1, 2))
    if shift == 0.0:
        assert f"each seed's final val/loss, {again}, is the first machine's" in words, words
    else:
        then = " / ".join(f"{first[s]:.3f}" for s in (0, 1, 2))
        assert f"each seed's final val/loss is {again} where the first machine's is {then}" in (
            words
        ), words
