"""``python -m roformer_lit bench-flex``: bias schemes on FlexAttention against SDPA (CUDA).

For every scheme that adds a score bias and every length, two BERT-base models with the
same weights train in alternation (ABBA rounds, bf16 autocast, fused AdamW): one with
``attention_kwargs: {backend: sdpa}`` (the dense ``[B or 1, h, L, L]`` bias handed to SDPA)
and one with ``backend: flex`` (the bias computed inside FlexAttention's fused kernel). The
batch keeps the tokens per step fixed (``--tokens``), so memory differences are the
attention's. Figures: median step time, the ratio sdpa / flex (median of per-round ratios),
peak CUDA memory of one training step above the model and optimiser, the first flex step's
compile time. ``nope`` on SDPA's flash path is the bias-free reference. A configuration
that runs out of memory says ``OOM``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Sequence

import torch

from roformer_lit.benchmarks.models import BERT_BASE, MAX_BATCH, ROUNDS, WARMUP, median_ratio
from roformer_lit.benchmarks.runners import Runner, Shape, make_batch
from roformer_lit.errors import ConfigError
from roformer_lit.machine import describe_machine
from roformer_lit.module import MaskedLM
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.tool_arguments import (
    LENGTH,
    MAX_LENGTH,
    Registered,
    ToolParser,
    every_loadable,
    integer,
)


def _runner(position: str, backend: str, shape: Shape, device: torch.device) -> Runner:
    torch.manual_seed(0)
    model = MaskedLM(
        position=position,
        attention="softmax",
        attention_kwargs={"backend": backend},
        **shape.model_kwargs(),
    ).to(device)
    model.train()
    ids, labels = make_batch(shape, device)
    return Runner(model, lambda: model.mlm_loss(ids, labels), device, autocast=True)


def _peak_mb(runner: Runner, device: torch.device) -> float:
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    runner.step(record=False)
    torch.cuda.synchronize(device)
    return (torch.cuda.max_memory_allocated(device) - before) / 2**20


def _free(device: torch.device) -> None:
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.synchronize(device)


def bench_pair(
    position: str, shape: Shape, device: torch.device, rounds: int, warmup: int
) -> dict[str, object]:
    """Step times, peak memory and compile time of ``position`` on sdpa and on flex."""
    result: dict[str, object] = {}
    runners: dict[str, Runner] = {}
    backends = ("sdpa",) if position == "nope" else ("sdpa", "flex")
    for backend in backends:
        try:
            runner = _runner(position, backend, shape, device)
            start = time.perf_counter()
            runner.step(record=False)  # the first flex step compiles
            torch.cuda.synchronize(device)
            result[f"{backend}_first_s"] = time.perf_counter() - start
            for _ in range(warmup):
                runner.step(record=False)
            result[f"{backend}_mb"] = _peak_mb(runner, device)
            runners[backend] = runner
        except torch.OutOfMemoryError:
            result[f"{backend}_mb"] = "OOM"
            _free(device)
        except Exception as error:  # a kernel that fails to compile: reported, not fatal
            result[f"{backend}_mb"] = f"failed ({type(error).__name__})"
            print(
                f"{position} {backend} L={shape.length}: {error}".splitlines()[0], file=sys.stderr
            )
            _free(device)
    try:
        for index in range(rounds):
            order = list(runners.values())
            for runner in order if index % 2 == 0 else reversed(order):
                runner.step()
    except torch.OutOfMemoryError:
        result["ratio"] = "OOM"
        runners = {}
    for backend, runner in runners.items():
        result[f"{backend}_ms"] = statistics.median(runner.timings.step) * 1e3
    if len(runners) == 2:
        result["ratio"] = median_ratio(runners["sdpa"].timings.step, runners["flex"].timings.step)
    del runners
    _free(device)
    return result


def _cell(result: dict, key: str, spec: str) -> str:
    value = result.get(key)
    if value is None:
        return "\u2013"
    return value if isinstance(value, str) else format(value, spec)


def build_parser() -> ToolParser:
    """``bench-flex``'s parser: every numeric flag declares its range (one ``error:`` line)."""
    parser = ToolParser("bench-flex", description=__doc__)
    parser.add_argument(
        "--schemes",
        nargs="+",
        type=Registered(POSITION_SCHEMES),
        default=None,  # parse_args: nope and every registered score-bias scheme that loads
        metavar="SCHEME",
        help="registered names or import paths package.module:Class (default: nope and "
        "every registered scheme with a score bias that loads; one that does not is skipped "
        "with a note: line)",
    )
    parser.add_argument("--lengths", nargs="+", type=LENGTH, default=[512, 2048, 4096])
    parser.add_argument(
        "--tokens",
        type=integer(1, MAX_BATCH * MAX_LENGTH),
        default=16384,
        help="tokens per step (batch x L)",
    )
    parser.add_argument("--rounds", type=ROUNDS, default=6)
    parser.add_argument("--warmup", type=WARMUP, default=2)
    return parser


def parse_args(args: Sequence[str] | None) -> argparse.Namespace:
    """The parsed arguments; ``--schemes`` not typed: ``nope`` and every registered scheme
    with a score bias among those that load (:func:`every_loadable`: a note line for each
    that does not)."""
    ns = build_parser().parse_args(args)
    if ns.schemes is None:
        every_loadable(ns, "bench-flex", schemes=POSITION_SCHEMES)
        biased = [
            name for name in ns.schemes if POSITION_SCHEMES[name].capabilities().needs_score_bias
        ]
        ns.schemes = ["nope", *biased]
    return ns


def main(args: Sequence[str] | None = None) -> int:
    ns = parse_args(args)
    if not torch.cuda.is_available():
        raise ConfigError("bench-flex needs a CUDA GPU (FlexAttention trains on CUDA only)")
    device = torch.device("cuda")
    print(f"## roformer-lit bench-flex on {describe_machine(device)}\n")
    print(
        f"BERT-base (hidden 768, 12 layers, 12 heads, FFN 3072, vocab 30522), {ns.tokens} tokens "
        f"per step, bf16 autocast, fused AdamW; {ns.rounds} alternating rounds after "
        f"{ns.warmup} warm-up; median step ms; peak MB = CUDA memory of one step above the "
        "model and optimiser"
    )
    print(
        "\n| scheme | L | batch | SDPA step ms | flex step ms | SDPA / flex time | SDPA peak MB "
        "| flex peak MB | flex first step s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for length in ns.lengths:
        batch = max(1, ns.tokens // length)
        shape = Shape(batch, length, **BERT_BASE)
        for position in ns.schemes:
            r = bench_pair(position, shape, device, ns.rounds, ns.warmup)
            print(
                f"| {position} | {length} | {batch} | {_cell(r, 'sdpa_ms', '.1f')} "
                f"| {_cell(r, 'flex_ms', '.1f')} | {_cell(r, 'ratio', '.2f')} "
                f"| {_cell(r, 'sdpa_mb', ',.0f')} | {_cell(r, 'flex_mb', ',.0f')} "
                f"| {_cell(r, 'flex_first_s', '.0f')} |",
                flush=True,
            )
    return 0
