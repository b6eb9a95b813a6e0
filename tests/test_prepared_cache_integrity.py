"""Prepared-corpus cache integrity: an entry is used only once it proves whole,
the corpus key sees a rewrite that restores size and mtime, and the tokenizing pool survives
dead workers, enormous documents and concurrent first preparations."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_helpers import CONFIGS, TINY

import roformer_lit.data.prepare as prepmod
import roformer_lit.data.tokenizer as tokmod
from roformer_lit.commands import main
from roformer_lit.data import CorpusDataModule, FileSource, encode_stream, load_default_corpus
from roformer_lit.data.prepare import cache_key, find_prepared, prepare_corpus
from roformer_lit.data.shards import DOC_ENDS_FILE, META_FILE, TOKENIZER_FILE
from roformer_lit.data.tokenizer import train_tokenizer
from roformer_lit.errors import ConfigError

_REAL_ENCODE_CHUNK = prepmod.encode_chunk


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return load_default_corpus()[:400]


@pytest.fixture(scope="module")
def tokenizer(docs: list[str]):  # type: ignore[no-untyped-def]
    return train_tokenizer(docs, 500)


@pytest.fixture
def corpus(tmp_path: Path, docs: list[str]) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(docs) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------- class 1: entries
def _meta(entry: Path) -> dict[str, Any]:
    return json.loads((entry / META_FILE).read_text(encoding="utf-8"))


def _write_meta(entry: Path, meta: dict[str, Any]) -> None:
    (entry / META_FILE).write_text(json.dumps(meta), encoding="utf-8")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _reseal(entry: Path) -> None:
    """Recompute the checksums in meta.json after an edit, as a careful forger would: what
    remains to refuse the entry are the structural checks alone."""
    meta = _meta(entry)
    for shard in meta["shards"]:
        shard["sha256"] = _sha(entry / shard["file"])
    meta["doc_ends_sha256"] = _sha(entry / DOC_ENDS_FILE)
    meta["tokenizer_sha256"] = _sha(entry / TOKENIZER_FILE)
    _write_meta(entry, meta)


def _edit_meta(**changes: Any) -> Callable[[Path], None]:
    def edit(entry: Path) -> None:
        meta = _meta(entry)
        for key, value in changes.items():
            if value is _DROP:
                del meta[key]
            else:
                meta[key] = value(meta) if callable(value) else value
        _write_meta(entry, meta)

    return edit


_DROP = object()


def _shard_named(name: str) -> Callable[[Path], None]:
    """meta.json names a shard file outside the entry; the file is there, of the right size."""

    def edit(entry: Path) -> None:
        meta = _meta(entry)
        first = entry / meta["shards"][0]["file"]
        if not os.path.isabs(name):
            target = (entry / name).resolve()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(first, target)
        meta["shards"][0]["file"] = name
        _write_meta(entry, meta)

    return edit


def _symlinked_shard(entry: Path) -> None:
    first = entry / _meta(entry)["shards"][0]["file"]
    outside = entry.parent / "elsewhere.bin"
    shutil.copy(first, outside)  # same bytes: only the link gives it away
    first.unlink()
    first.symlink_to(outside)


def _symlinked_meta(entry: Path) -> None:
    outside = entry.parent / "meta-elsewhere.json"
    shutil.copy(entry / META_FILE, outside)
    (entry / META_FILE).unlink()
    (entry / META_FILE).symlink_to(outside)


def _truncate_shard(entry: Path) -> None:
    first = entry / _meta(entry)["shards"][0]["file"]
    with open(first, "r+b") as f:
        f.truncate(first.stat().st_size - 2)


def _truncate_doc_ends(entry: Path) -> None:
    path = entry / DOC_ENDS_FILE
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size - 8)


def _flip_shard_byte(entry: Path) -> None:
    first = entry / _meta(entry)["shards"][0]["file"]
    data = bytearray(first.read_bytes())
    data[10] ^= 0x01
    first.write_bytes(bytes(data))


def _doc_ends(edit: Callable[[np.ndarray], None], reseal: bool) -> Callable[[Path], None]:
    def damage(entry: Path) -> None:
        path = entry / DOC_ENDS_FILE
        ends = np.fromfile(path, dtype="<i8")
        edit(ends)
        ends.astype("<i8").tofile(path)
        if reseal:
            _reseal(entry)

    return damage


def _swap(ends: np.ndarray) -> None:
    ends[3], ends[4] = ends[4], ends[3]


def _move_boundary(ends: np.ndarray) -> None:
    ends[3] = ends[2]  # still non-decreasing: only the checksum tells


def _shift_last(ends: np.ndarray) -> None:
    ends[-1] -= 1


def _negative_first(ends: np.ndarray) -> None:
    ends[0] = -5


def _other_tokenizer(reseal: bool) -> Callable[[Path], None]:
    def damage(entry: Path) -> None:
        other = train_tokenizer(load_default_corpus()[:200], 300)
        (entry / TOKENIZER_FILE).write_text(other.to_str(), encoding="utf-8")
        if reseal:
            _reseal(entry)

    return damage


def _not_json(entry: Path) -> None:
    (entry / META_FILE).write_text("{ not json", encoding="utf-8")


def _then_reseal(edit: Callable[[Path], None]) -> Callable[[Path], None]:
    def damage(entry: Path) -> None:
        edit(entry)
        _reseal(entry)

    return damage


DAMAGE = [
    ("meta.json not JSON", _not_json, "meta.json is not valid JSON"),
    ("meta.json a symlink", _symlinked_meta, "meta.json is a symbolic link"),
    ("older format", _edit_meta(version=1), "format version 1"),
    # ``mv prepared/other prepared/k``: another corpus's entry under this corpus's key
    ("entry renamed", _edit_meta(key="other"), "prepared as entry 'other', not 'k'"),
    ("key missing", _edit_meta(doc_ends_sha256=_DROP), "lacks 'doc_ends_sha256'"),
    ("count is a string", _edit_meta(tokens="12"), "tokens is a str, expected int"),
    ("count is a bool", _edit_meta(documents=True), "documents is a bool"),
    ("negative count", _edit_meta(documents=-1), "documents=-1, expected a count"),
    ("unknown dtype", _edit_meta(dtype="float32"), "dtype='float32'"),
    ("dtype too narrow", _edit_meta(vocab_size=70000), "does not hold a vocabulary"),
    ("no shards", _edit_meta(shards=[]), "names no shard"),
    ("shard list of strings", _edit_meta(shards=["tokens-00000.bin"]), "is not an object"),
    ("shard counts", _edit_meta(tokens=lambda m: m["tokens"] + 1), "do not add up"),
    ("id past the vocab", _edit_meta(max_token_id=lambda m: m["vocab_size"]), "outside the"),
    ("parent path", _shard_named("../outside.bin"), "not a plain file name"),
    ("absolute path", _shard_named("/etc/hostname"), "not a plain file name"),
    ("subdirectory", _shard_named("sub/tokens-00000.bin"), "not a plain file name"),
    ("entry's own file", _shard_named(TOKENIZER_FILE), "not a plain file name"),
    ("shard is a symlink", _symlinked_shard, "is a symbolic link"),
    ("truncated shard", _truncate_shard, r"shard tokens-00000\.bin has \d+ bytes, expected"),
    ("same size, other bytes", _flip_shard_byte, "tokens-00000.bin does not have the content"),
    (
        "doc boundary moved",
        _doc_ends(_move_boundary, reseal=False),
        "doc_ends.bin does not have the content",
    ),
    ("doc ends decrease", _doc_ends(_swap, reseal=True), "document ends decrease"),
    ("doc ends negative", _doc_ends(_negative_first, reseal=True), "document ends decrease"),
    ("last end short", _doc_ends(_shift_last, reseal=True), "the last document ends at"),
    ("tokenizer replaced", _other_tokenizer(reseal=False), "not the tokenizer its tokens"),
    ("tokenizer resealed", _other_tokenizer(reseal=True), r"tokenizer\.json has \d+ tokens"),
    ("doc_ends missing", lambda e: (e / DOC_ENDS_FILE).unlink(), "doc_ends.bin: No such file"),
    # the document ends are no shard of tokens: named for what they are
    ("doc_ends truncated", _truncate_doc_ends, r"\(the document ends doc_ends\.bin has \d+ bytes"),
    ("meta.json missing", lambda e: (e / META_FILE).unlink(), "no meta.json"),
]


@pytest.mark.parametrize(("damage", "what"), [pytest.param(d, w, id=i) for i, d, w in DAMAGE])
def test_a_damaged_entry_is_refused_in_one_line(
    damage: Callable[[Path], None], what: str, corpus: Path, tokenizer, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Each way an entry can disagree with itself, its tokenizer or its directory is refused
    by the one check every reader goes through, in one line that names the entry."""
    root = tmp_path / "cache"
    prepared = prepare_corpus(
        FileSource((corpus,)),
        tokenizer,
        root,
        "k",
        num_proc=1,
        chunk_bytes=3000,
        shard_tokens=4000,
        progress=False,
    )
    assert len(prepared.meta["shards"]) > 1
    assert find_prepared(root, "k") is not None  # whole: verified (and remembered) once
    time.sleep(0.01)  # a later write has another mtime even on a coarse clock
    damage(prepared.directory)
    with pytest.raises(ConfigError) as e:
        find_prepared(root, "k")
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"prepared corpus entry {prepared.directory} is damaged (")
    assert message.endswith("; delete it and run again")
    assert re.search(what, message), message
    # preparing again refuses it too, and changes nothing
    before = sorted(p.name for p in prepared.directory.iterdir())
    with pytest.raises(ConfigError, match="is damaged"):
        prepare_corpus(FileSource((corpus,)), tokenizer, root, "k", num_proc=1, progress=False)
    assert sorted(p.name for p in prepared.directory.iterdir()) == before


def test_an_entry_from_before_the_key_was_recorded_is_read(
    corpus: Path, tokenizer, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "cache"
    prepared = prepare_corpus(FileSource((corpus,)), tokenizer, root, "k", progress=False)
    assert prepared.meta["key"] == "k"
    _edit_meta(key=_DROP)(prepared.directory)
    found = find_prepared(root, "k")
    assert found is not None and "key" not in found.meta


def test_a_damaged_entry_ends_prepare_with_one_error_line(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ROFORMER_LIT_CACHE", str(tmp_path / "cache"))
    command = ["prepare", "--config", str(CONFIGS / "rope.yaml"), *TINY]
    command += ["--data.train_files", str(corpus), "--data.vocab_size", "500"]
    assert main(command) == 0
    (entry,) = [p for p in (tmp_path / "cache" / "prepared").iterdir() if p.is_dir()]
    _flip_shard_byte(entry)
    capfd.readouterr()
    assert main(command) == 2
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: prepared corpus entry {entry} is damaged (")


def _rewrite_in_place(path: Path) -> None:
    """Same size, other content, mtime set back (``cp -p`` onto the file)."""
    st = path.stat()
    text = path.read_text(encoding="utf-8")
    path.write_text(text.swapcase(), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _replace_by_rename(path: Path) -> None:
    """Same size, other content, mtime set back, renamed into place (``rsync -t``)."""
    st = path.stat()
    tmp = path.with_name(".rsync-tmp")
    tmp.write_text(path.read_text(encoding="utf-8").swapcase(), encoding="utf-8")
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, path)


@pytest.mark.parametrize(
    ("rewrite", "stale"),
    [
        pytest.param(lambda p: None, True, id="unchanged"),
        pytest.param(lambda p: p.read_bytes(), True, id="only read"),
        pytest.param(_rewrite_in_place, False, id="cp -p"),
        pytest.param(_replace_by_rename, False, id="rsync -t"),
    ],
)
def test_a_rewrite_that_restores_size_and_mtime_is_a_new_corpus(
    rewrite: Callable[[Path], Any], stale: bool, corpus: Path, tokenizer, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The key of a corpus rewritten with its size and mtime kept changes, so its tokens are
    prepared anew; a file only read keeps its key (and its prepared tokens)."""
    source = FileSource((corpus,))
    before = cache_key({"source": source.fingerprint()})
    first = prepare_corpus(source, tokenizer, tmp_path, before, num_proc=1, progress=False)
    st = corpus.stat()
    time.sleep(0.01)
    rewrite(corpus)
    assert (corpus.stat().st_size, corpus.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    after = cache_key({"source": source.fingerprint()})
    assert (after == before) is stale
    second = prepare_corpus(source, tokenizer, tmp_path, after, num_proc=1, progress=False)
    lines = corpus.read_text(encoding="utf-8").splitlines()
    oracle = encode_stream(tokenizer, lines, tokenizer.token_to_id("[SEP]")).numpy()
    stream = second.stream()
    assert np.array_equal(stream.read(0, stream.tokens), oracle)
    assert (second.directory == first.directory) is stale


def test_a_corpus_changed_during_preparation_is_not_kept(
    corpus: Path, tokenizer, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    class Rewritten(FileSource):
        def documents(self):  # type: ignore[no-untyped-def]
            for i, doc in enumerate(super().documents()):
                if i == 100:
                    _rewrite_in_place(self.paths[0])
                yield doc

    root = tmp_path / "cache"
    with pytest.raises(ConfigError, match="changed while it was being prepared") as e:
        prepare_corpus(Rewritten((corpus,)), tokenizer, root, "k", num_proc=1, progress=False)
    assert "\n" not in str(e.value)
    assert sorted(p.name for p in root.iterdir()) == ["k.lock"]


# --------------------------------------------------------------------------- class 2: the pool
def _dying_encode_chunk(documents: list[str], whole: bool = True) -> Any:
    """A worker that dies on the chunk holding a marked document."""
    for doc in documents:
        if doc.startswith("DIE-"):
            how = doc.split()[0][4:]
            if how == "exit":
                os._exit(3)
            sig = getattr(signal, how)
            if sig != signal.SIGKILL:  # die as a process without handlers does
                signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
            time.sleep(30)  # a signal that is not delivered at once
    return _REAL_ENCODE_CHUNK(documents, whole)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "SIGSEGV", "exit"])
def test_a_dead_worker_ends_the_preparation_in_one_line(
    how: str,
    docs: list[str],
    tokenizer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    """A worker killed (the OOM killer sends SIGKILL) must not leave prepare waiting for its
    chunk forever: one line, and nothing kept, neither the entry nor its temporary directory."""
    path = tmp_path / "c.txt"
    lines = [*docs[:200], f"DIE-{how} in this document", *docs[200:]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(prepmod, "encode_chunk", _dying_encode_chunk)
    monkeypatch.setattr(prepmod, "default_num_proc", lambda: 2)
    root = tmp_path / "cache"
    start = time.monotonic()
    with pytest.raises(ConfigError, match="a tokenizer process died while preparing") as e:
        prepare_corpus(
            FileSource((path,)), tokenizer, root, "k", num_proc=2, chunk_bytes=2000, progress=False
        )
    assert "\n" not in str(e.value) and time.monotonic() - start < 60
    assert sorted(p.name for p in root.iterdir()) == ["k.lock"]
    assert find_prepared(root, "k") is None


def _record_chunks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    seen: list[tuple[int, bool]] = []

    def recording(documents: list[str], whole: bool = True) -> Any:
        seen.append((sum(map(len, documents)), whole))
        return _REAL_ENCODE_CHUNK(documents, whole)

    monkeypatch.setattr(prepmod, "encode_chunk", recording)
    return seen


_CHUNK = 2000


def _spaced(docs: list[str]) -> str:
    return " ".join(docs[:150])  # ~60 KB, words separated by spaces


def _no_whitespace(docs: list[str]) -> str:
    return ",".join(" ".join(docs[:150]).split())  # ~60 KB without a space


def _empty_tokens(docs: list[str]) -> str:
    return " ".join(["\u200b" * 30] * 1000)  # ~31 KB that tokenizes to nothing


@pytest.mark.parametrize(
    ("huge", "exact"),
    [
        pytest.param(_spaced, True, id="spaces"),
        pytest.param(_no_whitespace, False, id="no whitespace: hard cuts"),
        pytest.param(_empty_tokens, True, id="tokenizes to nothing"),
        pytest.param(lambda d: "x " * (_CHUNK // 2), True, id="exactly the bound"),
    ],
)
@pytest.mark.parametrize("where", ["first", "middle", "last", "alone"])
def test_an_enormous_document_is_tokenized_in_bounded_pieces(
    huge: Callable[[list[str]], str],
    exact: bool,
    where: str,
    docs: list[str],
    tokenizer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    """No worker is handed more than a chunk's worth of text, whatever one document holds,
    and the document boundaries (and, at whitespace cuts, the ids) are those of the whole
    documents."""
    doc = huge(docs).strip()
    around = {"first": ([], docs[:40]), "middle": (docs[:40], docs[40:80])}
    around |= {"last": (docs[:40], []), "alone": ([], [])}
    before, after = around[where]
    lines = [*before, doc, *after]
    path = tmp_path / "c.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    seen = _record_chunks(monkeypatch)
    prepared = prepare_corpus(
        FileSource((path,)),
        tokenizer,
        tmp_path,
        "k",
        num_proc=1,
        chunk_bytes=_CHUNK,
        progress=False,
    )
    assert seen and max(chars for chars, _ in seen) < 2 * _CHUNK, seen
    pieces = [chars for chars, whole in seen if not whole]
    assert bool(pieces) == (len(doc) > _CHUNK)
    assert sum(pieces) in (0, len(doc)) and all(chars <= _CHUNK for chars in pieces)
    stream = prepared.stream()
    assert stream.documents == len(lines)
    sep = tokenizer.token_to_id("[SEP]")
    lengths = np.diff(np.concatenate([[0], stream.doc_ends]))
    whole = [len(tokenizer.encode(d, add_special_tokens=False).ids) for d in lines]
    i = len(before)
    others = [n + 1 if n else 0 for n in whole[:i] + whole[i + 1 :]]
    assert lengths[:i].tolist() + lengths[i + 1 :].tolist() == others
    if exact:
        assert lengths[i] == (whole[i] + 1 if whole[i] else 0)
        oracle = encode_stream(tokenizer, lines, sep).numpy()
        assert np.array_equal(stream.read(0, stream.tokens), oracle)
    else:
        assert (
            lengths[i] > 1
            and stream.read(int(stream.doc_ends[i]) - 1, int(stream.doc_ends[i]))[0] == sep
        )


@pytest.mark.timeout(300)
def test_concurrent_first_preparations_share_one_tokenizer(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two first preparations of one corpus started together: the second waits for the
    first's tokenizer instead of training its own (training is not deterministic across
    processes; here each training adds a token of its own to make that certain), and both
    use one prepared entry."""
    real_train = tokmod.train_tokenizer
    trained: list[int] = []

    def train_differently(documents: Any, vocab_size: int) -> Any:
        tok = real_train(documents, vocab_size)
        tok.add_tokens([f"[only-in-{threading.get_ident()}]"])
        trained.append(threading.get_ident())
        time.sleep(1.0)  # both would be training now without the lock
        return tok

    monkeypatch.setattr(tokmod, "train_tokenizer", train_differently)
    barrier = threading.Barrier(2)
    results: list[Any] = [None, None]

    def run(i: int) -> None:
        try:
            dm = CorpusDataModule(
                train_files=str(corpus), vocab_size=500, num_proc=1, cache_dir=str(tmp_path)
            )
            barrier.wait(timeout=30)
            train, _ = dm.prepare()
            results[i] = (train.directory, train.meta["tokenizer_sha256"], dm.tokenizer.to_str())
        except BaseException as e:  # reported below, in the test's thread
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not any(t.is_alive() for t in threads)
    for r in results:
        assert not isinstance(r, BaseException), r
    assert len(trained) == 1
    (d0, sha0, tok0), (d1, sha1, tok1) = results
    assert d0 == d1 and sha0 == sha1 and tok0 == tok1
