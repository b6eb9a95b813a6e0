"""Peak memory of one training step per scheme, as ``bench`` measures it and with freed
memory handed back to the OS: is a scheme's peak its tensors, or memory glibc kept?

Each model is measured in a fresh process (``roformer_lit.benchmarks.memory``: peak RSS,
``VmHWM``, above the model and batch, over one forward + backward) twice: with glibc's
default allocator settings, as ``bench``'s "peak MB" column, and with
``MALLOC_MMAP_THRESHOLD_`` fixed at 128 KiB, so that every larger block is its own mapping,
returned to the OS the moment it is freed. glibc's default raises that threshold to the
size of each block freed (up to 32 MiB), after which such blocks come from its heap and,
once freed, may stay resident; the difference between the two columns is that retained,
already-freed memory, not tensors alive at once. The model is ``bench``'s (hidden 256, 4
layers, 4 heads, FFN 1024, vocab 8192, softmax attention); ``--bias-block-from N`` moves
the blocked global path's start (default 8,192 tokens) to compare it across lengths.

    python scripts/peak_memory.py --length 8192 --batch 1 --schemes nope fire deberta
"""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone

import torch

import roformer_lit.commands  # noqa: F401 - what python -m roformer_lit has imported
from roformer_lit.benchmarks.memory import peak_step_memory_mb
from roformer_lit.benchmarks.runners import Shape
from roformer_lit.machine import describe_machine
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.tool_arguments import ToolParser, integer, run_script, script_parser

#: glibc's environment variable, and the fixed threshold that returns freed blocks at once.
MMAP_THRESHOLD = "MALLOC_MMAP_THRESHOLD_"
FIXED_BYTES = 128 * 1024


def measure(scheme: str, shape: Shape, returned: bool, block_from: int | None) -> float:
    """Peak MiB of one step in a fresh process; ``returned``: with the fixed threshold;
    ``block_from``: the attention's ``bias_block_from`` (None: its default)."""
    saved = os.environ.get(MMAP_THRESHOLD)
    if returned:
        os.environ[MMAP_THRESHOLD] = str(FIXED_BYTES)
    else:
        os.environ.pop(MMAP_THRESHOLD, None)
    try:
        options = None if block_from is None else {"bias_block_from": block_from}
        return peak_step_memory_mb(
            scheme, "softmax", shape, torch.device("cpu"), attention_kwargs=options
        )
    finally:
        os.environ.pop(MMAP_THRESHOLD, None)
        if saved is not None:
            os.environ[MMAP_THRESHOLD] = saved


def build_parser() -> ToolParser:
    parser = script_parser(__file__, description=__doc__.splitlines()[0])
    parser.add_argument("--schemes", nargs="+", choices=sorted(POSITION_SCHEMES), required=True)
    parser.add_argument("--length", type=integer(8, 1 << 17), default=8192)
    parser.add_argument("--batch", type=integer(1, 4096), default=1)
    parser.add_argument(
        "--bias-block-from",
        type=integer(1, 1 << 17),
        default=None,
        help="the blocked path's start (SoftmaxAttention's bias_block_from; default 8192)",
    )
    return parser


def main(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    shape = Shape(ns.batch, ns.length, 256, 4, 4, 1024, 8192)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    print(f"# {stamp} python scripts/peak_memory.py {' '.join(argv)}")
    print(f"## {describe_machine()}")
    print()
    block = "default" if ns.bias_block_from is None else str(ns.bias_block_from)
    print(f"bias_block_from: {block}")
    print()
    print("| scheme | L | batch | peak MB | peak MB, freed memory returned |")
    print("|---|---|---|---|---|")
    for scheme in ns.schemes:
        kept, returned = (measure(scheme, shape, r, ns.bias_block_from) for r in (False, True))
        print(f"| {scheme} | {ns.length} | {ns.batch} | {kept:,.0f} | {returned:,.0f} |")
    print()
    print(
        "peak MB: peak RSS above the model and batch over one forward + backward in a fresh "
        "process, glibc's default allocator settings (bench's column); freed memory "
        f"returned: the same with {MMAP_THRESHOLD}={FIXED_BYTES} (blocks above 128 KiB "
        "mapped one by one and unmapped when freed)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, __file__))
