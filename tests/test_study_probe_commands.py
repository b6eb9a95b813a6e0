"""The README's position-task commands (region ``readme-probe-commands``): the README typed
"under a minute" and "63 runs, 20 min" with no raw output stating a time. The count of runs
is now the sweep file as ``sweep`` expands it, the only time stated is the one the sweep's
committed ``compare`` table records (each run's first-to-last logged metric), and a table
that does not cover the sweep's runs is one error line."""

from __future__ import annotations

from pathlib import Path

import pytest
from study_helpers import guide_stale_line, region_body, region_stale_line, tampered_bench

from roformer_lit.errors import ConfigError
from roformer_lit.results.study import probe_commands
from roformer_lit.results.study.pages import main as study_main
from roformer_lit.results.study.pages import render_pages, stale_line
from roformer_lit.results.study.regions import render
from roformer_lit.sweep.spec import load_sweep

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
REGION = "<!-- generated: readme-probe-commands -->"
RAW = probe_commands.COMPARE_RAW


def _region_readme(tmp_path: Path, page=None) -> Path:
    """A README holding the region alone (edited by ``page``)."""
    text = README.read_text(encoding="utf-8")
    start = text.index(REGION)
    region = text[start : text.index("<!-- end generated -->", start) + 23] + "\n"
    readme = tmp_path / "README.md"
    readme.write_text(page(region) if page else region, encoding="utf-8")
    return readme


def _check(tmp_path: Path, raw: str | None = None, old: str = "", new: str = "", page=None):
    """``stale_line`` of the region against a copy of the raw outputs with ``old`` replaced
    by ``new`` in ``raw`` (or the region edited by ``page``); '' when current."""
    bench, pages = tampered_bench(tmp_path, raw, old, new), tmp_path / "pages"
    pages.mkdir()
    rewritten, drawn = render_pages(bench, pages, _region_readme(tmp_path, page))
    return stale_line(rewritten, drawn, bench, pages) if rewritten else ""


def test_the_readme_states_what_the_sweep_and_raw_output_give(tmp_path) -> None:
    text = README.read_text(encoding="utf-8")
    assert REGION in text and render(text, str(README)) == text
    assert _check(tmp_path) == ""
    for typed in ("# under a minute", "# 63 runs, 20 min", "20 min"):
        assert typed not in text, typed
    assert "The sweep is 63 runs (4 `model.position` × 3 `data.probe`" in text
    assert "31.5 ± 3.3 s, mean ± std over 3 seeds" in text


def test_the_count_is_the_sweeps_own_expansion() -> None:
    runs, words = probe_commands.sweep_runs()
    assert runs == len(load_sweep(probe_commands.SWEEP, validate=False).runs) == 4 * 3 * 2 * 3 - 9
    assert words.endswith("= 72 combinations, less 9 its `exclude` removes")


def _smaller_sweep(tmp_path: Path) -> Path:
    """The sweep file with two seeds instead of three (base made absolute)."""
    text = probe_commands.SWEEP.read_text(encoding="utf-8")
    text = text.replace("seed_everything: [0, 1, 2]", "seed_everything: [0, 1]")
    text = text.replace("base: configs/", f"base: {ROOT}/configs/")
    path = tmp_path / "probes_quick.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_changed_sweep_is_counted_and_its_old_table_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(probe_commands, "SWEEP", _smaller_sweep(tmp_path))
    runs, words = probe_commands.sweep_runs()
    assert (runs, words.split(" = ")[1]) == (42, "48 combinations, less 6 its `exclude` removes")
    monkeypatch.setattr(probe_commands, "REPOSITORY", tmp_path)
    with pytest.raises(ConfigError, match="covers 63 runs in 21 variants; .* to 42 runs in 21"):
        probe_commands.sentence()


@pytest.mark.parametrize(
    ("old", "new", "cell"),
    [
        ("| 491 ± 1 | 31.5 ± 3.3 |", "| 491 ± 1 | 41.5 ± 3.3 |", "41.5"),
        ("| 491 ± 1 | 31.5 ± 3.3 |", "| 491 ± 1 | 31.5 ± 4.3 |", "4.3"),
        ("| 490 ± 2 | 17.0 ± 0.1 |", "| 490 ± 2 | 27.0 ± 0.1 |", "data '30.7'"),
    ],
)
def test_a_number_changed_in_the_raw_output_names_the_region(tmp_path, old, new, cell) -> None:
    stale = _check(tmp_path, RAW, old, new)
    assert "region 'readme-probe-commands'" in stale and cell in stale, stale


@pytest.mark.parametrize(
    ("old", "new"),
    [("The sweep is 63 runs", "The sweep is 64 runs"), ("31.5 ± 3.3 s", "25 s")],
)
def test_a_number_edited_in_the_readme_names_the_region(tmp_path, old, new) -> None:
    stale = _check(tmp_path, page=lambda text: text.replace(old, new, 1))
    assert "region 'readme-probe-commands'" in stale, stale


def _alibi_copy(text: str) -> str:
    return next(
        line
        for line in text.splitlines()
        if line.startswith("| alibi-softmax probe=copy random_positions=null")
    )


#: (case, damage to the compare table's text, what the error line says)
DAMAGED = [
    ("wall-not-a-number", lambda t: t.replace("| 31.5 ± 3.3 |", "| fast |"), "not a row of"),
    ("row-cut", lambda t: t.replace(_alibi_copy(t), _alibi_copy(t)[:60]), "not a row of"),
    ("row-twice", lambda t: t + _alibi_copy(t) + "\n", "a second time"),
    ("row-gone", lambda t: t.replace(_alibi_copy(t) + "\n", ""), "covers 60 runs in 20"),
    ("no-wall-column", lambda t: t.replace("wall time (s)", "wall"), "no 'seeds' and 'wall"),
    ("empty", lambda t: "", "no compare table"),
]


@pytest.mark.parametrize(("case", "damage", "says"), DAMAGED, ids=[d[0] for d in DAMAGED])
def test_a_damaged_table_is_one_error_line(tmp_path, capsys, case, damage, says) -> None:
    bench, pages = tampered_bench(tmp_path), tmp_path / "pages"
    pages.mkdir()
    raw = bench / RAW
    raw.write_text(damage(raw.read_text(encoding="utf-8")), encoding="utf-8")
    readme = _region_readme(tmp_path)
    before = readme.read_text(encoding="utf-8")
    argv = ["--bench", str(bench), "--pages", str(pages), "--readme", str(readme)]
    assert study_main(argv) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 1 and lines[0].startswith("error: "), err
    assert says in lines[0] and str(raw) in lines[0], lines[0]
    assert readme.read_text(encoding="utf-8") == before


# -- the guide's paragraph of the study's sweep files (region guide-probe-sweeps) ---------

GUIDE = ROOT / "docs" / "guide" / "position-tasks.md"
OTHERS = probe_commands.PARTS["probes_others.yaml"]


def test_the_guide_states_what_the_sweeps_and_tables_give(tmp_path) -> None:
    text = GUIDE.read_text(encoding="utf-8")
    assert "<!-- generated: guide-probe-sweeps -->" in text and render(text, str(GUIDE)) == text
    assert guide_stale_line(tmp_path, "position-tasks.md") == ""
    for typed in ("about 100 min", "38, 125 and 36 run-minutes", "63 runs, 20\nmin"):
        assert typed not in text, typed
    assert "= 240 combinations, less 12 its `exclude` removes: 228 runs" in text
    assert "`probes_quick.yaml` (63 runs), `probes_others.yaml` (108 runs)" in text
    assert "30.2, 139.4 and 29.1 run-minutes" in text


@pytest.mark.parametrize(
    ("raw", "old", "new", "cell"),
    [
        (OTHERS, "| 583 ± 3 | 148.3 ± 40.0 |", "| 583 ± 3 | 248.3 ± 40.0 |", "data '144.4"),
        (RAW, "| 490 ± 2 | 17.0 ± 0.1 |", "| 490 ± 2 | 27.0 ± 0.1 |", "data '30.7"),
    ],
)
def test_a_time_changed_in_a_table_names_the_guide_region(tmp_path, raw, old, new, cell) -> None:
    stale = guide_stale_line(tmp_path, "position-tasks.md", raw, old, new)
    assert "region 'guide-probe-sweeps'" in stale and cell in stale, stale


def test_a_count_edited_in_the_guide_names_its_region(tmp_path) -> None:
    stale = guide_stale_line(
        tmp_path, "position-tasks.md", page=lambda t: t.replace("(108 runs)", "(100 runs)", 1)
    )
    assert "region 'guide-probe-sweeps'" in stale and "108" in stale, stale


def test_parts_that_no_longer_split_the_whole_are_refused(tmp_path, monkeypatch) -> None:
    sweeps = tmp_path / "sweeps"
    sweeps.mkdir()
    for name in [probe_commands.WHOLE, *probe_commands.PARTS]:
        text = (probe_commands.SWEEPS / name).read_text(encoding="utf-8")
        if name == probe_commands.WHOLE:  # a fifth task in the whole grid only
            text = text.replace("odds_first]", "odds_first, recall]")
        (sweeps / name).write_text(
            text.replace("base: configs/", f"base: {ROOT}/configs/"), encoding="utf-8"
        )
    monkeypatch.setattr(probe_commands, "SWEEPS", sweeps)
    with pytest.raises(ConfigError, match="expand to 228 runs, probes.yaml to 285: the parts"):
        probe_commands.guide_sweeps()


def test_the_study_page_counts_its_sweeps_from_the_files(tmp_path) -> None:
    """The study page typed "228 runs", "63 runs, 20 min", "108 runs" and "57 runs" in its
    commands' comments; it holds the same region as the guide now."""
    body = region_body("position-tasks.md", "guide-probe-sweeps")
    assert "228 runs, as `sweep` expands it" in body and "(57 runs)" in body
    stale = region_stale_line(
        tmp_path,
        "position-tasks.md",
        "guide-probe-sweeps",
        tampered_bench(tmp_path),
        lambda text: text.replace("(57 runs)", "(58 runs)", 1),
    )
    assert "region 'guide-probe-sweeps'" in stale, stale
