"""Reading corpora: ``.txt`` / ``.jsonl`` files (optionally ``.gz`` / ``.xz``) and the bundled corpus.

* ``.txt``: one document (paragraph) per line; blank lines are ignored.
* ``.jsonl``: one JSON object per line; the document is the string in ``text_field``.

Every problem with a user file raises :class:`roformer_lit.errors.ConfigError` with a
one-line message that names the file.
"""

from __future__ import annotations

import gzip
import json
import lzma
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from roformer_lit.errors import ConfigError

TEXT_EXTENSIONS: tuple[str, ...] = (".txt", ".jsonl")
COMPRESSIONS: tuple[str, ...] = ("", ".gz", ".xz")
VALID_EXTENSIONS: tuple[str, ...] = tuple(e + c for e in TEXT_EXTENSIONS for c in COMPRESSIONS)

#: File name of the bundled corpus inside ``roformer_lit/data/corpus/``.
DEFAULT_CORPUS_FILES: tuple[str, ...] = ("python_docs.txt.xz",)


def _split_extension(path: Path) -> tuple[str, str]:
    """Return (format extension, compression suffix), or raise ConfigError if unsupported."""
    name = path.name.lower()
    for ext in VALID_EXTENSIONS:
        if name.endswith(ext):
            comp = next((c for c in COMPRESSIONS if c and ext.endswith(c)), "")
            return ext[: len(ext) - len(comp)], comp
    raise ConfigError(
        f"unsupported corpus file extension for {path}: expected one of {', '.join(VALID_EXTENSIONS)}"
    )


def _decompress(raw: bytes, compression: str, path: Path) -> bytes:
    try:
        if compression == ".gz":
            return gzip.decompress(raw)
        if compression == ".xz":
            return lzma.decompress(raw)
    except (OSError, EOFError, lzma.LZMAError) as e:
        raise ConfigError(f"cannot decompress {path} as {compression}: {e}") from None
    return raw


def _decode(data: bytes, path: Path) -> str:
    """Bytes -> str, rejecting empty, binary and non-UTF-8 content."""
    if not data.strip():
        raise ConfigError(f"corpus file is empty: {path}")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise ConfigError(
            f"corpus file looks binary (NUL byte at offset {nul}), expected UTF-8 text: {path}"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"corpus file is not valid UTF-8 (bad byte 0x{data[e.start]:02x} at byte offset "
            f"{e.start}): {path}"
        ) from None


def _parse_txt(text: str) -> list[str]:
    return [s for line in text.splitlines() if (s := line.strip())]


def _parse_jsonl(text: str, path: Path, text_field: str) -> list[str]:
    docs: list[str] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}:{lineno}: line is not valid JSON ({e.msg})") from None
        if not isinstance(obj, dict):
            raise ConfigError(
                f"{path}:{lineno}: expected a JSON object with field {text_field!r}, "
                f"got {type(obj).__name__}"
            )
        if text_field not in obj:
            keys = ", ".join(sorted(map(str, obj))) or "none"
            raise ConfigError(
                f"{path}:{lineno}: missing text field {text_field!r} (fields present: {keys}); "
                f"set data.text_field"
            )
        value = obj[text_field]
        if not isinstance(value, str):
            raise ConfigError(
                f"{path}:{lineno}: field {text_field!r} must be a string, got {type(value).__name__}"
            )
        if doc := value.strip():
            docs.append(" ".join(doc.splitlines()))
    return docs


def read_documents(paths: str | Path | Sequence[str | Path], text_field: str = "text") -> list[str]:
    """Read documents from one or more corpus files, in order.

    Args:
        paths: a path or list of paths with extension ``.txt``/``.jsonl`` (optionally
            followed by ``.gz`` or ``.xz``).
        text_field: field holding the text in ``.jsonl`` files.

    Returns:
        The non-empty documents (stripped), file after file.

    Raises:
        ConfigError: missing/empty/binary/non-UTF-8 file, bad JSON line, missing text
            field, unsupported extension, or no documents at all.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise ConfigError("no corpus files given")
    docs: list[str] = []
    for p in paths:
        path = Path(p).expanduser()
        ext, comp = _split_extension(path)
        if not path.exists():
            raise ConfigError(f"corpus file not found: {path}")
        if not path.is_file():
            raise ConfigError(f"corpus path is not a regular file: {path}")
        text = _decode(_decompress(path.read_bytes(), comp, path), path)
        file_docs = _parse_txt(text) if ext == ".txt" else _parse_jsonl(text, path, text_field)
        if not file_docs:
            raise ConfigError(f"corpus file contains no documents: {path}")
        docs.extend(file_docs)
    return docs


def load_default_corpus() -> list[str]:
    """Return the bundled English corpus (Python docs prose), one document per paragraph.

    Decompressed from package data via :mod:`importlib.resources`; see
    ``roformer_lit/data/corpus/SOURCE.md`` for provenance and license.
    """
    root = resources.files("roformer_lit.data") / "corpus"
    docs: list[str] = []
    for name in DEFAULT_CORPUS_FILES:
        raw = (root / name).read_bytes()
        docs.extend(_parse_txt(lzma.decompress(raw).decode("utf-8")))
    return docs


def split_train_val(docs: Sequence[str], val_fraction: float) -> tuple[list[str], list[str]]:
    """Deterministic split by position: the last ``val_fraction`` of documents is validation.

    At least one document goes to each side.

    Raises:
        ConfigError: if ``val_fraction`` is not in (0, 1) or there are fewer than 2 documents.
    """
    if not 0.0 < val_fraction < 1.0:
        raise ConfigError(f"val_fraction must be in (0, 1), got {val_fraction}")
    if len(docs) < 2:
        raise ConfigError(
            f"cannot split {len(docs)} document(s) into train and validation; "
            "give more documents or data.val_files"
        )
    n_val = min(len(docs) - 1, max(1, round(len(docs) * val_fraction)))
    cut = len(docs) - n_val
    return list(docs[:cut]), list(docs[cut:])
