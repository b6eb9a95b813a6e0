"""A tiny pretrained checkpoint and toy task files for the fine-tuning tests."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest
from cli_helpers import fit_args

from roformer_lit.commands import main

PRETRAINED_RUN = Path("runs") / "mlm" / "rope-softmax-seed0"
#: Common words of the bundled corpus (so the tokenizer keeps them whole).
WORDS = (
    "the function returns a value and the list of all string objects in this module is used "
    "for each file name when data type class method can be called with one argument"
).split()
QUIET = [
    "--trainer.enable_progress_bar",
    "false",
    "--trainer.enable_model_summary",
    "false",
]


def pretrained_checkpoint(factory: pytest.TempPathFactory) -> Path:
    """``last.ckpt`` of a 4-step tiny ``fit`` run, made once per test session."""
    work = factory.getbasetemp() / "finetune-pretrained"
    ckpt = work / PRETRAINED_RUN / "checkpoints" / "last.ckpt"
    if not ckpt.is_file():
        work.mkdir(exist_ok=True)
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(work)
            assert main(fit_args("rope.yaml", 4)) == 0
    return ckpt


def write_csv(path: Path, rows: list[dict[str, object]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def local_task_files(work: Path, pretrained: Path) -> None:
    """``work`` holds what a local-task fine-tune reads: ``pretrained.ckpt`` (a link to
    ``pretrained``) and a keyword task's ``train.csv`` (32 rows) and ``val.csv`` (16)."""
    (work / "pretrained.ckpt").symlink_to(pretrained)
    write_csv(work / "train.csv", keyword_rows(32, seed=1))
    write_csv(work / "val.csv", keyword_rows(16, seed=2))


def sentence(rng: random.Random, length: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(length))


def keyword_rows(n: int, seed: int, keyword: str = "error") -> list[dict[str, object]]:
    """Label 1 iff the sentence contains ``keyword`` (half of them do, at a random place)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        words = sentence(rng, rng.randint(4, 10)).split()
        label = i % 2
        if label:
            words.insert(rng.randint(0, len(words)), keyword)
        rows.append({"text": " ".join(words), "label": label})
    return rows


def pair_rows(n: int, seed: int, keyword: str = "error") -> list[dict[str, object]]:
    """Label 1 iff the *second* text contains ``keyword``; the first text holds it in a
    random half of the rows, independently of the label (so the first text alone, or
    both texts as one bag of words, predict nothing)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        first, second = (
            sentence(rng, rng.randint(3, 6)).split(),
            sentence(rng, rng.randint(3, 6)).split(),
        )
        label = i % 2
        if label:
            second.insert(rng.randint(0, len(second)), keyword)
        if rng.random() < 0.5:
            first.insert(rng.randint(0, len(first)), keyword)
        rows.append({"text": " ".join(first), "text_pair": " ".join(second), "label": label})
    return rows


def regression_rows(n: int, seed: int, keyword: str = "error") -> list[dict[str, object]]:
    """Target = the share of ``keyword`` among the words (a fractional label)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        words = sentence(rng, 8).split()
        k = rng.randint(0, 6)
        for j in rng.sample(range(8), k):
            words[j] = keyword
        rows.append({"text": " ".join(words), "label": f"{k / 8:.3f}"})
    return rows
