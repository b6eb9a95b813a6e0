"""What a fine-tune trained and validated on, by content: the data identity of a task's
examples (:mod:`roformer_lit.training.data_identity` gives pretraining's and says where a
run keeps it).

A fine-tune reads the user's own files (``data.train_files``, ``data.val_files``), the
shipped task or a GLUE download: files a path names, which can be edited between a run and
its resume or evaluation. Its identity is a SHA-256 over

* the tokenizer's vocabulary (:func:`vocabulary_digest`: each token and its id): what the
  ids the examples become mean;
* each split's examples as the head sees them (:func:`split_digest`): every example's text,
  its pair (or none) and its label as a float (``1`` and ``1.0`` are one class), in order
  (the order of a file is the order of a pass before shuffling).

Why these: they are exact (the same examples and vocabulary give the same ids at any
``data.max_length``, and any edited character, label or row order gives another identity)
and cheap (the examples are read anyway to count the labels and to encode them; hashing
them costs no tokenization). Not the encoded ids: those change with ``data.max_length``
(truncation), a setting of its own, so evaluating at another length (a scheme's
extrapolation) would read as other data. Not the tokenizer's JSON: the ids depend on its
vocabulary, not on how a ``tokenizers`` version serialises it.

:func:`task_identity` names a set of splits: a run's data identity names its training and
validation splits, the identity of what an evaluation reads its validation splits alone
(``finetune validate`` needs no training file).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping

from roformer_lit.finetune.examples import Example


def vocabulary_digest(vocabulary: Mapping[str, int]) -> str:
    """Hex SHA-256 of a tokenizer's vocabulary (token -> id), in id order."""
    pairs = sorted(vocabulary.items(), key=lambda item: (item[1], item[0]))
    text = json.dumps(pairs, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def split_digest(examples: Iterable[Example]) -> str:
    """Hex SHA-256 of a split's examples in order: one JSON line ``[text, pair, label]`` each
    (the label as a float, as the head sees a class index or a target)."""
    digest = hashlib.sha256()
    for example in examples:
        row = [example.text, example.text_pair, float(example.label)]
        digest.update(json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def task_identity(vocabulary: str, splits: Mapping[str, str]) -> str:
    """The hex SHA-256 identity of the splits ``splits`` (split name -> its
    :func:`split_digest`) under the vocabulary ``vocabulary`` (its :func:`vocabulary_digest`)."""
    description = {"vocabulary": vocabulary, "splits": dict(splits)}
    text = json.dumps(description, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


__all__ = ["split_digest", "task_identity", "vocabulary_digest"]
