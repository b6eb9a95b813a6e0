"""A fine-tune records the content of the task data it trained on, and resume, evaluation,
compare and sweep use it as they use a pretraining run's: a fine-tune reads the user's own
files, which can be edited between a run and its resume under the same ``--data.*`` paths,
so a resume continued on the edited files without a word and compare tabled runs on
different data as seeds of one setting."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
import yaml
from cli_helpers import CONFIGS, fit_preempted, overridden, refused_unchanged, tree_state
from finetune_helpers import QUIET, keyword_rows, local_task_files, pretrained_checkpoint, write_csv
from torch.utils.tensorboard import SummaryWriter

from roformer_lit.commands import EXIT_PREEMPTED, EXIT_USER_ERROR, main
from roformer_lit.finetune.datamodule import TaskDataModule
from roformer_lit.results.compare import collect_runs
from roformer_lit.results.compare.downstream import aggregate_downstream
from roformer_lit.training.data_identity import (
    DATA_IDENTITY_FILE,
    EVALUATED_IDENTITY_KEY,
    checkpoint_data_identity,
    read_record,
    short_identity,
    write_record,
)

RUN = Path("runs") / "finetune" / "stopped"
CKPT = RUN / "checkpoints" / "last.ckpt"


def command(work: Path, subcommand: str, *extra: str, resume: bool = True) -> list[str]:
    """``finetune`` (fit) or ``finetune validate`` on ``work``'s task files, of the stopped
    run's checkpoint (``resume``) or not; ``extra`` options replace the defaults."""
    words = ["finetune"] if subcommand == "fit" else ["finetune", "validate"]
    defaults = [
        *words,
        "--config",
        str(CONFIGS / "finetune" / "local.yaml"),
        *(["--model.pretrained", str(work / "pretrained.ckpt")] if subcommand == "fit" else []),
        *(["--data.train_files", str(work / "train.csv")] if subcommand == "fit" else []),
        "--data.val_files",
        str(work / "val.csv"),
        "--data.batch_size",
        "16",
        "--trainer.max_epochs",
        "2",
        *QUIET,
    ]
    return overridden(defaults, [*(["--ckpt_path", str(CKPT)] if resume else []), *extra])


def module_of(work: Path, train: str | None = "train.csv") -> TaskDataModule:
    """The data module a fine-tune of ``work``'s files builds (``train``: None to validate)."""
    return TaskDataModule(
        train_files=None if train is None else str(work / train),
        val_files=str(work / "val.csv"),
        pretrained=str(work / "pretrained.ckpt"),
    )


def replace_csv(path: Path, rows: list[dict[str, object]]) -> None:
    """``path`` rewritten as a new file (a new inode and mtime), as an editor's save does."""
    tmp = write_csv(path.with_suffix(".tmp"), rows)
    os.replace(tmp, path)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local-task fine-tune of two epochs of two steps, preempted at step 2."""
    work = tmp_path_factory.mktemp("finetune-data-identity")
    pretrained = pretrained_checkpoint(tmp_path_factory)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        local_task_files(work, pretrained)
        argv = command(work, "fit", "--trainer.logger.init_args.version", "stopped", resume=False)
        assert fit_preempted(argv, 2) == EXIT_PREEMPTED
    assert (work / CKPT).is_file()
    return work


def test_the_identity_is_of_the_examples_content(work: Path, tmp_path: Path):
    """Files with the same examples have one identity wherever they lie; an edited text, label
    or row order is another; the examples' identity does not change with the length they are
    cut to (a setting of its own); validation alone is another identity than the whole."""
    original = module_of(work)
    rows = keyword_rows(32, seed=1)
    (tmp_path / "pretrained.ckpt").symlink_to(work / "pretrained.ckpt")
    write_csv(tmp_path / "val.csv", keyword_rows(16, seed=2))

    def identity(train_rows: list[dict[str, object]], **settings: object) -> str | None:
        write_csv(tmp_path / "train.csv", train_rows)
        dm = module_of(tmp_path)
        for key, value in settings.items():
            setattr(dm, key, value)
        return dm.data_identity()

    assert identity(rows) == original.data_identity()  # a copy elsewhere
    assert identity(rows, max_length=16) == original.data_identity()
    edited_text = [{**rows[0], "text": f"{rows[0]['text']} x"}, *rows[1:]]
    edited_label = [{**rows[0], "label": 1 - int(rows[0]["label"])}, *rows[1:]]  # type: ignore[call-overload]
    reordered = [rows[1], rows[0], *rows[2:]]
    others = {identity(edited_text), identity(edited_label), identity(reordered)}
    assert len(others) == 3 and original.data_identity() not in others
    assert original.evaluated_identity() == module_of(work, train=None).evaluated_identity()
    assert original.evaluated_identity() != original.data_identity()


def test_a_finetune_records_its_data_identity_in_its_directory_and_checkpoints(work: Path):
    dm = module_of(work)
    identity = dm.data_identity()
    assert identity is not None and read_record(work / RUN) == identity
    record = json.loads((work / RUN / DATA_IDENTITY_FILE).read_text(encoding="utf-8"))
    assert record[EVALUATED_IDENTITY_KEY] == dm.evaluated_identity() != identity
    checkpoint = torch.load(work / CKPT, weights_only=True)
    assert checkpoint_data_identity(checkpoint) == identity
    assert checkpoint_data_identity(checkpoint, evaluated=True) == dm.evaluated_identity()


def test_a_resume_onto_edited_files_is_refused_and_onto_a_copy_of_them_continues(
    work: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.chdir(work)
    rows = keyword_rows(32, seed=1)
    ran = short_identity(module_of(work).data_identity() or "")
    replace_csv(work / "train.csv", [{**rows[0], "label": 1 - int(rows[0]["label"])}, *rows[1:]])  # type: ignore[call-overload]
    now = short_identity(module_of(work).data_identity() or "")
    line = refused_unchanged(work, capsys, command(work, "fit"))
    assert f"data {ran}" in line and f"data {now}" in line, line
    assert "original data" in line and "new run" in line, line

    replace_csv(work / "train.csv", rows)  # the run's own examples again, a new file
    capsys.readouterr()
    assert main(command(work, "fit")) == 0
    assert "other data" not in capsys.readouterr().err
    assert read_record(work / RUN) == module_of(work).data_identity()


def test_validate_on_edited_validation_files_notes_it_and_records_what_it_evaluated(
    work: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """``finetune validate`` reads no training file: it compares the validation examples."""
    monkeypatch.chdir(work)
    own = module_of(work, train=None).evaluated_identity()
    capsys.readouterr()
    assert main(command(work, "validate")) == 0
    assert "other data" not in capsys.readouterr().err
    rows = keyword_rows(16, seed=2)
    replace_csv(work / "val.csv", rows[1:])
    other = module_of(work, train=None).evaluated_identity()
    assert main(command(work, "validate")) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "other data" in line]
    assert len(notes) == 1 and notes[0].startswith("note:"), notes
    assert short_identity(own) in notes[0] and short_identity(other) in notes[0], notes
    replace_csv(work / "val.csv", rows)
    lines = (work / RUN / "evaluations.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["data_identity"] for line in lines[-2:]] == [own, other]


# --- compare: fine-tunes as finetune leaves them, with and without a record -------------------


def write_finetune(run: Path, task: str, seed: int, identity: str | None) -> None:
    """A finished fine-tune of ``runs/mlm/rope-softmax-seed0``'s checkpoint, recording the
    data identity ``identity`` unless None (a run from before the record)."""
    (run / "checkpoints").mkdir(parents=True)
    pretrained = "runs/mlm/rope-softmax-seed0/checkpoints/last.ckpt"
    hparams = {"pretrained": pretrained, "task": task, "num_labels": 2, "learning_rate": 4e-5}
    (run / "hparams.yaml").write_text(yaml.safe_dump(hparams), encoding="utf-8")
    config = {"seed_everything": seed, "trainer": {"max_steps": 20}}
    (run / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    if identity is not None:
        record = {"data_identity": identity, "data": "the task files"}
        (run / DATA_IDENTITY_FILE).write_text(json.dumps(record), encoding="utf-8")
    writer = SummaryWriter(str(run))
    for step in (9, 19):
        writer.add_scalar("val/accuracy", 0.5 + seed / 10, step, walltime=1000.0 + step)
    writer.close()


A, B, C = "a" * 64, "b" * 64, "c" * 64
#: case -> (the identities of the movie_polarity fine-tunes of seeds 0 and 1, their rows'
#: labels, the notes compare prints). Every case has a ``local`` fine-tune on data C too:
#: another task's data split nothing.
FINETUNE_RECORDS = {
    "the same data": ((A, A), ["rope-softmax"], 0),
    "other data": ((A, B), ["rope-softmax data=aaaaaaaa", "rope-softmax data=bbbbbbbb"], 1),
    "runs from before the record": ((None, None), ["rope-softmax"], 0),
    "an unknown identity splits from none": ((A, None), ["rope-softmax"], 0),
}


@pytest.mark.parametrize("case", sorted(FINETUNE_RECORDS))
def test_compare_splits_fine_tunes_by_recorded_data_only(case, tmp_path, monkeypatch, capsys):
    identities, expected, notes = FINETUNE_RECORDS[case]
    monkeypatch.chdir(tmp_path)
    pretrained = tmp_path / "runs" / "mlm" / "rope-softmax-seed0"
    (pretrained / "checkpoints").mkdir(parents=True)
    (pretrained / "hparams.yaml").write_text(
        yaml.safe_dump({"position": "rope", "attention": "softmax"}), encoding="utf-8"
    )
    finetune = tmp_path / "runs" / "finetune"
    for seed, identity in enumerate(identities):
        write_finetune(finetune / f"movie_polarity-seed{seed}", "movie_polarity", seed, identity)
    write_finetune(finetune / "local-seed0", "local", 0, C)
    capsys.readouterr()
    rows = aggregate_downstream(collect_runs(finetune))
    assert sorted(r.variant for r in rows if r.task == "movie_polarity") == expected
    assert [r.variant for r in rows if r.task == "local"] == ["rope-softmax"]
    assert main(["compare", str(finetune)]) == 0
    err = capsys.readouterr().err
    found = [line for line in err.splitlines() if line.startswith("note:")]
    assert len(found) == notes and all("movie_polarity" in line for line in found), err


# --- sweep: a finished fine-tune on other data is not skipped ----------------------------------


def test_a_finetune_sweeps_finished_run_on_other_data_is_refused_not_skipped(
    work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    from roformer_lit.finetune.parse import data_section
    from roformer_lit.sweep import runner
    from roformer_lit.sweep.spec import load_sweep

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    sweep = {
        "name": "ft",
        "command": "finetune",
        "base": str(CONFIGS / "finetune" / "local.yaml"),
        "grid": {"model.pretrained": [str(work / "pretrained.ckpt")], "seed_everything": [0]},
        "overrides": {
            "data.train_files": str(work / "train.csv"),
            "data.val_files": str(work / "val.csv"),
        },
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(sweep), encoding="utf-8")
    loaded = load_sweep("s.yaml")
    (run,) = loaded.runs
    finished = tmp_path / "runs" / "ft" / run.version
    (finished / "checkpoints").mkdir(parents=True)
    (finished / "checkpoints" / "last.ckpt").write_bytes(b"")
    (finished / runner.MARKER).write_text("{}", encoding="utf-8")
    config = json.loads(json.dumps(loaded.resolved[run.version].as_dict(), default=str))
    (finished / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    dm, _ = data_section(loaded.fit_args(run, "runs"))
    now = dm.data_identity() or ""
    assert now == module_of(work).data_identity()

    write_record(finished, now, "the task files")
    capsys.readouterr()
    assert main(["sweep", "--config", "s.yaml"]) == 0  # the same data: skipped
    assert "error" not in capsys.readouterr().err
    write_record(finished, "0" * 64, "the task files, as they were")
    before = tree_state(finished)
    assert main(["sweep", "--config", "s.yaml"]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert run.version in errors[0] and f"data 00000000 -> {short_identity(now)}" in errors[0]
    assert tree_state(finished) == before


def no_launch(*args: object, **kwargs: object) -> None:
    raise AssertionError("no process may start")
