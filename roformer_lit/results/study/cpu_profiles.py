"""Where XL's and DeBERTa's training step spends its CPU time beside ``nope``'s, from
``scripts/profile_step.py``'s raw outputs (region ``cpu-bias-profiles``).

Each raw output is torch.profiler's table of operators by self CPU time for one training
step, its command on the first line and the machine on a ``# CPU:`` line. The region
states each profile's total self CPU time, its ratio to ``nope``'s at the same length, its
largest operators, and the largest of the operators ``nope``'s profile does not list (the
work the scheme adds: on its own lines, whatever the code calls them) with their share of
the step.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.cpu_speed import command, raw_outputs
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.reading import read_text

#: ``(scheme, L)`` -> raw output of ``python scripts/profile_step.py SCHEME --length L``
#: (batch 4 at 2,048 tokens, batch 1 at 8,192), the code of 2026-11-28 (4b3116e).
PROFILES = {
    (scheme, length): f"cpu-2026-11-28-profile-{scheme}-{length}.txt"
    for length in (2048, 8192)
    for scheme in ("nope", "xl", "deberta")
}
#: Operators listed per profile, and of those ``nope``'s profile does not list.
TOP = 4
ADDED = 3
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
TIME = re.compile(r"^(?P<value>[0-9.]+)(?P<unit>s|ms|us|ns)$")


class Profile(NamedTuple):
    """One profile: the step's self CPU seconds and each operator's share of it, in the
    table's order (largest first)."""

    total: float
    shares: dict[str, float]


def _seconds(text: str, where: str) -> float:
    match = TIME.match(text.strip())
    if match is None:
        raise ConfigError(f"{where}: {text.strip()!r} is not a time")
    return float(match["value"]) * UNITS[match["unit"]]


def parse_profile(lines: list[str], where: str) -> Profile:
    """The operators and total of one torch.profiler table in ``lines``; ConfigError naming
    ``where`` when they hold no table (a 'Self CPU %' header and its total)."""
    header = next((i for i, line in enumerate(lines) if "Self CPU %" in line), None)
    total = next((line for line in lines if line.startswith("Self CPU time total:")), None)
    if header is None or total is None:
        raise ConfigError(f"{where}: no profiler table (a 'Self CPU %' header and its total)")
    shares: dict[str, float] = {}
    for line in lines[header + 2 :]:
        if line.startswith("-"):
            break
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) < 2 or not cells[1].endswith("%"):
            raise ConfigError(f"{where}: {line.strip()!r} is not a profiler row")
        shares[cells[0]] = float(cells[1].rstrip("%"))
    return Profile(_seconds(total.split(":", 1)[1], where), shares)


@cached
def read_profile(name: str) -> Profile:
    """The operators and total of raw output ``name`` (one profiler table)."""
    path = bench_file(name)
    return parse_profile(read_text(path).splitlines(), str(path))


def profiles() -> str:
    """Region ``cpu-bias-profiles``: per profile, the step's self CPU time, over ``nope``'s
    at the same length, its largest operators, and the largest of those ``nope``'s profile
    does not list, with their summed share."""
    lines = [
        "| scheme | L | step's self CPU time | over `nope`'s | largest operators "
        "(share of the step) | largest operators `nope`'s profile does not list |",
        "|---|---|---|---|---|---|",
    ]
    for (scheme, length), name in PROFILES.items():
        profile = read_profile(name)
        baseline = read_profile(PROFILES[("nope", length)])
        largest = ", ".join(
            f"`{op}` {share:.0f}%" for op, share in list(profile.shares.items())[:TOP]
        )
        added = [op for op in profile.shares if op not in baseline.shares][:ADDED]
        own = "–"
        if added:
            total = sum(profile.shares[op] for op in added)
            own = " + ".join(f"`{op}`" for op in added) + f": {total:.0f}%"
        lines.append(
            f"| {scheme} | {length:,} | {profile.total:.2f} s "
            f"| {profile.total / baseline.total:.2f}× | {largest} | {own} |"
        )
    lengths = sorted({length for _, length in PROFILES})
    commands = "; ".join(
        f"`{command(PROFILES[('nope', length)])}` and the same for the others" for length in lengths
    )
    return "\n".join(lines) + "\n\n" + raw_outputs(list(PROFILES.values()), commands)
