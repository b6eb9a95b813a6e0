"""One table of the training throughput that runs logged themselves (``perf/*`` in their
TensorBoard events, written by ``roformer_lit.training.throughput.Throughput``):

    python scripts/run_throughput.py RUN_DIR [RUN_DIR ...]

Per run: the points logged, the median of ``perf/tokens_per_s``, of ``perf/model_tflops``
and of ``perf/mfu`` over them (``-`` where the run logged none: a CPU has no nominal peak),
and the peak memory; the first logged point is left out (it may hold a late compile).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from roformer_lit.results.events import read_run
from roformer_lit.tool_arguments import ToolParser, run_script, script_parser

TAGS = ("perf/tokens_per_s", "perf/model_tflops", "perf/mfu")


def row(run_dir: Path) -> str:
    """One markdown row: the run's name, the points and the medians of :data:`TAGS`."""
    if not run_dir.is_dir():
        return f"| {run_dir.name} | no run directory at {run_dir} | | | | |"
    scalars = read_run(run_dir).scalars
    cells = []
    for tag in TAGS:
        values = [point.value for point in scalars.get(tag, [])][1:]
        cells.append(f"{statistics.median(values):,.4g}" if values else "-")
    points = max(len(scalars.get("perf/tokens_per_s", [])) - 1, 0)
    memory = [point.value for point in scalars.get("perf/peak_mem_mb", [])]
    peak = f"{max(memory):,.0f}" if memory else "-"
    return f"| {run_dir.name} | {points} | {' | '.join(cells)} | {peak} |"


def build_parser() -> ToolParser:
    parser = script_parser(__file__, description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="a run's directory")
    return parser


def main(argv: list[str]) -> int:
    runs = build_parser().parse_args(argv).runs
    print("| run | points | tokens/s | model TFLOP/s | MFU | peak MB |")
    print("|---|---|---|---|---|---|")
    for name in runs:
        print(row(Path(name)))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, __file__))
