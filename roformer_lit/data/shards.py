"""Token shards on disk: flat token files read memory-mapped, with every document's end.

A prepared corpus is one directory::

    meta.json           format, the cache key, dtype, token and document counts, shard list,
                        the SHA-256 of every file, the vocabulary size and the largest token id
    tokenizer.json      the tokenizer the tokens were made with
    tokens-00000.bin    raw tokens (little-endian uint16 when the vocabulary fits, else uint32)
    tokens-00001.bin    ... (a new shard starts past ``shard_tokens`` tokens)
    doc_ends.bin        int64, one per document: the offset just past its last token

The shards, read one after the other, are today's token stream: each document's tokens
followed by one ``[SEP]`` (a document that tokenizes to nothing adds nothing, and its end
equals the previous one). Block ``i`` of length ``L`` over a range ``[start, stop)`` of that
stream is ``tokens[start + i*L : start + (i+1)*L]``; a block may span two shards. Document
``d`` occupies ``[doc_ends[d-1], doc_ends[d])``, so the document of every token is one
``searchsorted`` away (:meth:`TokenStream.document_index`).

An entry is read only after :func:`verify_entry` has checked that its files agree with
``meta.json``, with each other and with the tokenizer (see there).

Why a flat memory-mapped array (the layout of nanoGPT's ``train.bin`` and Megatron's indexed
datasets) rather than litdata chunks or Arrow rows: block ``i`` is a pure function of ``i``,
so the map-style dataset, the ``EpochSampler`` permutation and the mid-epoch resume of
:mod:`roformer_lit.data.dataset` keep working unchanged and exactly; any block length reads
the same files (``extrapolate``, validation at other lengths); and a DDP rank reads only
the blocks its sampler hands it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tokenizers import Tokenizer

from roformer_lit.errors import ConfigError

FORMAT = "roformer-lit-tokens"
FORMAT_VERSION = 2
META_FILE = "meta.json"
TOKENIZER_FILE = "tokenizer.json"
DOC_ENDS_FILE = "doc_ends.bin"
_ENTRY_FILES = (META_FILE, TOKENIZER_FILE, DOC_ENDS_FILE)
#: Tokens per shard file before a new one starts (256 Mi tokens: 512 MiB as uint16).
DEFAULT_SHARD_TOKENS = 1 << 28


def token_dtype(vocab_size: int) -> np.dtype:
    """``uint16`` when every id fits (vocab <= 65536), else ``uint32``."""
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


class ShardWriter:
    """Appends token chunks to ``tokens-NNNNN.bin`` files and document ends to ``doc_ends.bin``.

    While writing it keeps what :func:`verify_entry` later checks: a SHA-256 of every file and
    the largest token id.
    """

    def __init__(
        self, directory: Path, dtype: np.dtype, shard_tokens: int = DEFAULT_SHARD_TOKENS
    ) -> None:
        self.directory = directory
        self.dtype = np.dtype(dtype)
        self.shard_tokens = shard_tokens
        self.shards: list[dict[str, Any]] = []
        self.tokens = 0
        self.documents = 0
        self.max_token_id = -1
        self._last_end = 0  # offset just past the last document end written
        self._file: Any = None
        self._hash: Any = None
        self._ends = open(directory / DOC_ENDS_FILE, "wb")  # noqa: SIM115 - closed in close()
        self._ends_hash = hashlib.sha256()

    def append(self, tokens: np.ndarray, doc_lengths: np.ndarray | Sequence[int]) -> None:
        """Add ``tokens`` and the lengths of the documents that end in them.

        A chunk of whole documents gives one length per document (its [SEP] included), adding
        up to ``tokens.size``. A document tokenized in pieces is appended with no length until
        its last piece, whose length then counts the earlier pieces too: the first length may
        reach back to tokens appended before, and tokens after the last length stay open.
        """
        tokens = np.ascontiguousarray(tokens, dtype=self.dtype)
        lengths = np.asarray(doc_lengths, dtype=np.int64).reshape(-1)
        ends = self._last_end + np.cumsum(lengths, dtype=np.int64)
        if lengths.size and (lengths.min() < 0 or int(ends[-1]) > self.tokens + tokens.size):
            raise ValueError("document lengths must be >= 0 and cover only tokens written")
        if self._file is None or self.shards[-1]["tokens"] >= self.shard_tokens:
            self._next_shard()
        if tokens.size:
            self._file.write(tokens.data)
            self._hash.update(tokens.data)
            self.max_token_id = max(self.max_token_id, int(tokens.max()))
        self.shards[-1]["tokens"] += int(tokens.size)
        self.tokens += int(tokens.size)
        if lengths.size:
            data = ends.astype("<i8").tobytes()
            self._ends.write(data)
            self._ends_hash.update(data)
            self._last_end = int(ends[-1])
            self.documents += int(lengths.size)

    def _next_shard(self) -> None:
        if self._file is not None:
            self._close_file(self._file)
            self.shards[-1]["sha256"] = self._hash.hexdigest()
        name = f"tokens-{len(self.shards):05d}.bin"
        self._file = open(self.directory / name, "wb")  # noqa: SIM115 - closed in close()
        self._hash = hashlib.sha256()
        self.shards.append({"file": name, "tokens": 0})

    @staticmethod
    def _close_file(f: Any) -> None:
        f.flush()
        os.fsync(f.fileno())
        f.close()

    def close(self) -> dict[str, Any]:
        """Flush everything to disk; returns the counts, shard list and checksums for ``meta.json``."""
        if self._last_end != self.tokens:
            raise ValueError("the last document has no end: its last piece was never appended")
        if self._file is None:
            self._next_shard()
        self._close_file(self._file)
        self.shards[-1]["sha256"] = self._hash.hexdigest()
        self._close_file(self._ends)
        return {
            "dtype": self.dtype.name,
            "tokens": self.tokens,
            "documents": self.documents,
            "shards": self.shards,
            "max_token_id": self.max_token_id,
            "doc_ends_sha256": self._ends_hash.hexdigest(),
        }


class TokenStream:
    """The tokens of a prepared corpus as one flat sequence over its memory-mapped shards.

    Memory maps are opened lazily in each process (so DataLoader workers and DDP ranks map
    the files themselves; nothing is copied when the object is pickled).
    """

    def __init__(self, directory: Path, meta: dict[str, Any]) -> None:
        self.directory = Path(directory)
        self.dtype = np.dtype(meta["dtype"])
        self.files = [self.directory / s["file"] for s in meta["shards"]]
        sizes = np.array([s["tokens"] for s in meta["shards"]], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(sizes)])
        self.tokens = int(meta["tokens"])
        self.documents = int(meta["documents"])
        self._maps: list[np.ndarray] | None = None
        self._ends: np.ndarray | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_maps": None, "_ends": None}

    def __len__(self) -> int:
        return self.tokens

    def _open(self) -> list[np.ndarray]:
        if self._maps is None:
            self._maps = [
                np.memmap(f, dtype=self.dtype, mode="r") if n else np.empty(0, self.dtype)
                for f, n in zip(self.files, np.diff(self.starts), strict=True)
            ]
        return self._maps

    @property
    def doc_ends(self) -> np.ndarray:
        """int64 ``[documents]``: the offset just past each document's last token."""
        if self._ends is None:
            if self.documents == 0:
                self._ends = np.empty(0, dtype=np.int64)
            else:
                self._ends = np.memmap(self.directory / DOC_ENDS_FILE, dtype="<i8", mode="r")
        return self._ends

    def read(self, start: int, stop: int) -> np.ndarray:
        """A copy of ``tokens[start:stop]`` as int64 (crossing shard boundaries as needed)."""
        if not 0 <= start <= stop <= self.tokens:
            raise IndexError(f"token range [{start}, {stop}) outside [0, {self.tokens})")
        maps = self._open()
        first = int(np.searchsorted(self.starts, start, side="right")) - 1
        out = np.empty(stop - start, dtype=np.int64)
        pos, shard = start, first
        while pos < stop:
            lo = pos - int(self.starts[shard])
            n = min(stop, int(self.starts[shard + 1])) - pos
            out[pos - start : pos - start + n] = maps[shard][lo : lo + n]
            pos += n
            shard += 1
        return out

    def document_index(self, start: int, stop: int) -> np.ndarray:
        """The document number of every token in ``[start, stop)`` (for document-aware attention)."""
        return np.searchsorted(self.doc_ends, np.arange(start, stop), side="right")


class TokenBlocks:
    """Consecutive blocks of ``length`` tokens over ``[start, stop)`` of a :class:`TokenStream`.

    ``blocks[i]`` is ``tokens[start + i*length : start + (i+1)*length]`` (int64 tensor); the
    trailing partial block is dropped, and ``limit`` keeps only the first blocks.

    Raises:
        ConfigError: if the range holds fewer tokens than one block.
    """

    def __init__(
        self,
        stream: TokenStream,
        start: int,
        stop: int,
        length: int,
        limit: int | None = None,
        split: str = "train",
    ) -> None:
        n = (stop - start) // length
        if n == 0:
            raise ConfigError(
                f"the {split} corpus is too small: {stop - start} tokens, fewer than one block "
                f"of max_length={length}; add text or lower data.max_length"
            )
        self.stream = stream
        self.start = start
        self.stop = stop
        self.length = length
        self.num_blocks = n if limit is None else min(n, limit)

    def __len__(self) -> int:
        return self.num_blocks

    @property
    def shape(self) -> tuple[int, int]:
        """``(blocks, length)``, as for a ``[N, L]`` tensor."""
        return (self.num_blocks, self.length)

    def _span(self, index: int) -> tuple[int, int]:
        if not 0 <= index < self.num_blocks:
            raise IndexError(f"block {index} out of range [0, {self.num_blocks})")
        first = self.start + index * self.length
        return first, first + self.length

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.from_numpy(self.stream.read(*self._span(int(index))))

    def document_index(self, index: int) -> torch.Tensor:
        """The document number of each token of block ``index`` (int64 ``[length]``)."""
        return torch.from_numpy(self.stream.document_index(*self._span(int(index))))

    def to_tensor(self) -> torch.Tensor:
        """All blocks as one ``[N, L]`` tensor (reads them all: for small corpora and tests)."""
        stop = self.start + self.num_blocks * self.length
        return torch.from_numpy(self.stream.read(self.start, stop)).reshape(-1, self.length)


def write_meta(directory: Path, meta: dict[str, Any]) -> None:
    """Write ``meta.json`` (fsynced): the last file of a prepared corpus."""
    path = directory / META_FILE
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"format": FORMAT, "version": FORMAT_VERSION, **meta}, f, indent=1)
        f.flush()
        os.fsync(f.fileno())


# --------------------------------------------------------------------------- verification
class _Damaged(Exception):
    """What is wrong with an entry (internal: :func:`verify_entry` turns it into one line)."""


def damaged(directory: Path, what: str) -> ConfigError:
    """The one-line refusal of a cache entry: what is wrong, and which directory to delete."""
    what = " ".join(what.split())
    return ConfigError(
        f"prepared corpus entry {directory} is damaged ({what}); delete it and run again"
    )


#: The keys of ``meta.json`` that readers rely on, with their JSON types.
_META_FIELDS: dict[str, type] = {
    "dtype": str,
    "tokens": int,
    "documents": int,
    "shards": list,
    "tokenizer_sha256": str,
    "vocab_size": int,
    "max_token_id": int,
    "doc_ends_sha256": str,
}
_DTYPES = ("uint16", "uint32")
_HASH_BLOCK = 1 << 24  # bytes read at a time when checking a file's SHA-256
#: Entries already verified by this process: directory -> (files' identity, meta).
_VERIFIED: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}


def _is_hex64(value: Any) -> bool:
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )


def _count(meta: dict[str, Any], key: str, where: str = "meta.json") -> int:
    value = meta.get(key)
    if type(value) is not int or value < 0:  # bool is an int subclass: refused too
        raise _Damaged(f"{where} {key}={value!r}, expected a count >= 0")
    return value


def _check_meta(meta: Any) -> dict[str, Any]:
    """The structure of ``meta.json``: keys, types, plain shard names, consistent counts."""
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise _Damaged(f"meta.json is not a {FORMAT} description")
    if meta.get("version") != FORMAT_VERSION:
        raise _Damaged(
            f"format version {meta.get('version')!r}, this version reads {FORMAT_VERSION}"
        )
    for key, kind in _META_FIELDS.items():
        if key not in meta:
            raise _Damaged(f"meta.json lacks {key!r}")
        if not isinstance(meta[key], kind) or isinstance(meta[key], bool):
            raise _Damaged(
                f"meta.json {key} is a {type(meta[key]).__name__}, expected {kind.__name__}"
            )
    if meta["dtype"] not in _DTYPES:
        raise _Damaged(f"meta.json dtype={meta['dtype']!r}, expected one of {', '.join(_DTYPES)}")
    tokens, documents = _count(meta, "tokens"), _count(meta, "documents")
    vocab = meta["vocab_size"]
    if vocab < 1 or np.dtype(meta["dtype"]) != token_dtype(vocab):
        raise _Damaged(f"meta.json dtype {meta['dtype']} does not hold a vocabulary of {vocab}")
    if not -1 <= meta["max_token_id"] < vocab or (tokens > 0) != (meta["max_token_id"] >= 0):
        raise _Damaged(
            f"largest token id {meta['max_token_id']} is outside the vocabulary of {vocab}"
        )
    if tokens > 0 and documents == 0:
        raise _Damaged(f"{tokens} tokens but no document")
    for key in ("tokenizer_sha256", "doc_ends_sha256"):
        if not _is_hex64(meta[key]):
            raise _Damaged(f"meta.json {key} is not a SHA-256")
    if not meta["shards"]:
        raise _Damaged("meta.json names no shard")
    seen: set[str] = set()
    for i, shard in enumerate(meta["shards"]):
        if not isinstance(shard, dict):
            raise _Damaged(f"meta.json shard {i} is not an object")
        name = shard.get("file")
        plain = isinstance(name, str) and name not in ("", ".", "..")
        if not plain or "/" in name or "\\" in name or "\x00" in name or name in _ENTRY_FILES:
            raise _Damaged(f"shard {i} names {name!r}, not a plain file name inside the entry")
        if name in seen:
            raise _Damaged(f"shard file {name} is named twice")
        seen.add(name)
        _count(shard, "tokens", f"shard {name}")
        if not _is_hex64(shard.get("sha256")):
            raise _Damaged(f"shard {name} has no SHA-256")
    if sum(s["tokens"] for s in meta["shards"]) != tokens:
        raise _Damaged(f"the shards' token counts do not add up to {tokens}")
    return meta


def _regular(directory: Path, name: str) -> os.stat_result:
    """``lstat`` of a file of the entry: it must be a regular file, not a link elsewhere."""
    try:
        st = os.lstat(directory / name)
    except OSError as e:
        raise _Damaged(f"{name}: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
        raise _Damaged(f"{name} is {what}")
    return st


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _blocks(path: Path) -> Iterator[bytes]:
    try:
        with open(path, "rb") as f:
            yield from iter(lambda: f.read(_HASH_BLOCK), b"")
    except OSError as e:
        raise _Damaged(f"{path.name}: {e.strerror or e}") from None


def _check_hash(path: Path, expected: str) -> None:
    h = hashlib.sha256()
    for block in _blocks(path):
        h.update(block)
    if h.hexdigest() != expected:
        raise _Damaged(f"{path.name} does not have the content it was written with")


def _check_doc_ends(path: Path, meta: dict[str, Any]) -> None:
    """``doc_ends.bin``: its checksum, and ends that start >= 0, never decrease and finish
    at the token count (read block by block: memory does not grow with the corpus)."""
    h = hashlib.sha256()
    previous, last = 0, 0
    for block in _blocks(path):
        h.update(block)
        ends = np.frombuffer(block, dtype="<i8")
        if ends.size and (ends[0] < previous or (ends.size > 1 and (np.diff(ends) < 0).any())):
            raise _Damaged("doc_ends.bin: document ends decrease")
        if ends.size:
            previous = last = int(ends[-1])
    if h.hexdigest() != meta["doc_ends_sha256"]:
        raise _Damaged(f"{DOC_ENDS_FILE} does not have the content it was written with")
    if meta["documents"] and last != meta["tokens"]:
        raise _Damaged(f"the last document ends at {last}, not at the {meta['tokens']} tokens")


def _check_tokenizer(directory: Path, meta: dict[str, Any]) -> None:
    """``tokenizer.json`` is the one the tokens were made with, and has their vocabulary."""
    text = b"".join(_blocks(directory / TOKENIZER_FILE))
    if hashlib.sha256(text).hexdigest() != meta["tokenizer_sha256"]:
        raise _Damaged(f"{TOKENIZER_FILE} is not the tokenizer its tokens were made with")
    try:
        vocab = Tokenizer.from_str(text.decode("utf-8")).get_vocab_size(with_added_tokens=True)
    except Exception as e:  # tokenizers raises its own exception types
        raise _Damaged(f"unreadable {TOKENIZER_FILE}: {str(e)[:120]}") from None
    if vocab != meta["vocab_size"]:
        raise _Damaged(f"{TOKENIZER_FILE} has {vocab} tokens, meta.json says {meta['vocab_size']}")


def verify_entry(directory: Path) -> dict[str, Any]:
    """The ``meta.json`` of the prepared corpus in ``directory``, once the entry proves whole.

    The one check every reader of a cache entry goes through
    (:func:`~roformer_lit.data.prepare.find_prepared`). An entry is used only if:

    * ``meta.json`` parses, is this format and version, and has every key with its type;
    * the cache key it was prepared as (``key``; entries from before it was recorded have
      none) is the directory's name: an entry renamed or copied to another key is refused,
      since the key is what says which corpus and tokenizer the tokens are of;
    * every file it names is a plain name (no ``/``, no ``..``, not absolute) of a regular
      file inside the entry (``lstat``: a symbolic link to elsewhere is refused), named once;
    * each shard has ``tokens x itemsize`` bytes and ``doc_ends.bin`` ``documents x 8``;
      the shards' counts add up to ``tokens``;
    * the SHA-256 of every shard and of ``doc_ends.bin`` is the one the writer computed
      while writing them, so their content is what preparation wrote (an edit that keeps
      the sizes, a flipped bit);
    * the document ends start >= 0, never decrease, and the last is ``tokens``;
    * ``tokenizer.json`` hashes to ``tokenizer_sha256``, has ``vocab_size`` tokens, the dtype
      holds that vocabulary, and the largest id (recorded by the writer, whose content the
      checksums vouch for) is below it, so no id can index past the embedding.

    Hashing reads the entry once (about a second per GB from the page cache, against the
    hours of tokenizing and training such an entry stands for), and only once per process:
    a directory whose files keep their inode, size, mtime and ctime is not hashed again.

    Raises:
        ConfigError: one line, ``prepared corpus entry <dir> is damaged (<what>); delete it
            and run again``.
    """
    directory = Path(directory)
    try:
        return _verify(directory)
    except _Damaged as e:
        raise damaged(directory, str(e)) from None


def _verify(directory: Path) -> dict[str, Any]:
    try:
        st = os.lstat(directory)
    except OSError as e:
        raise _Damaged(e.strerror or str(e)) from None
    if not stat.S_ISDIR(st.st_mode):
        raise _Damaged("not a directory")
    meta_stat = _regular(directory, META_FILE)
    try:
        meta = _check_meta(json.loads(b"".join(_blocks(directory / META_FILE))))
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        raise _Damaged(f"meta.json is not valid JSON: {str(e)[:80]}") from None
    key = meta.get("key", directory.name)  # entries written before the key was recorded
    if key != directory.name:
        raise _Damaged(
            f"it was prepared as entry {key!r}, not {directory.name!r}: a renamed or copied "
            "entry holds the tokens of another corpus or tokenizer"
        )
    itemsize = np.dtype(meta["dtype"]).itemsize
    expected = [(s["file"], f"shard {s['file']}", s["tokens"] * itemsize) for s in meta["shards"]]
    expected.append((DOC_ENDS_FILE, f"the document ends {DOC_ENDS_FILE}", meta["documents"] * 8))
    identity: list[Any] = [_identity(meta_stat), _identity(_regular(directory, TOKENIZER_FILE))]
    for name, label, size in expected:
        file_stat = _regular(directory, name)
        if file_stat.st_size != size:
            raise _Damaged(f"{label} has {file_stat.st_size} bytes, expected {size}")
        identity.append(_identity(file_stat))
    where = str(directory.resolve())
    cached = _VERIFIED.get(where)
    if cached is not None and cached[0] == tuple(identity) and cached[1] == meta:
        return meta
    _check_tokenizer(directory, meta)
    for shard in meta["shards"]:
        _check_hash(directory / shard["file"], shard["sha256"])
    _check_doc_ends(directory / DOC_ENDS_FILE, meta)
    _VERIFIED[where] = (tuple(identity), meta)
    return meta
