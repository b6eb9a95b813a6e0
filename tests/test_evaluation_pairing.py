"""Evaluation never pairs a model with a tokenizer it was not trained with.

``validate`` with ``--ckpt_path`` takes the data settings the user did not type
on the command line from the checkpoint's run (so the README's form ``validate --config
configs/rope.yaml --ckpt_path <run>/checkpoints/last.ckpt`` evaluates on the run's own
corpus). Whatever files it reads, it tokenizes them with the tokenizer stored in the
checkpoint (``--data.val_files`` of a run that held out a share of its training files was
refused: the settings trained another tokenizer on the new file set); a typed tokenizer
setting that gives another tokenizer than the run's is refused, in one line and without
touching the run."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from cli_helpers import CONFIGS, TINY, fit_args

from roformer_lit.commands import EXIT_USER_ERROR, main

RUN = Path("runs") / "mlm" / "rope-softmax-seed0-own"
LAST = RUN / "checkpoints" / "last.ckpt"


def write_corpus(path: Path, seed: int, vocabulary: list[str]) -> Path:
    rng = random.Random(seed)
    lines = (" ".join(rng.choice(vocabulary) for _ in range(24)) for _ in range(1500))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def own_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tiny run trained on the user's own corpus (not the bundled one)."""
    work = tmp_path_factory.mktemp("pairing")
    write_corpus(work / "own.txt", 0, [f"word{i}" for i in range(300)])
    write_corpus(work / "other.txt", 1, [f"term{i}" for i in range(300)])
    write_corpus(work / "val.txt", 2, [f"word{i}" for i in range(300)])
    write_corpus(work / "near.txt", 3, [f"word{i}" for i in range(150, 450)])
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        argv = fit_args("rope.yaml", 6, "--data.train_files", "own.txt", "--data.vocab_size", "200")
        assert main(argv) == 0
    return work


def evaluate(work: Path, subcommand: str, *extra: str) -> int:
    argv = [subcommand, "--config", str(CONFIGS / "rope.yaml"), *TINY, *extra]
    return main([*argv, "--ckpt_path", str(LAST)])


def records(work: Path) -> list[dict]:
    path = work / RUN / "evaluations.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("subcommand", ["validate"])
def test_the_readme_form_evaluates_on_the_runs_own_corpus(own_run, monkeypatch, subcommand):
    monkeypatch.chdir(own_run)
    assert evaluate(own_run, subcommand) == 0
    implicit = records(own_run)[-1]
    # the same evaluation with the run's data settings spelled out gives the same figures
    assert (
        evaluate(own_run, subcommand, "--data.train_files", "own.txt", "--data.vocab_size", "200")
        == 0
    )
    explicit = records(own_run)[-1]
    assert implicit["data"]["train_files"] == "own.txt"
    assert implicit["metrics"] == explicit["metrics"] and implicit["metrics"]


@pytest.mark.parametrize(
    "data_flags",
    [
        # a tokenizer asked for: same vocabulary size, other tokens
        ["--data.train_files", "other.txt", "--data.tokenizer_sample_mb", "1"],
        ["--data.train_files", "other.txt", "--data.vocab_size", "150"],  # another size too
        ["--data.val_files", "val.txt", "--data.vocab_size", "150"],
    ],
    ids=["same-size", "other-size", "other-validation-files-other-size"],
)
@pytest.mark.parametrize("subcommand", ["validate"])
def test_another_tokenizer_is_refused_and_the_run_is_untouched(
    own_run, monkeypatch, capsys, subcommand, data_flags
):
    monkeypatch.chdir(own_run)
    evaluations = own_run / RUN / "evaluations.jsonl"
    before = evaluations.read_bytes() if evaluations.exists() else None
    capsys.readouterr()
    assert evaluate(own_run, subcommand, *data_flags) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "tokenizer" in errors[0], err[-2000:]
    assert "Traceback" not in err
    assert (evaluations.read_bytes() if evaluations.exists() else None) == before


def trained_tokenizers() -> list[Path]:
    """The tokenizers the session's cache holds (each one a training of a tokenizer)."""
    return sorted((Path(os.environ["ROFORMER_LIT_CACHE"]) / "tokenizers").glob("*.json"))


def prepared_entries_of(name: str) -> list[Path]:
    """The session cache's prepared corpora of the one file ``name``."""
    prepared = Path(os.environ["ROFORMER_LIT_CACHE"]) / "prepared"
    return [
        meta.parent
        for meta in prepared.glob("*/meta.json")
        if json.loads(meta.read_text())["source"].endswith(f"/{name}")
        or json.loads(meta.read_text())["source"] == name
    ]


@pytest.mark.parametrize(
    "data_flags",
    [
        ["--data.val_files", "val.txt"],  # the run held out a share of its training files
        ["--data.val_files", "val.txt", "--data.vocab_size", "200"],  # the run's own size
        ["--data.train_files", "near.txt"],  # another corpus, its held-out share
        ["--data.val_files", "near.txt", "--data.mlm_probability", "0.3"],
    ],
    ids=["val-files", "val-files-run-size", "other-corpus", "other-val-files-more-masked"],
)
def test_other_files_are_evaluated_with_the_runs_own_tokenizer(
    own_run, monkeypatch, capsys, data_flags
):
    monkeypatch.chdir(own_run)
    before, tokenizers = len(records(own_run)), trained_tokenizers()
    capsys.readouterr()
    assert evaluate(own_run, "validate", *data_flags) == 0, capsys.readouterr().err[-2000:]
    err = capsys.readouterr().err
    assert "error:" not in err and "Traceback" not in err, err[-2000:]
    assert trained_tokenizers() == tokenizers  # no tokenizer made from the new file set
    # the run's training files are read from the entry its fit prepared, not tokenized
    # again under another key (the held-out share's key differs from a val_files run's)
    assert len(prepared_entries_of("own.txt")) == 1
    assert len(records(own_run)) == before + 1 and records(own_run)[-1]["metrics"]
    notes = [line for line in err.splitlines() if "other data" in line]
    assert len(notes) == 1 and notes[0].startswith("note:"), err[-2000:]


def test_extrapolate_without_the_runs_cache_uses_the_runs_tokenizer(
    own_run, monkeypatch, capsys, tmp_path
):
    """The run's cache entry gone (another machine, a cleaned cache): the settings would
    train a tokenizer anew, which WordPiece does differently, and the model was evaluated on
    ids it never saw, exit 0 with an 'other data' note; it tokenizes with its own."""
    monkeypatch.chdir(own_run)
    monkeypatch.setenv("ROFORMER_LIT_CACHE", str(tmp_path / "empty-cache"))
    capsys.readouterr()
    assert main(["extrapolate", str(LAST), "--lengths", "32"]) == 0
    err = capsys.readouterr().err
    assert "other data" not in err, err[-2000:]
    assert not list((tmp_path / "empty-cache").glob("tokenizers/*.json"))  # none trained


def test_an_evaluation_that_measured_nothing_is_refused(own_run, monkeypatch, capsys):
    """other.txt's words are none the run's tokenizer knows: every token is [UNK], which
    is never masked, so validation predicts nothing. It was an empty record, exit 0."""
    monkeypatch.chdir(own_run)
    evaluations = own_run / RUN / "evaluations.jsonl"
    before = evaluations.read_bytes() if evaluations.exists() else None
    capsys.readouterr()
    assert evaluate(own_run, "validate", "--data.val_files", "other.txt") == EXIT_USER_ERROR
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "measured nothing" in errors[0], err[-2000:]
    assert "Traceback" not in err
    assert (evaluations.read_bytes() if evaluations.exists() else None) == before
