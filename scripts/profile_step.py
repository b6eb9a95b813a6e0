"""Where one training step of a scheme spends its time on this machine: torch.profiler's
operators by self CPU time, for the model ``bench`` times (hidden 256, 4 layers, 4 heads,
FFN 1024, vocab 8192, batch 4 unless ``--batch``; softmax attention), after two warm-up steps, with the CLI's
process settings (freed memory kept, subnormal floats flushed).

    python scripts/profile_step.py xl --length 2048 [--rows 20]
"""

from __future__ import annotations

import sys

import torch

import roformer_lit.commands  # noqa: F401 - what python -m roformer_lit has imported
from roformer_lit.benchmarks.runners import Shape, ours
from roformer_lit.machine import describe_machine
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.tool_arguments import ToolParser, integer, run_script, script_parser
from roformer_lit.training.denormals import flush_denormals
from roformer_lit.training.host_memory import keep_freed_memory


def build_parser() -> ToolParser:
    parser = script_parser(__file__, description=__doc__.splitlines()[0])
    parser.add_argument("scheme", choices=sorted(POSITION_SCHEMES))
    parser.add_argument("--length", type=integer(8, 1 << 17), default=2048)
    parser.add_argument("--batch", type=integer(1, 4096), default=4)
    parser.add_argument("--rows", type=integer(1, 1000), default=20)
    return parser


def main(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    keep_freed_memory()
    flush_denormals()
    shape = Shape(ns.batch, ns.length, 256, 4, 4, 1024, 8192)
    runner = ours(ns.scheme, "softmax", shape, torch.device("cpu"), autocast=False, compile=False)
    for _ in range(2):
        runner.step(record=False)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        runner.step(record=False)
    print(
        f"# {ns.scheme}, L = {ns.length}, one training step (batch {ns.batch}), torch {torch.__version__}"
    )
    print(f"# {describe_machine(torch.device('cpu'))}")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=ns.rows))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, __file__))
