"""``data.val_files`` that are training data (the same file, a file of a training directory, a
link to one, a copy of the corpus) get one ``note:`` line: ``val/loss`` then scores text the
model trained on, which used to pass without a word."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from roformer_lit.data import CorpusDataModule

WORDS = "the quick brown fox jumps over a lazy dog while rotary positions encode tokens".split()


def _write(path: Path, shift: int) -> None:
    lines = [
        " ".join(WORDS[(i + j + shift) % len(WORDS)] for j in range(5 + i % 9)) for i in range(60)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``train/x.txt``, ``train/y.txt``, a held-out ``held.txt``, a copy, a hard link and a
    symbolic link of ``train/x.txt``."""
    root = tmp_path_factory.mktemp("overlap")
    (root / "train").mkdir()
    _write(root / "train" / "x.txt", 0)
    _write(root / "train" / "y.txt", 3)
    _write(root / "held.txt", 7)
    shutil.copy(root / "train" / "x.txt", root / "copy.txt")
    os.link(root / "train" / "x.txt", root / "hard.txt")
    (root / "link.txt").symlink_to(root / "train" / "x.txt")
    return root


#: (data.train_files, data.val_files, what the note says; None: no note)
CASES = [
    ("train/x.txt", "train/x.txt", "reads the training file"),
    ("train", "train/y.txt", "reads the training file"),
    ("train/*.txt", "train/x.txt", "reads the training file"),
    ("train/x.txt", "hard.txt", "reads the training file"),
    ("train/x.txt", "link.txt", "reads the training file"),
    ("train/x.txt", "copy.txt", "holds the same tokens as the training corpus"),
    ("train", "held.txt", None),
    ("train/x.txt", "train/y.txt", None),
]


@pytest.mark.parametrize(("train", "val", "said"), CASES)
def test_validation_on_training_data_is_noted(
    work: Path, train: str, val: str, said: str | None, capfd: pytest.CaptureFixture
) -> None:
    dm = CorpusDataModule(
        train_files=str(work / train),
        val_files=str(work / val),
        vocab_size=120,
        cache_dir=str(work / "cache"),
        max_length=16,
    )
    capfd.readouterr()
    dm.prepare()
    notes = [line for line in capfd.readouterr().err.splitlines() if line.startswith("note:")]
    if said is None:
        assert notes == []
    else:
        assert len(notes) == 1 and said in notes[0] and "val/loss" in notes[0], notes
