"""The tokenizer files of an exported Hugging Face directory, and which tokenizer an export
of a checkpoint uses.

An exported directory loads with ``AutoTokenizer.from_pretrained`` with nothing beyond
``transformers`` and ``tokenizers`` installed: ``tokenizer.json`` is the run's own
``tokenizers`` WordPiece tokenizer, and ``tokenizer_config.json`` names the generic
``PreTrainedTokenizerFast`` class (not ``RoFormerTokenizer``, which needs ``rjieba``, and not
the ``TokenizersBackend`` name that ``transformers`` 5 writes and 4.x cannot read).

Framing: ``fit`` packs every document as ``tokens [SEP]`` (no ``[CLS]``; see
:mod:`roformer_lit.data.packing`), so the exported tokenizer adds special tokens the same
way: ``$A [SEP]`` for one text, ``$A [SEP] $B [SEP]`` for a pair. A fill-mask pipeline then
feeds the model what it was trained on.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from tokenizers import Tokenizer, processors

from roformer_lit.data.stored_tokenizer import checkpoint_tokenizer
from roformer_lit.data.tokenizer import SPECIAL_TOKENS, SpecialTokens, load_tokenizer_file
from roformer_lit.errors import ConfigError

_SPECIAL_ROLES = dict(zip(SPECIAL_TOKENS, ("pad", "unk", "cls", "sep", "mask"), strict=True))


def as_tokenizer(tokenizer: Tokenizer | str | os.PathLike[str]) -> Tokenizer:
    """A ``tokenizers.Tokenizer``, or one loaded from a ``tokenizer.json`` path; it must
    define ``[PAD]``, ``[SEP]`` and ``[MASK]`` (ConfigError otherwise)."""
    if isinstance(tokenizer, Tokenizer):
        SpecialTokens.from_tokenizer(tokenizer)
        return tokenizer
    if isinstance(tokenizer, (str, os.PathLike)):
        return load_tokenizer_file(tokenizer)
    raise ConfigError(
        f"tokenizer must be a tokenizers.Tokenizer or a tokenizer.json path, got "
        f"{type(tokenizer).__name__}"
    )


def check_vocabulary(tokenizer: Tokenizer, vocab_size: int) -> None:
    """Refuse a tokenizer whose vocabulary size differs from the model's."""
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    if size != vocab_size:
        raise ConfigError(
            f"the tokenizer has {size} tokens but the model's vocab_size is {vocab_size}; "
            "export needs the tokenizer the model was trained with"
        )


def hf_tokenizer_files(tokenizer: Tokenizer, model_max_length: int) -> dict[str, str]:
    """``{file name: text}`` of ``tokenizer.json`` and ``tokenizer_config.json`` for an HF
    directory: the tokenizer with the training framing (``$A [SEP]``) as post-processor,
    padding and truncation off (``transformers`` sets them per call), every special token
    of :data:`SPECIAL_TOKENS` it defines, and ``model_max_length``."""
    hf = Tokenizer.from_str(tokenizer.to_str())  # a copy: the caller's stays unchanged
    hf.no_padding()
    hf.no_truncation()
    sep = ("[SEP]", SpecialTokens.from_tokenizer(hf).sep)
    hf.post_processor = processors.TemplateProcessing(
        single="$A:0 [SEP]:0", pair="$A:0 [SEP]:0 $B:1 [SEP]:1", special_tokens=[sep]
    )
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": int(model_max_length),
        "model_input_names": ["input_ids", "attention_mask"],  # no token types
        "clean_up_tokenization_spaces": True,
        "padding_side": "right",
    }
    for token, role in _SPECIAL_ROLES.items():
        if hf.token_to_id(token) is not None:
            config[f"{role}_token"] = token
    return {
        "tokenizer.json": hf.to_str(),
        "tokenizer_config.json": json.dumps(config, indent=2, sort_keys=True) + "\n",
    }


#: ``tokenizer.json`` sections an export sets itself (:func:`hf_tokenizer_files`)
_SET_BY_EXPORT = frozenset({"padding", "truncation", "post_processor"})


def tokenizer_difference(given: Tokenizer, stored: Tokenizer) -> str | None:
    """What tells ``given`` from ``stored`` as text -> token ids, in words (``None``: the
    same tokenizer): another vocabulary (its size, or the first token whose id differs),
    else the first other section of its JSON (normalizer, pre-tokenizer, model settings,
    decoder). The sections an export sets itself (:data:`_SET_BY_EXPORT`) are not compared."""
    ours = given.get_vocab(with_added_tokens=True)
    theirs = stored.get_vocab(with_added_tokens=True)
    if len(ours) != len(theirs):
        return f"it has {len(ours)} tokens, the stored one {len(theirs)}"
    moved = next((token for token in sorted(ours) if theirs.get(token) != ours[token]), None)
    if moved is not None:
        where = theirs.get(moved)
        there = "is not in the stored one" if where is None else f"is {where} in the stored one"
        return f"token {moved!r} is id {ours[moved]} in it and {there}"
    a, b = json.loads(given.to_str()), json.loads(stored.to_str())
    for section in sorted((set(a) | set(b)) - _SET_BY_EXPORT):
        if a.get(section) != b.get(section):
            return f"its {section} differs"
    return None


def export_tokenizer(
    checkpoint: Mapping[str, Any],
    ckpt_path: str | os.PathLike[str],
    tokenizer_file: str | os.PathLike[str] | None = None,
) -> tuple[Tokenizer | None, str | None]:
    """``(tokenizer, None)`` for exporting a checkpoint: ``tokenizer_file`` if given, else
    the tokenizer stored in the checkpoint; ``(None, why)`` for a checkpoint that stores
    none (one written before checkpoints carried their tokenizer), which is then exported
    only with an explicit tokenizer file or without a tokenizer. A ``tokenizer_file`` that
    is not the tokenizer the checkpoint stores (:func:`tokenizer_difference`) is refused in
    one ConfigError line: the model would be written beside another text -> ids mapping.
    """
    stored = checkpoint_tokenizer(checkpoint, ckpt_path)
    if tokenizer_file is not None:
        given = load_tokenizer_file(tokenizer_file)
        difference = None if stored is None else tokenizer_difference(given, stored)
        if difference is not None:
            raise ConfigError(
                f"tokenizer file {os.fspath(tokenizer_file)} is not the tokenizer stored in "
                f"checkpoint {os.fspath(ckpt_path)} ({difference}); the model reads token ids "
                "by the stored one: export without a tokenizer file to use it"
            )
        return given, None
    if stored is not None:
        return stored, None
    return (
        None,
        f"checkpoint {os.fspath(ckpt_path)} stores no tokenizer (written before checkpoints "
        "carried one)",
    )
