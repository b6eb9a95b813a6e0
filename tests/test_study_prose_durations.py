"""No study page or study guide states how long runs took outside a generated region: the
layer-plan study typed "about 100 s each", "about 20 minutes" and "about an hour", and the
position-task study "about 35 s per run" and "120 runs, about 40 minutes", none of them in a
committed raw output (and the 120 was stale: the slice is now 210 runs). Durations on these
pages come from a committed raw output, inside a generated region, or not at all."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs" / "studies").glob("*.md")) + [
    ROOT / "docs" / "guide" / name
    for name in ("extrapolation.md", "position-tasks.md", "layer-plans.md")
]
DURATION = re.compile(
    r"about (an? |[\d,.]+ ?)(s|sec|seconds?|min|minutes?|hours?)\b"
    r"|\b[\d,.]+ ?(s|min|minutes?) (each|per run)\b",
    re.IGNORECASE,
)


def _prose(text: str) -> str:
    """``text`` without its generated regions."""
    return re.sub(r"<!-- generated: [^>]*-->.*?<!-- end generated -->", "", text, flags=re.DOTALL)


def test_the_pattern_finds_the_typed_durations_it_was_written_for() -> None:
    for typed in ("about 100 s each", "about 20 minutes", "about an hour", "about 35 s per run"):
        assert DURATION.search(typed), typed
    assert not DURATION.search("4,000 steps, 30 runs, 1× to 16×, 512 tokens")


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_no_typed_duration_outside_generated_regions(page: Path) -> None:
    found = [m.group(0) for m in DURATION.finditer(_prose(page.read_text(encoding="utf-8")))]
    assert not found, f"{page.relative_to(ROOT)}: {found}"
