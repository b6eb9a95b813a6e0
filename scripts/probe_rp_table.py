"""Randomized positions against none, per scheme x task x length, from two ``extrapolate`` outputs.

    python scripts/probe_rp_table.py OFF.txt ON.txt

``OFF.txt``: ``extrapolate`` output holding runs trained without randomized positions;
``ON.txt``: output holding runs trained with them (either protocol). Rows are told apart and
matched by the sweep's run names, ``<scheme>-<task>-random_positions=none-seed<k>`` (off) and
``<scheme>-<task>-random_positions<R>-seed<k>`` (on), and paired by seed; other rows of
either file are ignored. A cell is
``off → on`` (answer-token accuracy, mean over seeds); ``▲`` marks a cell where on is above
off on every seed, ``▼`` below on every seed, and no mark a cell the seeds disagree on.
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

RUN = re.compile(
    r"/(?P<scheme>[a-z0-9_]+)-(?P<task>[a-z_]+)-random_positions(?P<range>=none|\d+)"
    r"-seed(?P<seed>\d+)/"
)


def read(path: Path, on: bool) -> tuple[list[str], dict[tuple[str, str], dict[int, list[float]]]]:
    """The length headers and, per (scheme, task), per seed, the accuracy per length of the
    runs trained with randomized positions (``on``) or without."""
    lengths: list[str] = []
    runs: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        if line.startswith("| checkpoint |"):
            lengths = [cell.strip() for cell in line.strip("|").split("|")[3:]]
        match = RUN.search(line)
        if match and line.startswith("| ") and (match["range"] != "=none") == on:
            cells = [cell.strip() for cell in line.strip("|").split("|")[3:]]
            accuracy = [
                float(cell.split(" / ")[0]) if "/" in cell else float("nan") for cell in cells
            ]
            runs[(match["scheme"], match["task"])][int(match["seed"])] = accuracy
    return lengths, runs


def main(off_path: str, on_path: str) -> None:
    lengths, off = read(Path(off_path), on=False)
    _, on = read(Path(on_path), on=True)
    seeds_seen = sorted({s for runs in (off, on) for by_seed in runs.values() for s in by_seed})
    print(f"Seeds {seeds_seen}, paired; off → on, mean answer-token accuracy:\n")
    print("| scheme | task | " + " | ".join(lengths) + " |")
    print("|---|---|" + "---|" * len(lengths))
    for key in sorted(set(off) & set(on)):
        seeds = sorted(set(off[key]) & set(on[key]))
        cells = []
        for i in range(len(lengths)):
            before = [off[key][s][i] for s in seeds]
            after = [on[key][s][i] for s in seeds]
            mark = ""
            if all(a > b for a, b in zip(after, before, strict=True)):
                mark = " ▲"
            elif all(a < b for a, b in zip(after, before, strict=True)):
                mark = " ▼"
            cells.append(f"{statistics.mean(before):.3f} → {statistics.mean(after):.3f}{mark}")
        print(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
