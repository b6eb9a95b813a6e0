"""The padded-rows region of the performance page, read from synthetic raw outputs.

Oracles: the medians' ratios written into the synthetic tables, the target read against
them by hand, the peaks written into the memory files; refusals of files without them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from roformer_lit.errors import ConfigError
from roformer_lit.results.study import cpu_padded_rows

pytestmark = pytest.mark.fast

HEAD = (
    "| scheme | L | batch | real tokens per row | view ms | masked ms | nope ms "
    "| view / masked | view / nope | masked / nope |\n|---|---|---|---|---|---|---|---|---|---|\n"
)


def _timing(scheme: str, length: int, rows: list[tuple[int, str, str, str]]) -> str:
    lines = [
        f"# 2026-11-28T00:00:00Z python scripts/padded_rows_speed.py {scheme} --length {length}",
        "# CPU: Test CPU (2 cores, 2 torch threads), torch 2.13.0+cpu",
        HEAD.rstrip("\n"),
        *(
            f"| {scheme} | {length} | 4 | {real} | 1 | 2 | 1 | {vm} | {vn} | {mn} |"
            for real, vm, vn, mn in rows
        ),
    ]
    return "\n".join(lines) + "\n"


def _write_all(study_bench: Path, **changed: str) -> None:
    for name in [*cpu_padded_rows.TIMINGS, *cpu_padded_rows.BEFORE]:
        scheme, length = name.split("-")[-2], int(name.split("-")[-1].removesuffix(".txt"))
        rows = [(1024, "0.55", "1.080", "1.960"), (1843, "0.61", "1.620", "2.650")]
        if name in cpu_padded_rows.BEFORE:  # the code before: every row outside the target
            rows = [(1024, "0.80", "1.910", "2.380"), (1843, "0.85", "1.930", "2.270")]
        (study_bench / name).write_text(changed.get(name) or _timing(scheme, length, rows))
    for side, name in cpu_padded_rows.MEMORY.items():
        peak = {"view": "812", "masked": "2,410"}[side]
        text = f"# 2026-11-28T00:00:00Z python scripts/padded_rows_speed.py t5 --only {side}\n"
        text += f"\npeak resident memory of this process ({side}): {peak} MiB\n"
        (study_bench / name).write_text(changed.get(name) or text)


def _t5_8192(files: dict[str, str]) -> str:
    (name,) = (n for n in files if n.endswith("-t5-8192.txt"))
    return name


def test_the_region_states_ratios_the_target_and_the_peaks(study_bench: Path):
    _write_all(study_bench)
    text = cpu_padded_rows.table()
    current = cpu_padded_rows.TIMINGS[_t5_8192(cpu_padded_rows.TIMINGS)]
    before = cpu_padded_rows.BEFORE[_t5_8192(cpu_padded_rows.BEFORE)]
    assert f"| t5 | 8,192 | 4 | 1,843 | {current} | 1.620 | 2.650 | 0.61 |" in text
    assert f"| t5 | 8,192 | 4 | 1,843 | {before} | 1.930 | 2.270 | 0.85 |" in text
    # the rows of the code before are in the table only, never in the sentences
    sentences = text.split("|\n\n", 1)[1]
    assert "1.91×" not in sentences and "1.93×" not in sentences
    # 1.080 is within 1.5x, 1.620 is not, in every file
    assert "`alibi` at 2,048 tokens, 1,024 real (1.08×)" in text.split("not within it")[0]
    assert "`kerple` at 2,048 tokens, 1,843 real (1.62×)" in text.split("not within it")[1]
    assert "view 812 MiB, masked 2,410 MiB" in text
    assert "on CPU: Test CPU (2 cores, 2 torch threads)" in text


@pytest.mark.parametrize(
    ("broken", "body", "words"),
    [
        (list(cpu_padded_rows.TIMINGS)[1], "# nothing\n", "no per-scheme table"),
        (
            list(cpu_padded_rows.TIMINGS)[0],
            _timing("alibi", 2048, [(1024, "0.5", "fast", "2")]),
            "no number in column 'view / nope'",
        ),
        (list(cpu_padded_rows.BEFORE)[0], "# nothing\n", "no per-scheme table"),
        (cpu_padded_rows.MEMORY["masked"], "# 2026\npeak: lots\n", "no 'peak resident memory"),
    ],
)
def test_a_raw_output_without_its_numbers_is_refused_naming_it(study_bench, broken, body, words):
    _write_all(study_bench, **{broken: body})
    with pytest.raises(ConfigError, match=words) as raised:
        cpu_padded_rows.table()
    assert broken in str(raised.value)
