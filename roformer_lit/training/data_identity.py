"""What a run trained and validated on, by content: its data identity, and where a run keeps it.

A run's settings name its corpus and tokenizer by *path* (``data.train_files``,
``data.tokenizer_file``); two runs with the same paths may still have seen other data (a
corpus edited between them, a tokenizer regenerated, another machine's copy). The data
identity names the *content*: a SHA-256 over

* the tokenizer's SHA-256 (``tokenizer_sha256`` of the prepared corpus: the ids' meaning);
* for the training and the validation prepared corpus (the validation one ``None`` where
  validation is a held-out share of the training corpus, ``data.val_fraction`` being a
  setting): the dtype, each shard's token count and SHA-256, and ``doc_ends.bin``'s SHA-256
  -- the token arrays and document ends the model saw.

Every checksum is one the shard writer computed while writing the shards and that
:func:`~roformer_lit.data.shards.verify_entry` checks before the entry is used, read from
``meta.json``: the identity costs no read of the corpus, is the same for every byte-identical
copy of it wherever it lies (unlike the cache key's fingerprint of path, size, mtime, inode
and ctime), and every prepared corpus of this format has it, so older cache entries have one
too. (Shards are cut every :data:`~roformer_lit.data.shards.DEFAULT_SHARD_TOKENS` tokens; a
corpus prepared with another ``shard_tokens`` through the Python API has another identity
for the same tokens: two runs are then told apart, never merged.)

Which data have one: every corpus goes through the prepared cache -- files, the bundled
corpus, a Hugging Face dataset (whose ``_fingerprint`` names a version of it but not the
tokens a run made of it) -- so each has an identity. Fine-tuning data -- the user's task
files, the shipped task, a GLUE download, which can change between a run and its resume --
have theirs by the content of their examples (:mod:`roformer_lit.finetune.task_identity`).
A position task is generated in memory from its settings and seed: those identify it, and
it has none (``None``). A run without an identity (those from before the record, a position
task) is compared by its settings alone, as before.

What an evaluation reads may be less than what the run trained on: ``finetune validate``
reads the validation splits alone. Such data have an *evaluated identity* of their own (of
what ``validate``/``test`` read), which the run records beside its data identity
(:data:`EVALUATED_IDENTITY_KEY`) and an evaluation compares and records
(``evaluations.jsonl``); where it is not recorded (pretraining: an evaluation prepares the
whole corpus) it is the data identity.

Where a run keeps it: in every checkpoint, beside the tokenizer in the data module's state
(:data:`DATA_IDENTITY_KEY`, :func:`checkpoint_data_identity`), and in its run directory,
``data_identity.json`` (:data:`DATA_IDENTITY_FILE`, written when its ``fit`` starts,
:func:`write_record`; read by ``compare`` and ``sweep``, :func:`read_record`). Plain Python:
the readers of runs import it without the training stack.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roformer_lit.run_files import RunFileError, read_text

#: The key of the identity in a checkpoint's data-module state (beside its tokenizer).
DATA_IDENTITY_KEY = "data_identity"
#: The key of the identity of what an evaluation reads, where it is not the data identity.
EVALUATED_IDENTITY_KEY = "evaluated_identity"
#: The run directory's record of its data identity.
DATA_IDENTITY_FILE = "data_identity.json"
#: Hex digits of an identity that messages and ``compare``'s labels show.
SHORT_DIGITS = 8


def entry_content(meta: Mapping[str, Any]) -> dict[str, Any]:
    """What a prepared corpus's ``meta.json`` says of its content: the dtype, each shard's
    token count and SHA-256, and the SHA-256 of the document ends."""
    return {
        "dtype": meta["dtype"],
        "shards": [[int(s["tokens"]), str(s["sha256"])] for s in meta["shards"]],
        "doc_ends_sha256": meta["doc_ends_sha256"],
    }


def data_identity(train: Mapping[str, Any], validation: Mapping[str, Any] | None) -> str:
    """The hex SHA-256 identity (module docstring) of the data of the prepared corpora whose
    ``meta.json`` are ``train`` and ``validation`` (None: validation is held out of
    ``train``)."""
    description = {
        "tokenizer_sha256": train["tokenizer_sha256"],
        "train": entry_content(train),
        "validation": None if validation is None else entry_content(validation),
    }
    text = json.dumps(description, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def short_identity(identity: str) -> str:
    """The first :data:`SHORT_DIGITS` hex digits (messages and labels)."""
    return identity[:SHORT_DIGITS]


def is_identity(value: Any) -> bool:
    """Whether ``value`` is an identity: 64 lowercase hex digits."""
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )


def checkpoint_data_identity(checkpoint: Mapping[str, Any], evaluated: bool = False) -> str | None:
    """The identity a loaded checkpoint records (in a data-module state, any top-level
    mapping holding :data:`DATA_IDENTITY_KEY`), or None: a checkpoint from before the
    record, of a run whose data have none, or whose record is not an identity.
    ``evaluated``: the identity of what an evaluation reads (:data:`EVALUATED_IDENTITY_KEY`
    where the checkpoint records one, else the data identity)."""
    for value in checkpoint.values():
        if isinstance(value, Mapping) and DATA_IDENTITY_KEY in value:
            found = value[DATA_IDENTITY_KEY]
            if evaluated and EVALUATED_IDENTITY_KEY in value:
                found = value[EVALUATED_IDENTITY_KEY]
            return found if is_identity(found) else None
    return None


def write_record(
    run_dir: str | os.PathLike[str], identity: str, describe: str, evaluated: str | None = None
) -> Path:
    """Write ``<run_dir>/data_identity.json`` (atomically: a reader sees the whole file or
    none): the identity, the evaluated identity where it differs (``evaluated``), and, for
    a reader, the data in a few words."""
    path = Path(run_dir) / DATA_IDENTITY_FILE
    record = {DATA_IDENTITY_KEY: identity, "data": describe}
    if evaluated is not None and evaluated != identity:
        record[EVALUATED_IDENTITY_KEY] = evaluated
    text = json.dumps(record, indent=1) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{DATA_IDENTITY_FILE}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_record(run_dir: str | os.PathLike[str]) -> str | None:
    """The identity ``<run_dir>/data_identity.json`` records, or None where the run has no
    such file (a run from before the record, data without an identity).

    Raises:
        RunFileError: the file is there but unreadable, not JSON, or holds no identity.
    """
    path = Path(run_dir) / DATA_IDENTITY_FILE
    if not os.path.lexists(path):
        return None
    try:
        record = json.loads(read_text(path, max_bytes=1 << 16))
    except ValueError as exc:
        raise RunFileError("not valid JSON") from exc
    found = record.get(DATA_IDENTITY_KEY) if isinstance(record, dict) else None
    if not is_identity(found):
        raise RunFileError(f"its {DATA_IDENTITY_KEY} is not a SHA-256")
    return found


__all__ = [
    "DATA_IDENTITY_FILE",
    "DATA_IDENTITY_KEY",
    "EVALUATED_IDENTITY_KEY",
    "SHORT_DIGITS",
    "checkpoint_data_identity",
    "data_identity",
    "entry_content",
    "is_identity",
    "read_record",
    "short_identity",
    "write_record",
]
