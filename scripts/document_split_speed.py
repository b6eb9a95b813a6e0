"""Packed documents one at a time against the masked path: one training step of the model
``bench`` times (hidden 256, 4 layers, 4 heads, FFN 1024, vocab 8192; softmax attention),
each document count in turn, the two paths alternating step by step (medians of 3 steps
after one warm-up), with the CLI's process settings. The masked path is what the layer takes
when :func:`~roformer_lit.attention.documents.document_runs` declines; the split side runs
at every mean document length, ``MIN_MEAN_DOCUMENT`` (the guard this measures) set aside.

    python scripts/document_split_speed.py t5 --length 1024 --batch 4 --documents 32 64 128
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

import roformer_lit.commands  # noqa: F401 - what python -m roformer_lit has imported
from roformer_lit.attention import documents, softmax
from roformer_lit.benchmarks.runners import Shape, ours
from roformer_lit.machine import describe_machine
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.tool_arguments import ToolParser, integer, run_script, script_parser
from roformer_lit.training.denormals import flush_denormals
from roformer_lit.training.host_memory import keep_freed_memory


def build_parser() -> ToolParser:
    parser = script_parser(__file__, description=__doc__.splitlines()[0])
    parser.add_argument("scheme", choices=sorted(POSITION_SCHEMES))
    parser.add_argument("--length", type=integer(2, 1 << 20), default=1024)
    parser.add_argument("--batch", type=integer(1, 4096), default=4)
    parser.add_argument("--documents", type=integer(1, 1 << 20), nargs="+", default=[8, 32, 128])
    return parser


def main(argv: list[str]) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    if max(ns.documents) > ns.length:
        parser.error(f"--documents {max(ns.documents)}: must be in [1, {ns.length}] (--length)")
    keep_freed_memory()
    flush_denormals()
    shape = Shape(ns.batch, ns.length, 256, 4, 4, 1024, 8192)
    split, minimum = softmax.document_runs, documents.MIN_MEAN_DOCUMENT
    print(f"# {describe_machine(torch.device('cpu'))}")
    print(
        "| scheme | L | batch | documents | tokens each | split ms | masked ms | split / masked |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for count in ns.documents:
        runner = ours(ns.scheme, "softmax", shape, torch.device("cpu"), False, False, count)
        times: dict[str, list[float]] = {"split": [], "masked": []}
        try:
            for step in range(4):
                order = ("split", "masked") if step % 2 == 0 else ("masked", "split")
                for side in order:
                    softmax.document_runs = split if side == "split" else _always_masked
                    documents.MIN_MEAN_DOCUMENT = 1 if side == "split" else minimum
                    start = time.perf_counter()
                    runner.step(record=False)
                    if step > 0:
                        times[side].append(time.perf_counter() - start)
        finally:
            softmax.document_runs = split
            documents.MIN_MEAN_DOCUMENT = minimum
        a, b = (statistics.median(times[side]) * 1e3 for side in ("split", "masked"))
        print(
            f"| {ns.scheme} | {ns.length} | {ns.batch} | {count} | {ns.length // count} "
            f"| {a:.0f} | {b:.0f} | {a / b:.2f} |"
        )
    return 0


def _always_masked(segment_ids: torch.Tensor) -> None:
    return None


if __name__ == "__main__":
    sys.exit(run_script(main, __file__))
