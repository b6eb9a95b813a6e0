"""Each scheme's change of val/loss with length, against the same seed's ``nope`` change:
region ``extrapolation-vs-nope`` of ``docs/guide/extrapolation.md``.

Raw output :data:`RAW` (one line per scheme: the change from L = 128 minus ``nope``'s, at
4×, 8× and 16×, for seeds 0 | 1 | 2; ``n/a`` where the scheme refuses the length). The
guide's bullets typed these ranges by hand; the region writes, per scheme and length, the
range over seeds and on how many seeds the change is above ``nope``'s, so "on every seed"
is said only where it holds. A line with another number of seeds or lengths is refused in
one line naming the file and line.
"""

from __future__ import annotations

import math
import re

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.reading import read_text

RAW = "cpu-2026-11-23-extrapolation-vs-nope.txt"
TIMES = ("4×", "8×", "16×")
SEEDS = 3
_LINE = re.compile(
    r"^(?P<scheme>\S+)\s+change minus nope's change \(4x 8x 16x\) per seed:(?P<rest>.*)$"
)
#: How the raw output names the RoPE variants, as the guide's table names them.
LABELS = {
    "rope_plain": "rope",
    "rope_yarn4": "rope + YaRN, factor 4",
    "rope_yarn8": "rope + YaRN, factor 8",
    "rope_yarn16": "rope + YaRN, factor 16",
}


@cached
def changes() -> dict[str, list[list[float]]]:
    """``scheme -> [[seed values] at 4×, 8×, 16×]`` (nan where refused)."""
    path = bench_file(RAW)
    found: dict[str, list[list[float]]] = {}
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        match = _LINE.match(line)
        if match is None:
            continue
        seeds = [part.split() for part in match["rest"].split("|")]
        if len(seeds) != SEEDS or any(len(s) != len(TIMES) for s in seeds):
            raise ConfigError(
                f"{path}: line {number}: {match['scheme']} needs {SEEDS} seeds of "
                f"{len(TIMES)} values, got {[len(s) for s in seeds]}"
            )
        try:
            values = [[math.nan if v == "n/a" else float(v) for v in s] for s in seeds]
        except ValueError as exc:
            raise ConfigError(f"{path}: line {number}: not a number ({exc})") from None
        if match["scheme"] in found:
            raise ConfigError(f"{path}: line {number}: {match['scheme']} a second time")
        found[match["scheme"]] = [[s[k] for s in values] for k in range(len(TIMES))]
    if not found:
        raise ConfigError(f"{path}: no line of per-seed changes")
    return found


def _cell(values: list[float]) -> str:
    if any(math.isnan(v) for v in values):
        return "refused"
    above = sum(v > 0 for v in values)
    return f"{min(values):+.3f} … {max(values):+.3f} ({above}/{len(values)} above)"


def table() -> str:
    """Per scheme and length: the range over seeds of the change minus ``nope``'s, and on
    how many seeds it is above."""
    rows = [
        f"| {LABELS.get(scheme, scheme)} | " + " | ".join(_cell(v) for v in by_length) + " |"
        for scheme, by_length in changes().items()
    ]
    return "\n".join(
        [
            "| scheme: change from 1× minus `nope`'s, seed for seed | " + " | ".join(TIMES) + " |",
            "|---|---|---|---|",
            *rows,
            "",
            f"Each cell: the smallest … largest over the {SEEDS} seeds (nats), and on how many "
            f'seeds the change is above `nope`\'s. With {SEEDS} seeds "on every seed" '
            "describes these runs and is not a test (the exact sign-flip test's floor is "
            f"p = {2 / 2**SEEDS:g}).",
        ]
    )
