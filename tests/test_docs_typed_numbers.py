"""Numbers the guides typed that no committed raw output states are gone, each replaced by
a pointer to where the figure is stated once (the README's CI counts, the fine-tuning
table's `rope` row) or by what the raw outputs do not hold: the quick-start guide's start-up
time (5 s, 3.6 s of imports) and its old test counts (4,171 / 2,472, which no longer matched
the README's), the fine-tuning guide's "about 0.61" and "~12×", the runs guide's "about 3 %"
of a validation, and the position-tasks guide's recall curve (0.36 at step 2,500) and
"about a minute" a run."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide"

TYPED = [
    ("quickstart.md", "about 5 s to start"),
    ("quickstart.md", "3.6 s"),
    ("quickstart.md", "4,171 passed"),
    ("quickstart.md", "2,472 passed"),
    ("quickstart.md", "about 21 min"),
    ("finetuning.md", "about 0.61"),
    ("finetuning.md", "~12×"),
    ("runs.md", "about 3 %"),
    ("position-tasks.md", "0.36 at step 2,500"),
    ("position-tasks.md", "about a minute"),
]


@pytest.mark.parametrize(("page", "typed"), TYPED, ids=[f"{p}:{t}" for p, t in TYPED])
def test_the_guide_no_longer_types_it(page, typed) -> None:
    text = " ".join((GUIDE / page).read_text(encoding="utf-8").split())
    assert typed not in text, f"{page}: {typed!r}"


def test_the_quickstart_guide_points_to_the_readmes_test_counts() -> None:
    text = (GUIDE / "quickstart.md").read_text(encoding="utf-8")
    assert "quick start of the repository's `README.md`" in " ".join(text.split())
    assert "## Quick start" in (ROOT / "README.md").read_text(encoding="utf-8")
