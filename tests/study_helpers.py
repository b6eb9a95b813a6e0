"""Tampering with a copy of the study's raw outputs or pages, for the tests of generated
regions: what ``--check`` says once one number is changed."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from roformer_lit.results.study.drift import regions
from roformer_lit.results.study.pages import render_pages, stale_line

ROOT = Path(__file__).resolve().parent.parent


def tampered_bench(tmp_path: Path, raw: str | None = None, old: str = "", new: str = "") -> Path:
    """A copy of ``docs/bench`` under ``tmp_path`` with ``old`` (found exactly once)
    replaced by ``new`` in the raw output ``raw``, if one is named."""
    bench = tmp_path / "bench"
    shutil.copytree(ROOT / "docs" / "bench", bench)
    if raw is not None:
        data = (bench / raw).read_text(encoding="utf-8")
        assert data.count(old) == 1, old
        (bench / raw).write_text(data.replace(old, new), encoding="utf-8")
    return bench


def guide_stale_line(
    tmp_path: Path,
    guide: str,
    raw: str | None = None,
    old: str = "",
    new: str = "",
    page: Callable[[str], str] | None = None,
) -> str:
    """``stale_line`` of ``docs/guide/<guide>`` against a copy of the raw outputs tampered
    as :func:`tampered_bench` says (or the guide edited by ``page``); '' when nothing is
    stale."""
    bench = tampered_bench(tmp_path, raw, old, new)
    pages, guides = tmp_path / "pages", tmp_path / "guide"
    pages.mkdir()
    guides.mkdir()
    text = (ROOT / "docs" / "guide" / guide).read_text(encoding="utf-8")
    (guides / guide).write_text(page(text) if page else text, encoding="utf-8")
    rewritten, drawn = render_pages(bench, pages, None, None, guides)
    return stale_line(rewritten, drawn, bench, pages) if rewritten else ""


def region_body(page: str, name: str) -> str:
    """The body of region ``name`` on ``docs/studies/<page>``, as the page has it."""
    text = (ROOT / "docs" / "studies" / page).read_text(encoding="utf-8")
    return next(body for region, _, body in regions(text) if region == name)


def region_stale_line(
    tmp_path: Path,
    page: str,
    name: str,
    bench: Path,
    edit: Callable[[str], str] | None = None,
) -> str:
    """``stale_line`` of a page holding region ``name`` of ``docs/studies/<page>`` alone (its
    body edited by ``edit``) against the raw outputs ``bench``; '' when nothing is stale."""
    pages = tmp_path / "pages"
    pages.mkdir()
    body = region_body(page, name)
    text = f"# {page}\n\n<!-- generated: {name} -->\n{edit(body) if edit else body}"
    (pages / page).write_text(text + "<!-- end generated -->\n", encoding="utf-8")
    rewritten, drawn = render_pages(bench, pages)
    return stale_line(rewritten, drawn, bench, pages) if rewritten else ""


def readme_region_stale_line(
    tmp_path: Path,
    region: str,
    raw: str | None = None,
    old: str = "",
    new: str = "",
    page: Callable[[str], str] | None = None,
) -> str:
    """``stale_line`` of the README's region ``region`` (its ``<!-- generated: ... -->``
    marker) against a copy of the raw outputs tampered as :func:`tampered_bench` says (or
    the region edited by ``page``); '' when nothing is stale."""
    bench, pages = tampered_bench(tmp_path, raw, old, new), tmp_path / "pages"
    pages.mkdir()
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(region)
    body = text[start : text.index("<!-- end generated -->", start) + 23] + "\n"
    readme = tmp_path / "README.md"
    readme.write_text(page(body) if page else body, encoding="utf-8")
    rewritten, drawn = render_pages(bench, pages, readme)
    return stale_line(rewritten, drawn, bench, pages) if rewritten else ""
