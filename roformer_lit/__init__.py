"""roformer-lit: encoder MLM pretraining with swappable position schemes and attention kernels.

The public names are imported on first use (PEP 562), so ``python -m roformer_lit`` can
guard its signals (:mod:`roformer_lit.training.startup_signals`) before torch and Lightning load.
"""

from __future__ import annotations

import sys

if sys.argv[:1] == ["-m"]:  # being found by `python -m roformer_lit...`: the command line
    from roformer_lit.training import startup_signals  # standard library only

    startup_signals.install()  # before anything else is imported (Ctrl-C, SIGTERM)

import importlib  # noqa: E402
import os  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from roformer_lit.attention import ATTENTION_KERNELS
    from roformer_lit.data.stored_tokenizer import checkpoint_tokenizer
    from roformer_lit.encoder_config import EncoderConfig
    from roformer_lit.errors import ConfigError
    from roformer_lit.module import MaskedLM
    from roformer_lit.positions import POSITION_SCHEMES
    from roformer_lit.training_config import TrainingConfig

__all__ = [
    "ATTENTION_KERNELS",
    "POSITION_SCHEMES",
    "ConfigError",
    "EncoderConfig",
    "MaskedLM",
    "TrainingConfig",
    "checkpoint_tokenizer",
    "export_hf",
    "import_hf",
]

#: Public name -> the module that defines it.
_LAZY = {
    "ATTENTION_KERNELS": "roformer_lit.attention",
    "POSITION_SCHEMES": "roformer_lit.positions",
    "ConfigError": "roformer_lit.errors",
    "EncoderConfig": "roformer_lit.encoder_config",
    "MaskedLM": "roformer_lit.module",
    "TrainingConfig": "roformer_lit.training_config",
    "checkpoint_tokenizer": "roformer_lit.data.stored_tokenizer",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'roformer_lit' has no attribute {name!r}")


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
