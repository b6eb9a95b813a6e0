"""Tests for roformer_lit.data: corpus reading, tokenizer cache, packing, masking, DataModule."""

from __future__ import annotations

import json
import lzma
import math
import os
import re
from collections import Counter
from importlib import resources
from pathlib import Path

import lightning as L
import pytest
import torch

import roformer_lit.data.tokenizer as tokmod
from roformer_lit.data import (
    CorpusDataModule,
    encode_stream,
    load_default_corpus,
    load_or_train_tokenizer,
    load_tokenizer_file,
    mask_tokens,
    pack_blocks,
    read_documents,
)
from roformer_lit.data.corpus import DEFAULT_CORPUS_FILES
from roformer_lit.errors import ConfigError

SMALL_VOCAB = 600
MAX_LEN = 32


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def bundled_docs() -> list[str]:
    return load_default_corpus()


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory: pytest.TempPathFactory, bundled_docs: list[str]) -> Path:
    """A ~60 KB real-English .txt corpus (paragraphs from the bundled corpus)."""
    path = tmp_path_factory.mktemp("corpus") / "small.txt"
    path.write_text("\n\n".join(bundled_docs[:300]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tok_cache")


def make_dm(corpus: Path, cache: Path, **kw: object) -> CorpusDataModule:
    args: dict[str, object] = dict(
        train_files=[str(corpus)],
        vocab_size=SMALL_VOCAB,
        max_length=MAX_LEN,
        batch_size=8,
        cache_dir=str(cache),
        val_fraction=0.2,
    )
    args.update(kw)
    return CorpusDataModule(**args)  # type: ignore[arg-type]


def batches(loader: torch.utils.data.DataLoader) -> list[dict[str, torch.Tensor]]:
    return list(loader)


# --------------------------------------------------------------------------- masking
def _within(observed: float, p: float, n: int, sigmas: float = 5.0) -> bool:
    return abs(observed - p) <= sigmas * math.sqrt(p * (1 - p) / n)


def test_masking_statistics() -> None:
    vocab, pad, unk, cls, sep, mask = 1000, 0, 1, 2, 3, 4
    special = torch.tensor([pad, unk, cls, sep, mask])
    replacement = torch.arange(5, vocab)
    g = torch.Generator().manual_seed(123)
    B, L = 512, 128
    ids = torch.randint(5, vocab, (B, L), generator=g)
    ids[:, 0] = cls
    ids[torch.rand(B, L, generator=g) < 0.05] = sep
    ids[:, -10:] = pad  # padding tail
    orig = ids.clone()

    masked, labels = mask_tokens(
        ids,
        generator=torch.Generator().manual_seed(7),
        mlm_probability=0.15,
        mask_token_id=mask,
        special_token_ids=special,
        replacement_ids=replacement,
    )
    assert torch.equal(ids, orig), "input must not be modified in place"
    assert masked.shape == labels.shape == ids.shape
    assert masked.dtype == labels.dtype == torch.int64

    is_special = torch.isin(orig, special)
    selected = labels != -100
    # special tokens never selected and unchanged
    assert not selected[is_special].any()
    assert torch.equal(masked[is_special], orig[is_special])
    # labels equal original ids exactly where selected; nothing changes outside selection
    assert torch.equal(labels[selected], orig[selected])
    assert torch.equal(masked[~selected], orig[~selected])

    n_eligible = int((~is_special).sum())
    n_sel = int(selected.sum())
    assert _within(n_sel / n_eligible, 0.15, n_eligible), n_sel / n_eligible

    sel_in, sel_orig = masked[selected], orig[selected]
    n_mask = int((sel_in == mask).sum())
    n_same = int((sel_in == sel_orig).sum())
    n_rand = n_sel - n_mask - n_same
    # a random replacement equals the original with prob 1/len(replacement)
    p_same = 0.1 + 0.1 / len(replacement)
    assert _within(n_mask / n_sel, 0.8, n_sel), n_mask / n_sel
    assert _within(n_same / n_sel, p_same, n_sel), n_same / n_sel
    assert _within(n_rand / n_sel, 0.1 - 0.1 / len(replacement), n_sel), n_rand / n_sel
    # random replacements are ordinary tokens, spread over the vocabulary
    rand_tokens = sel_in[(sel_in != mask) & (sel_in != sel_orig)]
    assert not torch.isin(rand_tokens, special).any()
    assert rand_tokens.unique().numel() > 0.5 * min(len(rand_tokens), len(replacement))


def test_masking_respects_probability() -> None:
    ids = torch.randint(5, 100, (64, 64), generator=torch.Generator().manual_seed(0))
    kw = dict(
        mask_token_id=4, special_token_ids=torch.arange(5), replacement_ids=torch.arange(5, 100)
    )
    _, lab = mask_tokens(ids, generator=torch.Generator().manual_seed(1), mlm_probability=0.5, **kw)
    frac = float((lab != -100).float().mean())
    assert _within(frac, 0.5, ids.numel())


# --------------------------------------------------------------------------- determinism
def test_validation_masking_fixed_by_seed(small_corpus: Path, cache_dir: Path) -> None:
    a = make_dm(small_corpus, cache_dir, seed=3)
    b = make_dm(small_corpus, cache_dir, seed=3)
    c = make_dm(small_corpus, cache_dir, seed=4)
    for dm in (a, b, c):
        dm.setup("fit")
    va, vb, vc = (batches(dm.val_dataloader()) for dm in (a, b, c))
    assert len(va) == len(vb) > 0
    for x, y in zip(va, vb, strict=True):
        assert torch.equal(x["input_ids"], y["input_ids"])
        assert torch.equal(x["labels"], y["labels"])
    # same in every epoch: the epoch is ignored for validation
    ds = a.val_dataset
    assert ds is not None
    for i in range(len(ds)):
        assert torch.equal(ds[(0, i)]["labels"], ds[(5, i)]["labels"])
    again = batches(a.val_dataloader())
    assert all(torch.equal(x["input_ids"], y["input_ids"]) for x, y in zip(va, again, strict=True))
    # a different seed gives different masking of the same blocks
    assert not all(torch.equal(x["labels"], y["labels"]) for x, y in zip(va, vc, strict=True))
    assert torch.equal(a.val_dataset.blocks.to_tensor(), c.val_dataset.blocks.to_tensor())  # type: ignore[union-attr]


def test_training_masking_changes_per_epoch_and_is_reproducible(
    small_corpus: Path, cache_dir: Path
) -> None:
    dm = make_dm(small_corpus, cache_dir, seed=0)
    dm.setup("fit")
    ds = dm.train_dataset
    assert ds is not None
    e0 = torch.stack([ds[(0, i)]["labels"] for i in range(len(ds))])
    e1 = torch.stack([ds[(1, i)]["labels"] for i in range(len(ds))])
    e0_again = torch.stack([ds[(0, i)]["labels"] for i in range(len(ds))])
    assert torch.equal(e0, e0_again)
    assert (e0 != e1).float().mean() > 0.05

    loader = dm.train_dataloader()
    first = batches(loader)
    loader.sampler.set_epoch(1)  # type: ignore[attr-defined]
    second = batches(loader)
    loader.sampler.set_epoch(0)  # type: ignore[attr-defined]
    replay = batches(loader)
    assert not torch.equal(first[0]["input_ids"], second[0]["input_ids"])
    for x, y in zip(first, replay, strict=True):
        assert torch.equal(x["input_ids"], y["input_ids"])
        assert torch.equal(x["labels"], y["labels"])
    # each epoch visits every block exactly once (shuffled order)
    seen = torch.cat([b["labels"] for b in second])
    assert seen.shape[0] == len(ds)


def test_worker_count_does_not_change_batches(small_corpus: Path, cache_dir: Path) -> None:
    dm0 = make_dm(small_corpus, cache_dir, num_workers=0, max_train_blocks=64)
    dm2 = make_dm(small_corpus, cache_dir, num_workers=2, max_train_blocks=64)
    dm0.setup("fit")
    dm2.setup("fit")
    for x, y in zip(batches(dm0.train_dataloader()), batches(dm2.train_dataloader()), strict=True):
        assert torch.equal(x["input_ids"], y["input_ids"])
        assert torch.equal(x["labels"], y["labels"])


# --------------------------------------------------------------------------- packing
def test_packing_blocks(small_corpus: Path, cache_dir: Path) -> None:
    dm = make_dm(small_corpus, cache_dir)
    dm.setup("fit")
    train_docs, _ = dm.documents()
    stream = encode_stream(dm.tokenizer, train_docs, dm.special_tokens.sep)
    assert int((stream == dm.special_tokens.sep).sum()) == len(train_docs)
    blocks = dm.train_dataset.blocks.to_tensor()  # type: ignore[union-attr]
    assert blocks.dim() == 2 and blocks.shape[1] == MAX_LEN
    assert blocks.shape[0] == stream.numel() // MAX_LEN
    assert not (blocks == dm.pad_token_id).any()
    flat = blocks.reshape(-1)
    assert torch.equal(flat, stream[: flat.numel()].long())
    # the stream is the documents' own tokens, each followed by [SEP]
    first = dm.tokenizer.encode(train_docs[0], add_special_tokens=False).ids
    assert stream[: len(first) + 1].tolist() == first + [dm.special_tokens.sep]


def test_pack_blocks_exact_and_too_small() -> None:
    stream = torch.arange(103, dtype=torch.int32)
    blocks = pack_blocks(stream, 10)
    assert blocks.shape == (10, 10)
    assert torch.equal(blocks.reshape(-1), stream[:100])
    with pytest.raises(ConfigError, match="too small"):
        pack_blocks(torch.arange(7), 10, split="validation")


def test_corpus_too_small_for_one_block(tmp_path: Path, cache_dir: Path) -> None:
    p = tmp_path / "tiny.txt"
    p.write_text("\n".join(f"short line number {i} about words" for i in range(40)))
    dm = make_dm(p, cache_dir, max_length=512, vocab_size=100)
    with pytest.raises(ConfigError, match="too small"):
        dm.setup("fit")


# --------------------------------------------------------------------------- tokenizer
def test_tokenizer_special_ids_and_cache(
    small_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = tokmod.train_tokenizer

    def counting(docs, vocab_size):  # type: ignore[no-untyped-def]
        calls.append(vocab_size)
        return real(docs, vocab_size)

    monkeypatch.setattr(tokmod, "train_tokenizer", counting)
    cache = tmp_path / "cache"
    dm = make_dm(small_corpus, cache)
    vocab = dm.tokenizer_vocab_size
    assert calls == [SMALL_VOCAB]
    assert dm.pad_token_id == 0
    tok = dm.tokenizer
    assert [tok.id_to_token(i) for i in range(5)] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert dm.mask_token_id == tok.token_to_id("[MASK]")
    assert vocab == tok.get_vocab_size() <= SMALL_VOCAB
    path = dm.tokenizer_path
    assert path is not None and path.is_file() and path.parent == cache
    assert not [f for f in os.listdir(cache) if f.endswith(".tmp")]
    mtime = path.stat().st_mtime_ns

    dm2 = make_dm(small_corpus, cache)
    assert dm2.tokenizer_vocab_size == vocab
    assert calls == [SMALL_VOCAB], "second construction must load from the cache"
    assert dm2.tokenizer_path == path and path.stat().st_mtime_ns == mtime
    assert dm2.tokenizer.get_vocab() == tok.get_vocab()

    # different vocab size -> different key; different corpus -> different key
    dm3 = make_dm(small_corpus, cache, vocab_size=SMALL_VOCAB + 50)
    dm3.tokenizer  # noqa: B018
    other = tmp_path / "other.txt"
    other.write_text(small_corpus.read_text(encoding="utf-8") + "one extra paragraph here\n")
    dm4 = make_dm(other, cache)
    dm4.tokenizer  # noqa: B018
    assert len(calls) == 3
    assert len({path, dm3.tokenizer_path, dm4.tokenizer_path}) == 3


def test_tokenizer_cache_env_var(
    small_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROFORMER_LIT_CACHE", str(tmp_path / "envcache"))
    _, path = load_or_train_tokenizer(read_documents(small_corpus)[:50], 200)
    assert path.parent == tmp_path / "envcache" / "tokenizers"
    assert path.is_file()


def test_tokenizer_trains_without_words_it_encodes_as_unk(bundled_docs: list[str]) -> None:
    """A word of more than 100 characters (a DNA string, a base64 blob, a line of one
    character) is one [UNK] to the model, so the trainer never sees it: its merges would be
    vocabulary nothing uses, and they cost time quadratic in its length (a 9 MB such line
    took hours to prepare, deaf to SIGTERM meanwhile). Words up to the limit, and the rest
    of a document holding a long one, train as before."""
    docs, limit = bundled_docs[:200], 100  # WordPiece's max_input_chars_per_word
    dna = "acgt" * 2_500  # 10,000 characters, one word
    kept = "q" * limit + "," + "z" * 3 * limit
    tok = tokmod.train_tokenizer([*docs, f"start {dna} end. {kept} {dna}"] * 2, 600)
    vocab = tok.get_vocab()
    assert not [t for t in vocab if set(t.removeprefix("##")) <= set("acgt") and len(t) > 8]
    assert not [t for t in vocab if "z" * 3 in t]
    assert "q" * 8 in vocab or "##" + "q" * 8 in vocab  # the 100-character word is trained
    assert tok.encode(dna).tokens == ["[UNK]"]
    assert tok.encode("z" * 3 * limit).tokens == ["[UNK]"]
    assert tok.encode("q" * limit).tokens != ["[UNK]"]


def test_tokenizer_file(small_corpus: Path, cache_dir: Path, tmp_path: Path) -> None:
    base = make_dm(small_corpus, cache_dir)
    f = tmp_path / "tokenizer.json"
    f.write_text(base.tokenizer.to_str(), encoding="utf-8")
    dm = make_dm(small_corpus, cache_dir, tokenizer_file=str(f), vocab_size=5000)
    assert dm.tokenizer_vocab_size == base.tokenizer_vocab_size
    assert dm.mask_token_id == base.mask_token_id

    with pytest.raises(ConfigError, match="not found") as e:
        load_tokenizer_file(tmp_path / "nope.json")
    assert "nope.json" in str(e.value)

    spec = json.loads(base.tokenizer.to_str())
    spec["model"]["vocab"] = {k: v for k, v in spec["model"]["vocab"].items() if k != "[MASK]"}
    spec["added_tokens"] = [t for t in spec["added_tokens"] if t["content"] != "[MASK]"]
    bad = tmp_path / "nomask.json"
    bad.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[MASK\]"):
        load_tokenizer_file(bad)
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="garbage.json"):
        load_tokenizer_file(garbage)


# --------------------------------------------------------------------------- bad input
def _bad_files(tmp: Path) -> list[tuple[Path, str, str]]:
    """(path, text_field, regex the message must match) — the message must also name the file."""
    empty = tmp / "empty.txt"
    empty.write_text("  \n\n")
    latin = tmp / "latin1.txt"
    latin.write_bytes(b"hello world\ncaf\xe9 au lait\n")  # offset of \xe9 is 15
    binary = tmp / "blob.txt"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    notjson = tmp / "notjson.jsonl"
    notjson.write_text('{"text": "fine"}\n{"text": oops}\n')
    nofield = tmp / "nofield.jsonl"
    nofield.write_text('{"text": "a"}\n\n{"text": "b"}\n{"body": "c"}\n')
    notstr = tmp / "notstr.jsonl"
    notstr.write_text('{"text": 5}\n')
    csv = tmp / "data.csv"
    csv.write_text("a,b\n")
    return [
        (tmp / "missing.txt", "text", "not found"),
        (empty, "text", "empty"),
        (latin, "text", r"UTF-8.*offset 15"),
        (binary, "text", "binary"),
        (notjson, "text", r":2: .*not valid JSON"),
        (nofield, "text", r":4: .*'text'"),
        (notstr, "text", r":1: .*string"),
        (csv, "text", r"\.txt.*\.jsonl"),
    ]


def test_bad_input_files(tmp_path: Path) -> None:
    cases = _bad_files(tmp_path)
    for path, field, pattern in cases:
        with pytest.raises(ConfigError) as e:
            read_documents([str(path)], field)
        msg = str(e.value)
        assert path.name in msg, msg
        assert re.search(pattern, msg), (pattern, msg)
        assert "\n" not in msg


def test_bad_input_through_datamodule(tmp_path: Path) -> None:
    # refused when the data module is built, before anything reads or writes
    with pytest.raises(ConfigError, match="missing.txt"):
        CorpusDataModule(train_files=[str(tmp_path / "missing.txt")], cache_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="missing.txt"):
        CorpusDataModule(val_files=str(tmp_path / "missing.txt"), cache_dir=str(tmp_path))


def test_jsonl_and_compressed_reading(tmp_path: Path) -> None:
    docs = ["First document here.", "Second, with ünïcödé.", "Third one."]
    jl = tmp_path / "c.jsonl"
    jl.write_text("\n".join(json.dumps({"body": d, "id": i}) for i, d in enumerate(docs)) + "\n")
    assert read_documents([jl], text_field="body") == docs
    xz = tmp_path / "c.txt.xz"
    xz.write_bytes(lzma.compress(("\n\n".join(docs) + "\n").encode()))
    assert read_documents(str(xz)) == docs
    assert read_documents([jl, xz], text_field="body") == docs + docs


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"max_length": 4}, "max_length"),
        ({"batch_size": 0}, "batch_size"),
        ({"mlm_probability": 0.0}, "mlm_probability"),
        ({"mlm_probability": 1.0}, "mlm_probability"),
        ({"vocab_size": 50}, "vocab_size"),
        ({"val_fraction": 1.5}, "val_fraction"),
        ({"max_val_blocks": 0}, "max_val_blocks"),
        ({"num_workers": -1}, "num_workers"),
    ],
)
def test_argument_validation(kw: dict[str, object], name: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=rf"data\.{name} must be .*, got {kw[name]!r}"):
        CorpusDataModule(cache_dir=str(tmp_path), **kw)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- bundled corpus
def test_bundled_corpus_is_english_prose(bundled_docs: list[str]) -> None:
    root = resources.files("roformer_lit.data") / "corpus"
    compressed = sum(len((root / n).read_bytes()) for n in DEFAULT_CORPUS_FILES)
    raw = sum(len(d.encode("utf-8")) + 1 for d in bundled_docs)
    assert compressed <= 3 * 1024 * 1024
    assert raw >= 1_000_000
    assert (root / "SOURCE.md").is_file() and (root / "LICENSE-PSF.txt").is_file()
    assert len(bundled_docs) > 1000

    words = " ".join(bundled_docs).split()
    alpha = sum(1 for w in words if re.fullmatch(r"[(\"']*[A-Za-z][A-Za-z'-]*[)\"'.,;:!?]*", w))
    assert alpha / len(words) > 0.8
    code_like = [d for d in bundled_docs if ">>>" in d or "def " in d or d.startswith("    ")]
    assert len(code_like) / len(bundled_docs) < 0.005
    common = Counter(w.lower() for w in words).most_common(10)
    assert {"the", "a", "to", "of"} <= {w for w, _ in common}
    text = "".join(bundled_docs)
    assert sum(c.isascii() for c in text) / len(text) > 0.99


def test_default_datamodule_on_bundled_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_training(*args: object) -> None:
        raise AssertionError("the default tokenizer must come from the bundled file")

    monkeypatch.setattr(tokmod, "train_tokenizer", no_training)
    dm = CorpusDataModule(cache_dir=str(tmp_path / "a"), max_train_blocks=100, max_val_blocks=20)
    assert 1000 < dm.tokenizer_vocab_size <= 8192
    assert dm.pad_token_id == 0
    # a second fresh cache gives the very same vocabulary (reproducible across machines)
    dm2 = CorpusDataModule(cache_dir=str(tmp_path / "b"))
    assert dm2.tokenizer.get_vocab() == dm.tokenizer.get_vocab()
    assert dm.tokenizer_path is not None and dm.tokenizer_path.parent == tmp_path / "a"
    dm.setup("fit")
    assert len(dm.train_dataset) == 100 and len(dm.val_dataset) == 20  # type: ignore[arg-type]
    train_docs, val_docs = dm.documents()
    assert len(val_docs) == round(0.05 * (len(train_docs) + len(val_docs)))
    assert train_docs[-1] != val_docs[0]


# --------------------------------------------------------------------------- end to end
def test_datamodule_end_to_end(small_corpus: Path, cache_dir: Path) -> None:
    dm = make_dm(small_corpus, cache_dir, batch_size=5)
    vocab = dm.tokenizer_vocab_size
    assert vocab == dm.tokenizer.get_vocab_size()
    dm.setup("fit")
    for loader in (dm.train_dataloader(), dm.val_dataloader()):  # test: refused (no split)
        seen = 0
        for batch in loader:
            assert set(batch) == {"input_ids", "labels"}
            ids, labels = batch["input_ids"], batch["labels"]
            assert ids.dtype == labels.dtype == torch.int64
            assert ids.shape == labels.shape and ids.shape[1] == MAX_LEN
            assert 1 <= ids.shape[0] <= 5
            assert int(ids.min()) >= 0 and int(ids.max()) < vocab
            sel = labels != -100
            assert int(labels[sel].min()) >= 0 and int(labels[sel].max()) < vocab
            assert (ids[sel] == dm.mask_token_id).any()
            seen += ids.shape[0]
        assert seen == len(loader.dataset)  # type: ignore[arg-type]
    frac = float(
        torch.cat([(b["labels"] != -100).reshape(-1) for b in dm.train_dataloader()]).float().mean()
    )
    assert 0.10 < frac < 0.17  # 15 % of non-special tokens ([SEP] is never selected)


def test_separate_val_files(small_corpus: Path, cache_dir: Path, tmp_path: Path) -> None:
    val = tmp_path / "val.jsonl"
    docs = read_documents(small_corpus)[:60]
    val.write_text("\n".join(json.dumps({"text": d}) for d in docs))
    dm = make_dm(small_corpus, cache_dir, val_files=[str(val)], max_val_blocks=3)
    dm.setup("validate")
    assert dm.documents()[1] == docs
    assert len(dm.val_dataset) == 3  # type: ignore[arg-type]


class _Recorder(L.LightningModule):
    """Minimal module recording the batches it sees (no real model needed)."""

    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, 4)
        self.train_seen: dict[int, list[torch.Tensor]] = {}
        self.val_seen: dict[int, list[torch.Tensor]] = {}

    def training_step(self, batch: dict[str, torch.Tensor], idx: int) -> torch.Tensor:
        self.train_seen.setdefault(self.current_epoch, []).append(batch["input_ids"].clone())
        return self.emb(batch["input_ids"]).mean()

    def validation_step(self, batch: dict[str, torch.Tensor], idx: int) -> None:
        self.val_seen.setdefault(self.current_epoch, []).append(batch["labels"].clone())

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _fit(dm: CorpusDataModule, epochs: int) -> _Recorder:
    module = _Recorder(dm.tokenizer_vocab_size)
    trainer = L.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(module, datamodule=dm)
    return module


@pytest.mark.trainer
def test_lightning_trainer_epochs(small_corpus: Path, cache_dir: Path) -> None:
    kw = dict(max_train_blocks=40, max_val_blocks=16)
    run1 = _fit(make_dm(small_corpus, cache_dir, **kw), epochs=2)
    run2 = _fit(make_dm(small_corpus, cache_dir, **kw), epochs=2)
    t0, t1 = torch.cat(run1.train_seen[0]), torch.cat(run1.train_seen[1])
    assert t0.shape == t1.shape == (40, MAX_LEN)
    assert not torch.equal(t0, t1), "each epoch must reshuffle and re-mask"
    assert torch.equal(t0, torch.cat(run2.train_seen[0]))  # reproducible across runs
    assert torch.equal(t1, torch.cat(run2.train_seen[1]))
    v0, v1 = torch.cat(run1.val_seen[0]), torch.cat(run1.val_seen[1])
    assert torch.equal(v0, v1), "validation masking must be fixed"
