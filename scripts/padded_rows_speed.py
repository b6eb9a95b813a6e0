"""Rows padded at their end on the per-offset view against the masked path: one training step
of the model ``bench`` times (hidden 256, 4 layers, 4 heads, FFN 1024, vocab 8192; softmax
attention) with each row's last tokens padded (``attention_mask`` 0), each fraction of real
tokens in turn, the two paths alternating step by step (medians of ``--steps`` steps, 3 by
default, after one warm-up), with the CLI's process settings, and ``nope`` on the same padded batch (each row
one SDPA call over its real keys) alternating with them as the baseline (``view / nope``). The masked path is what the layer takes when
:func:`~roformer_lit.attention.padded_rows.real_prefix_lengths` declines (a padded key
before a real one): the dense bias with ``-inf`` at padded keys below ``bias_block_from``,
the blocks of queries from it on. ``--only view`` or ``--only masked`` runs one side alone
and prints the process's peak resident memory (``VmHWM``), for one process per side.

    python scripts/padded_rows_speed.py t5 --length 2048 --batch 4 --real 0.5 0.9
"""

from __future__ import annotations

import statistics
import sys
import time
from datetime import datetime, timezone

import torch

import roformer_lit.commands  # noqa: F401 - what python -m roformer_lit has imported
from roformer_lit.attention import softmax
from roformer_lit.benchmarks.memory import status_mib
from roformer_lit.benchmarks.runners import Runner, Shape, make_batch, ours
from roformer_lit.machine import describe_machine
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.tool_arguments import ToolParser, integer, real, run_script, script_parser
from roformer_lit.training.denormals import flush_denormals
from roformer_lit.training.host_memory import keep_freed_memory

SIDES = ("view", "masked")


def padded_runner(scheme: str, shape: Shape, fraction: float) -> Runner:
    """``bench``'s model of ``scheme`` on its batch with each row's first ``fraction`` of
    tokens real and the rest padded."""
    cpu = torch.device("cpu")
    model = ours(scheme, "softmax", shape, cpu, False, False).model
    ids, labels = make_batch(shape, cpu)
    real_tokens = max(1, round(fraction * shape.length))
    mask = (torch.arange(shape.length) < real_tokens).long().expand(shape.batch, -1)
    labels = labels.masked_fill(mask == 0, -100)
    return Runner(model, lambda: model.mlm_loss(ids, labels, attention_mask=mask), cpu, False)


def build_parser() -> ToolParser:
    parser = script_parser(__file__, description=__doc__.splitlines()[0])
    parser.add_argument("scheme", choices=sorted(POSITION_SCHEMES))
    parser.add_argument("--length", type=integer(2, 1 << 20), default=2048)
    parser.add_argument("--batch", type=integer(1, 4096), default=4)
    parser.add_argument(
        "--real", type=real(0, 1, low_open=True), nargs="+", default=[0.5, 0.9], metavar="F"
    )
    parser.add_argument("--steps", type=integer(1, 1000), default=3, help="timed steps per side")
    parser.add_argument("--only", choices=SIDES, default=None)
    return parser


def main(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    keep_freed_memory()
    flush_denormals()
    shape = Shape(ns.batch, ns.length, 256, 4, 4, 1024, 8192)
    prefix = softmax.real_prefix_lengths
    sides = SIDES if ns.only is None else (ns.only,)
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    print(f"# {now} python scripts/padded_rows_speed.py {' '.join(argv)}")
    print(f"# {describe_machine(torch.device('cpu'))}")
    both = ns.only is None
    timed = (*sides, "nope") if both else sides
    print(
        "| scheme | L | batch | real tokens per row | "
        + " | ".join(f"{side} ms" for side in timed)
        + (" | view / masked | view / nope | masked / nope |" if both else " |")
    )
    print("|---|---|---|---|" + "---|" * (len(timed) + 3 * both))
    for fraction in ns.real:
        runners = {side: padded_runner(ns.scheme, shape, fraction) for side in sides}
        if both:
            runners["nope"] = padded_runner("nope", shape, fraction)
        times: dict[str, list[float]] = {side: [] for side in timed}
        try:
            for step in range(ns.steps + 1):
                for side in timed if step % 2 == 0 else tuple(reversed(timed)):
                    softmax.real_prefix_lengths = prefix if side != "masked" else _declined
                    start = time.perf_counter()
                    runners[side].step(record=False)
                    if step > 0:
                        times[side].append(time.perf_counter() - start)
        finally:
            softmax.real_prefix_lengths = prefix
        medians = {side: statistics.median(times[side]) * 1e3 for side in timed}
        cells = " | ".join(f"{medians[side]:.0f}" for side in timed)
        if both:
            view, masked, nope = medians["view"], medians["masked"], medians["nope"]
            cells += f" | {view / masked:.2f} | {view / nope:.3f} | {masked / nope:.3f}"
        real_tokens = max(1, round(fraction * ns.length))
        print(f"| {ns.scheme} | {ns.length} | {ns.batch} | {real_tokens} | {cells} |")
    if ns.only is not None:
        print(f"\npeak resident memory of this process ({ns.only}): {status_mib('VmHWM'):,.0f} MiB")
    return 0


def _declined(key_padding_mask: torch.Tensor) -> None:
    return None


if __name__ == "__main__":
    sys.exit(run_script(main, __file__))
