"""Is the data pipeline ever the bottleneck? ``python -m roformer_lit bench-data``.

Trains the default-size model on the bundled corpus two ways, alternating in rounds of
``--steps`` optimiser steps: (a) batches drawn from ``CorpusDataModule.train_dataloader()``
(reading, masking and collation included), (b) the same number of batches prebuilt in
memory. Each round pair gives a ratio ``tokens/s(a) / tokens/s(b)``; the figure is the
median of those paired ratios, so machine noise cancels.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterator, Sequence

import torch

from roformer_lit.benchmarks import corpus_scale
from roformer_lit.benchmarks.models import MAX_BATCH, ROUNDS
from roformer_lit.data.corpus_module import CorpusDataModule
from roformer_lit.errors import ConfigError
from roformer_lit.machine import describe_machine
from roformer_lit.module import MaskedLM
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.tool_arguments import LENGTH, ToolParser, integer, known_spelling


def _train_steps(model: MaskedLM, optimizer: torch.optim.Optimizer, batches: Iterator) -> float:
    """Seconds for one optimiser step per batch drawn from ``batches``."""
    start = time.perf_counter()
    for batch in batches:
        loss = model.mlm_loss(batch["input_ids"], batch["labels"])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def build_parser() -> ToolParser:
    """``bench-data``'s parser: every numeric flag declares its range (one ``error:`` line)."""
    parser = ToolParser(
        "bench-data",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=corpus_scale.build_parser().options_help(
            "with --corpus PATH: the data path at corpus scale (benchmarks/corpus_scale.py)"
        ),
    )
    parser.add_argument("--position", default="rope", choices=list(POSITION_SCHEMES))
    parser.add_argument("--batch-size", type=integer(1, MAX_BATCH), default=16)
    parser.add_argument("--max-length", type=LENGTH, default=128)
    parser.add_argument("--num-workers", type=integer(0, 256), default=0)
    parser.add_argument(
        "--steps", type=integer(1, 100_000), default=5, help="optimiser steps per round"
    )
    parser.add_argument("--rounds", type=ROUNDS, default=6)
    return parser


def _refuse_corpus_options(args: Sequence[str]) -> None:
    """An option of ``bench-data --corpus`` given without ``--corpus`` (``--sizes-mb 25``)
    is one line saying it needs ``--corpus``, not an 'unrecognized argument' it is not."""
    from roformer_lit.benchmarks import corpus_scale

    own = build_parser().option_names()
    scale = corpus_scale.build_parser().option_names() - own
    for word in args:
        option = word.partition("=")[0]
        name = known_spelling(option, scale)
        if name in scale:
            raise ConfigError(
                f"bench-data: {option} is an option of bench-data --corpus PATH (the data path "
                "at corpus scale); give --corpus the text to repeat, or leave it out"
            )


def run(args: Sequence[str] | None = None) -> int | None:
    if args is not None and any(a == "--corpus" or a.startswith("--corpus=") for a in args):
        from roformer_lit.benchmarks import corpus_scale  # the data path at corpus scale

        return corpus_scale.run(args)
    _refuse_corpus_options(args or [])
    ns = build_parser().parse_args(args)

    data = CorpusDataModule(
        batch_size=ns.batch_size, max_length=ns.max_length, num_workers=ns.num_workers
    )
    start = time.perf_counter()
    vocab_size = data.tokenizer_vocab_size  # read the corpus, load (or train) the tokenizer
    tokenizer_s = time.perf_counter() - start
    data.setup()  # tokenize and pack both splits
    setup_s = time.perf_counter() - start - tokenizer_s
    model = MaskedLM(
        position=ns.position, vocab_size=vocab_size, max_positions=max(512, ns.max_length)
    ).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loader_iter = iter(data.train_dataloader())

    def from_loader() -> Iterator:
        nonlocal loader_iter
        for _ in range(ns.steps):
            try:
                yield next(loader_iter)
            except StopIteration:
                loader_iter = iter(data.train_dataloader())
                yield next(loader_iter)

    prebuilt = [next(iter(data.train_dataloader()))] * ns.steps  # one batch, reused
    _train_steps(model, optimizer, iter(prebuilt[:2]))  # warm-up
    tokens = ns.steps * ns.batch_size * ns.max_length
    ratios, real_rates, prebuilt_rates = [], [], []
    for _ in range(ns.rounds):
        real = tokens / _train_steps(model, optimizer, from_loader())
        built = tokens / _train_steps(model, optimizer, iter(prebuilt))
        real_rates.append(real)
        prebuilt_rates.append(built)
        ratios.append(real / built)
    print(f"Data pipeline benchmark on {describe_machine()}")
    print(
        f"model: {ns.position}, default size; batch {ns.batch_size} x {ns.max_length} tokens; "
        f"{ns.rounds} alternating rounds of {ns.steps} steps; num_workers={ns.num_workers}\n"
    )
    print("| batches from | tokens/s (median) |")
    print("|---|---|")
    print(f"| CorpusDataModule loader | {statistics.median(real_rates):,.0f} |")
    print(f"| prebuilt in memory | {statistics.median(prebuilt_rates):,.0f} |")
    print(
        f"\none-off set-up: corpus + tokenizer {tokenizer_s:.2f} s, tokenize + pack "
        f"{setup_s:.2f} s ({len(data.train_dataset)} train blocks)"
    )
    print(
        f"\nmedian paired ratio loader / prebuilt: {statistics.median(ratios):.3f} "
        f"(min {min(ratios):.3f}, max {max(ratios):.3f})"
    )
    return 0
