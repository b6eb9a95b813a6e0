"""A checkpoint's architecture record, sealed by a digest written with it.

A pretraining checkpoint says which model its weights are by its flat ``hyper_parameters``.
An edit of that record that keeps every tensor's shape (``position_kwargs.base`` changed,
``layer_plan`` deleted, ``block.mlp`` from ``geglu`` to ``swiglu``, a kernel option
changed) loaded without a word as another model than the one the weights trained. So
``MaskedLM`` writes, with every checkpoint, :data:`DIGEST_KEY`: the SHA-256 of the
canonical architecture record (:func:`architecture_record`: every field of
:class:`~roformer_lit.encoder_config.EncoderConfig` as saved, a field left out at its
default, serialised with sorted keys). The one reader of checkpoints
(:func:`~roformer_lit.training.checkpoint_io.read_checkpoint`) computes it again from the
``hyper_parameters`` it read and refuses a mismatch in one line (:func:`check_digest`),
before anything is built. A checkpoint written before the digest (none recorded) is read
as before.

A fine-tuning checkpoint holds the same record of the encoder it was fine-tuned from
(:data:`ENCODER_RECORD_KEY`, sealed by :data:`ENCODER_DIGEST_KEY`, the pretrained
checkpoint's own :data:`DIGEST_KEY`), so what it was fine-tuned from is known after that
file is gone; :func:`check_encoder_digest` refuses an edit of it the same way.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from roformer_lit.encoder_config import ENCODER_FIELDS, encoder_defaults
from roformer_lit.errors import ConfigError
from roformer_lit.validation import as_data

#: The checkpoint key of the architecture record's digest.
DIGEST_KEY = "architecture_digest"
_ALGORITHM = "sha256"
#: What a recorded digest is: ``sha256:`` and 64 hexadecimal digits.
DIGEST_FORM = re.compile(rf"{_ALGORITHM}:[0-9a-f]{{64}}")
#: The checkpoint key of a fine-tune's pretrained encoder: its :func:`architecture_record`.
ENCODER_RECORD_KEY = "encoder_architecture"
#: The checkpoint key of that record's digest (the pretrained checkpoint's :data:`DIGEST_KEY`).
ENCODER_DIGEST_KEY = "encoder_architecture_digest"
#: The checkpoint key of the digest of the pretrained encoder *weights* a fine-tune started
#: from (:mod:`roformer_lit.finetune.pretrained_weights`); beside the records above so the
#: one reader of checkpoints checks its form with theirs.
PRETRAINED_WEIGHTS_KEY = "pretrained_encoder_weights_digest"


def architecture_record(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Every architecture field of ``settings`` (a checkpoint's flat ``hyper_parameters``,
    or a config's ``as_dict()``) as plain data, a field left out at its default: the
    training settings and Lightning's own records are not part of it."""
    defaults = encoder_defaults()
    return {name: as_data(settings.get(name, defaults[name])) for name in ENCODER_FIELDS}


def record_digest(record: Any) -> str:
    """``sha256:<hex>`` of a checkpoint record (plain data), serialised as JSON with sorted
    keys (a number keeps its type: ``100`` is not ``100.0``, ``1`` not ``true``). A record
    that JSON cannot sort (a mapping with keys of mixed types: an edit) has a digest no
    checkpoint records. The one digest of every sealed record (this module's, and the
    training settings' of :mod:`~roformer_lit.training.settings_digest`)."""
    try:
        text = json.dumps(record, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):
        return f"{_ALGORITHM}:unreadable"
    return f"{_ALGORITHM}:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"


def architecture_digest(settings: Mapping[str, Any]) -> str:
    """:func:`record_digest` of :func:`architecture_record` of ``settings``."""
    return record_digest(architecture_record(settings))


def is_digest(value: Any) -> bool:
    """Whether ``value`` is a recorded digest (:data:`DIGEST_FORM`)."""
    return isinstance(value, str) and DIGEST_FORM.fullmatch(value) is not None


def check_digest(checkpoint: Mapping[str, Any], path: Any) -> None:
    """Refuse, in one ConfigError line naming the checkpoint, one whose recorded
    architecture (its ``hyper_parameters``) is not the one its :data:`DIGEST_KEY` was
    written for; nothing where it records no digest (written before it)."""
    recorded = checkpoint.get(DIGEST_KEY)
    if recorded is None:
        return
    settings = checkpoint.get("hyper_parameters")
    if isinstance(settings, Mapping) and architecture_digest(settings) == recorded:
        return
    raise ConfigError(
        f"checkpoint {path} is damaged: its recorded architecture (hyper_parameters) does "
        f"not match what was saved with it ({DIGEST_KEY}): it was edited after it was "
        "written, and would load as another model than its weights trained; use a "
        "checkpoint as fit wrote it"
    )


def check_encoder_digest(checkpoint: Mapping[str, Any], path: Any) -> None:
    """Refuse, in one ConfigError line naming the checkpoint, one whose recorded encoder
    architecture (:data:`ENCODER_RECORD_KEY`, a fine-tune's) is not the one its
    :data:`ENCODER_DIGEST_KEY` was written for, or holds one of the two without the other;
    nothing where it records neither (a pretraining checkpoint, or a fine-tune written
    before them)."""
    record = checkpoint.get(ENCODER_RECORD_KEY)
    recorded = checkpoint.get(ENCODER_DIGEST_KEY)
    if record is None and recorded is None:
        return
    if isinstance(record, Mapping) and record_digest(record) == recorded:
        return
    raise ConfigError(
        f"checkpoint {path} is damaged: its record of the encoder it was fine-tuned from "
        f"({ENCODER_RECORD_KEY}) does not match what was saved with it ({ENCODER_DIGEST_KEY}): "
        "it was edited after it was written; use a checkpoint as finetune wrote it"
    )
