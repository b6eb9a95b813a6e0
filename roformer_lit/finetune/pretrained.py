"""What a fine-tune takes from a pretrained (``fit``) checkpoint: its encoder and tokenizer.

The encoder is rebuilt from the checkpoint's ``hyper_parameters`` as an
:class:`~roformer_lit.encoder_config.EncoderConfig` (:func:`encoder_config`: every field
of the architecture; one the checkpoint lacks takes its default) and
loaded with its ``encoder.*`` weights (strictly: every weight present and of its shape).
The tokenizer is the one stored in the checkpoint (:mod:`roformer_lit.data.stored_tokenizer`),
so the run works on any machine. A checkpoint of a position task (``data.probe``: a
word-level tokenizer of the task's symbols) is refused, and so is any tokenizer that encodes
more than half of a sample of the task's text as unknown or padding
(:func:`check_tokenizer_covers`, called as each split is encoded). Every file is read with
:func:`~roformer_lit.training.checkpoint_io.read_checkpoint` (``weights_only``).

A resumed fine-tune continues from the pretrained checkpoint it started from
(:func:`check_resumed_pretrained`): naming another one would rebuild the encoder with that
checkpoint's settings (scheme, kernel) under the resumed weights, and record it as the run's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from roformer_lit.component_origins import recorded_origins
from roformer_lit.data.stored_tokenizer import checkpoint_tokenizer, stored_tokenizer_json
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.model import Encoder
from roformer_lit.safe_input import check_checkpoint_file
from roformer_lit.training.architecture_digest import ENCODER_RECORD_KEY
from roformer_lit.training.checkpoint_io import (
    PRETRAINING,
    check_architecture_record,
    checkpoint_kind,
    read_checkpoint,
)


def pretrained_refusal(checkpoint: dict[str, Any], path: str | Path) -> str | None:
    """Why a read checkpoint cannot be fine-tuned from (None: it can): not a ``fit``
    checkpoint with an encoder (e.g. a fine-tuned one), or one of a position task, whose
    tokenizer cannot encode text. The one rule for ``model.pretrained`` and for the hint a
    misplaced ``--ckpt_path`` gets."""
    hparams = checkpoint.get("hyper_parameters")
    state = checkpoint.get("state_dict") or {}
    if (
        not isinstance(hparams, dict)
        or checkpoint_kind(checkpoint) != PRETRAINING
        or not any(k.startswith("encoder.") for k in state)
    ):
        return f"{path} is not a pretraining checkpoint (one written by python -m roformer_lit fit)"
    try:  # the architecture it records, checked as every reader of a pretraining one does
        check_architecture_record(checkpoint, path)
    except ConfigError as exc:
        return str(exc)
    probe = (checkpoint.get("datamodule_hyper_parameters") or {}).get("probe")
    if probe is not None:
        return (
            f"{path} was trained on the position task {probe!r} (data.probe): its tokenizer "
            "knows only the task's symbols and cannot encode text; fine-tune a checkpoint "
            "pretrained on a corpus"
        )
    return None


def read_pretrained(path: str | Path) -> dict[str, Any]:
    """The pretrained checkpoint at ``path``; one line if it is missing, unreadable, or not
    a ``fit`` checkpoint with an encoder (e.g. a fine-tuned one)."""
    if path is None or not str(path).strip():
        raise ConfigError("model.pretrained is required: a checkpoint written by fit")
    check_checkpoint_file(path, "model.pretrained: checkpoint")
    checkpoint = read_checkpoint(path)
    refusal = pretrained_refusal(checkpoint, path)
    if refusal is not None:
        raise ConfigError(f"model.pretrained: {refusal}")
    return checkpoint


def encoder_config(checkpoint: dict[str, Any], dropout: float | None = None) -> EncoderConfig:
    """The architecture of a pretrained checkpoint: every field of
    :class:`~roformer_lit.encoder_config.EncoderConfig` from its flat ``hyper_parameters``
    (a field the checkpoint predates takes its default). ``dropout``, if given, replaces
    the hidden dropout; the attention dropout stays the run's (its ``dropout`` when it had
    none of its own)."""
    try:
        config = EncoderConfig.from_settings(checkpoint.get("hyper_parameters") or {})
    except ConfigError as exc:  # its scheme's plugin gone, say: the line names where it was
        raise ConfigError(
            f"model.pretrained: the pretrained checkpoint's model cannot be built here: "
            f"{exc}{recorded_origins(checkpoint, exc)}"
        ) from None
    if dropout is None:
        return config
    return config.replace(attention_dropout=config.attention_dropout_value, dropout=dropout)


def load_encoder(path: str | Path, dropout: float | None = None) -> Encoder:
    """The pretrained encoder of the checkpoint at ``path``, weights loaded."""
    return load_pretrained_encoder(path, dropout)[0]


def load_pretrained_encoder(
    path: str | Path, dropout: float | None = None
) -> tuple[Encoder, EncoderConfig]:
    """The pretrained encoder of the checkpoint at ``path``, weights loaded, and the
    checkpoint's own architecture (before ``dropout`` replaces its hidden dropout): what a
    fine-tuned checkpoint records it was fine-tuned from
    (:mod:`~roformer_lit.finetune.encoder_record`)."""
    checkpoint = read_pretrained(path)
    config = encoder_config(checkpoint)
    encoder = Encoder(encoder_config(checkpoint, dropout))
    prefix = "encoder."
    weights = {
        key[len(prefix) :]: value
        for key, value in checkpoint["state_dict"].items()
        if key.startswith(prefix)
    }
    try:
        encoder.load_state_dict(weights, strict=True)
    except RuntimeError as exc:
        detail = " ".join(str(exc).split())[:200]
        raise ConfigError(
            f"model.pretrained: {path} does not fit its own encoder: {detail}"
        ) from None
    return encoder, config


def load_tokenizer(path: str | Path) -> Tokenizer:
    """The tokenizer stored in the pretrained checkpoint; one line if it has none, or if its
    vocabulary is larger than the encoder's embedding table (another run's tokenizer)."""
    checkpoint = read_pretrained(path)
    tokenizer = checkpoint_tokenizer(checkpoint, path)
    if tokenizer is None:
        raise ConfigError(
            f"model.pretrained: {path} holds no tokenizer (written before checkpoints stored "
            "them); pretrain again with this version, or fine-tune another checkpoint"
        )
    vocab = (checkpoint.get("hyper_parameters") or {}).get("vocab_size")
    if vocab is not None and tokenizer.get_vocab_size() > int(vocab):
        raise ConfigError(
            f"model.pretrained: {path} has vocab_size={vocab} but its tokenizer has "
            f"{tokenizer.get_vocab_size()} tokens; the checkpoint is inconsistent"
        )
    return tokenizer


#: Most texts of a split :func:`check_tokenizer_covers` encodes.
COVERAGE_SAMPLE = 256
#: Largest share of a task's tokens that may be unknown or padding: above it the tokenizer
#: was not made for text like the task's (a probe's word-level tokenizer gives 100 %; the
#: bundled corpus's WordPiece gives well under 1 % on English).
MAX_UNKNOWN_SHARE = 0.5


def unknown_share(tokenizer: Tokenizer, texts: list[str]) -> float:
    """Share of the tokens of ``texts`` (no special tokens added) that are ``[UNK]`` or
    ``[PAD]``: what a tokenizer could not encode. 0 when the texts give no token."""
    bad = {tokenizer.token_to_id(t) for t in ("[UNK]", "[PAD]")} - {None}
    total = unknown = 0
    for encoding in tokenizer.encode_batch(texts, add_special_tokens=False):
        total += len(encoding.ids)
        unknown += sum(1 for i in encoding.ids if i in bad)
    return unknown / total if total else 0.0


def check_tokenizer_covers(
    tokenizer: Tokenizer, texts: list[str], pretrained: Any, where: str
) -> None:
    """Refuse, in one line, fine-tuning with a tokenizer that encodes more than
    :data:`MAX_UNKNOWN_SHARE` of the first :data:`COVERAGE_SAMPLE` texts of ``where`` as
    unknown or padding: the encoder would see (almost) nothing of the task and train on
    nothing."""
    sample = [t for t in texts[:COVERAGE_SAMPLE] if t]
    share = unknown_share(tokenizer, sample)
    if share > MAX_UNKNOWN_SHARE:
        raise ConfigError(
            f"model.pretrained: the tokenizer of {pretrained} encodes {share:.0%} of the "
            f"tokens of {where} (first {len(sample)} texts) as unknown or padding (at most "
            f"{MAX_UNKNOWN_SHARE:.0%}): it was not made for this text; fine-tune a checkpoint "
            "pretrained on a corpus like the task's"
        )


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name one file: equal as written, or the same existing file."""
    if str(a) == str(b):
        return True
    try:
        return os.path.samefile(Path(a).expanduser(), Path(b).expanduser())
    except OSError:
        return False


def check_resumed_pretrained(ckpt: Any, recorded: Any, named: Any) -> None:
    """Refuse, in one line naming both, resuming the fine-tuning checkpoint ``ckpt`` (which
    was fine-tuned from ``recorded``, its ``hyper_parameters['pretrained']``) with another
    pretrained checkpoint ``named`` (``model.pretrained``). Nothing to check when either is
    unknown."""
    if recorded is None or named is None or _same_file(recorded, named):
        return
    where = "" if Path(str(recorded)).expanduser().is_file() else " (not found from here)"
    raise ConfigError(
        f"--ckpt_path {ckpt} was fine-tuned from {recorded}{where}, not model.pretrained="
        f"{named}; resume with --model.pretrained {recorded}, or start a new fine-tune "
        "without --ckpt_path"
    )


def _encoder_shapes(checkpoint: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """``{name: shape}`` of a checkpoint's ``encoder.*`` weights."""
    state = checkpoint.get("state_dict") or {}
    return {k: tuple(v.shape) for k, v in state.items() if k.startswith("encoder.")}


def _architecture(checkpoint: dict[str, Any]) -> dict[str, Any]:
    """The encoder settings of a pretrained checkpoint that change what a trained model
    computes (every field but the dropouts, which evaluation does not apply)."""
    fields = encoder_config(checkpoint).as_dict()
    return {k: v for k, v in fields.items() if "dropout" not in k}


def check_validated_pretrained(
    ckpt: Any, checkpoint: dict[str, Any], named: Any
) -> dict[str, Any] | None:
    """``finetune validate``: ``model.pretrained`` (the one the fine-tuning checkpoint
    ``ckpt`` records, or a typed one: the run's pretrained checkpoint found elsewhere) builds
    the classifier and tokenizes the task, so it must be the run's: the tokenizer the
    fine-tune stored (another reads every text as other token ids; the file at the recorded
    path too, which may have been replaced since), the recorded checkpoint's encoder
    settings where a typed one is not that file, that one is still readable and the
    fine-tuned checkpoint has no record of them (another scheme or kernel computes something
    else with the same weights; a record is compared by
    :func:`~roformer_lit.finetune.encoder_record.check_encoder_record`, whatever the path),
    and the fine-tuned encoder's weight names and shapes. One line naming both otherwise.
    Returns the pretrained checkpoint read from ``named`` (``None`` when none is named), so
    the caller need not read it again."""
    recorded = (checkpoint.get("hyper_parameters") or {}).get("pretrained")
    if named is None:
        return None
    same = recorded is not None and _same_file(recorded, named)
    given = read_pretrained(named)
    problem = None
    stored = stored_tokenizer_json(checkpoint)
    if stored is not None and stored_tokenizer_json(given) != stored:
        problem = "its tokenizer is not the one the fine-tune used (other token ids)"
    elif (  # a checkpoint with its encoder's record is compared with that instead
        not same
        and ENCODER_RECORD_KEY not in checkpoint
        and recorded is not None
        and Path(str(recorded)).expanduser().is_file()
    ):
        ran, now = _architecture(read_pretrained(recorded)), _architecture(given)
        changed = [k for k in ran if ran[k] != now.get(k)]
        if changed:
            key = changed[0]
            problem = f"its model.{key}={now.get(key)!r}, the run's {ran[key]!r}"
    if problem is None:
        ran_shapes, now_shapes = _encoder_shapes(checkpoint), _encoder_shapes(given)
        if ran_shapes != now_shapes:
            key = sorted(ran_shapes.keys() ^ now_shapes.keys()) or [
                k for k in ran_shapes if ran_shapes[k] != now_shapes[k]
            ]
            problem = f"its encoder weights differ from the fine-tuned ones (first: {key[0]})"
    if problem is None:
        return given
    if same:
        raise ConfigError(
            f"model.pretrained {named}, the checkpoint --ckpt_path {ckpt} was fine-tuned "
            f"from, has changed since the fine-tune: {problem}; give a copy of it as fit "
            "wrote it with --model.pretrained"
        )
    raise ConfigError(
        f"--model.pretrained {named} is not the encoder --ckpt_path {ckpt} was fine-tuned "
        f"from ({recorded}): {problem}; leave --model.pretrained out, or give a copy of "
        f"{recorded}"
    )
