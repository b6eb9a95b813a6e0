"""roformer-lit: encoder MLM pretraining with swappable position schemes and attention kernels."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.errors import ConfigError
from roformer_lit.module import MaskedLM
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.stored_tokenizer import checkpoint_tokenizer

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "ATTENTION_KERNELS",
    "POSITION_SCHEMES",
    "ConfigError",
    "MaskedLM",
    "checkpoint_tokenizer",
    "export_hf",
    "import_hf",
]


def export_hf(
    model: MaskedLM,
    out_dir: str | os.PathLike[str],
    tokenizer: Tokenizer | str | os.PathLike[str] | None = None,
    *,
    require_tokenizer: bool = True,
) -> str:
    """Write ``model`` and its tokenizer as a Hugging Face MLM directory that
    ``pipeline("fill-mask", model=out_dir)`` loads (see ``roformer_lit.interop.export_hf``)."""
    from roformer_lit.interop import export_hf as _export

    return _export(model, out_dir, tokenizer, require_tokenizer=require_tokenizer)


def import_hf(path_or_model: object) -> MaskedLM:
    """Build a ``MaskedLM`` from an HF MLM directory or model (see ``roformer_lit.interop``)."""
    from roformer_lit.interop import import_hf as _import

    return _import(path_or_model)
