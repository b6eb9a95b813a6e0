"""Which tokenizer an evaluation of a checkpoint tokenizes with: the run's own.

The model's ids mean what the run's tokenizer made them mean, so ``validate --ckpt_path``
tokenizes whatever files it reads with the tokenizer stored in the checkpoint
(:mod:`roformer_lit.data.stored_tokenizer`), not with one the data settings would make:
settings that read other files (``--data.val_files`` where the run held out a share of its
training files, another ``--data.train_files``) would train another tokenizer, which the
model was never trained with.

A tokenizer the user asks for is not replaced: where a data setting that decides the
tokenizer (the data module's
:attr:`~roformer_lit.data.datamodule.PretrainDataModule.DECIDES_TOKENIZER`:
``data.tokenizer_file``, ``data.vocab_size``, ``data.tokenizer_sample_mb``) is typed with
another value than the run's, the data settings make theirs, and one that differs from the
run's is refused in one line (``pretrain._check_same_tokenizer``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokenizers import Tokenizer

from roformer_lit.commands.checkpoint_settings import same_setting, saved_settings
from roformer_lit.data.modules import resolve
from roformer_lit.data.stored_tokenizer import checkpoint_tokenizer


def evaluation_tokenizer(
    checkpoint: Mapping[str, Any], config: Any, typed: set[str], path: Any = None
) -> Tokenizer | None:
    """The tokenizer the evaluation of ``checkpoint`` with the command's ``config`` (its
    subcommand's section, the run's settings filled in) gives its data module: the run's
    stored one, or None where the checkpoint stores none or a typed setting in ``typed``
    (:func:`~roformer_lit.commands.checkpoint_settings.typed_keys`) asks for another
    tokenizer (see the module). ``path``: the file ``checkpoint`` was read from, which a
    refusal names.

    Raises:
        ConfigError: the tokenizer stored in the checkpoint is corrupt.
    """
    data_class, settings = resolve(config.get("data"), lenient=True)
    saved = saved_settings(checkpoint)
    for key in data_class.DECIDES_TOKENIZER:
        name = f"data.{key}"
        if name in typed and not same_setting(settings.get(key), saved.get(name)):
            return None
    return checkpoint_tokenizer(checkpoint, path)


__all__ = ["evaluation_tokenizer"]
