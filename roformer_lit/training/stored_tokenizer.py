"""The run's tokenizer, stored inside every checkpoint that ``fit`` writes.

A checkpoint then carries everything needed to use the model on another machine (export,
fine-tuning) without the tokenizer cache or the training corpus. The tokenizer is kept as
its ``tokenizers`` JSON (``Tokenizer.to_str()``), a plain string under
:data:`TOKENIZER_KEY`, so the checkpoint still loads with ``torch.load(weights_only=True)``.
Checkpoints written before this existed have no such key: :func:`checkpoint_tokenizer`
returns ``None`` for them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tokenizers import Tokenizer

from roformer_lit.errors import ConfigError
from roformer_lit.training.checkpoint_io import read_checkpoint

#: Top-level checkpoint key holding ``Tokenizer.to_str()`` of the run's tokenizer.
TOKENIZER_KEY = "tokenizer_json"


def trainer_tokenizer_json(trainer: Any) -> str | None:
    """``to_str()`` of ``trainer.datamodule.tokenizer`` if that is a ``tokenizers.Tokenizer``."""
    datamodule = getattr(trainer, "datamodule", None)
    tokenizer = getattr(datamodule, "tokenizer", None) if datamodule is not None else None
    return tokenizer.to_str() if isinstance(tokenizer, Tokenizer) else None


def checkpoint_tokenizer(
    checkpoint: str | os.PathLike[str] | Mapping[str, Any],
) -> Tokenizer | None:
    """The tokenizer stored in a checkpoint (a path or an already loaded dict), or ``None``
    for a checkpoint written before tokenizers were stored (or by a run without a data
    module). A path is read with ``torch.load(..., weights_only=True)``.

    Raises:
        ConfigError: the file is not a readable checkpoint, or its stored tokenizer is corrupt.
    """
    source = "the checkpoint"
    if not isinstance(checkpoint, Mapping):
        source = f"checkpoint {os.fspath(checkpoint)}"
        checkpoint = read_checkpoint(checkpoint, require_state_dict=False)
    text = checkpoint.get(TOKENIZER_KEY)
    if text is None:
        return None
    if not isinstance(text, str):
        raise ConfigError(f"the tokenizer stored in {source} is not a tokenizer JSON string")
    try:
        return Tokenizer.from_str(text)
    except Exception as exc:
        detail = " ".join(str(exc).split())[:160]
        raise ConfigError(f"the tokenizer stored in {source} is corrupt: {detail}") from exc
