"""``python -m roformer_lit prepare --config configs/rope.yaml [--data.* ...]``: prepare only.

Takes the same arguments as ``fit`` (only the ``data`` section matters), trains or loads
the tokenizer and tokenizes the corpus into the cache that ``fit`` reads, then prints where
it is. For a login node before a SLURM array, or to see a corpus's size in tokens; ``fit``
prepares by itself when needed, and ``sweep`` calls :func:`prepare_runs` before it launches.

Both then cut the blocks ``fit`` would cut (:func:`ready`), so a split too small for one block
of ``data.max_length`` is the error ``fit`` would give, not a ``0 blocks`` line and exit 0.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from roformer_lit.data.corpus_module import CorpusDataModule
from roformer_lit.data.datamodule import PretrainDataModule
from roformer_lit.data.modules import data_module


def datamodule_of(fit_args: Sequence[str], command: str = "fit") -> PretrainDataModule:
    """The data module that ``fit`` with these arguments would build (nothing else is built);
    ``command`` names the command the user typed in its messages."""
    from roformer_lit.commands.pretrain import validate_config

    args = list(fit_args)
    if args and args[0] == "fit":
        args = args[1:]
    config = validate_config(args, command=command)
    return data_module(config.data, lenient=False)


def data_section(fit_args: Sequence[str]) -> tuple[PretrainDataModule, str]:
    """The data module ``fit`` with these arguments would build, and a key naming its data
    section (its settings): the same key, the same data."""
    dm = datamodule_of(fit_args)
    return dm, json.dumps(dict(dm.hparams), sort_keys=True, default=str)


def ready(dm: PretrainDataModule) -> Any:
    """Prepare ``dm``'s corpus and cut its training and validation blocks as ``fit`` does
    (nothing is read but the shards' sizes), returning what :meth:`prepare` returns.

    Raises:
        ConfigError: what ``fit`` would raise, e.g. a split too small for one block.
    """
    prepared = dm.prepare()
    dm.setup("fit")
    return prepared


def prepare_runs(runs: Sequence[Sequence[str]], say: Any = print) -> int:
    """Prepare the corpora of several ``fit`` argument lists, each distinct data section once.

    Returns the number of distinct data sections. Settings that do not change the prepared
    tokens (``max_length``, ``batch_size``, ``seed``, ...) share one preparation anyway (the
    cache key ignores them); this only avoids building the same data module twice.
    """
    seen: set[str] = set()
    for fit_args in runs:
        dm, section = data_section(fit_args)
        if section in seen:
            continue
        seen.add(section)
        if not dm.needs_preparation:  # built in memory by each run
            say(f"data ready: {dm.describe()} (built in memory, nothing to prepare)")
            continue
        train, val = ready(dm)
        say(f"data ready: {train.directory}" + (f" (validation {val.directory})" if val else ""))
    return len(seen)


def main(args: Sequence[str]) -> int:
    """Entry point of ``python -m roformer_lit prepare``."""
    args = list(args)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    dm = datamodule_of(args, command="prepare")
    train, val = ready(dm)  # a source built in memory says so in one line
    assert isinstance(dm, CorpusDataModule)
    assert dm.train_dataset is not None and dm.val_dataset is not None
    (tr_stream, tr_start, tr_stop), (va_stream, va_start, va_stop) = dm.split_ranges()
    print(f"tokenizer: {dm.tokenizer_path} ({dm.tokenizer_vocab_size} tokens)")
    print(
        f"prepared: {train.directory} ({train.meta['tokens']:,} tokens, "
        f"{train.meta['documents']:,} documents, {train.meta['dtype']})"
    )
    if val is not None:
        print(f"validation: {val.directory} ({val.meta['tokens']:,} tokens)")
    print(
        f"split: {tr_stop - tr_start:,} training tokens, {va_stop - va_start:,} validation "
        f"tokens ({len(dm.train_dataset):,} and {len(dm.val_dataset):,} blocks of "
        f"{dm.max_length})"
    )
    return 0
