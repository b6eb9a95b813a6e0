"""Own corpora through the CLI: one path, a list, a glob, a directory; a small vocabulary;
files that are not regular files."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml
from cli_helpers import fit_args

from roformer_lit.commands import main
from roformer_lit.commands.pretrain import validate_config
from roformer_lit.data import (
    CorpusDataModule,
    FileSource,
    data_module,
    load_default_corpus,
    read_documents,
)
from roformer_lit.data.sources import expand_paths
from roformer_lit.errors import ConfigError


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return load_default_corpus()[:700]


@pytest.fixture
def corpus_dir(tmp_path: Path, docs: list[str]) -> Path:
    """Two small .txt files (~140 KB) in a directory, plus a file that is not a corpus."""
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "a.txt").write_text("\n".join(docs[:400]) + "\n", encoding="utf-8")
    (d / "b.txt").write_text("\n".join(docs[400:]) + "\n", encoding="utf-8")
    (d / "README.md").write_text("not a corpus file\n", encoding="utf-8")
    return d


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_own_small_corpus_trains_with_the_vocabulary_it_has(
    corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    """A corpus that supports fewer tokens than data.vocab_size=8192 trains (it crashed with
    Lightning's "Error while merging hparams") and says so in one line."""
    monkeypatch.chdir(tmp_path)
    capfd.readouterr()
    code = main(fit_args("rope.yaml", 2, "--data.train_files", str(corpus_dir / "a.txt")))
    out, err = capfd.readouterr()
    assert code == 0, err[-2000:]
    lines = [line for line in err.splitlines() if "fewer than data.vocab_size=8192" in line]
    assert len(lines) == 1, err[-2000:]
    real = int(lines[0].split("supports ")[1].split()[0])
    assert 100 < real < 8192
    run = tmp_path / "runs" / "mlm" / "rope-softmax-seed0-a"  # named after its corpus
    hparams = yaml.safe_load((run / "hparams.yaml").read_text(encoding="utf-8"))
    assert hparams["vocab_size"] == real
    assert hparams["requested_vocab_size"] == 8192
    assert (run / "checkpoints" / "last.ckpt").is_file()


@pytest.mark.parametrize("form", ["path", "list", "glob", "directory"])
def test_train_files_forms(form: str, corpus_dir: Path, docs: list[str]) -> None:
    value = {
        "path": str(corpus_dir / "a.txt"),
        "list": f"[{corpus_dir / 'a.txt'}, {corpus_dir / 'b.txt'}]",
        "glob": str(corpus_dir / "*.txt"),
        "directory": str(corpus_dir),
    }[form]
    config = validate_config(fit_args("rope.yaml", 2, "--data.train_files", value)[1:])
    dm = data_module(config.data)
    assert isinstance(dm, CorpusDataModule) and isinstance(dm.train_source, FileSource)
    files = dm.train_source.paths  # the expanded files (the setting is kept as given)
    names = ["a.txt"] if form == "path" else ["a.txt", "b.txt"]
    assert [p.name for p in files] == names
    assert read_documents(files) == (docs[:400] if form == "path" else docs)


def test_expansion_order_and_recursion(tmp_path: Path) -> None:
    for rel in ("b/2.txt", "a/1.jsonl.gz", "a/0.txt", ".hidden/x.txt", "c.parquet", "z.csv"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"x")
    found = [p.relative_to(tmp_path).as_posix() for p in expand_paths(tmp_path, "x")]
    assert found == ["a/0.txt", "a/1.jsonl.gz", "b/2.txt", "c.parquet"]
    found = [p.name for p in expand_paths(str(tmp_path / "**" / "*.txt"), "x")]
    assert found == ["0.txt", "2.txt"]
    # a list keeps its order and may mix the forms
    mixed = expand_paths([str(tmp_path / "b"), str(tmp_path / "a" / "0.txt")], "x")
    assert [p.name for p in mixed] == ["2.txt", "0.txt"]


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        ("nothing/*.txt", r"no corpus file matches 'nothing/\*\.txt'"),
        ("missing.txt", "not found: missing.txt"),
        ("empty_dir", "holds no corpus file"),
        ("data.csv", r"unsupported corpus file extension for data\.csv"),
        ("[]", "data.train_files is empty"),
    ],
)
def test_bad_train_files_one_line(
    value: str,
    pattern: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    import re

    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "data.csv").write_text("a,b\n")
    capfd.readouterr()
    assert main(fit_args("rope.yaml", 2, "--data.train_files", value)) == 2
    line = _one_error_line(capfd.readouterr().err)
    assert re.search(pattern, line), line


@pytest.mark.parametrize("option", ["train_files", "val_files"])
def test_fifo_is_refused_without_hanging(
    option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    monkeypatch.chdir(tmp_path)
    capfd.readouterr()
    start = time.monotonic()
    assert main(fit_args("rope.yaml", 2, f"--data.{option}", str(fifo))) == 2
    assert time.monotonic() - start < 60
    line = _one_error_line(capfd.readouterr().err)
    assert "not a regular file" in line and "pipe.txt" in line
    # inside a directory too
    with pytest.raises(ConfigError, match="not a regular file"):
        expand_paths(tmp_path, "data.train_files")


def test_directory_where_a_file_is_needed(tmp_path: Path) -> None:
    folder = tmp_path / "looks_like.txt"
    folder.mkdir()
    (folder / "inner.txt").write_text("some words in a line of text\n")
    # a directory is expanded (it holds a corpus file) ...
    assert [p.name for p in expand_paths(folder, "x")] == ["inner.txt"]
    # ... but a glob's directory match without corpus files is not a file
    (tmp_path / "d.txt").mkdir()
    with pytest.raises(ConfigError, match="no corpus file matches"):
        expand_paths(str(tmp_path / "d*.txt"), "data.val_files")


def test_fifo_tokenizer_file_is_refused_without_hanging(tmp_path: Path, corpus_dir: Path) -> None:
    fifo = tmp_path / "tok.json"
    os.mkfifo(fifo)
    dm = CorpusDataModule(
        train_files=str(corpus_dir / "a.txt"), tokenizer_file=str(fifo), cache_dir=str(tmp_path)
    )
    with pytest.raises(ConfigError, match="tokenizer file is not a regular file"):
        dm.tokenizer  # noqa: B018


#: case -> (what names the files, relative to a folder holding a.txt and b.txt)
NAMED_TWICE: dict[str, list[str]] = {
    "a_list_naming_it_twice": ["a.txt", "b.txt", "a.txt"],
    "two_spellings": ["a.txt", "./a.txt"],
    "overlapping_globs": ["*.txt", "a*.txt"],
    "a_glob_and_the_file": ["*.txt", "b.txt"],
    "the_folder_and_a_file_in_it": [".", "a.txt"],
    "a_link_beside_its_target": ["a.txt", "link.txt"],
    "a_hard_link_beside_its_target": ["b.txt", "hard.txt"],
}


@pytest.mark.parametrize("case", list(NAMED_TWICE))
@pytest.mark.parametrize("kind", ["corpus", "task"])
def test_a_file_named_twice_is_refused(case, kind, tmp_path, monkeypatch):
    """One file reached twice (a list, overlapping globs, a link) was read twice, its
    documents or examples counted twice, exit 0; now one line naming it. The same path
    check serves pretraining corpora and fine-tuning task files."""
    monkeypatch.chdir(tmp_path)
    ending = ".txt" if kind == "corpus" else ".csv"
    spec = [s.replace(".txt", ending) for s in NAMED_TWICE[case]]
    for name in ("a", "b"):
        (tmp_path / f"{name}{ending}").write_text("text,label\nsome words,1\n")
    (tmp_path / f"link{ending}").symlink_to(tmp_path / f"a{ending}")
    os.link(tmp_path / f"b{ending}", tmp_path / f"hard{ending}")
    extensions = (".txt",) if kind == "corpus" else (".csv",)
    with pytest.raises(ConfigError) as info:
        expand_paths(spec, "data.train_files", extensions, kind)
    message = str(info.value)
    assert "\n" not in message and "named twice" in message and f"{kind} file" in message
    assert expand_paths([f"a{ending}", f"b{ending}"], "x", extensions, kind)  # once each: fine
