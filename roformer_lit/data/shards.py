"""Token shards on disk: flat token files read memory-mapped, with every document's end.

A prepared corpus is one directory::

    meta.json           format, dtype, token and document counts, shard list, tokenizer hash
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

Why a flat memory-mapped array (the layout of nanoGPT's ``train.bin`` and Megatron's indexed
datasets) rather than litdata chunks or Arrow rows: block ``i`` is a pure function of ``i``,
so the map-style dataset, the ``EpochSampler`` permutation and the mid-epoch resume of
:mod:`roformer_lit.data.dataset` keep working unchanged and exactly; any block length reads
the same files (``extrapolate``, validation at other lengths); and a DDP rank reads only
the blocks its sampler hands it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from roformer_lit.errors import ConfigError

FORMAT = "roformer-lit-tokens"
FORMAT_VERSION = 1
META_FILE = "meta.json"
TOKENIZER_FILE = "tokenizer.json"
DOC_ENDS_FILE = "doc_ends.bin"
#: Tokens per shard file before a new one starts (256 Mi tokens: 512 MiB as uint16).
DEFAULT_SHARD_TOKENS = 1 << 28


def token_dtype(vocab_size: int) -> np.dtype:
    """``uint16`` when every id fits (vocab <= 65536), else ``uint32``."""
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


class ShardWriter:
    """Appends token chunks to ``tokens-NNNNN.bin`` files and document ends to ``doc_ends.bin``."""

    def __init__(
        self, directory: Path, dtype: np.dtype, shard_tokens: int = DEFAULT_SHARD_TOKENS
    ) -> None:
        self.directory = directory
        self.dtype = np.dtype(dtype)
        self.shard_tokens = shard_tokens
        self.shards: list[dict[str, Any]] = []
        self.tokens = 0
        self.documents = 0
        self._file: Any = None
        self._ends = open(directory / DOC_ENDS_FILE, "wb")  # noqa: SIM115 - closed in close()

    def append(self, tokens: np.ndarray, doc_lengths: np.ndarray) -> None:
        """Add a chunk: ``tokens`` (documents with their [SEP]) and each document's length."""
        if int(doc_lengths.sum()) != tokens.size:
            raise ValueError("doc_lengths must add up to the chunk's tokens")
        if self._file is None or self.shards[-1]["tokens"] >= self.shard_tokens:
            self._next_shard()
        self._file.write(np.ascontiguousarray(tokens, dtype=self.dtype).tobytes())
        self.shards[-1]["tokens"] += int(tokens.size)
        ends = self.tokens + np.cumsum(doc_lengths, dtype=np.int64)
        self._ends.write(ends.astype("<i8").tobytes())
        self.tokens += int(tokens.size)
        self.documents += int(doc_lengths.size)

    def _next_shard(self) -> None:
        if self._file is not None:
            self._close_file(self._file)
        name = f"tokens-{len(self.shards):05d}.bin"
        self._file = open(self.directory / name, "wb")  # noqa: SIM115 - closed in close()
        self.shards.append({"file": name, "tokens": 0})

    @staticmethod
    def _close_file(f: Any) -> None:
        f.flush()
        os.fsync(f.fileno())
        f.close()

    def close(self) -> dict[str, Any]:
        """Flush everything to disk; returns the counts and shard list for ``meta.json``."""
        if self._file is None:
            self._next_shard()
        self._close_file(self._file)
        self._close_file(self._ends)
        return {
            "dtype": self.dtype.name,
            "tokens": self.tokens,
            "documents": self.documents,
            "shards": self.shards,
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


def read_meta(directory: Path) -> dict[str, Any]:
    """Read and check a prepared corpus's ``meta.json`` and file sizes.

    Raises:
        ConfigError: a missing or unreadable meta file, another format, or a shard or
            document file whose size does not match it (truncated, replaced).
    """
    path = directory / META_FILE
    hint = f"; delete {directory} to prepare it again"
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"prepared corpus {directory} is unreadable ({e}){hint}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ConfigError(f"{directory} is not a prepared corpus{hint}")
    if meta.get("version") != FORMAT_VERSION:
        raise ConfigError(
            f"prepared corpus {directory} has format version {meta.get('version')}, this "
            f"version reads {FORMAT_VERSION}{hint}"
        )
    itemsize = np.dtype(meta["dtype"]).itemsize
    expected = [(s["file"], s["tokens"] * itemsize) for s in meta["shards"]]
    expected.append((DOC_ENDS_FILE, meta["documents"] * 8))
    for name, size in expected:
        try:
            actual = os.stat(directory / name).st_size
        except OSError as e:
            raise ConfigError(
                f"prepared corpus {directory}: unreadable shard {name} ({e.strerror}){hint}"
            ) from None
        if actual != size:
            raise ConfigError(
                f"prepared corpus {directory}: shard {name} has {actual} bytes, expected "
                f"{size}{hint}"
            )
    return meta
