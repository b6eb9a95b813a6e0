"""Rewrite the generated regions of the study pages from the raw outputs in ``docs/bench/``.

    python scripts/study_pages.py           # rewrite every generated region
    python scripts/study_pages.py --check   # exit 0 only if the pages equal what the data give

A region is the text between ``<!-- generated: NAME -->`` and ``<!-- end generated -->`` on
a page of ``docs/studies/``; :data:`~.regions.REGIONS` maps each name to the function that
writes it. Every table, and every sentence that states a count, an ordering or "on every
seed", lives in such a region, so a page cannot drift from its data: the default test suite
runs ``--check``. A damaged raw output or page is one ``error:`` line naming the file (and
the line or region), exit 2; no page is written then.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.places import PLACES, REPOSITORY, read_from
from roformer_lit.results.study.reading import read_text
from roformer_lit.results.study.regions import render


def shown(path: Path) -> str:
    """``path`` relative to the checkout when inside it."""
    return str(path.relative_to(REPOSITORY)) if path.is_relative_to(REPOSITORY) else str(path)


def render_pages(bench: Path, pages: Path) -> dict[Path, str]:
    """Each page of ``pages`` whose regions differ from what ``bench``'s raw outputs give,
    with its new text (the studies read from ``bench`` only during the call)."""
    before = (PLACES.bench, PLACES.pages)
    read_from(bench, pages)
    try:
        rewritten = {}
        for page in sorted(Path(pages).glob("*.md")):
            text = read_text(page)
            new = render(text, str(page))
            if new != text:
                rewritten[page] = new
        return rewritten
    finally:
        read_from(*before)


def main(argv: list[str]) -> int:
    """The command; 0 when the pages are (now) current, 1 on ``--check`` with stale pages,
    2 with one ``error:`` line for a damaged raw output or page."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 on a difference")
    parser.add_argument(
        "--bench", type=Path, default=PLACES.bench, help="raw outputs (default: docs/bench)"
    )
    parser.add_argument(
        "--pages", type=Path, default=PLACES.pages, help="study pages (default: docs/studies)"
    )
    ns = parser.parse_args(argv)
    try:
        rewritten = render_pages(ns.bench, ns.pages)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stale = list(rewritten)
    if ns.check and stale:
        print(
            "stale generated regions: "
            + ", ".join(shown(p) for p in stale)
            + " (run python scripts/study_pages.py)",
            file=sys.stderr,
        )
        return 1
    if not ns.check:
        for page, new in rewritten.items():
            page.write_text(new, encoding="utf-8")
    for page in stale:
        print(f"rewrote {shown(page)}")
    return 0
