"""Rows padded at their end on a CPU, from ``scripts/padded_rows_speed.py``'s raw outputs
(region ``cpu-bias-padded-rows`` of the performance page).

Each timing file holds one scheme's training steps with each row's last tokens padded, on the
per-offset view (``view``), on the path the layer took before it (``masked``) and ``nope``
on the same padded batch (each row against its real keys), alternating in one process; the
ratios are of the medians the script prints. Each memory file is one process that ran one
side alone (``--only``) and printed its peak resident memory.
"""

from __future__ import annotations

import re

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.cpu_speed import TARGET, command, raw_outputs, table_rows
from roformer_lit.results.study.places import bench_file
from roformer_lit.results.study.reading import read_text

#: Timing raw outputs: ``python scripts/padded_rows_speed.py SCHEME --length L --batch B
#: --real 0.5 0.9`` (batch 4 and ``--steps 7`` at 2,048 tokens, batch 1 at 8,192), each with
#: the commit it measured (``nope``'s padded rows, too, each against its real keys, since
#: ba055c0; T5's tied tails since 85e364d). The table's and the sentences' rows.
TIMINGS = {
    "cpu-2026-11-28-padded-rows-alibi-2048.txt": "ba055c0",
    "cpu-2026-11-29-padded-rows-t5-2048.txt": "be94857",
    "cpu-2026-11-28-padded-rows-kerple-2048.txt": "ba055c0",
    "cpu-2026-11-29-padded-rows-t5-8192.txt": "be94857",
}
#: The same commands on the code before T5's tied tails (3 steps at 8,192 tokens): shown
#: in the table beside the rows that replaced them, left out of the sentences.
BEFORE = {
    "cpu-2026-11-28-padded-rows-t5-2048.txt": "ba055c0, before the tied tails",
    "cpu-2026-11-28-padded-rows-t5-8192.txt": "ba055c0, before the tied tails",
}
#: Memory raw outputs, one process per side: ``... t5 --length 2048 --batch 4 --real 0.5
#: --only SIDE``.
MEMORY = {
    "view": "cpu-2026-11-28-padded-rows-t5-2048-memory-view.txt",
    "masked": "cpu-2026-11-28-padded-rows-t5-2048-memory-masked.txt",
}
HEAD = "| scheme | L | batch | real tokens per row |"
PEAK = re.compile(r"^peak resident memory of this process \((?P<side>\w+)\): (?P<mib>[0-9,]+) MiB$")


def _ratio(row: dict[str, str], column: str, name: str) -> float:
    try:
        return float(row[column])
    except (KeyError, ValueError):
        raise ConfigError(f"{bench_file(name)}: no number in column {column!r}") from None


def _peak(side: str, name: str) -> int:
    """The peak resident MiB a memory raw output prints for ``side``."""
    for line in read_text(bench_file(name)).splitlines():
        found = PEAK.match(line.strip())
        if found and found.group("side") == side:
            return int(found.group("mib").replace(",", ""))
    raise ConfigError(f"{bench_file(name)}: no 'peak resident memory of this process ({side})'")


def table() -> str:
    """Region ``cpu-bias-padded-rows``: per scheme, length and padding, the step on the view
    and on the masked path over ``nope``'s, the view over the masked path, which are within
    the target; the peak memory of one process per side."""
    lines = [
        "| scheme | L | batch | real tokens per row | code | view / nope | masked / nope "
        "| view / masked |",
        "|---|---|---|---|---|---|---|---|",
    ]
    within, outside = [], []
    for name, code in [*TIMINGS.items(), *BEFORE.items()]:
        for row in table_rows(name, HEAD):
            view, masked = _ratio(row, "view / nope", name), _ratio(row, "masked / nope", name)
            real = int(row["real tokens per row"])
            label = f"`{row['scheme']}` at {int(row['L']):,} tokens, {real:,} real"
            if name in TIMINGS:
                (within if view <= TARGET else outside).append(f"{label} ({view:.2f}×)")
            lines.append(
                f"| {row['scheme']} | {int(row['L']):,} | {row['batch']} "
                f"| {real:,} | {code} | {view:.3f} | {masked:.3f} "
                f"| {_ratio(row, 'view / masked', name):.2f} |"
            )
    sentences = [
        f"On the view, within {TARGET}× of `nope` on the same padded batch: "
        + (", ".join(within) or "none")
        + "; not within it: "
        + (", ".join(outside) or "none")
        + "."
    ]
    peaks = {side: _peak(side, name) for side, name in MEMORY.items()}
    sentences.append(
        f"Peak resident memory of one process per side (T5, 2,048 tokens): view "
        f"{peaks['view']:,} MiB, masked {peaks['masked']:,} MiB."
    )
    names = [*TIMINGS, *BEFORE, *MEMORY.values()]
    commands = "; ".join(f"`{command(name)}`" for name in names)
    return "\n".join(lines) + "\n\n" + " ".join(sentences) + "\n\n" + raw_outputs(names, commands)
