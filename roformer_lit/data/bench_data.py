"""Data-pipeline benchmark: ``python -m roformer_lit.data.bench_data [--num-workers N] ...``.

Times each stage on the bundled corpus (or ``--train-files``): reading, tokenizer
training (cold cache, in a temporary directory) and loading (warm cache), tokenization +
packing, and one epoch of masked training batches. Prints one line per stage.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from typing import TypeVar

from roformer_lit.data.datamodule import MLMDataModule

T = TypeVar("T")


def _timed(label: str, fn: Callable[[], T]) -> T:
    t0 = time.perf_counter()
    out = fn()
    print(f"{label:<32s} {time.perf_counter() - t0:8.3f} s")
    return out


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print per-stage wall times."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train-files", nargs="*", default=None)
    p.add_argument("--vocab-size", type=int, default=8192)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--num-workers", type=int, default=0)
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory() as cache:

        def make() -> MLMDataModule:
            return MLMDataModule(
                train_files=args.train_files,
                vocab_size=args.vocab_size,
                max_length=args.max_length,
                batch_size=args.batch_size,
                num_workers=args.num_workers,
                cache_dir=cache,
            )

        dm = make()
        docs = _timed("read corpus", dm.documents)
        n_chars = sum(len(d) for d in docs[0] + docs[1])
        print(f"  {len(docs[0])} train / {len(docs[1])} val documents, {n_chars / 1e6:.2f} M chars")
        _timed("train tokenizer (cold cache)", lambda: dm.tokenizer_vocab_size)
        dm2 = make()
        dm2._docs = docs  # same documents: time only the cache hit
        vocab = _timed("load tokenizer (warm cache)", lambda: dm2.tokenizer_vocab_size)
        print(f"  vocab size {vocab}")
        _timed("tokenize + pack both splits", dm.setup)
        assert dm.train_dataset is not None and dm.val_dataset is not None
        n_tok = dm.train_dataset.blocks.numel() + dm.val_dataset.blocks.numel()
        print(
            f"  {len(dm.train_dataset)} train / {len(dm.val_dataset)} val blocks, "
            f"{n_tok / 1e6:.2f} M tokens"
        )
        loader = dm.train_dataloader()
        n = _timed("one masked training epoch", lambda: sum(1 for _ in loader))
        print(f"  {n} batches of {args.batch_size} x {args.max_length}")


if __name__ == "__main__":
    main()
