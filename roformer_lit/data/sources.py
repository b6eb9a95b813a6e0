"""Corpus sources: which files a ``data.train_files`` value names, and their documents, streamed.

One place expands what users type (:func:`expand_paths`):

* a path (``my.txt``), a list of paths (``[a.txt, b.jsonl.gz]``),
* a glob (``'data/*.txt'``, ``'data/**/*.jsonl'``): the matching corpus files, sorted,
* a directory: every corpus file below it (recursively, hidden entries skipped), sorted by path.

Formats (by extension): ``.txt`` (one document per line, blank lines ignored), ``.jsonl``
(one JSON object per line, the document is its ``text_field``), each optionally compressed
as ``.gz``, ``.xz`` or ``.zst`` (the last needs the ``zstandard`` package), and ``.parquet``
(the ``text_field`` column; needs ``pyarrow``).

Documents are *streamed* (:func:`iter_documents`): a file is read line by line (or a Parquet
file batch by batch), so no corpus is ever held in memory. A document is stripped; in
``.jsonl``/``.parquet`` its inner line breaks become spaces, so a document is always one line.
Paths that are not regular files (a FIFO, a device) are refused from ``stat`` before anything
opens them, so they cannot hang a run.

Reading is one guarded layer, shared with fine-tuning's example files
(:mod:`roformer_lit.finetune.examples`): every file is opened by :func:`open_input` and read
through :func:`guarded`, so *any* failure while reading it (a corrupt compressed member, a
library's own error, an exception nobody listed) becomes one
:class:`~roformer_lit.errors.ConfigError` line naming the file, never a traceback. A
compressed file must end where its format says it ends: a truncated ``.gz``, ``.xz`` or
``.zst`` file is refused, never read in part (``.zst`` files are decompressed frame by
frame, and the file must not end inside a frame).
"""

from __future__ import annotations

import glob
import gzip
import io
import json
import lzma
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar

from roformer_lit.errors import ConfigError
from roformer_lit.safe_input import missing_path_hint

TEXT_EXTENSIONS: tuple[str, ...] = (".txt", ".jsonl")
COMPRESSIONS: tuple[str, ...] = ("", ".gz", ".xz", ".zst")
#: Every supported file name ending, e.g. ``.txt``, ``.jsonl.zst``, ``.parquet``.
VALID_EXTENSIONS: tuple[str, ...] = (
    *(e + c for e in TEXT_EXTENSIONS for c in COMPRESSIONS),
    ".parquet",
)
_GLOB_CHARS = "*?["
_PARQUET_BATCH = 1024
_SNIFF_BYTES = 1 << 16


def split_extension(path: Path) -> tuple[str, str]:
    """(format, compression) of a corpus file, e.g. ``('.jsonl', '.gz')``; ConfigError if unsupported."""
    name = path.name.lower()
    if name.endswith(".parquet"):
        return ".parquet", ""
    for ext in TEXT_EXTENSIONS:
        for comp in COMPRESSIONS:
            if name.endswith(ext + comp):
                return ext, comp
    raise ConfigError(
        f"unsupported corpus file extension for {path}: expected one of {', '.join(VALID_EXTENSIONS)}"
    )


def is_corpus_file(path: Path, extensions: tuple[str, ...] = VALID_EXTENSIONS) -> bool:
    """Whether ``path``'s name ends in one of ``extensions``."""
    return path.name.lower().endswith(extensions)


def _stat(path: Path, kind: str = "corpus") -> os.stat_result:
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise ConfigError(f"{kind} file not found: {path}{missing_path_hint(path)}") from None
    except OSError as e:
        raise ConfigError(f"cannot read {kind} path {path}: {e.strerror or e}") from None


def check_regular_file(path: Path, kind: str = "corpus") -> os.stat_result:
    """``stat`` of ``path``; ConfigError unless it is an existing regular file (never opens it)."""
    st = _stat(path, kind)
    if not stat.S_ISREG(st.st_mode):
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file (FIFO, device?)"
        raise ConfigError(f"{kind} path is {what}, expected a {kind} file: {path}")
    return st


def _walk(directory: Path, extensions: tuple[str, ...]) -> list[Path]:
    """Files below ``directory`` with one of ``extensions`` (recursive, hidden names
    skipped), sorted by path."""
    found: list[Path] = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(
            Path(root) / f
            for f in files
            if not f.startswith(".") and is_corpus_file(Path(f), extensions)
        )
    return sorted(found)


def expand_paths(
    spec: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    option: str,
    extensions: tuple[str, ...] = VALID_EXTENSIONS,
    kind: str = "corpus",
) -> list[Path]:
    """The files named by ``spec`` (a path, a glob, a directory, or a list of these), in order.

    Args:
        spec: what the user gave.
        option: the option's name for messages (``data.train_files``).
        extensions: the file names accepted (globs and directories skip the others).
        kind: what the files are, for messages (``corpus``; fine-tuning's ``task``).

    Raises:
        ConfigError: an empty list, a missing path, a glob or directory without such
            files, an unsupported extension, a path that is not a regular file, or one file
            named twice (overlapping globs, a link beside its target).
    """
    entries = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    if not entries:
        raise ConfigError(f"{option} is empty: give a file, a list of files, a glob or a directory")
    files: list[Path] = []
    for entry in entries:
        if not isinstance(entry, (str, os.PathLike)) or not str(entry).strip():
            raise ConfigError(f"{option}: {entry!r} is not a path")
        text = os.path.expanduser(str(entry))
        if any(c in text for c in _GLOB_CHARS) and not os.path.lexists(text):
            matches: list[Path] = []
            for m in sorted(glob.glob(text, recursive=True)):
                p = Path(m)
                wanted = is_corpus_file(p, extensions)
                matches.extend(_walk(p, extensions) if p.is_dir() else [p] if wanted else [])
            if not matches:
                raise ConfigError(
                    f"{option}: no {kind} file matches {str(entry)!r} "
                    f"(supported: {', '.join(extensions)})"
                )
            files.extend(matches)
            continue
        path = Path(text)
        st = _stat(path, kind)
        if stat.S_ISDIR(st.st_mode):
            found = _walk(path, extensions)
            if not found:
                raise ConfigError(
                    f"{option}: directory {path} holds no {kind} file "
                    f"(supported: {', '.join(extensions)})"
                )
            files.extend(found)
        elif not is_corpus_file(path, extensions):
            raise ConfigError(
                f"unsupported {kind} file extension for {path}: expected one of "
                f"{', '.join(extensions)}"
            )
        else:
            files.append(path)
    seen: dict[tuple[int, int], Path] = {}
    for path in files:
        check_regular_file(path, kind)
        st = path.stat()
        first = seen.setdefault((st.st_dev, st.st_ino), path)
        if first is not path:  # overlapping globs, a list naming it twice, a link to it
            raise ConfigError(
                f"{option}: the {kind} file {first} is named twice"
                + ("" if str(first) == str(path) else f" (also as {path})")
                + ": its contents would be read twice, and count twice; name each file once"
            )
    return files


def fingerprint_files(paths: Sequence[Path]) -> list[list[Any]]:
    """(absolute path, size, mtime, inode, ctime) per file: what identifies a prepared corpus's input.

    Size and mtime alone miss a file rewritten with the same size and its mtime set back
    (``cp -p``, ``rsync -t``, ``touch -r``): its stale tokens would train silently. The
    change time cannot be set back that way: the kernel stamps ``st_ctime`` with the current
    time on every write, rename into place or metadata change, and no system call sets it.
    The inode number changes when a file is replaced by another (rsync's rename). So any
    rewrite gives another fingerprint, and another preparation. The price is a
    re-preparation after a mere ``chmod``/``chown`` or a copy of the corpus to another
    file system, never a stale entry. The device number is left out: NFS clients number
    the same export differently, and every node of a cluster must find the same entry.
    Content is not hashed: that would read a 20 GB corpus on every run, cached or not.
    """
    out = []
    for p in paths:
        st = check_regular_file(p)
        out.append([str(p.resolve()), st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns])
    return out


# --------------------------------------------------------------------------- reading
_T = TypeVar("_T")
#: Compressed bytes handed to the zstd decompressor at a time.
_ZSTD_CHUNK = 1 << 17
#: Longest exception text quoted in a message.
_MAX_DETAIL = 300


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` on one line (the type qualified by its module unless it
    is a builtin, e.g. ``zlib.error``, ``csv.Error``), at most a few hundred characters."""
    kind = type(exc)
    module = kind.__module__.lstrip("_")
    name = kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"
    detail = " ".join(str(exc).split())
    if len(detail) > _MAX_DETAIL:
        detail = detail[: _MAX_DETAIL - 3] + "..."
    return f"{name}: {detail}" if detail else name


def guarded(what: str, items: Iterable[_T]) -> Iterator[_T]:
    """The items of ``items``, a reader of one input (``what``: ``corpus file data/a.txt``).

    Guarantees one line for any failure of the reader: a
    :class:`~roformer_lit.errors.ConfigError` passes unchanged (it already names the input),
    and every other exception (``OSError``, ``EOFError``, ``zlib.error``, ``csv.Error``,
    pyarrow's, ``MemoryError``, ...) becomes ``ConfigError("cannot read <what>: <Type>:
    <message>")``; an ``EOFError`` (a compressed stream that ends early) says the input is
    truncated. ``KeyboardInterrupt`` and ``SystemExit`` pass. The consumer decides what to do
    with items already yielded: every caller accepts a file only once it was read to its end.
    """
    try:
        yield from items
    except ConfigError:
        raise
    except EOFError as exc:
        raise ConfigError(
            f"cannot read {what}: it is truncated ({describe_exception(exc)})"
        ) from None
    except Exception as exc:
        raise ConfigError(f"cannot read {what}: {describe_exception(exc)}") from None


class _ZstdFrames(io.RawIOBase):
    """The decompressed bytes of a zstd file, frame after frame.

    zstandard's ``stream_reader(read_across_frames=True)`` returns what it has when the input
    ends inside a frame, so a truncated file reads as a shorter one; here each frame is
    decompressed by its own ``decompressobj`` and the input must not end before the frame's
    end (``EOFError`` otherwise)."""

    def __init__(self, raw: IO[bytes], decompressor: Any) -> None:
        super().__init__()
        self._raw = raw
        self._decompressor = decompressor
        self._frame: Any = None  # the decompressobj of the frame being read, if any
        self._input = b""  # compressed bytes read past the end of the last frame
        self._out = b""
        self._pos = 0
        self._ended = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._pos >= len(self._out) and not self._ended:
            self._out, self._pos = self._decompress_more(), 0
        n = min(len(buffer), len(self._out) - self._pos)
        buffer[:n] = self._out[self._pos : self._pos + n]
        self._pos += n
        return n

    def _decompress_more(self) -> bytes:
        data, self._input = self._input or self._raw.read(_ZSTD_CHUNK), b""
        if not data:
            if self._frame is not None:
                raise EOFError("the zstd stream ends inside a frame")
            self._ended = True
            return b""
        if self._frame is None:
            self._frame = self._decompressor.decompressobj()
        out = self._frame.decompress(data)
        if self._frame.eof:
            self._input, self._frame = self._frame.unused_data, None
        return out


def _zstd_reader(raw: IO[bytes], path: Path) -> IO[bytes]:
    try:
        import zstandard
    except ImportError:
        raise ConfigError(
            f"reading {path} needs the zstandard package: pip install 'roformer-lit[corpora]'"
        ) from None
    return io.BufferedReader(_ZstdFrames(raw, zstandard.ZstdDecompressor()))


def compression_of(path: Path) -> str:
    """The compression suffix of ``path`` (one of :data:`COMPRESSIONS`; ``""`` for none)."""
    name = path.name.lower()
    return next((c for c in COMPRESSIONS if c and name.endswith(c)), "")


@contextmanager
def open_input(path: Path, compression: str, kind: str = "corpus") -> Iterator[IO[bytes]]:
    """The decompressed bytes of the regular file ``path`` (``compression``: ``""``, ``.gz``,
    ``.xz`` or ``.zst``). Read it through :func:`guarded`: a corrupt or truncated stream
    raises while it is read (``EOFError`` when it ends early, in every format)."""
    check_regular_file(path, kind)
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as e:
        raise ConfigError(f"cannot read {kind} file {path}: {e.strerror or e}") from None
    try:
        if compression == ".gz":
            yield gzip.open(raw, "rb")  # type: ignore[misc]
        elif compression == ".xz":
            yield lzma.open(raw, "rb")  # type: ignore[misc]
        elif compression == ".zst":
            yield _zstd_reader(raw, path)
        else:
            yield raw
    finally:
        raw.close()


def _raw_lines(f: IO[bytes], path: Path) -> Iterator[bytes]:
    """The lines of ``f`` (bytes, with their ``\n``); a NUL in the first 64 KiB means binary."""
    head = f.read(_SNIFF_BYTES)
    nul = head.find(b"\x00")
    if nul >= 0:
        raise ConfigError(
            f"corpus file looks binary (NUL byte at offset {nul}), expected UTF-8 text: {path}"
        )
    carry = b""
    for line in io.BytesIO(head):
        if line.endswith(b"\n"):
            yield line
        else:
            carry = line
    for line in iter(f.readline, b""):
        if carry:
            line, carry = carry + line, b""
        yield line
    if carry:
        yield carry


def _lines(path: Path, compression: str) -> Iterator[tuple[int, str]]:
    """(line number, decoded line) of a text file; refuses binary and non-UTF-8 content."""
    offset = 0
    content = False
    with open_input(path, compression) as f:
        for lineno, line in enumerate(_raw_lines(f, path), 1):
            nul = line.find(b"\x00")
            if nul >= 0:
                raise ConfigError(
                    f"corpus file looks binary (NUL byte at offset {offset + nul}), expected "
                    f"UTF-8 text: {path}"
                )
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ConfigError(
                    f"corpus file is not valid UTF-8 (bad byte 0x{line[e.start]:02x} at byte "
                    f"offset {offset + e.start}): {path}"
                ) from None
            offset += len(line)
            content = content or bool(line.strip())
            yield lineno, text
    if not content:
        raise ConfigError(f"corpus file is empty: {path}")


def _one_line(text: str) -> str:
    return " ".join(text.strip().splitlines())


def _txt_documents(path: Path, compression: str) -> Iterator[str]:
    # str.splitlines also splits at \r, \x0b, \x0c, \x1c-\x1e, \x85, \u2028, \u2029 (as the
    # reader always did): each piece is a document.
    for _, line in _lines(path, compression):
        for piece in line.splitlines():
            if doc := piece.strip():
                yield doc


def _jsonl_documents(path: Path, compression: str, text_field: str) -> Iterator[str]:
    for lineno, line in _lines(path, compression):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as e:  # JSONDecodeError; an over-long integer
            detail = e.msg if isinstance(e, json.JSONDecodeError) else describe_exception(e)
            raise ConfigError(f"{path}:{lineno}: line is not valid JSON ({detail})") from None
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
        if doc := _one_line(value):
            yield doc


def is_text_type(arrow_type: Any) -> bool:
    """Whether an Arrow type holds plain strings: ``string``, ``large_string``,
    ``string_view`` or a dictionary of these (never a list or struct *of* strings)."""
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    is_view = getattr(pa.types, "is_string_view", None)
    return bool(
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or (is_view is not None and is_view(arrow_type))
    )


def _parquet_documents(path: Path, text_field: str) -> Iterator[str]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError(
            f"reading {path} needs the pyarrow package: pip install 'roformer-lit[corpora]'"
        ) from None
    check_regular_file(path)
    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises ArrowInvalid / OSError for a non-Parquet file
        raise ConfigError(f"cannot read {path} as Parquet: {' '.join(str(e).split())}") from None
    names = pf.schema_arrow.names
    if text_field not in names:
        raise ConfigError(
            f"{path}: missing text column {text_field!r} (columns: {', '.join(names) or 'none'}); "
            "set data.text_field"
        )
    kind = pf.schema_arrow.field(text_field).type
    if not is_text_type(kind):
        raise ConfigError(
            f"{path}: column {text_field!r} must hold strings, it holds {kind}; set "
            "data.text_field to a string column"
        )
    if pf.metadata.num_rows == 0:
        raise ConfigError(f"corpus file is empty: {path}")
    for batch in pf.iter_batches(batch_size=_PARQUET_BATCH, columns=[text_field]):
        for value in batch.column(0).to_pylist():
            if value and (doc := _one_line(value)):
                yield doc


def iter_file_documents(path: Path, text_field: str = "text") -> Iterator[str]:
    """The documents of one corpus file, streamed (see the module docstring); every failure
    while reading it is one ConfigError naming the file (:func:`guarded`)."""
    ext, comp = split_extension(path)
    count = 0
    if ext == ".txt":
        docs = _txt_documents(path, comp)
    elif ext == ".jsonl":
        docs = _jsonl_documents(path, comp, text_field)
    else:
        docs = _parquet_documents(path, text_field)
    for doc in guarded(f"corpus file {path}", docs):
        count += 1
        yield doc
    if count == 0:
        raise ConfigError(f"corpus file contains no documents: {path}")


def iter_documents(paths: Sequence[Path], text_field: str = "text") -> Iterator[str]:
    """The documents of several corpus files, file after file, streamed."""
    for path in paths:
        yield from iter_file_documents(path, text_field)


# --------------------------------------------------------------------------- sources
class DocumentSource(Protocol):
    """Where documents come from: streamed in a fixed order, identified by a fingerprint."""

    def documents(self) -> Iterator[str]:
        """The documents, in order, streamed."""
        ...

    def fingerprint(self) -> Any:
        """JSON-able identity: equal fingerprints mean equal documents."""
        ...

    def describe(self) -> str:
        """A few words for messages."""
        ...

    def size_hint(self) -> int | None:
        """Bytes of text to read, if known cheaply (progress display)."""
        ...


@dataclass(frozen=True)
class FileSource:
    """Documents of local corpus files (see :func:`expand_paths`)."""

    paths: tuple[Path, ...]
    text_field: str = "text"

    def documents(self) -> Iterator[str]:
        return iter_documents(self.paths, self.text_field)

    def fingerprint(self) -> Any:
        structured = any(split_extension(p)[0] != ".txt" for p in self.paths)
        return {
            "kind": "files",
            "files": fingerprint_files(self.paths),
            "text_field": self.text_field if structured else None,
        }

    def describe(self) -> str:
        first = str(self.paths[0])
        return first if len(self.paths) == 1 else f"{first} and {len(self.paths) - 1} more file(s)"

    def size_hint(self) -> int | None:
        if any(split_extension(p)[1] or p.suffix == ".parquet" for p in self.paths):
            return None
        return sum(os.stat(p).st_size for p in self.paths)
