"""A fine-tuned checkpoint's record of the encoder it was fine-tuned from.

A fine-tuned checkpoint holds the encoder's weights, not its settings: every load rebuilds
the encoder from ``model.pretrained``, then loads the fine-tuned weights into it. Another
pretrained checkpoint whose scheme has no weights of its own (``rope`` -> ``nope``, another
kernel) loads the same weights into another model, which evaluated or resumed with exit 0;
``check_validated_pretrained`` could tell only while the recorded pretrained file was
still there. So :class:`~roformer_lit.finetune.module.SequenceClassifier` writes, with
every checkpoint, the architecture record of the pretrained encoder (what a pretraining
checkpoint's digest seals: :func:`~roformer_lit.training.architecture_digest.architecture_record`)
and its digest (:func:`write_encoder_record`), and every load of a fine-tuned checkpoint
compares it with the encoder rebuilt now (:func:`check_encoder_record`): the CLI before
anything is built or written, and ``SequenceClassifier.load_run_state`` for any load by
Lightning. A mismatch is one line naming each differing field. A checkpoint written before
the record (none recorded) loads as before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from roformer_lit.encoder_config import EncoderConfig, canonical_model
from roformer_lit.errors import ConfigError
from roformer_lit.training.architecture_digest import (
    ENCODER_DIGEST_KEY,
    ENCODER_RECORD_KEY,
    architecture_record,
    check_encoder_digest,
    record_digest,
)

#: Fields that change what the encoder computes only while it trains (evaluation applies
#: no dropout): a fine-tuned checkpoint evaluates alike under any of their values.
TRAINING_ONLY = frozenset({"dropout", "attention_dropout"})
#: Most characters of a value the refusal shows.
_SHOWN = 60


def encoder_record(config: EncoderConfig) -> dict[str, Any]:
    """The architecture record of ``config`` (the pretrained checkpoint's encoder, before a
    fine-tune's ``dropout`` replaces its own): the record its digest seals."""
    return architecture_record(config.as_dict())


def held_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded encoder architecture (a fine-tune's :data:`ENCODER_RECORD_KEY`) as the
    config built from it holds it (:func:`~roformer_lit.encoder_config.canonical_model`):
    a record written before the config held ``block`` and the options so (``block: {mlp:
    swiglu, norm: layernorm}``) is the record :func:`encoder_record` writes now for that
    encoder (``{mlp: swiglu}``), so the two compare, and digest, as one architecture."""
    return architecture_record(canonical_model(record))


def held_record_digest(record: Any) -> str | None:
    """:func:`record_digest` of :func:`held_record` of ``record``; None where it is no
    mapping."""
    return record_digest(held_record(record)) if isinstance(record, Mapping) else None


def write_encoder_record(checkpoint: dict[str, Any], config: EncoderConfig) -> None:
    """Add the pretrained encoder's record and its digest to a checkpoint being saved."""
    record = encoder_record(config)
    checkpoint[ENCODER_RECORD_KEY] = record
    checkpoint[ENCODER_DIGEST_KEY] = record_digest(record)


def _shown(value: Any) -> str:
    """A record value as the refusal shows it: a string as it is, other data as JSON."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=repr)
    return text if len(text) <= _SHOWN else f"{text[: _SHOWN - 3]}..."


def differing_fields(
    recorded: Mapping[str, Any], given: Mapping[str, Any], training: bool
) -> list[str]:
    """The fields of two architecture records whose values differ (a number keeps its type,
    as in the digest), in the record's order; the dropouts only when ``training``."""
    names = [*given, *(name for name in recorded if name not in given)]
    return [
        name
        for name in names
        if (training or name not in TRAINING_ONLY)
        and record_digest(recorded.get(name)) != record_digest(given.get(name))
    ]


def check_encoder_record(
    checkpoint: Mapping[str, Any],
    config: EncoderConfig,
    ckpt: Any,
    pretrained: Any,
    training: bool,
) -> None:
    """Refuse, in one ConfigError line naming each differing field, loading the fine-tuned
    checkpoint ``ckpt`` into an encoder built as ``config`` (from ``pretrained``) when the
    checkpoint records another encoder; the dropouts count only when ``training`` (a
    resume). Nothing to check for a checkpoint that records none (written before)."""
    check_encoder_digest(checkpoint, ckpt)
    recorded = checkpoint.get(ENCODER_RECORD_KEY)
    if recorded is None:
        return
    recorded = held_record(recorded)
    given = encoder_record(config)
    differing = differing_fields(recorded, given, training)
    if not differing:
        return
    fields = "; ".join(
        f"{name}: {_shown(recorded.get(name))} (fine-tuned) vs {_shown(given.get(name))} (given)"
        for name in differing
    )
    run = (checkpoint.get("hyper_parameters") or {}).get("pretrained")
    raise ConfigError(
        f"model.pretrained {pretrained} is not the encoder checkpoint {ckpt} was fine-tuned "
        f"from ({fields}): its weights would load into another model; give the pretrained "
        f"checkpoint it was fine-tuned from ({run}, as fit wrote it) or a copy of it"
    )
