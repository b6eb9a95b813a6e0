"""The CPU speed and memory regions of the performance page, read from synthetic raw outputs.

Oracles: the numbers written into the synthetic files (growth and the freed share computed
by hand), and refusals of a file without its table or without a scheme at both lengths.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from roformer_lit.errors import ConfigError
from roformer_lit.results.study import cpu_speed


def _memory_file(rows: dict[str, tuple[str, str]], length: int) -> str:
    lines = [
        f"# 2026-11-27T00:00:00Z python scripts/peak_memory.py --length {length} --batch 1",
        "## CPU: test",
        "",
        "| scheme | L | batch | peak MB | peak MB, freed memory returned |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {s} | {length} | 1 | {a} | {b} |" for s, (a, b) in rows.items()]
    return "\n".join(lines) + "\n"


def test_memory_states_growth_and_the_freed_share(study_bench: Path):
    (study_bench / cpu_speed.MEMORY[2048]).write_text(
        _memory_file({"nope": ("200", "160"), "fire": ("500", "250")}, 2048)
    )
    (study_bench / cpu_speed.MEMORY[8192]).write_text(
        _memory_file({"nope": ("700", "640"), "fire": ("2,000", "1,000")}, 8192)
    )
    text = cpu_speed.memory()
    assert "| fire | 500 | 250 | 2,000 | 1,000 | 4.0× |" in text
    assert "`nope` 4.0×, `fire` 4.0×" in text
    # fire at 8,192: 1 - 1,000 / 2,000 of its peak was freed memory; nope's share is smaller
    assert "up to 50% of a peak as `bench` measures it (`fire`)" in text
    assert "python scripts/peak_memory.py --length 8192 --batch 1" in text


def test_memory_refuses_files_with_no_scheme_at_both_lengths(study_bench: Path):
    (study_bench / cpu_speed.MEMORY[2048]).write_text(_memory_file({"nope": ("1", "1")}, 2048))
    (study_bench / cpu_speed.MEMORY[8192]).write_text(_memory_file({"fire": ("1", "1")}, 8192))
    with pytest.raises(ConfigError, match="no scheme measured at both lengths"):
        cpu_speed.memory()


def test_a_file_without_the_table_is_refused_naming_the_header(study_bench: Path):
    (study_bench / cpu_speed.MEMORY[2048]).write_text("# nothing here\n")
    (study_bench / cpu_speed.MEMORY[8192]).write_text("# nothing here\n")
    with pytest.raises(
        ConfigError, match=re.escape("no per-scheme table (a '| scheme | L | batch |'")
    ):
        cpu_speed.memory()
