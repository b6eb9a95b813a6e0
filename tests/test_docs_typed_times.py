"""No command in the README or the docs carries a typed duration in its comment
(``# 63 runs, 20 min``, ``# ~5 h on this CPU``, ``# under a minute``): each was a time no
committed raw output states. A time a raw output does state is written into a generated
region (``scripts/study_pages.py``), outside the code block."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "docs").glob("*/*.md")])
#: A comment stating a duration: ``# ... 20 min``, ``# ~5 h``, ``# about 80 s``, ``# under a
#: minute``.
DURATION = re.compile(
    r"#.*?(?:\d+(?:[.,]\d+)*\s?(?:ms|s|sec|seconds?|min|minutes?|h|hours?)\b|under a minute)"
)


def code_lines(text: str) -> list[str]:
    """The lines inside the fenced code blocks of ``text`` (fences paired line by line)."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            inside = not inside
        elif inside:
            lines.append(line)
    return lines


def typed_times(text: str) -> list[str]:
    """Each line of a code block of ``text`` whose comment states a duration."""
    return [line.strip() for line in code_lines(text) if DURATION.search(line)]


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("python -m roformer_lit sweep --config x.yaml --jobs 2   # 63 runs, 20 min", True),
        ("python -m roformer_lit fit --config c.yaml   # under a minute", True),
        ("python -m roformer_lit sweep --config p.yaml --jobs 2   # ~5 h on this CPU", True),
        ("# CPU: about 80 s on the idle 2-core CPU", True),
        ("python -m roformer_lit fit --config c.yaml   # BERT-base on a GPU", False),
        ("python -m roformer_lit sweep --config x.yaml   # every scheme x sort", False),
        ("python -m roformer_lit bench --lengths 128 512 --rounds 3", False),
        ("dense = bias.bias  # [B or 1, h, L or 1, L] or None", False),
    ],
)
def test_the_pattern_finds_a_typed_time(line, found) -> None:
    # after a block of another language, whose closing fence opens no block
    page = f"```python\nx = 1\n```\n\ntext # 5 min\n\n```bash\n{line}\n```\n"
    assert bool(typed_times(page)) == found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_command_comment_types_a_time(page) -> None:
    assert typed_times(page.read_text(encoding="utf-8")) == []
