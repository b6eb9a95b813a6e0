"""Prepare once: a corpus streamed through parallel tokenizer processes into cached token shards.

:func:`prepare_corpus` reads the documents of a source in order (never all at once), groups
them into chunks of about ``chunk_bytes`` of text, and hands the chunks to ``num_proc``
worker processes that tokenize them (``encode_batch_fast`` without special tokens, one
``[SEP]`` after each document). The main process writes the results in order into the
shard format of :mod:`roformer_lit.data.shards`; at most ``2 * num_proc`` chunks are in
flight, so memory does not grow with the corpus. A progress bar shows on a terminal, a line
every 30 s otherwise.

Caching and atomicity: the result lives in ``<root>/<key>/``, where ``key`` hashes (corpus
fingerprint, tokenizer, format). It is built in a temporary directory beside it and renamed
into place only after every file, ``meta.json`` last, is written and fsynced, so a prepare
killed at any point leaves no directory that a later run trusts (its temporary directory is
removed by the next prepare of the same key). An exclusive ``flock`` on ``<root>/<key>.lock``
makes concurrent runs (a sweep's, DDP ranks) wait for one preparation instead of repeating
it; the lock goes away with the process that holds it, even on SIGKILL.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterable, Iterator
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
    read_meta,
    token_dtype,
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
            raise ConfigError(
                f"prepared corpus {self.directory}: unreadable {TOKENIZER_FILE} "
                f"({' '.join(str(e).split())[:120]}); delete the directory to prepare it again"
            ) from None


def find_prepared(root: Path, key: str, tokenizer_sha: str | None = None) -> PreparedCorpus | None:
    """The complete prepared corpus ``<root>/<key>``, or ``None`` if there is none.

    Raises:
        ConfigError: the directory exists but is damaged, or was made with another tokenizer
            than ``tokenizer_sha`` (when given).
    """
    directory = root / key
    if not (directory / META_FILE).is_file():
        if os.path.lexists(directory):
            raise ConfigError(
                f"{directory} is in the prepared-corpus cache but is not a complete prepared "
                "corpus (no meta.json); delete it to prepare again"
            )
        return None
    meta = read_meta(directory)
    if tokenizer_sha is not None and meta.get("tokenizer_sha256") != tokenizer_sha:
        raise ConfigError(
            f"prepared corpus {directory} was made with another tokenizer "
            f"(sha256 {str(meta.get('tokenizer_sha256'))[:12]}, this run's is "
            f"{tokenizer_sha[:12]}); delete it to prepare again"
        )
    return PreparedCorpus(directory, meta)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
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


def encode_chunk(documents: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Tokenize a chunk in this worker: (tokens with a [SEP] after each document, each
    document's length including its [SEP] (0 for a document without tokens), text bytes)."""
    assert _WORKER_TOKENIZER is not None, "worker not initialised"
    # encode_batch_fast: the same ids as encode_batch without computing character offsets
    encodings = _WORKER_TOKENIZER.encode_batch_fast(documents, add_special_tokens=False)
    ids = [e.ids for e in encodings]
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
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


def _chunks(documents: Iterable[str], chunk_bytes: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    size = 0
    for doc in documents:
        chunk.append(doc)
        size += len(doc)
        if size >= chunk_bytes:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


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


def _encoded(
    documents: Iterable[str],
    tokenizer: Tokenizer,
    sep_id: int,
    dtype: np.dtype,
    num_proc: int,
    chunk_bytes: int,
) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """Tokenized chunks, in corpus order, from ``num_proc`` forked workers (in-process for 1)."""
    init = (tokenizer.to_str(), sep_id, dtype.name)
    chunks = _chunks(documents, chunk_bytes)
    with _serial_tokenizers():
        if num_proc <= 1:
            _init_worker(*init)
            for chunk in chunks:
                yield encode_chunk(chunk)
            return
        # fork: workers start in milliseconds (spawn would import torch in each) and only
        # run tokenizers and numpy.
        context = multiprocessing.get_context("fork")
        with context.Pool(num_proc, initializer=_init_worker, initargs=init) as pool:
            pending: deque[Any] = deque()
            for chunk in chunks:
                pending.append(pool.apply_async(encode_chunk, (chunk,)))
                if len(pending) >= 2 * num_proc:
                    yield pending.popleft().get()
            while pending:
                yield pending.popleft().get()


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
    try:
        root.mkdir(parents=True, exist_ok=True)
        lock = _locked(root / f"{key}.lock")
        lock.__enter__()
    except OSError as e:
        raise ConfigError(f"cannot write prepared corpora to {root}: {e.strerror or e}") from None
    try:
        found = find_prepared(root, key, sha)  # another process may have made it meanwhile
        if found is not None:
            return found
        _remove_stale(root, key)
        return _build(
            source,
            tokenizer,
            root,
            key,
            sha,
            sep_id,
            num_proc,
            chunk_bytes,
            shard_tokens,
            progress,
            log,
        )
    finally:
        lock.__exit__(None, None, None)


def _build(
    source: DocumentSource,
    tokenizer: Tokenizer,
    root: Path,
    key: str,
    sha: str,
    sep_id: int,
    num_proc: int,
    chunk_bytes: int,
    shard_tokens: int,
    progress: bool,
    log: Any,
) -> PreparedCorpus:
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{key}.tmp-"))
    try:
        (tmp / TOKENIZER_FILE).write_text(tokenizer.to_str(), encoding="utf-8")
        dtype = token_dtype(tokenizer.get_vocab_size(with_added_tokens=True))
        writer = ShardWriter(tmp, dtype, shard_tokens)
        bar = _Progress(source.size_hint(), f"preparing {source.describe()}", progress)
        text_bytes = 0
        try:
            for tokens, lengths, nbytes in _encoded(
                source.documents(), tokenizer, sep_id, dtype, num_proc, chunk_bytes
            ):
                writer.append(tokens, lengths)
                text_bytes += nbytes
                bar.update(nbytes, int(tokens.size))
        finally:
            bar.close()
        counts = writer.close()
        seconds = time.monotonic() - start
        meta = {
            **counts,
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
