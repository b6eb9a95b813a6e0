"""The fine-tuning table states its baseline, computed from the shipped task: the guide
typed "11,523 / 1,285" snippets and "majority class 53.5 %" twice by hand, and no line
said which checkpoints are not above it. Region ``finetune-movie-polarity`` now writes the
split sizes, the majority class's share and the checkpoints at or below it; a hand edit or
a changed raw output makes the check name the region."""

from __future__ import annotations

from pathlib import Path

from study_helpers import guide_stale_line, tampered_bench

from roformer_lit.results.study import finetune
from roformer_lit.results.study.places import PLACES, read_from

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide" / "finetuning.md"
ROW = (
    "movie_polarity,learned-softmax,runs/positions/learned-softmax-seed1/checkpoints/last.ckpt,"
    "1,0,runs/finetune_cpu/movie_polarity-learned-softmax-seed1-ftseed0,"
)


def test_the_majority_class_is_the_shipped_validation_splits() -> None:
    validation, train, share = finetune.majority()
    assert (validation, train) == (1285, 11523)
    assert f"{share:.3f}" == "0.535"
    text = " ".join(GUIDE.read_text(encoding="utf-8").split())
    assert "majority class scores 0.535 (53.5 %)" in text
    # learned seed 1's three runs each log 687/1285 in float32, a hair above the float64
    # share: they predict the majority class and count as at it
    assert "at or below it: 2 of 30 (`learned` seed 1, `learned` seed 2)" in text
    assert "at or below it: 2 of 30 (`learned` seed 1, `learned` seed 2)" in finetune.baseline()


def test_the_guide_types_the_figures_only_in_the_region() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    assert text.count("53.5 %") == 1 and text.count("1,285") == 1, "typed outside the region"


def test_a_hand_edit_names_the_region(tmp_path) -> None:
    stale = guide_stale_line(
        tmp_path, "finetuning.md", page=lambda t: t.replace("scores 0.535", "scores 0.500", 1)
    )
    assert "region 'finetune-movie-polarity'" in stale and "0.500" in stale, stale


def test_a_checkpoint_pushed_over_the_baseline_changes_the_count(tmp_path) -> None:
    """learned seed 1's fine-tuning seed 0 set to 0.70: that checkpoint's mean is then
    above the majority class, and the count says 1 of 30."""
    raw = (ROOT / "docs" / "bench" / finetune.RAW).read_text(encoding="utf-8")
    line = next(x for x in raw.splitlines() if x.startswith(ROW))
    bench = tampered_bench(tmp_path, finetune.RAW, line, ROW + "0.70")
    before = (PLACES.bench, PLACES.pages)
    read_from(bench, tmp_path)
    try:
        assert "at or below it: 1 of 30 (`learned` seed 2)" in finetune.baseline()
    finally:
        read_from(*before)
