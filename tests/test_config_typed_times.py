"""No comment in a shipped config (``configs/**/*.yaml``) states a duration: the sweep files
typed run times no committed raw output states (``19.5 min with --jobs 2``, ``About 100
min``, ``38, 125 and 36 run-minutes`` where the compare tables log 30.2, 139.4 and 29.1,
``~2.5 h``, ``about 35 minutes of one core``, an estimate ``80 x 8 x 0.44 min``). A time a
raw output does state is written into a generated region of the docs
(``scripts/study_pages.py``), which a comment can point to."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = sorted((ROOT / "configs").glob("**/*.yaml"))
#: A duration: ``19.5 min``, ``~2.5 h``, ``56-132 s``, ``about 35 minutes``, ``run-minutes``.
DURATION = re.compile(
    r"\d+(?:[.,]\d+)*(?:\s?-\s?\d+(?:[.,]\d+)*)?\s?"
    r"(?:ms|s|sec|seconds?|min|minutes?|h|hours?|run-minutes)\b|under a minute"
)


def comments(text: str) -> str:
    """Every comment of ``text`` joined into one line (a duration can wrap)."""
    return " ".join(line.split("#", 1)[1].strip() for line in text.splitlines() if "#" in line)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("# 63 runs. 19.5 min with --jobs 2\n", True),
        ("# 20 runs, about 17\n# minutes of the 2-core CPU\n", True),
        ("# (90 runs, ~2.5 h with --jobs 2)\n", True),
        ("# 56-132 s a run\n", True),
        ("# took 38, 125 and 36 run-minutes\n", True),
        ("# 20 runs.\nmax_steps: 1500  # 1,500 steps\n", False),
        ("# checkpoints at steps 1,500 / 3,000 / 6,000, 5 seeds\n", False),
    ],
)
def test_the_pattern_finds_a_duration_and_only_one(text, found) -> None:
    assert bool(DURATION.search(comments(text))) is found


@pytest.mark.parametrize("path", CONFIGS, ids=[str(p.relative_to(ROOT)) for p in CONFIGS])
def test_no_config_comment_states_a_duration(path) -> None:
    found = DURATION.search(comments(path.read_text(encoding="utf-8")))
    assert found is None, f"{path.relative_to(ROOT)}: {found[0]!r}"
