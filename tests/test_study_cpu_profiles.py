"""The profiles region of the performance page, read from synthetic profiler tables.

Oracles: the shares and totals written into the synthetic files, and the ratios and sums of
them computed by hand; refusals of a file without a profiler table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from roformer_lit.errors import ConfigError
from roformer_lit.results.study import cpu_profiles

RULE = "-" * 55 + "  " + "  ".join(["-" * 12] * 6)


def _profile(scheme: str, length: int, rows: list[tuple[str, str, str]], total: str) -> str:
    """A profiler table as ``profile_step.py`` prints it (with the profiler's own log line)."""
    lines = [
        f"# 2026-11-28T00:00:00Z python scripts/profile_step.py {scheme} --length {length}",
        "USDT:2026-11-28 08:09:24 1:1 SyncActivityProfilerHandler.cpp:52] profiler_start",
        f"# {scheme}, L = {length}, one training step (batch 4), torch 2.13.0+cpu",
        "# CPU: Test CPU (2 cores, 2 torch threads), torch 2.13.0+cpu",
        RULE,
        f"{'Name':>55}  {'Self CPU %':>12}  {'Self CPU':>12}  {'CPU total %':>12}",
        RULE,
        *(f"{op:>55}  {share:>12}  {time:>12}  {share:>12}" for op, share, time in rows),
        RULE,
        f"Self CPU time total: {total}",
    ]
    return "\n".join(lines) + "\n"


def _write_all(study_bench: Path, **changed: str) -> None:
    rows = {
        "nope": [("aten::mm", "40.00%", "400.000ms"), ("aten::bmm", "10.00%", "100.000ms")],
        "xl": [
            ("aten::bmm", "33.00%", "1.320s"),
            ("aten::mm", "10.00%", "400.000ms"),
            ("aten::copy_", "9.00%", "360.000ms"),
            ("aten::add", "3.00%", "120.000ms"),
            ("aten::fill_", "2.00%", "80.000ms"),
        ],
        "deberta": [
            ("aten::bmm", "20.00%", "1.000s"),
            ("aten::scatter_add_", "17.00%", "850.000ms"),
            ("aten::gather", "11.00%", "550.000ms"),
        ],
    }
    totals = {"nope": "1.000s", "xl": "4.000s", "deberta": "5000.000ms"}
    for (scheme, length), name in cpu_profiles.PROFILES.items():
        text = changed.get(name) or _profile(scheme, length, rows[scheme], totals[scheme])
        (study_bench / name).write_text(text)


def test_profiles_state_totals_ratios_largest_operators_and_each_schemes_own(study_bench: Path):
    _write_all(study_bench)
    text = cpu_profiles.profiles()
    # xl: 4 s over nope's 1 s; its four largest operators; of those nope does not list
    # (bmm and mm it does), the three largest, summed: 9 + 3 + 2
    assert (
        "| xl | 2,048 | 4.00 s | 4.00× | `aten::bmm` 33%, `aten::mm` 10%, `aten::copy_` 9%, "
        "`aten::add` 3% | `aten::copy_` + `aten::add` + `aten::fill_`: 14% |"
    ) in text
    # deberta: 5000 ms read as 5 s; scatter_add_ + gather summed (17 + 11)
    assert "| deberta | 8,192 | 5.00 s | 5.00× |" in text
    assert "| `aten::scatter_add_` + `aten::gather`: 28% |" in text
    assert "| nope | 2,048 | 1.00 s | 1.00× | `aten::mm` 40%, `aten::bmm` 10% | – |" in text
    assert "on CPU: Test CPU (2 cores, 2 torch threads)" in text
    assert "`python scripts/profile_step.py nope --length 8192` and the same" in text


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("# nothing profiled\n", "no profiler table"),
        (
            _profile("xl", 2048, [("aten::bmm", "33.00%", "1.000s")], "4.000s").replace(
                "33.00%", "a third"
            ),
            "is not a profiler row",
        ),
        (
            _profile("xl", 2048, [("aten::bmm", "33.00%", "1.000s")], "4 seconds"),
            "is not a time",
        ),
    ],
)
def test_a_file_without_a_readable_profile_is_refused_naming_it(study_bench: Path, body, words):
    name = cpu_profiles.PROFILES[("xl", 2048)]
    _write_all(study_bench, **{name: body})
    with pytest.raises(ConfigError, match=words) as info:
        cpu_profiles.profiles()
    assert name in str(info.value)
