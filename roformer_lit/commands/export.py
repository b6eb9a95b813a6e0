"""``python -m roformer_lit export``: a checkpoint as a Hugging Face MLM directory."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from roformer_lit.errors import ConfigError
from roformer_lit.interop.export import check_out_dir, export_hf
from roformer_lit.interop.tokenizer import export_tokenizer
from roformer_lit.module import MaskedLM
from roformer_lit.run_files import output_target
from roformer_lit.safe_input import check_checkpoint_file
from roformer_lit.tool_arguments import OUTPUT_DIRECTORY, ToolParser
from roformer_lit.training.checkpoint_io import PRETRAINING, read_checkpoint


def build_parser() -> argparse.ArgumentParser:
    """``export``'s options, on the tools' parser (:class:`~roformer_lit.tool_arguments.ToolParser`):
    every error one line, either spelling (``--ckpt-path``), and an option given twice
    (``--out a --out b``, which exported into ``b`` without a word) refused."""
    parser = ToolParser("export", description="a checkpoint as a Hugging Face MLM directory")
    parser.add_argument("--ckpt_path", required=True, help="a .ckpt written by fit")
    parser.add_argument(
        "--out", type=OUTPUT_DIRECTORY, required=True, help="new HF model directory"
    )
    parser.add_argument(
        "--tokenizer",
        default=None,
        help="tokenizer.json to export (default: the one stored in the checkpoint)",
    )
    parser.add_argument(
        "--no_tokenizer",
        action="store_true",
        help="export the model without a tokenizer (AutoTokenizer / pipeline cannot load it)",
    )
    return parser


def export_main(args: Sequence[str]) -> None:
    """``export --ckpt_path X --out DIR``: a checkpoint as a complete Hugging Face MLM
    directory (config, weights, tokenizer) that ``pipeline("fill-mask", model=DIR)`` loads.

    The tokenizer is ``--tokenizer`` if given, else the one stored in the checkpoint. A
    checkpoint that stores none (written before checkpoints carried one) is refused in one
    line unless given ``--tokenizer`` or ``--no_tokenizer`` (the model alone). ``--out``
    must be new or empty and outside every run directory (the check every output option
    goes through, :func:`~roformer_lit.run_files.output_target`); nothing is written on
    any error.
    """
    ns = build_parser().parse_args(list(args))
    if ns.tokenizer is not None and ns.no_tokenizer:
        raise ConfigError("--tokenizer and --no_tokenizer exclude each other; give one of them")
    check_checkpoint_file(ns.ckpt_path)  # as typed: a directory is not "not found"
    ckpt = Path(ns.ckpt_path)
    output_target(ns.out, "--out", reads=[ckpt], directory=True)  # never inside a run
    check_out_dir(ns.out)
    checkpoint = read_checkpoint(ckpt, kind=PRETRAINING)  # weights_only, before anything else
    tokenizer, note = None, "exported without a tokenizer (--no_tokenizer)"
    if not ns.no_tokenizer:
        tokenizer, note = export_tokenizer(checkpoint, ckpt, ns.tokenizer)
        if tokenizer is None:
            raise ConfigError(
                f"{note}; pass --tokenizer the run's tokenizer.json, or --no_tokenizer to "
                "export the model alone"
            )
    model = MaskedLM.from_checkpoint(ckpt)
    print(export_hf(model, ns.out, tokenizer, require_tokenizer=False))
    if note is not None:
        print(f"note: {note}", file=sys.stderr)
