"""The run's tokenizer, stored inside every checkpoint that ``fit`` writes.

A checkpoint then carries everything needed to use the model on another machine (export,
fine-tuning) without the tokenizer cache or the training corpus. The tokenizer is kept as
its ``tokenizers`` JSON (``Tokenizer.to_str()``), a plain string under
:data:`TOKENIZER_KEY`, so the checkpoint still loads with ``torch.load(weights_only=True)``.

The data module owns it: its ``state_dict()`` (Lightning's public hook, saved under the
data module's class name) is :func:`tokenizer_state`. Checkpoints of earlier versions kept
the string at the checkpoint's top level; :func:`stored_tokenizer_json` reads both places,
and returns ``None`` for checkpoints written before tokenizers were stored.

An evaluation of a checkpoint tokenizes with the run's own tokenizer, whatever files it
reads: the command builds its data module inside :func:`run_tokenizer_given`, and a data
module that makes its tokenizer from its settings (a corpus) takes that one instead
(:func:`given_run_tokenizer`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from tokenizers import Tokenizer

from roformer_lit.errors import ConfigError
from roformer_lit.training.checkpoint_io import read_checkpoint

#: Top-level checkpoint key holding ``Tokenizer.to_str()`` of the run's tokenizer.
TOKENIZER_KEY = "tokenizer_json"

#: The evaluated run's tokenizer while the command builds its data module (None: none given).
_RUN_TOKENIZER: ContextVar[Tokenizer | None] = ContextVar("run_tokenizer", default=None)


@contextmanager
def run_tokenizer_given(tokenizer: Tokenizer | None) -> Iterator[None]:
    """Data modules built inside take ``tokenizer`` (an evaluated checkpoint's own) as
    theirs instead of making one from their settings; None gives none."""
    token = _RUN_TOKENIZER.set(tokenizer)
    try:
        yield
    finally:
        _RUN_TOKENIZER.reset(token)


def given_run_tokenizer() -> Tokenizer | None:
    """The tokenizer :func:`run_tokenizer_given` gives the data modules built now, or None."""
    return _RUN_TOKENIZER.get()


def tokenizer_state(tokenizer: Tokenizer) -> dict[str, str]:
    """A data module's ``state_dict()``: its tokenizer, which travels with the weights."""
    return {TOKENIZER_KEY: tokenizer.to_str()}


def stored_tokenizer_json(checkpoint: Mapping[str, Any]) -> Any:
    """The tokenizer JSON a loaded checkpoint holds (not yet checked to be a string), or
    ``None``: the data module's state (any top-level mapping holding :data:`TOKENIZER_KEY`,
    Lightning keys it by the data module's class name), else the top-level key of earlier
    versions."""
    for value in checkpoint.values():
        if isinstance(value, Mapping) and TOKENIZER_KEY in value:
            return value[TOKENIZER_KEY]
    return checkpoint.get(TOKENIZER_KEY)


def checkpoint_tokenizer(
    checkpoint: str | os.PathLike[str] | Mapping[str, Any],
    path: str | os.PathLike[str] | None = None,
) -> Tokenizer | None:
    """The tokenizer stored in a checkpoint (a path or an already loaded dict), or ``None``
    for a checkpoint written before tokenizers were stored (or by a run without a data
    module). A path is read with ``torch.load(..., weights_only=True)``; ``path`` is the
    file an already loaded dict was read from, which a refusal names.

    Raises:
        ConfigError: the file is not a readable checkpoint, or its stored tokenizer is corrupt.
    """
    source = "the checkpoint" if path is None else f"checkpoint {os.fspath(path)}"
    if not isinstance(checkpoint, Mapping):
        source = f"checkpoint {os.fspath(checkpoint)}"
        checkpoint = read_checkpoint(checkpoint, require_state_dict=False)
    text = stored_tokenizer_json(checkpoint)
    if text is None:
        return None
    if not isinstance(text, str):
        raise ConfigError(f"the tokenizer stored in {source} is not a tokenizer JSON string")
    try:
        return Tokenizer.from_str(text)
    except Exception as exc:
        detail = " ".join(str(exc).split())[:160]
        raise ConfigError(f"the tokenizer stored in {source} is corrupt: {detail}") from exc
