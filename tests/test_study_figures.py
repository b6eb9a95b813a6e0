"""The study figures and the README's findings table are checked like the pages' tables:
``scripts/study_pages.py --check`` fails when a figure's plotted values, its PNG or the
README region differ from what the raw outputs give."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from roformer_lit.results.statistics import mean_interval
from roformer_lit.results.study import plans
from roformer_lit.results.study.pages import main as study_main
from roformer_lit.results.study.places import PLACES, read_from
from roformer_lit.results.study.stamp import stamp, unstamped

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


def _append_a_byte(png: bytes, sidecar: str) -> bytes:
    return png + b"x"


def _change_a_pixel_byte(png: bytes, sidecar: str) -> bytes:
    at = png.index(b"IDAT") + 40
    return png[:at] + bytes([png[at] ^ 0xFF]) + png[at + 1 :]


def _unstamped(png: bytes, sidecar: str) -> bytes:
    return unstamped(png)


def _drawn_from_other_values(png: bytes, sidecar: str) -> bytes:
    return stamp(unstamped(png), sidecar.replace("1.0", "0.9", 1))


@pytest.mark.parametrize(
    ("tamper", "says"),
    [
        (_append_a_byte, "not a whole PNG (1 bytes after IEND)"),
        (_change_a_pixel_byte, "changed since it was drawn"),
        (_unstamped, "no stamp of the values it was drawn from"),
        (_drawn_from_other_values, "drawn from other values than its sidecar's"),
    ],
)
def test_check_fails_on_a_stale_png_in_one_line_naming_it(tmp_path, capsys, tamper, says) -> None:
    """A PNG that is not the drawing of its sidecar fails ``--check`` though the sidecar is
    current (it passed before the PNG was stamped: only its presence was checked)."""
    page = "<!-- generated: figure-plans -->\n<!-- end generated -->\n"
    bench, pages = _dirs(tmp_path, page)
    argv = ["--bench", str(bench), "--pages", str(pages)]
    assert study_main(argv) == 0
    png, sidecar = pages / "figures" / "plans.png", pages / "figures" / "plans.json"
    assert study_main([*argv, "--check"]) == 0
    capsys.readouterr()
    png.write_bytes(tamper(png.read_bytes(), sidecar.read_text(encoding="utf-8")))
    assert study_main([*argv, "--check"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("stale: "), err
    assert f"figures/plans.png: {says}" in err, err
    assert study_main(argv) == 0 and study_main([*argv, "--check"]) == 0
