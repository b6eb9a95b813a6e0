"""A run records the content of the data it trained on, and compare, resume and evaluation
use it: settings name the corpus and the tokenizer by path, so two runs with the same
``--data.*`` paths whose files' content differed were tabled as seeds of one variant, and a
resumed run continued on other data without a word."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
import torch
import yaml
from cli_helpers import CONFIGS, TINY, fit_args, fit_preempted, refused_unchanged
from torch.utils.tensorboard import SummaryWriter

from roformer_lit.commands import EXIT_PREEMPTED, main
from roformer_lit.data.corpus_module import CorpusDataModule
from roformer_lit.training.data_identity import (
    DATA_IDENTITY_FILE,
    checkpoint_data_identity,
    read_record,
    short_identity,
)

WORDS = [f"word{i}" for i in range(300)]


def corpus_text(seed: int) -> str:
    rng = random.Random(seed)
    return "\n".join(" ".join(rng.choice(WORDS) for _ in range(24)) for _ in range(1500)) + "\n"


def replace_file(path: Path, text: str) -> None:
    """``path`` rewritten with ``text`` as a new file (a new inode and mtime): what a copy
    or an editor's save does."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A corpus ``c.txt`` and a tokenizer file ``tok.json`` trained on it (so an edited
    corpus keeps the tokenizer: only the data differ)."""
    work = tmp_path_factory.mktemp("identity")
    (work / "c.txt").write_text(corpus_text(0), encoding="utf-8")
    dm = CorpusDataModule(
        train_files=str(work / "c.txt"), vocab_size=200, cache_dir=str(work / "cache")
    )
    (work / "tok.json").write_text(dm.tokenizer.to_str(), encoding="utf-8")
    return work


def identity_of(work: Path, corpus: str = "c.txt", **settings: object) -> CorpusDataModule:
    return CorpusDataModule(
        train_files=str(work / corpus),
        tokenizer_file=str(work / "tok.json"),
        cache_dir=str(work / "cache"),
        **settings,  # type: ignore[arg-type]
    )


# --- the identity -----------------------------------------------------------------------------


def test_the_identity_is_of_the_content_not_of_where_or_when_the_files_are(work: Path):
    original = identity_of(work)
    copy_dir = work / "copy"
    copy_dir.mkdir(exist_ok=True)
    (copy_dir / "c.txt").write_bytes((work / "c.txt").read_bytes())
    copy = identity_of(work, "copy/c.txt")
    # another path: another cache key (the fingerprint), the same tokens
    assert copy.train_key != original.train_key
    assert copy.data_identity() == original.data_identity()

    edited = work / "edited.txt"
    edited.write_text(corpus_text(0).replace("word1 ", "word2 ", 1), encoding="utf-8")
    assert identity_of(work, "edited.txt").data_identity() != original.data_identity()
    # validation from other files is other data than a held-out share
    separate = identity_of(work, val_files=str(copy_dir / "c.txt"))
    assert separate.data_identity() != original.data_identity()
    # another tokenizer over the same corpus: other ids
    trained = CorpusDataModule(
        train_files=str(work / "c.txt"), vocab_size=200, cache_dir=str(work / "cache")
    )
    other = CorpusDataModule(
        train_files=str(work / "c.txt"), vocab_size=150, cache_dir=str(work / "cache")
    )
    assert trained.data_identity() != other.data_identity()


# --- real runs: the record, resume, evaluation, compare -----------------------------------------

RUN_ARGS = ("--data.train_files", "c.txt", "--data.tokenizer_file", "tok.json")


@pytest.fixture(scope="module")
def runs(work: Path) -> Path:
    """Under ``runs/mlm``: seed 0 and seed 1 finished with the same settings, seed 1 after
    ``c.txt`` was edited; seed 2 preempted at step 2 on the original ``c.txt`` (a run a
    resume continues), which is then the file's content again."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert main(fit_args("rope.yaml", 4, *RUN_ARGS)) == 0
        replace_file(work / "c.txt", corpus_text(1))
        assert main(fit_args("rope.yaml", 4, *RUN_ARGS, "--seed_everything", "1")) == 0
        replace_file(work / "c.txt", corpus_text(0))
        argv = fit_args("rope.yaml", 6, *RUN_ARGS, "--seed_everything", "2")
        assert fit_preempted(argv, 3) == EXIT_PREEMPTED
    return work


def run_dir(work: Path, seed: int) -> Path:
    return work / "runs" / "mlm" / f"rope-softmax-seed{seed}-c"


def test_a_run_records_its_data_identity_in_its_directory_and_checkpoints(runs: Path):
    identity = identity_of(runs).data_identity()
    for seed in (0, 2):
        run = run_dir(runs, seed)
        assert read_record(run) == identity
        checkpoint = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)
        assert checkpoint_data_identity(checkpoint) == identity
    edited = read_record(run_dir(runs, 1))
    assert edited is not None and edited != identity


def test_a_record_describes_its_data_in_one_phrase(runs: Path, tmp_path: Path):
    """``data_identity.json`` read ``"data": "the corpus the bundled corpus"`` for a run on
    the bundled corpus: the data module put ``the corpus`` before its source's phrase,
    which already says what it is. The phrase is now the source's own."""
    record = json.loads((run_dir(runs, 0) / DATA_IDENTITY_FILE).read_text(encoding="utf-8"))
    assert record["data"].endswith("c.txt") and "the corpus the" not in record["data"]
    bundled = CorpusDataModule(cache_dir=str(tmp_path)).describe()
    assert bundled == "the bundled corpus"


def resume_args(work: Path, *extra: str) -> list[str]:
    last = run_dir(work, 2) / "checkpoints" / "last.ckpt"
    argv = fit_args("rope.yaml", 6, *RUN_ARGS, "--seed_everything", "2", *extra)
    return [*argv, "--ckpt_path", str(last)]


def test_resume_on_other_data_is_refused_and_on_a_copy_of_the_same_it_continues(
    runs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.chdir(runs)
    ran = short_identity(identity_of(runs).data_identity())
    replace_file(runs / "c.txt", corpus_text(1))
    now = short_identity(identity_of(runs).data_identity())
    line = refused_unchanged(runs, capsys, resume_args(runs))
    assert f"data {ran}" in line and f"data {now}" in line, line
    assert "original data" in line and "new run" in line, line

    # evaluating on the other data is legitimate: one note line
    capsys.readouterr()
    evaluate = ["validate", "--config", str(CONFIGS / "rope.yaml"), *TINY, *RUN_ARGS]
    last = run_dir(runs, 2) / "checkpoints" / "last.ckpt"
    assert main([*evaluate, "--ckpt_path", str(last)]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "other data" in line]
    assert len(notes) == 1 and notes[0].startswith("note:") and ran in notes[0], notes

    # a byte-identical copy of the run's corpus (a new file: another fingerprint) resumes
    replace_file(runs / "c.txt", corpus_text(0))
    capsys.readouterr()
    assert main(resume_args(runs)) == 0
    assert "other data" not in capsys.readouterr().err
    assert read_record(run_dir(runs, 2)) == identity_of(runs).data_identity()


@pytest.mark.parametrize("subcommand", ["validate"])
def test_an_evaluation_records_the_identity_of_the_data_it_evaluated(
    runs: Path, monkeypatch: pytest.MonkeyPatch, subcommand: str
):
    """``evaluations.jsonl`` tells evaluations on the run's own data from those on other
    data under the same settings: each record names the identity of what it evaluated."""
    monkeypatch.chdir(runs)
    evaluate = [subcommand, "--config", str(CONFIGS / "rope.yaml"), *TINY, *RUN_ARGS]
    last = run_dir(runs, 0) / "checkpoints" / "last.ckpt"
    evaluated = []
    for text in (corpus_text(0), corpus_text(1), corpus_text(0)):
        replace_file(runs / "c.txt", text)
        evaluated.append(identity_of(runs).data_identity())
        assert main([*evaluate, "--ckpt_path", str(last)]) == 0
    lines = (run_dir(runs, 0) / "evaluations.jsonl").read_text(encoding="utf-8").splitlines()
    recorded = [json.loads(line)["data_identity"] for line in lines[-3:]]
    assert recorded == evaluated and recorded[0] == read_record(run_dir(runs, 0))
    assert recorded[1] != recorded[0]


def compare_rows(capsys: pytest.CaptureFixture[str], *logdirs: Path) -> tuple[list[str], str]:
    """``compare``'s variant labels (first column of its rows) and its stderr."""
    capsys.readouterr()
    assert main(["compare", *map(str, logdirs)]) == 0
    out, err = capsys.readouterr()
    rows = [line for line in out.splitlines() if line.startswith("| ")][2:]
    return [row.strip("|").split(" | ")[0].strip() for row in rows], err


def test_compare_never_tables_runs_on_other_data_as_seeds_of_one_variant(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    for seed in (0, 1):  # the two finished runs: one setting, two contents of c.txt
        (tmp_path / f"seed{seed}").symlink_to(run_dir(runs, seed))
    labels, err = compare_rows(capsys, tmp_path)
    first, second = (short_identity(read_record(run_dir(runs, s)) or "") for s in (0, 1))
    assert sorted(labels) == sorted([f"rope-softmax data={first}", f"rope-softmax data={second}"])
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and first in notes[0] and second in notes[0], err


# --- compare: runs as fit leaves them, with and without a record ----------------------------------


def write_run(run: Path, seed: int, identity: str | None) -> Path:
    """A finished training run's files, with a data identity record unless ``identity`` is
    None (a run from before the record)."""
    (run / "checkpoints").mkdir(parents=True)
    hparams = {"position": "rope", "attention": "softmax", "learning_rate": 0.001}
    (run / "hparams.yaml").write_text(yaml.safe_dump(hparams), encoding="utf-8")
    config = {"seed_everything": seed, "trainer": {"max_steps": 20}}
    (run / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    if identity is not None:
        record = {"data_identity": identity, "data": "the corpus c.txt"}
        (run / DATA_IDENTITY_FILE).write_text(json.dumps(record), encoding="utf-8")
    writer = SummaryWriter(str(run))
    for step in (9, 19):
        writer.add_scalar("val/loss", 2.0 + seed, step, walltime=1000.0 + step)
    writer.close()
    return run


A, B = "a" * 64, "b" * 64
#: case -> (the identities of seeds 0 and 1, the variant labels compare gives).
RECORDS = {
    "the same data": ((A, A), ["rope-softmax"]),
    "other data": ((A, B), ["rope-softmax data=aaaaaaaa", "rope-softmax data=bbbbbbbb"]),
    "runs from before the record": ((None, None), ["rope-softmax"]),
    "an unknown identity splits from none": ((A, None), ["rope-softmax"]),
}


@pytest.mark.parametrize("case", sorted(RECORDS))
def test_compare_splits_by_recorded_data_only(case, tmp_path, capsys):
    identities, expected = RECORDS[case]
    for seed, identity in enumerate(identities):
        write_run(tmp_path / f"rope-softmax-seed{seed}", seed, identity)
    labels, err = compare_rows(capsys, tmp_path)
    assert sorted(labels) == expected
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert len(notes) == (len(expected) - 1), err


def test_a_damaged_record_is_a_problem_of_its_run_not_a_failure(tmp_path, capsys):
    write_run(tmp_path / "rope-softmax-seed0", 0, A)
    run = write_run(tmp_path / "rope-softmax-seed1", 1, None)
    (run / DATA_IDENTITY_FILE).write_text("{not json", encoding="utf-8")
    labels, err = compare_rows(capsys, tmp_path)
    assert labels == ["rope-softmax"]
    assert DATA_IDENTITY_FILE in err and "Traceback" not in err


#: A refused selection -> a word its one error line names.
REFUSED_SELECTIONS = {
    "a metric that is not one": (["--select", "learning_rate", "--by", "test_acc"], "test_acc"),
    "--select without --by": (["--select", "learning_rate"], "--by"),
    "--by without --select": (["--by", "val_loss"], "--select"),
    "a key no run has": (["--select", "no_such_key", "--by", "val_loss"], "no_such_key"),
}


@pytest.mark.parametrize("case", sorted(REFUSED_SELECTIONS))
def test_a_refused_selection_is_one_error_line_and_no_note_on_the_data(case, tmp_path, capsys):
    # runs on other data, so a note would be printed were the command to go on
    for seed, identity in enumerate((A, B)):
        write_run(tmp_path / f"rope-softmax-seed{seed}", seed, identity)
    options, named = REFUSED_SELECTIONS[case]
    capsys.readouterr()
    code = main(["compare", str(tmp_path), *options])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0
    assert len(err) == 1 and err[0].startswith("error:") and named in err[0], err
