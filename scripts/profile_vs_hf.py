"""Where one inference pass of the ModernBERT recipe spends its CPU time, ours beside
transformers' ``ModernBertForMaskedLM`` with the same weights (``bench --vs-hf``'s pair at
bench's shape: hidden 256, 4 layers, 4 heads, FFN 1024, vocab 8192, batch 4 unless
``--batch``): torch.profiler's operators by self CPU time, one table per model, each over
``--passes`` passes after two warm-up passes, the two models profiled in one process with the
CLI's process settings (freed memory kept, subnormal floats flushed).

    python scripts/profile_vs_hf.py --length 512 [--batch 4] [--passes 3] [--rows 12]

The tables say how much of each pass is the matrix products both models run on the same
shapes (``aten::mm``, ``aten::addmm``: the projections, the FFN and the head), which no
attention of ours can make cheaper.
"""

from __future__ import annotations

import sys

import torch

import roformer_lit.commands  # noqa: F401 - what python -m roformer_lit has imported
from roformer_lit.benchmarks.runners import Runner, Shape, hf_reference, recipe
from roformer_lit.machine import describe_machine
from roformer_lit.tool_arguments import ToolParser, integer, run_script, script_parser
from roformer_lit.training.denormals import flush_denormals
from roformer_lit.training.host_memory import keep_freed_memory


def profile_table(runner: Runner, passes: int, rows: int) -> str:
    """torch.profiler's operator table, by self CPU time, over ``passes`` inference passes."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(passes):
            runner.infer(record=False)
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows)


def build_parser() -> ToolParser:
    parser = script_parser(__file__, description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=integer(8, 1 << 17), default=512)
    parser.add_argument("--batch", type=integer(1, 4096), default=4)
    parser.add_argument("--passes", type=integer(1, 100), default=3)
    parser.add_argument("--rows", type=integer(1, 1000), default=12)
    return parser


def main(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    keep_freed_memory()
    flush_denormals()
    device = torch.device("cpu")
    shape = Shape(ns.batch, ns.length, 256, 4, 4, 1024, 8192)
    ours = recipe("modernbert", shape, device, autocast=False)
    theirs = hf_reference(ours.model, shape, device, autocast=False)
    for runner in (ours, theirs):
        for _ in range(2):
            runner.infer(record=False)
    print(
        f"# modernbert recipe, L = {ns.length}, {ns.passes} inference passes (batch {ns.batch}), "
        f"torch {torch.__version__}"
    )
    print(f"# {describe_machine(device)}")
    names = {"ours": ours, f"hf: {type(theirs.model).__name__}": theirs}
    for name, runner in names.items():
        attention = getattr(runner.model.config, "_attn_implementation", None)
        print(f"## {name}" + (f" ({attention})" if attention else ""))
        print(profile_table(runner, ns.passes, ns.rows))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, __file__))
