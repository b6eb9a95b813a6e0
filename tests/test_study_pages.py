"""The study pages equal what their raw outputs give (``scripts/study_pages.py --check``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from roformer_lit.results.study.regions import render

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "study_pages.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def test_the_study_pages_are_generated_from_their_data() -> None:
    proc = _run("--check")
    assert proc.returncode == 0, proc.stderr


def test_check_fails_on_a_page_edited_by_hand() -> None:
    """A changed number inside a generated region is caught (the check can fail)."""
    page = ROOT / "docs" / "studies" / "position-tasks.md"
    text = page.read_text(encoding="utf-8")
    assert render(text, str(page)) == text
    edited = text.replace("| nope | 0.189 |", "| nope | 0.200 |", 1)
    assert edited != text and render(edited, str(page)) == text
    outside = text.replace("## recall", "## recall (edited)", 1)
    assert render(outside, str(page)) == outside  # hand-written text is left alone
