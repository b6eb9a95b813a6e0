"""Randomized positions against none, per scheme x task x length, from two ``extrapolate`` outputs.

    python scripts/probe_rp_table.py OFF.txt ON.txt

``OFF.txt``: ``extrapolate`` output holding runs trained without randomized positions;
``ON.txt``: output holding runs trained with them (either protocol). Rows are told apart and
matched by the sweep's run names, ``<scheme>-<task>-random_positions=none-seed<k>`` (off) and
``<scheme>-<task>-random_positions<R>-seed<k>`` (on), and paired by seed; other rows of
either file are ignored. A cell is ``off → on`` (answer-token accuracy, mean over seeds),
then the exact paired sign-flip test of on against off over the seeds (no normality
assumed: :func:`roformer_lit.results.study.exact.sign_flip_p`; with n seeds its p is at least
2 / 2**n, 0.0625 at n = 5), its p-value Holm-corrected over every cell of the table:
``▲ p=…`` where on is above off at adjusted p < 0.05, ``▼ p=…`` where below, ``n.s.`` where
the seeds do not separate them (and ``n.s.`` with fewer than two seeds).
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from roformer_lit.errors import ConfigError
from roformer_lit.results.statistics import holm, verdict
from roformer_lit.results.study.exact import sign_flip_p, smallest_p
from roformer_lit.safe_input import read_text_file
from roformer_lit.tool_arguments import INPUT_FILE, ToolParser, run_script, script_parser

RUN = re.compile(
    r"/(?P<scheme>[a-z0-9_]+)-(?P<task>[a-z_]+)-random_positions(?P<range>=none|\d+)"
    r"-seed(?P<seed>\d+)/"
)


def read(path: Path, on: bool) -> tuple[list[str], dict[tuple[str, str], dict[int, list[float]]]]:
    """The length headers and, per (scheme, task), per seed, the accuracy per length of the
    runs trained with randomized positions (``on``) or without."""
    lengths: list[str] = []
    runs: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(dict)
    for line in read_text_file(path, "extrapolate output").splitlines():
        if line.startswith("| checkpoint |"):
            lengths = [cell.strip() for cell in line.strip("|").split("|")[3:]]
        match = RUN.search(line)
        if match and line.startswith("| ") and (match["range"] != "=none") == on:
            cells = [cell.strip() for cell in line.strip("|").split("|")[3:]]
            accuracy = [
                float(cell.split(" / ")[0]) if "/" in cell else float("nan") for cell in cells
            ]
            runs[(match["scheme"], match["task"])][int(match["seed"])] = accuracy
    if not lengths:
        raise ConfigError(f"{path} holds no extrapolate table (no '| checkpoint |' header)")
    return lengths, runs


def build_parser() -> ToolParser:
    parser = script_parser(__file__, description=__doc__.splitlines()[0])
    parser.add_argument("off_path", type=INPUT_FILE, metavar="OFF.txt")
    parser.add_argument("on_path", type=INPUT_FILE, metavar="ON.txt")
    return parser


def main(argv: list[str]) -> None:
    ns = build_parser().parse_args(argv)
    off_path, on_path = ns.off_path, ns.on_path
    lengths, off = read(Path(off_path), on=False)
    _, on = read(Path(on_path), on=True)
    seeds_seen = sorted({s for runs in (off, on) for by_seed in runs.values() for s in by_seed})
    keys = sorted(set(off) & set(on))
    cells: dict[tuple[tuple[str, str], int], tuple[list[float], list[float]]] = {}
    for key in keys:
        seeds = sorted(set(off[key]) & set(on[key]))
        for i in range(len(lengths)):
            before = [off[key][s][i] for s in seeds]
            after = [on[key][s][i] for s in seeds]
            if before and all(v == v for v in before + after):  # no NaN (n/a) cell
                cells[(key, i)] = (before, after)
    tested = [c for c, (before, _) in cells.items() if len(before) >= 2]
    adjusted = dict(zip(tested, holm([sign_flip_p(*cells[c]) for c in tested]), strict=True))
    floor = smallest_p(len(seeds_seen)) if seeds_seen else 1.0
    print(
        f"Seeds {seeds_seen}, paired; off → on, mean answer-token accuracy; exact sign-flip "
        f"test by seed (smallest possible p = {floor:.4g}), Holm-corrected over the "
        f"{len(tested)} cells compared:\n"
    )
    print("| scheme | task | " + " | ".join(lengths) + " |")
    print("|---|---|" + "---|" * len(lengths))
    for key in keys:
        texts = []
        for i in range(len(lengths)):
            if (key, i) not in cells:
                texts.append("n/a")
                continue
            before, after = cells[(key, i)]
            mark = "n.s."
            if (key, i) in adjusted and verdict(adjusted[(key, i)]) != "n.s.":
                arrow = "▲" if statistics.mean(after) > statistics.mean(before) else "▼"
                mark = f"{arrow} {verdict(adjusted[(key, i)])}"
            texts.append(f"{statistics.mean(before):.3f} → {statistics.mean(after):.3f} {mark}")
        print(f"| {key[0]} | {key[1]} | " + " | ".join(texts) + " |")


if __name__ == "__main__":
    sys.exit(run_script(main, __file__))
