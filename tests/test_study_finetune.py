"""The fine-tuning result of ``docs/guide/finetuning.md`` is generated and checked like the
study pages: its table and its sentence about MLM loss come from the raw CSV, and the
sentence never calls an interval that holds 0 a finding of no link (the page said, by hand,
"MLM loss does not predict downstream accuracy" over ρ = -0.27 [-0.78, 0.44])."""

from __future__ import annotations

import csv
import io
import shutil
import statistics
from pathlib import Path

import pytest

from roformer_lit.errors import ConfigError
from roformer_lit.results.study import finetune
from roformer_lit.results.study.pages import main as study_main
from roformer_lit.results.study.pages import render_pages
from roformer_lit.results.study.places import PLACES, read_from
from roformer_lit.results.study.regions import render

ROOT = Path(__file__).resolve().parent.parent
REGION = "# A guide\n\n<!-- generated: finetune-movie-polarity -->\n<!-- end generated -->\n"


def _dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    bench, pages, guides = tmp_path / "bench", tmp_path / "pages", tmp_path / "guide"
    shutil.copytree(ROOT / "docs" / "bench", bench)
    pages.mkdir()
    guides.mkdir()
    (guides / "finetuning.md").write_text(REGION, encoding="utf-8")
    return bench, pages, guides


def _region(bench: Path, pages: Path) -> str:
    before = (PLACES.bench, PLACES.pages)
    read_from(bench, pages)
    try:
        return finetune.table()
    finally:
        read_from(*before)


def _accuracy_from_loss(data: str) -> str:
    """Every run's accuracy replaced by one falling with its scheme's MLM loss."""
    rows = list(csv.DictReader(io.StringIO(data)))
    losses = {"nope": 6.1, "xl": 4.4, "fire": 6.0, "t5": 6.05, "kerple": 4.9, "alibi": 5.1}
    losses |= {"deberta": 4.5, "rope": 4.6, "sinusoidal": 6.4, "learned": 6.5}
    for row in rows:
        scheme = row["variant"].removesuffix("-softmax")
        row["accuracy"] = str(1.0 - losses[scheme] / 10 + 0.0001 * int(row["finetune_seed"]))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


@pytest.mark.parametrize(
    ("damage", "says", "never"),
    [
        (None, "the interval holds 0: **no evidence either way**", "excludes 0"),
        (
            _accuracy_from_loss,
            "the interval excludes 0 (a lower loss, a higher accuracy)",
            "holds 0",
        ),
    ],
)
def test_the_mlm_sentence_follows_the_interval(tmp_path, damage, says, never) -> None:
    bench, pages, _ = _dirs(tmp_path)
    raw = bench / finetune.RAW
    if damage is not None:
        raw.write_text(damage(raw.read_text(encoding="utf-8")), encoding="utf-8")
    text = _region(bench, pages)
    assert says in text and never not in text, text


def test_the_table_is_the_csvs_means(tmp_path) -> None:
    """Recomputed here from the CSV alone: nope's mean over its checkpoints' means."""
    bench, pages, _ = _dirs(tmp_path)
    runs = [r for r in csv.DictReader(open(bench / finetune.RAW)) if r["variant"] == "nope-softmax"]
    means = [
        statistics.fmean(float(r["accuracy"]) for r in runs if r["pretrain_seed"] == str(s))
        for s in (0, 1, 2)
    ]
    row = next(line for line in _region(bench, pages).splitlines() if line.startswith("| nope |"))
    assert f"{statistics.fmean(means):.3f} ± {statistics.stdev(means):.3f}" in row, row


def test_a_fine_tune_given_twice_is_one_error_line(tmp_path) -> None:
    """One fine-tune row twice would count one run as two seeds: refused, nothing written."""
    bench, pages, guides = _dirs(tmp_path)
    raw = bench / finetune.RAW
    lines = raw.read_text(encoding="utf-8").splitlines(keepends=True)
    raw.write_text("".join([*lines, lines[1]]), encoding="utf-8")
    before = (guides / "finetuning.md").read_text(encoding="utf-8")
    with pytest.raises(ConfigError, match="fine-tuning seed 0 a second time"):
        render_pages(bench, pages, None, None, guides)
    assert (guides / "finetuning.md").read_text(encoding="utf-8") == before


def test_the_checkouts_guide_is_checked(tmp_path) -> None:
    """``--check`` covers docs/guide: a number edited in the guide's region fails it."""
    guide = ROOT / "docs" / "guide" / "finetuning.md"
    text = guide.read_text(encoding="utf-8")
    assert "<!-- generated: finetune-movie-polarity -->" in text
    assert "does not predict downstream accuracy" not in text
    assert render(text, str(guide)) == text
    edited = text.replace("| nope | 6.056 ± 0.003 | 0.638", "| nope | 6.056 ± 0.003 | 0.648", 1)
    assert edited != text and render(edited, str(guide)) == text
    assert study_main(["--check"]) == 0


def test_the_spreads_are_the_csvs(tmp_path) -> None:
    """Recomputed from the CSV: learned's pooled within-checkpoint std is 0.008 (the page had
    typed 0.009 as the smallest)."""
    bench, pages, _ = _dirs(tmp_path)
    rows = list(csv.DictReader(open(bench / finetune.RAW)))
    within = []
    for scheme in {r["variant"] for r in rows}:
        squares = freedom = 0
        for seed in ("0", "1", "2"):
            runs = [
                float(r["accuracy"])
                for r in rows
                if r["variant"] == scheme and r["pretrain_seed"] == seed
            ]
            squares += sum((x - statistics.fmean(runs)) ** 2 for x in runs)
            freedom += len(runs) - 1
        within.append((squares / freedom) ** 0.5)
    before = (PLACES.bench, PLACES.pages)
    read_from(bench, pages)
    try:
        text = finetune.spreads()
    finally:
        read_from(*before)
    assert f"is {min(within):.3f}–{max(within):.3f};" in text and "0.008–0.024" in text, text
