"""Corpora as lists of documents: the bundled default corpus, user files, the train/val split.

The streaming readers and the path expansion live in :mod:`roformer_lit.data.sources`; this
module keeps the list-returning helpers (small corpora, tests) and the bundled corpus.

* ``.txt``: one document (paragraph) per line; blank lines are ignored.
* ``.jsonl``: one JSON object per line; the document is the string in ``text_field``.
* ``.parquet``: the ``text_field`` column.

Every problem with a user file raises :class:`roformer_lit.errors.ConfigError` with a
one-line message that names the file.
"""

from __future__ import annotations

import hashlib
import lzma
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from roformer_lit.data.sources import (
    COMPRESSIONS,
    TEXT_EXTENSIONS,
    VALID_EXTENSIONS,
    expand_paths,
    iter_documents,
)
from roformer_lit.errors import ConfigError

__all__ = [
    "BundledSource",
    "COMPRESSIONS",
    "DEFAULT_CORPUS_FILES",
    "TEXT_EXTENSIONS",
    "VALID_EXTENSIONS",
    "bundled_corpus_bytes",
    "iter_default_corpus",
    "load_default_corpus",
    "read_documents",
    "split_train_val",
    "validation_count",
]

#: File name of the bundled corpus inside ``roformer_lit/data/corpus/``.
DEFAULT_CORPUS_FILES: tuple[str, ...] = ("python_docs.txt.xz",)


def read_documents(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], text_field: str = "text"
) -> list[str]:
    """Read documents from corpus files (a path, list, glob or directory), in order.

    Returns:
        The non-empty documents (stripped), file after file.

    Raises:
        ConfigError: missing/empty/binary/non-UTF-8 file, bad JSON line, missing text
            field, unsupported extension, or no documents at all.
    """
    if not isinstance(paths, (str, os.PathLike)) and not paths:
        raise ConfigError("no corpus files given")
    return list(iter_documents(expand_paths(paths, "corpus files"), text_field))


def bundled_corpus_bytes() -> list[bytes]:
    """The compressed bytes of the bundled corpus files (for its fingerprint)."""
    root = resources.files("roformer_lit.data") / "corpus"
    return [(root / name).read_bytes() for name in DEFAULT_CORPUS_FILES]


def iter_default_corpus() -> Iterator[str]:
    """The bundled corpus's documents, one per non-blank line (it is 1.5 MB of text)."""
    for raw in bundled_corpus_bytes():
        for line in lzma.decompress(raw).decode("utf-8").splitlines():
            if s := line.strip():
                yield s


@dataclass(frozen=True)
class BundledSource:
    """The bundled corpus as a :class:`~roformer_lit.data.sources.DocumentSource`."""

    def documents(self) -> Iterator[str]:
        return iter_default_corpus()

    def fingerprint(self) -> Any:
        return {
            "kind": "bundled",
            "sha256": [hashlib.sha256(raw).hexdigest() for raw in bundled_corpus_bytes()],
        }

    def describe(self) -> str:
        return "the bundled corpus"

    def size_hint(self) -> int | None:
        return None


def load_default_corpus() -> list[str]:
    """Return the bundled English corpus (Python docs prose), one document per paragraph.

    Decompressed from package data via :mod:`importlib.resources`; see
    ``roformer_lit/data/corpus/SOURCE.md`` for provenance and license.
    """
    return list(iter_default_corpus())


def validation_count(num_documents: int, val_fraction: float) -> int:
    """Documents held out for validation: ``min(n - 1, max(1, round(n * val_fraction)))``.

    Raises:
        ConfigError: if ``val_fraction`` is not in (0, 1) or there are fewer than 2 documents.
    """
    if not 0.0 < val_fraction < 1.0:
        raise ConfigError(f"val_fraction must be in (0, 1), got {val_fraction}")
    if num_documents < 2:
        raise ConfigError(
            f"cannot split {num_documents} document(s) into train and validation; "
            "give more documents or data.val_files"
        )
    return min(num_documents - 1, max(1, round(num_documents * val_fraction)))


def split_train_val(docs: Sequence[str], val_fraction: float) -> tuple[list[str], list[str]]:
    """Deterministic split by position: the last ``val_fraction`` of documents is validation.

    At least one document goes to each side (see :func:`validation_count`).
    """
    cut = len(docs) - validation_count(len(docs), val_fraction)
    return list(docs[:cut]), list(docs[cut:])
