"""Prepare once: a corpus streamed through parallel tokenizer processes into cached token shards.

:func:`prepare_corpus` reads the documents of a source in order (never all at once), groups
them into chunks of about ``chunk_bytes`` of text, and hands the chunks to ``num_proc``
worker processes that tokenize them (``encode_batch_fast`` without special tokens, one
``[SEP]`` after each document). The main process writes the results in order into the
shard format of :mod:`roformer_lit.data.shards`; at most ``2 * num_proc`` chunks are in
flight, so memory does not grow with the corpus. A progress bar shows on a terminal, a line
every 30 s otherwise.

Bounded whatever the documents look like: a document longer than ``piece_chars``
(default ``chunk_bytes``) is cut into pieces of at most that many characters, each cut
placed just before a space or tab in the second half of the piece (so each piece after the
first starts with the whitespace), and the pieces are tokenized one per chunk; their tokens
are written one after the other with a single ``[SEP]`` after the last, so the document and
every document boundary stay what they were. For a tokenizer that splits words at
whitespace (the WordPiece trained here, byte-level BPE, Metaspace) the ids are those of
the whole document; a run of more than half a piece without a space or tab is cut hard,
and a word cut that way is tokenized as two. No chunk holds more than about twice
``chunk_bytes`` of text, so no worker sees more. (The source reads one line at a time,
so the main process still holds the longest line once.)

A worker that dies (the out-of-memory killer, a signal) ends the preparation with one line
(:class:`~roformer_lit.errors.ConfigError`) instead of waiting for it forever, and the
half-written entry is removed.

Caching and atomicity: the result lives in ``<root>/<key>/``, where ``key`` hashes (corpus
fingerprint, tokenizer, format). It is built in a temporary directory beside it and renamed
into place only after every file, ``meta.json`` last, is written and fsynced, so a prepare
killed at any point leaves no directory that a later run trusts (its temporary directory is
removed by the next prepare of the same key). An exclusive ``flock`` on ``<root>/<key>.lock``
makes concurrent runs (a sweep's, DDP ranks) wait for one preparation instead of repeating
it; the lock goes away with the process that holds it, even on SIGKILL. The same lock
(:func:`entry_lock`) is held while the tokenizer of a first preparation is trained, so a
second run started meanwhile waits and then uses that tokenizer rather than training
another (WordPiece training is not deterministic across processes).

Every entry is checked by :func:`~roformer_lit.data.shards.verify_entry` before it is used
(:func:`find_prepared` is the only way in).
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from roformer_lit.data.shards import (
    DEFAULT_SHARD_TOKENS,
    FORMAT_VERSION,
    META_FILE,
    TOKENIZER_FILE,
    ShardWriter,
    TokenStream,
    damaged,
    token_dtype,
    verify_entry,
    write_meta,
)
from roformer_lit.data.sources import DocumentSource
from roformer_lit.errors import ConfigError
from roformer_lit.run_files import warn

#: Text per chunk handed to a worker (and per progress update).
DEFAULT_CHUNK_BYTES = 4 << 20
_PROGRESS_EVERY_S = 30.0


def default_num_proc() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def tokenizer_sha256(tokenizer: Tokenizer) -> str:
    """Hex SHA-256 of the tokenizer's JSON: what identifies the ids in a prepared corpus."""
    return hashlib.sha256(tokenizer.to_str().encode("utf-8")).hexdigest()


def cache_key(payload: Any) -> str:
    """A 20-hex-digit key of a JSON-able description (source fingerprint, tokenizer, format)."""
    text = json.dumps({"format_version": FORMAT_VERSION, **payload}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


@dataclass(frozen=True)
class PreparedCorpus:
    """A prepared corpus on disk: ``directory`` with its checked ``meta``."""

    directory: Path
    meta: dict[str, Any]

    def stream(self) -> TokenStream:
        """The tokens, memory-mapped."""
        return TokenStream(self.directory, self.meta)

    @property
    def tokenizer_path(self) -> Path:
        return self.directory / TOKENIZER_FILE

    def tokenizer(self) -> Tokenizer:
        """The tokenizer the tokens were made with."""
        try:
            return Tokenizer.from_file(str(self.tokenizer_path))
        except Exception as e:
            raise damaged(self.directory, f"unreadable {TOKENIZER_FILE}: {str(e)[:120]}") from None


def find_prepared(root: Path, key: str, tokenizer_sha: str | None = None) -> PreparedCorpus | None:
    """The complete prepared corpus ``<root>/<key>``, or ``None`` if there is none.

    Every reader of the cache comes here: the entry is used only once
    :func:`~roformer_lit.data.shards.verify_entry` has checked it.

    Raises:
        ConfigError: the directory exists but is damaged, or was made with another tokenizer
            than ``tokenizer_sha`` (when given).
    """
    directory = root / key
    if not os.path.lexists(directory):
        return None
    if not os.path.lexists(directory / META_FILE):
        raise damaged(directory, "not a complete prepared corpus: no meta.json")
    meta = verify_entry(directory)
    if tokenizer_sha is not None and meta.get("tokenizer_sha256") != tokenizer_sha:
        raise ConfigError(
            f"prepared corpus {directory} was made with another tokenizer "
            f"(sha256 {str(meta.get('tokenizer_sha256'))[:12]}, this run's is "
            f"{tokenizer_sha[:12]}); delete it to prepare again"
        )
    return PreparedCorpus(directory, meta)


@contextmanager
def entry_lock(root: Path, key: str) -> Iterator[None]:
    """Hold the exclusive lock of cache entry ``<root>/<key>`` (waiting for it if needed).

    Taken around everything that decides what the entry holds: its preparation, and the
    training of the tokenizer of a first preparation. An ``flock`` on ``<root>/<key>.lock``:
    it goes away with the process that holds it, even on SIGKILL. Not re-entrant: a process
    holding it must not take it again.

    Raises:
        ConfigError: the cache directory cannot be written.
    """
    try:
        root.mkdir(parents=True, exist_ok=True)
        f = open(root / f"{key}.lock", "a")  # noqa: SIM115 - closed below
    except OSError as e:
        raise ConfigError(f"cannot write prepared corpora to {root}: {e.strerror or e}") from None
    with f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


# --------------------------------------------------------------------------- workers
_WORKER_TOKENIZER: Tokenizer | None = None
_WORKER_SEP = 0
_WORKER_DTYPE = np.dtype(np.uint16)


def _init_worker(tokenizer_json: str, sep_id: int, dtype: str) -> None:
    global _WORKER_TOKENIZER, _WORKER_SEP, _WORKER_DTYPE
    _WORKER_TOKENIZER = Tokenizer.from_str(tokenizer_json)
    _WORKER_SEP = sep_id
    _WORKER_DTYPE = np.dtype(dtype)


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def _init_pool_worker(parent: int, tokenizer_json: str, sep_id: int, dtype: str) -> None:
    """Initialise a pool worker that dies with the process that forked it.

    A worker inherits the entry lock's file descriptor, so an orphan (its parent killed by
    SIGKILL, which runs no clean-up) would hold the lock, and wait for chunks, forever:
    on Linux the kernel sends it SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), and
    one that finds its parent already gone exits at once.
    """
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: pool workers then outlive a killed parent
        pass
    if os.getppid() != parent:
        os._exit(1)
    _init_worker(tokenizer_json, sep_id, dtype)


def encode_chunk(documents: list[str], whole: bool = True) -> tuple[np.ndarray, np.ndarray, int]:
    """Tokenize a chunk in this worker: (tokens with a [SEP] after each document, each
    document's length including its [SEP] (0 for a document without tokens), text bytes).

    With ``whole=False`` the texts are pieces of a longer document: no [SEP] is added and
    the lengths are the pieces' token counts (the main process ends the document).
    """
    assert _WORKER_TOKENIZER is not None, "worker not initialised"
    # encode_batch_fast: the same ids as encode_batch without computing character offsets
    encodings = _WORKER_TOKENIZER.encode_batch_fast(documents, add_special_tokens=False)
    ids = [e.ids for e in encodings]
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    if not whole:
        tokens = np.concatenate([np.asarray(d, dtype=np.int64) for d in ids])
        return tokens.astype(_WORKER_DTYPE), lengths, sum(len(d) for d in documents)
    lengths[lengths > 0] += 1
    tokens = np.empty(int(lengths.sum()), dtype=_WORKER_DTYPE)
    pos = 0
    for doc in ids:
        if doc:
            n = len(doc)
            tokens[pos : pos + n] = doc
            tokens[pos + n] = _WORKER_SEP
            pos += n + 1
    return tokens, lengths, sum(len(d) for d in documents)


@dataclass(frozen=True)
class Chunk:
    """What one worker tokenizes at a time: whole documents, or one piece of a long one."""

    texts: list[str]
    #: ``texts`` is one piece of a document longer than the piece bound (no [SEP] added).
    piece: bool = False
    #: For a piece: it is the document's last (the document ends after it).
    last: bool = True


def split_document(doc: str, piece_chars: int) -> Iterator[tuple[str, bool]]:
    """``(piece, is_last)`` of ``doc`` in pieces of at most ``piece_chars`` characters.

    Each cut is placed just before the last space or tab in the second half of the piece
    (the next piece starts with that whitespace), or hard at ``piece_chars`` when that half
    has none. Joined, the pieces are ``doc``.
    """
    start = 0
    while len(doc) - start > piece_chars:
        lo, hi = start + piece_chars // 2, start + piece_chars
        cut = max(doc.rfind(" ", lo, hi), doc.rfind("\t", lo, hi))
        if cut <= start:
            cut = hi
        yield doc[start:cut], False
        start = cut
    yield doc[start:], True


def make_chunks(documents: Iterable[str], chunk_bytes: int, piece_chars: int) -> Iterator[Chunk]:
    """The chunks handed to the workers, in corpus order: documents grouped until their text
    reaches ``chunk_bytes`` characters (so a chunk holds less than ``chunk_bytes +
    piece_chars``), and each document longer than ``piece_chars`` alone, piece by piece."""
    texts: list[str] = []
    size = 0
    for doc in documents:
        if len(doc) > piece_chars:
            if texts:
                yield Chunk(texts)
                texts, size = [], 0
            for piece, last in split_document(doc, piece_chars):
                yield Chunk([piece], piece=True, last=last)
            continue
        texts.append(doc)
        size += len(doc)
        if size >= chunk_bytes:
            yield Chunk(texts)
            texts, size = [], 0
    if texts:
        yield Chunk(texts)


@contextmanager
def _serial_tokenizers() -> Iterator[None]:
    """One thread per tokenizer process (workers are the parallelism); the variable is
    inherited by forked workers, and set explicitly so tokenizers does not warn after fork."""
    old = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = old


_Encoded = tuple[np.ndarray, np.ndarray, int]


def _encoded(
    chunks: Iterable[Chunk],
    tokenizer: Tokenizer,
    sep_id: int,
    dtype: np.dtype,
    num_proc: int,
    what: str,
) -> Iterator[tuple[Chunk, _Encoded]]:
    """Each chunk with its tokens, in corpus order, from ``num_proc`` forked workers
    (in-process for 1); at most ``2 * num_proc`` chunks are submitted and not yet consumed.

    Raises:
        ConfigError: a worker died (killed by a signal or the out-of-memory killer): the
            pool reports it (``BrokenProcessPool``) instead of waiting for the lost chunk.
    """
    init = (tokenizer.to_str(), sep_id, dtype.name)
    with _serial_tokenizers():
        if num_proc <= 1:
            _init_worker(*init)
            for chunk in chunks:
                yield chunk, encode_chunk(chunk.texts, not chunk.piece)
            return
        # fork: workers start in milliseconds (spawn would import torch in each) and only
        # run tokenizers and numpy.
        pool = ProcessPoolExecutor(
            num_proc,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_init_pool_worker,
            initargs=(os.getpid(), *init),
        )
        pending: deque[tuple[Chunk, Future[_Encoded]]] = deque()
        try:
            for chunk in chunks:
                pending.append((chunk, pool.submit(encode_chunk, chunk.texts, not chunk.piece)))
                if len(pending) >= 2 * num_proc:
                    done, future = pending.popleft()
                    yield done, future.result()
            while pending:
                done, future = pending.popleft()
                yield done, future.result()
        except BrokenProcessPool:
            raise ConfigError(
                f"a tokenizer process died while preparing {what} (killed by a signal or "
                "the out-of-memory killer); nothing was kept: run again, with a lower "
                "data.num_proc if memory is short"
            ) from None
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


class _Progress:
    """tqdm on a terminal; otherwise one line every 30 s (logs, SLURM)."""

    def __init__(self, total: int | None, desc: str, enabled: bool) -> None:
        self.tty = enabled and sys.stderr.isatty()
        self.enabled = enabled
        self.start = self.last = time.monotonic()
        self.done = 0
        self.tokens = 0
        self.bar: Any = None
        if self.tty:
            from tqdm import tqdm

            self.bar = tqdm(
                total=total, desc=desc, unit="B", unit_scale=True, file=sys.stderr, leave=False
            )
        self.desc = desc

    def update(self, nbytes: int, tokens: int) -> None:
        self.done += nbytes
        self.tokens += tokens
        if self.bar is not None:
            self.bar.update(nbytes)
            self.bar.set_postfix_str(f"{self.tokens / 1e6:.1f}M tokens", refresh=False)
        elif self.enabled and time.monotonic() - self.last >= _PROGRESS_EVERY_S:
            self.last = time.monotonic()
            rate = self.tokens / max(self.last - self.start, 1e-9)
            print(
                f"{self.desc}: {self.done / 1e6:.0f} MB of text, {self.tokens / 1e6:.1f}M "
                f"tokens ({rate:,.0f} tokens/s)",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _remove_stale(root: Path, key: str) -> None:
    """Temporary directories of earlier, killed preparations of ``key`` (we hold its lock)."""
    for stale in root.glob(f".{key}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)


def prepare_corpus(
    source: DocumentSource,
    tokenizer: Tokenizer,
    root: Path,
    key: str,
    *,
    num_proc: int | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    piece_chars: int | None = None,
    shard_tokens: int = DEFAULT_SHARD_TOKENS,
    progress: bool = True,
    log: Any = None,
) -> PreparedCorpus:
    """The prepared corpus ``<root>/<key>`` of ``source`` tokenized by ``tokenizer``, made if missing.

    Args:
        source: the documents.
        tokenizer: must define ``[SEP]``.
        root: cache directory of prepared corpora.
        key: the cache key (see :func:`cache_key`); the caller makes it from everything that
            determines the tokens.
        num_proc: tokenizer processes (default, and at most: the cores this process may
            use; more is reduced to that with a warning).
        chunk_bytes: text per chunk handed to a worker.
        piece_chars: a longer document is tokenized in pieces of at most this many
            characters (default ``chunk_bytes``; see the module docstring).
        shard_tokens: tokens per shard file before a new one starts.
        progress: show progress (a bar on a terminal, else a line every 30 s).
        log: a function of one string for the summary line (default: print to stderr).

    Raises:
        ConfigError: a bad source (raised by its reader), an unwritable cache, or a damaged
            existing preparation.
    """
    sha = tokenizer_sha256(tokenizer)
    found = find_prepared(root, key, sha)
    if found is not None:
        return found
    sep_id = tokenizer.token_to_id("[SEP]")
    if sep_id is None:
        raise ConfigError("the tokenizer lacks [SEP], which ends every document")
    cores = default_num_proc()
    if num_proc is None:
        num_proc = cores
    elif num_proc > cores:  # tokenizing is CPU-bound: more processes than cores only cost memory
        warn(
            f"data.num_proc={num_proc} is more than the {cores} cores this process may use; "
            f"tokenizing with {cores} processes"
        )
        num_proc = cores
    with entry_lock(root, key):
        found = find_prepared(root, key, sha)  # another process may have made it meanwhile
        if found is not None:
            return found
        _remove_stale(root, key)
        chunks = (chunk_bytes, piece_chars or chunk_bytes)
        return _build(
            source, tokenizer, root, key, sha, sep_id, num_proc, chunks, shard_tokens, progress, log
        )


def _build(
    source: DocumentSource,
    tokenizer: Tokenizer,
    root: Path,
    key: str,
    sha: str,
    sep_id: int,
    num_proc: int,
    chunks: tuple[int, int],
    shard_tokens: int,
    progress: bool,
    log: Any,
) -> PreparedCorpus:
    start = time.monotonic()
    fingerprint = source.fingerprint()
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{key}.tmp-"))
    try:
        (tmp / TOKENIZER_FILE).write_text(tokenizer.to_str(), encoding="utf-8")
        vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
        dtype = token_dtype(vocab_size)
        writer = ShardWriter(tmp, dtype, shard_tokens)
        bar = _Progress(source.size_hint(), f"preparing {source.describe()}", progress)
        sep = np.array([sep_id], dtype=dtype)
        text_bytes = 0
        open_tokens = 0  # tokens of the pieces of a long document not yet ended
        try:
            for chunk, (tokens, lengths, nbytes) in _encoded(
                make_chunks(source.documents(), *chunks),
                tokenizer,
                sep_id,
                dtype,
                num_proc,
                source.describe(),
            ):
                if not chunk.piece:
                    writer.append(tokens, lengths)
                elif not chunk.last:
                    writer.append(tokens, ())
                    open_tokens += int(tokens.size)
                else:  # the document's last piece: one [SEP] ends it, if it has tokens
                    length = open_tokens + int(tokens.size)
                    if length:
                        tokens, length = np.concatenate([tokens.astype(dtype), sep]), length + 1
                    writer.append(tokens, (length,))
                    open_tokens = 0
                text_bytes += nbytes
                bar.update(nbytes, int(tokens.size))
        finally:
            bar.close()
        counts = writer.close()
        if source.fingerprint() != fingerprint:
            raise ConfigError(
                f"{source.describe()} changed while it was being prepared; nothing was kept: "
                "run again"
            )
        seconds = time.monotonic() - start
        meta = {
            "key": key,
            **counts,
            "vocab_size": vocab_size,
            "tokenizer_sha256": sha,
            "source": source.describe(),
            "text_chars": text_bytes,
            "num_proc": num_proc,
            "seconds": round(seconds, 3),
        }
        write_meta(tmp, meta)
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700; a shared cache is readable like any dir
        os.rename(tmp, root / key)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    message = (
        f"prepared {source.describe()}: {counts['tokens']:,} tokens in {counts['documents']:,} "
        f"documents, {len(counts['shards'])} shard(s), {seconds:.1f} s "
        f"({counts['tokens'] / max(seconds, 1e-9):,.0f} tokens/s, {num_proc} process(es)) "
        f"-> {root / key}"
    )
    (log or (lambda m: print(m, file=sys.stderr, flush=True)))(message)
    return find_prepared(root, key, sha)  # type: ignore[return-value]
