"""Prepared corpora: same blocks as the old in-memory packing, shards, caching,
atomic preparation, the prepare command, a sweep preparing once, other sources."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from cli_helpers import CONFIGS, REPO, TINY, fit_args

import roformer_lit.data.prepare as prepmod
from roformer_lit.commands import main
from roformer_lit.data import (
    CorpusDataModule,
    FileSource,
    MLMBlockDataset,
    encode_stream,
    load_default_corpus,
    pack_blocks,
    prepare_corpus,
    split_train_val,
)
from roformer_lit.data.dataset import EpochSampler, ResumableDataLoader
from roformer_lit.data.prepare import find_prepared
from roformer_lit.data.shards import TokenBlocks
from roformer_lit.data.tokenizer import train_tokenizer
from roformer_lit.errors import ConfigError


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return load_default_corpus()[:1200]


@pytest.fixture(scope="module")
def tokenizer(docs: list[str]):  # type: ignore[no-untyped-def]
    return train_tokenizer(docs, 800)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, docs: list[str]) -> Path:
    """~240 KB of English prose, one paragraph per line, with a few empty-token lines."""
    path = tmp_path_factory.mktemp("corpus") / "c.txt"
    lines = list(docs)
    lines[5] = "\u200b"  # a document that tokenizes to nothing (zero-width space)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = prepmod._build

    def counting(source, tokenizer, root, key, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(key)
        return real(source, tokenizer, root, key, *args, **kwargs)

    monkeypatch.setattr(prepmod, "_build", counting)
    return calls


# --------------------------------------------------------------------------- equivalence
def test_bundled_corpus_blocks_equal_the_in_memory_packing(tmp_path: Path) -> None:
    """With the shipped tokenizer, every training and validation block is what the old
    pipeline (``encode_stream`` + ``pack_blocks`` over the lists of documents) made, and so
    is every masked sample."""
    dm = CorpusDataModule(cache_dir=str(tmp_path), num_proc=2)
    dm.setup("fit")
    train_docs, val_docs = split_train_val(load_default_corpus(), 0.05)
    sep = dm.tokenizer.token_to_id("[SEP]")
    assert dm.tokenizer_path is not None and dm.tokenizer_path.name.startswith("wordpiece-v8192-")
    for docs_, ds in ((train_docs, dm.train_dataset), (val_docs, dm.val_dataset)):
        assert ds is not None
        oracle = pack_blocks(encode_stream(dm.tokenizer, docs_, sep), dm.max_length)
        assert len(ds) == oracle.shape[0] > 100
        assert torch.equal(ds.blocks.to_tensor(), oracle.long())  # type: ignore[union-attr]
        old = MLMBlockDataset(
            oracle,
            mlm_probability=0.15,
            mask_token_id=dm.mask_token_id,
            special_token_ids=dm.special_tokens.all_ids,
            vocab_size=dm.tokenizer_vocab_size,
            seed=0,
            fixed_masking=ds.fixed_masking,
        )
        for key in [(0, 0), (3, 17), (1, len(ds) - 1)]:
            new_item, old_item = ds[key], old[key]
            assert torch.equal(new_item["input_ids"], old_item["input_ids"])
            assert torch.equal(new_item["labels"], old_item["labels"])
    stream = dm.train_dataset.blocks.stream  # type: ignore[union-attr]
    assert stream.dtype == np.uint16
    assert stream.documents == len(train_docs) + len(val_docs)


# --------------------------------------------------------------------------- shards
def test_shards_documents_and_parallel_workers(
    corpus: Path, tokenizer, tmp_path: Path, docs: list[str]
) -> None:  # type: ignore[no-untyped-def]
    source = FileSource((corpus,))
    one = prepare_corpus(source, tokenizer, tmp_path, "one", num_proc=1, progress=False)
    many = prepare_corpus(
        source,
        tokenizer,
        tmp_path,
        "many",
        num_proc=2,
        chunk_bytes=3000,
        shard_tokens=5000,
        progress=False,
    )
    assert len(one.meta["shards"]) == 1 and len(many.meta["shards"]) > 5
    a, b = one.stream(), many.stream()
    sep = tokenizer.token_to_id("[SEP]")
    lines = corpus.read_text(encoding="utf-8").splitlines()
    oracle = encode_stream(tokenizer, lines, sep).long().numpy()
    assert a.tokens == b.tokens == oracle.size
    assert np.array_equal(a.read(0, a.tokens), oracle)
    # reads across every shard boundary
    for boundary in b.starts[1:-1]:
        lo, hi = int(boundary) - 7, int(boundary) + 5
        assert np.array_equal(b.read(lo, hi), oracle[lo:hi])
    # document ends: one per document, an empty-token document adds nothing
    ends = b.doc_ends
    assert np.array_equal(ends, a.doc_ends)
    assert ends.size == len(lines) and ends[-1] == b.tokens
    lengths = np.diff(np.concatenate([[0], ends]))
    assert lengths[5] == 0 and (lengths[np.arange(lengths.size) != 5] > 1).all()
    assert (oracle[ends[lengths > 0] - 1] == sep).all()
    expected = [len(tokenizer.encode(d, add_special_tokens=False).ids) + 1 for d in lines[:5]]
    assert lengths[:5].tolist() == expected
    doc = b.document_index(int(ends[9]) - 2, int(ends[9]) + 2)
    assert doc.tolist() == [9, 9, 10, 10]


def test_more_processes_than_cores_is_reduced_with_one_warning(
    corpus: Path, tokenizer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    """``num_proc: 100000`` (a typo, or a config from a bigger machine) must not fork a
    hundred thousand workers: it is reduced to the cores, in one warning line."""
    monkeypatch.setattr(prepmod, "default_num_proc", lambda: 2)
    forked: list[int] = []

    class CountingPool(prepmod.ProcessPoolExecutor):
        def __init__(self, max_workers, *args, **kwargs):  # type: ignore[no-untyped-def]
            forked.append(max_workers)
            super().__init__(max_workers, *args, **kwargs)

    monkeypatch.setattr(prepmod, "ProcessPoolExecutor", CountingPool)
    source = FileSource((corpus,))
    capsys.readouterr()
    many = prepare_corpus(
        source, tokenizer, tmp_path, "k", num_proc=100_000, chunk_bytes=30_000, progress=False
    )
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert (
        len(warnings) == 1
        and "data.num_proc=100000" in warnings[0]
        and "2 processes" in warnings[0]
    ), err
    assert forked == [2] and many.meta["num_proc"] == 2
    one = prepare_corpus(source, tokenizer, tmp_path, "one", num_proc=1, progress=False)
    a, b = one.stream(), many.stream()
    assert np.array_equal(a.read(0, a.tokens), b.read(0, b.tokens))


def test_resume_across_a_shard_boundary(corpus: Path, tokenizer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Blocks spanning shards, read through the resumable loader: a loader restored from the
    state after k batches hands out exactly the batches the uninterrupted one did."""
    prepared = prepare_corpus(
        FileSource((corpus,)),
        tokenizer,
        tmp_path,
        "k",
        num_proc=1,
        chunk_bytes=1000,
        shard_tokens=777,
        progress=False,
    )
    stream = prepared.stream()
    blocks = TokenBlocks(stream, 0, stream.tokens, 32)
    spanning = [i for i in range(len(blocks)) if (i * 32) // 777 != (i * 32 + 31) // 777]
    assert len(spanning) > 10

    def loader() -> ResumableDataLoader:
        ds = MLMBlockDataset(
            blocks,
            mlm_probability=0.15,
            mask_token_id=4,
            special_token_ids=[0, 1, 2, 3, 4],
            vocab_size=tokenizer.get_vocab_size(),
            seed=5,
            fixed_masking=False,
        )
        sampler = EpochSampler(len(ds), shuffle=True, seed=5)
        sampler.set_epoch(1)
        return ResumableDataLoader(ds, batch_size=8, sampler=sampler)

    full = list(loader())
    first = loader()
    it = iter(first)
    for _ in range(7):
        next(it)
    state = first.state_dict()
    resumed = loader()
    resumed.load_state_dict(state)
    rest = list(resumed)
    assert len(rest) == len(full) - 7
    for x, y in zip(full[7:], rest, strict=True):
        assert torch.equal(x["input_ids"], y["input_ids"])
        assert torch.equal(x["labels"], y["labels"])
    oracle = torch.from_numpy(stream.read(0, len(blocks) * 32)).reshape(-1, 32)
    assert torch.equal(blocks.to_tensor(), oracle)
    assert all(torch.equal(blocks[i], oracle[i]) for i in spanning)


# --------------------------------------------------------------------------- caching
def test_cached_preparation_is_reused_and_keyed(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_builds(monkeypatch)

    def dm(**kw: object) -> CorpusDataModule:
        args: dict[str, object] = dict(
            train_files=str(corpus), vocab_size=600, max_length=32, cache_dir=str(tmp_path)
        )
        return CorpusDataModule(**{**args, **kw})  # type: ignore[arg-type]

    first = dm()
    first.setup("fit")
    assert len(calls) == 1
    # other block length, batch, seed, masking, caps: the same shards, not even a tokenizer
    for kw in (
        dict(max_length=64),
        dict(seed=3, batch_size=4),
        dict(mlm_probability=0.3, max_train_blocks=5),
    ):
        other = dm(**kw)
        other.setup("fit")
        assert other.tokenizer_path == first.prepare()[0].tokenizer_path
    assert len(calls) == 1
    # another tokenizer (vocab size) or another corpus: prepared anew
    dm(vocab_size=700).setup("fit")
    assert len(calls) == 2
    changed = tmp_path / "changed.txt"
    changed.write_text(corpus.read_text(encoding="utf-8") + "one more paragraph\n")
    dm(train_files=str(changed)).setup("fit")
    assert len(calls) == 3
    # a modified file (size or mtime) is a new corpus
    time.sleep(0.01)
    with open(changed, "a", encoding="utf-8") as f:
        f.write("and another\n")
    dm(train_files=str(changed)).setup("fit")
    assert len(calls) == 4


def test_damaged_or_foreign_cache_is_one_line(corpus: Path, tokenizer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = FileSource((corpus,))
    prepared = prepare_corpus(source, tokenizer, tmp_path, "x", num_proc=1, progress=False)
    other = train_tokenizer(load_default_corpus()[:300], 300)
    with pytest.raises(ConfigError, match=r"made with another tokenizer.*delete it"):
        prepare_corpus(source, other, tmp_path, "x", num_proc=1, progress=False)
    shard = prepared.directory / prepared.meta["shards"][0]["file"]
    with open(shard, "r+b") as f:
        f.truncate(shard.stat().st_size - 2)
    with pytest.raises(ConfigError, match=r"shard tokens-00000\.bin has .* bytes, expected") as e:
        find_prepared(tmp_path, "x")
    assert "\n" not in str(e.value)
    (tmp_path / "y").mkdir()
    with pytest.raises(ConfigError, match="not a complete prepared corpus"):
        find_prepared(tmp_path, "y")


_SLOW_PREPARE = """
import sys, time
from pathlib import Path
from roformer_lit.data import FileSource, prepare_corpus
from roformer_lit.data.tokenizer import load_tokenizer_file

class Slow(FileSource):
    def documents(self):
        for i, doc in enumerate(super().documents()):
            if i == 300:
                Path(sys.argv[3]).write_text("started")
                time.sleep(60)
            yield doc

prepare_corpus(Slow((Path(sys.argv[1]),)), load_tokenizer_file(sys.argv[2]), Path(sys.argv[4]),
               "k", num_proc=2, chunk_bytes=2000, shard_tokens=3000, progress=False)
"""


def test_a_killed_prepare_is_redone_not_trusted(corpus: Path, tokenizer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    tok_file = tmp_path / "tok.json"
    tok_file.write_text(tokenizer.to_str(), encoding="utf-8")
    root, marker = tmp_path / "cache", tmp_path / "started"
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_PREPARE, str(corpus), str(tok_file), str(marker), str(root)],
        cwd=REPO,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "prepare did not start"
            time.sleep(0.1)
        time.sleep(0.5)  # some shards are written by now
        partial = list(root.glob(".k.tmp-*"))
        assert len(partial) == 1 and any(partial[0].glob("tokens-*.bin"))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert find_prepared(root, "k") is None  # nothing a later run trusts
    prepared = prepare_corpus(
        FileSource((corpus,)), tokenizer, root, "k", num_proc=1, progress=False
    )
    assert not list(root.glob(".k.tmp-*")), "the killed preparation's leftovers are removed"
    sep = tokenizer.token_to_id("[SEP]")
    lines = corpus.read_text(encoding="utf-8").splitlines()
    oracle = encode_stream(tokenizer, lines, sep).long().numpy()
    stream = prepared.stream()
    assert np.array_equal(stream.read(0, stream.tokens), oracle)


# --------------------------------------------------------------------------- commands
def test_prepare_command_then_fit_reads_the_cache(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ROFORMER_LIT_CACHE", str(tmp_path / "cache"))
    calls = _count_builds(monkeypatch)
    data = ["--data.train_files", str(corpus), "--data.vocab_size", "600"]
    capfd.readouterr()
    command = ["prepare", "--config", str(CONFIGS / "rope.yaml"), *TINY, *data]
    monkeypatch.setattr(sys, "argv", ["roformer_lit", *command])  # as from a terminal
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(command) == 0
    # Lightning's "args parameter is intended to run from within Python" is noise here
    assert not [w for w in caught if "args parameter" in str(w.message)]
    out = capfd.readouterr().out
    assert "prepared:" in out and "training tokens" in out
    assert len(calls) == 1
    assert main(fit_args("rope.yaml", 2, *data)) == 0
    assert len(calls) == 1, "fit must read what prepare made"
    assert not list(tmp_path.glob("runs/mlm/*/prepared"))


def test_a_two_run_sweep_prepares_once(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roformer_lit.commands.prepare import datamodule_of
    from roformer_lit.sweep import runner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ROFORMER_LIT_CACHE", str(tmp_path / "cache"))  # nothing prepared yet
    calls = _count_builds(monkeypatch)
    sweep = {
        "name": "two",
        "base": str(CONFIGS / "rope.yaml"),
        "grid": {"seed_everything": [0, 1]},
        "overrides": {
            "data.train_files": str(corpus),
            "data.vocab_size": 600,
            "data.max_length": 32,
        },
    }
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep), encoding="utf-8")
    launched: list[list[str]] = []

    def fake_launch(argv, *, cwd, env, stdout, stderr, started=None):  # type: ignore[no-untyped-def]
        launched.append(list(argv))
        assert len(calls) == 1, "the data is prepared before any run starts"
        return 1  # the runs themselves are not the point here

    monkeypatch.setattr(runner, "launch", fake_launch)
    main(["sweep", "--config", "sweep.yaml"])
    assert len(launched) == 2 and len(calls) == 1
    for argv in launched:  # what each run's fit will find: the same prepared corpus
        dm = datamodule_of(argv[3:])
        dm.setup("fit")
    assert len(calls) == 1


# --------------------------------------------------------------------------- sources
def test_compressed_and_jsonl_sources_give_the_same_tokens(
    corpus: Path, tokenizer, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    lines = corpus.read_text(encoding="utf-8").splitlines()
    gz = tmp_path / "c.jsonl.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps({"body": line}) + "\n" for line in lines)
    sources = [FileSource((corpus,)), FileSource((gz,), "body")]
    try:
        import zstandard

        zst = tmp_path / "c.txt.zst"
        zst.write_bytes(zstandard.ZstdCompressor().compress(corpus.read_bytes()))
        sources.append(FileSource((zst,)))
    except ImportError:
        pass
    streams = [
        prepare_corpus(s, tokenizer, tmp_path / "p", f"s{i}", num_proc=1, progress=False).stream()
        for i, s in enumerate(sources)
    ]
    first = streams[0].read(0, streams[0].tokens)
    for s in streams[1:]:
        assert np.array_equal(s.read(0, s.tokens), first)


def test_parquet_file_trains(
    tmp_path: Path, docs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": list(range(len(docs))), "content": docs}), path)
    monkeypatch.chdir(tmp_path)
    args = ["--data.train_files", str(path), "--data.text_field", "content"]
    assert main(fit_args("rope.yaml", 2, *args, "--data.vocab_size", "600")) == 0
    dm = CorpusDataModule(train_files=str(path), text_field="content", vocab_size=600)
    assert dm.documents()[0] == split_train_val(docs, 0.05)[0]
    with pytest.raises(ConfigError, match=r"missing text column 'text' \(columns: id, content\)"):
        list(FileSource((path,), "text").documents())


@pytest.fixture
def saved_dataset(tmp_path: Path, docs: list[str]) -> Path:
    datasets = pytest.importorskip("datasets")
    d = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"text": docs[:1000], "n": list(range(1000))}),
            "validation": datasets.Dataset.from_dict({"text": docs[1000:]}),
        }
    )
    out = tmp_path / "ds"
    d.save_to_disk(str(out))
    return out


def test_save_to_disk_dataset_trains(
    saved_dataset: Path, tmp_path: Path, docs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["--data.dataset", str(saved_dataset), "--data.dataset_val_split", "validation"]
    assert main(fit_args("rope.yaml", 2, *args, "--data.vocab_size", "600")) == 0
    dm = CorpusDataModule(
        dataset=str(saved_dataset), dataset_val_split="validation", vocab_size=600
    )
    assert dm.documents() == (docs[:1000], docs[1000:])
    dm.setup("fit")
    train, val = dm.prepare()
    assert val is not None and train.meta["documents"] == 1000
    assert val.meta["documents"] == len(docs) - 1000


@pytest.mark.parametrize(
    ("extra", "pattern"),
    [
        (["--data.text_field", "body"], r"no text field 'body' \(fields: text, n\)"),
        (["--data.dataset_split", "test"], r"no split 'test' \(splits: train, validation\)"),
        (["--data.dataset_val_split", "validation", "--data.val_files", "x.txt"], "give one"),
    ],
)
def test_bad_dataset_settings_are_one_line(
    extra: list[str],
    pattern: str,
    saved_dataset: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    import re

    monkeypatch.chdir(tmp_path)
    capfd.readouterr()
    code = main(fit_args("rope.yaml", 2, "--data.dataset", str(saved_dataset), *extra))
    err = capfd.readouterr().err
    assert code == 2
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert re.search(pattern, lines[0]), lines[0]


def test_hub_dataset_name_config_split_and_streaming(
    tmp_path: Path, docs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Hub is stood in for by a local dataset: the name, config, split and streaming
    flag reach ``datasets.load_dataset``; a missing dataset is one line."""
    datasets = pytest.importorskip("datasets")
    seen: list[tuple] = []
    local = datasets.Dataset.from_dict({"text": docs[:400]})

    def fake_load(name, config=None, split=None, streaming=False):  # type: ignore[no-untyped-def]
        seen.append((name, config, split, streaming))
        if name != "wikitext":
            raise FileNotFoundError(f"Dataset '{name}' doesn't exist on the Hub")
        return local.to_iterable_dataset() if streaming else local

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    for streaming in (False, True):
        dm = CorpusDataModule(
            dataset="wikitext",
            dataset_config="wikitext-103-raw-v1",
            dataset_streaming=streaming,
            vocab_size=400,
            max_length=32,
            cache_dir=str(tmp_path / str(streaming)),
        )
        dm.setup("fit")
        assert dm.prepare()[0].meta["documents"] == 400
    assert seen[0] == ("wikitext", "wikitext-103-raw-v1", "train", False)
    assert ("wikitext", "wikitext-103-raw-v1", "train", True) in seen
    with pytest.raises(ConfigError, match="cannot load dataset 'nope'.*doesn't exist"):
        CorpusDataModule(dataset="nope", cache_dir=str(tmp_path)).setup("fit")


# --------------------------------------------------------------------------- memory
_RSS_FIT = textwrap.dedent(
    """
    import resource, sys
    from roformer_lit.commands import main
    code = main(sys.argv[1:])
    print("MAXRSS_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True)
    sys.exit(code)
    """
)


@pytest.mark.slow
def test_fit_memory_does_not_grow_with_the_corpus(tmp_path: Path) -> None:
    """Peak RSS of a prepared ``fit`` on a corpus 8x larger stays within 1.2x (and both are
    far below what holding the larger corpus's text in memory would add)."""
    base = load_default_corpus()
    text = "\n".join(base) + "\n"
    env = {**os.environ, "ROFORMER_LIT_CACHE": str(tmp_path / "cache")}
    peaks = {}
    for copies in (2, 16):
        path = tmp_path / f"x{copies}.txt"
        path.write_text(text * copies, encoding="utf-8")
        args = fit_args("rope.yaml", 2, "--data.train_files", str(path))
        args = [a for a in args if a not in ("--data.max_train_blocks", "128")]
        prep = ["prepare", *args[1:]]
        subprocess.run([sys.executable, "-m", "roformer_lit", *prep], env=env, check=True)
        out = subprocess.run(
            [sys.executable, "-c", _RSS_FIT, *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        peaks[copies] = int(out.split("MAXRSS_KB")[1].split()[0])
    assert peaks[16] < 1.2 * peaks[2], peaks
