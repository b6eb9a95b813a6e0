"""Whether a corpus's validation source is (part of) its training source.

``data.val_files`` naming a training file (the same path, a file inside a
``data.train_files`` directory or glob, a link to it) or a copy of the training corpus
makes ``val/loss`` a score of text the model trained on, with nothing to show it. Like
fine-tuning's (:meth:`~roformer_lit.finetune.datamodule.TaskDataModule.overlap_note`), this
is said in one ``note:`` line rather than refused: an evaluation on training text can be
meant. Two tests, neither reading the corpus again: a file both sources read (by device
and inode, as :func:`~roformer_lit.data.sources.expand_paths` tells a file named twice),
and prepared corpora of the same content (any source: a copy of the corpus, the same
dataset split twice). A copy of one of several training files is not seen.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roformer_lit.data.sources import DocumentSource, FileSource
from roformer_lit.training.data_identity import entry_content


def _file_ids(source: FileSource) -> dict[tuple[int, int], Path]:
    found: dict[tuple[int, int], Path] = {}
    for path in source.paths:
        try:
            st = os.stat(path)
        except OSError:  # gone since: the reader has said so
            continue
        found.setdefault((st.st_dev, st.st_ino), path)
    return found


def validation_overlap(
    train: DocumentSource,
    validation: DocumentSource,
    train_meta: Mapping[str, Any],
    validation_meta: Mapping[str, Any],
) -> str | None:
    """The ``note:`` line when ``validation`` shares a file with ``train`` or its prepared
    corpus (``validation_meta``) holds the same tokens as the training one; else None."""
    what = None
    if isinstance(train, FileSource) and isinstance(validation, FileSource):
        trained = _file_ids(train)
        shared = [p for key, p in _file_ids(validation).items() if key in trained]
        if shared:
            also = f" and {len(shared) - 1} more" if len(shared) > 1 else ""
            what = f"reads the training file {shared[0]}{also}"
    if what is None and entry_content(train_meta) == entry_content(validation_meta):
        what = "holds the same tokens as the training corpus"
    if what is None:
        return None
    return (
        f"note: the validation corpus {validation.describe()} {what}: val/loss scores text "
        "the model trains on; give held-out data.val_files, or leave them out to hold out "
        "data.val_fraction of the training documents"
    )


__all__ = ["validation_overlap"]
