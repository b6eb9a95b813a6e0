"""No page repeats a phrase of three or more words on both sides of an ``and``/``or``: a
generated sentence joined two counts that both read "on every seed" without saying which
lengths they were ("fire ×10's change is above deberta's on every seed and on every seed"),
which reads as a typo and says less than the data. Every page, generated regions included."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
REPEATED = re.compile(r"\b((?:[\w×`'-]+ ){2,}[\w×`'-]+) (?:and|or|,) \1\b")


def test_the_pattern_finds_the_phrase_it_was_written_for() -> None:
    assert REPEATED.search("above deberta's on every seed and on every seed.")
    assert not REPEATED.search("on every seed at 8× and on every seed at 16×")


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_no_phrase_is_repeated_across_an_and(page: Path) -> None:
    found = [m.group(0) for m in REPEATED.finditer(page.read_text(encoding="utf-8"))]
    assert not found, f"{page.relative_to(ROOT)}: {found}"
