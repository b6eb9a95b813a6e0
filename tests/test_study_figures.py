"""The study figures and the README's findings table are checked like the pages' tables:
``scripts/study_pages.py --check`` fails when a figure's plotted values, its PNG or the
README region differ from what the raw outputs give."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from roformer_lit.results.statistics import mean_interval
from roformer_lit.results.study import plans
from roformer_lit.results.study.pages import main as study_main
from roformer_lit.results.study.places import PLACES, read_from

ROOT = Path(__file__).resolve().parent.parent


def _dirs(tmp_path: Path, text: str) -> tuple[Path, Path]:
    bench, pages = tmp_path / "bench", tmp_path / "pages"
    shutil.copytree(ROOT / "docs" / "bench", bench)
    pages.mkdir()
    (pages / "page.md").write_text(text, encoding="utf-8")
    return bench, pages


def test_a_figure_is_drawn_and_check_catches_changed_values_or_a_missing_png(tmp_path) -> None:
    page = "# A page\n\n<!-- generated: figure-plans -->\n<!-- end generated -->\n"
    bench, pages = _dirs(tmp_path, page)
    argv = ["--bench", str(bench), "--pages", str(pages)]
    assert study_main(argv) == 0
    sidecar, png = pages / "figures" / "plans.json", pages / "figures" / "plans.png"
    assert png.read_bytes().startswith(b"\x89PNG")
    assert "figures/plans.png" in (pages / "page.md").read_text(encoding="utf-8")
    assert study_main([*argv, "--check"]) == 0
    # the plotted values are the study's cells, computed here independently of figures.py
    figure = json.loads(sidecar.read_text(encoding="utf-8"))
    before = (PLACES.bench, PLACES.pages)
    read_from(bench, pages)
    try:
        study = plans.study()
        copy = next(p for p in figure["panels"] if p["title"] == "copy")
        first = copy["series"][0]
        values = study.values("copy", first["label"], study.lengths[0])
        assert first["mean"][0] == round(mean_interval(list(values.values())).mean, 6)
        majority = next(b for b in copy["baselines"] if b["label"] == "baseline: majority")
        assert majority["y"][0] == round(study.baselines[("copy", "majority", 16)], 6)
    finally:
        read_from(*before)
    first["mean"][0] += 0.01
    sidecar.write_text(json.dumps(figure, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert study_main([*argv, "--check"]) == 1
    assert study_main(argv) == 0 and study_main([*argv, "--check"]) == 0
    png.unlink()
    assert study_main([*argv, "--check"]) == 1


def test_two_drawings_of_one_figure_are_the_same_bytes(tmp_path) -> None:
    page = "<!-- generated: figure-plans -->\n<!-- end generated -->\n"
    bench, pages = _dirs(tmp_path, page)
    argv = ["--bench", str(bench), "--pages", str(pages)]
    assert study_main(argv) == 0
    first = (pages / "figures" / "plans.png").read_bytes()
    (pages / "figures" / "plans.png").unlink()
    assert study_main(argv) == 0
    assert (pages / "figures" / "plans.png").read_bytes() == first


def test_the_readme_findings_region_is_checked(tmp_path) -> None:
    bench, pages = _dirs(tmp_path, "# no regions\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        "# R\n\n<!-- generated: readme-findings -->\nstale\n<!-- end generated -->\n",
        encoding="utf-8",
    )
    argv = ["--bench", str(bench), "--pages", str(pages), "--readme", str(readme)]
    assert study_main([*argv, "--check"]) == 1
    assert study_main(argv) == 0
    text = readme.read_text(encoding="utf-8")
    assert "| task | finding | evidence |" in text and "no test-backed evidence either way" in text
    assert study_main([*argv, "--check"]) == 0
    readme.write_text(text.replace("| copy |", "| copy (edited) |", 1), encoding="utf-8")
    assert study_main([*argv, "--check"]) == 1
