"""A fine-tuning checkpoint's task and head size, and ``finetune validate``, go through the one
table every command given ``--ckpt_path`` uses
(:data:`~roformer_lit.commands.checkpoint_settings.CHECKPOINT_SETTINGS`).

The run's model records its task and label count (``data.task`` and the data's label count
are linked to ``model.task`` and ``model.num_labels``): a typed ``--data.task`` or
``--data.num_labels`` other than the run's is refused in one line naming both, by a resumed
``finetune fit`` and by ``finetune validate`` alike (the head's shape and the metric are the
task's), with nothing in ``runs/`` changed; a ``--config`` file's other task is replaced by
the run's, with a ``note:`` line, as a pretraining run's settings are. ``validate`` refuses
what the table refuses in an evaluation (``--model.pooling``), where it used to let every
typed value win."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from cli_helpers import CONFIGS, fit_preempted, overridden, refused_unchanged
from finetune_helpers import QUIET, local_task_files, pretrained_checkpoint

from roformer_lit.commands import EXIT_PREEMPTED, EXIT_USER_ERROR, main
from roformer_lit.errors import ConfigError
from roformer_lit.finetune import cli as finetune_cli

RUN = "stopped"
CKPT = Path("runs") / "finetune" / RUN / "checkpoints" / "last.ckpt"
COMMANDS = ("fit", "validate")


def command(work: Path, subcommand: str, config: str = "local.yaml", *extra: str) -> list[str]:
    """``finetune`` (fit) or ``finetune validate`` of the stopped run's checkpoint with the
    toy task's files; ``extra`` options replace those defaults."""
    words = ["finetune"] if subcommand == "fit" else ["finetune", "validate"]
    pretrained = ["--model.pretrained", str(work / "pretrained.ckpt")]
    defaults = [
        *words,
        "--config",
        str(CONFIGS / "finetune" / config),
        *(pretrained if subcommand == "fit" else []),
        *(["--data.train_files", str(work / "train.csv")] if subcommand == "fit" else []),
        "--data.val_files",
        str(work / "val.csv"),
        "--data.batch_size",
        "16",
        *QUIET,
    ]
    return [*overridden(defaults, extra), "--ckpt_path", str(CKPT)]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local-task fine-tune of two epochs of two steps, preempted at step 2."""
    work = tmp_path_factory.mktemp("finetune-checkpoint-task")
    pretrained = pretrained_checkpoint(tmp_path_factory)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        local_task_files(work, pretrained)
        argv = [
            *command(work, "fit", "local.yaml", "--trainer.max_epochs", "2")[:-2],
            "--trainer.logger.init_args.version",
            RUN,
        ]
        assert fit_preempted(argv, 2) == EXIT_PREEMPTED
    assert (work / CKPT).is_file()
    return work


@pytest.mark.parametrize("subcommand", COMMANDS)
def test_a_typed_task_other_than_the_checkpoints_is_refused(work, monkeypatch, capsys, subcommand):
    monkeypatch.chdir(work)
    argv = command(work, subcommand, "local.yaml", "--data.task", "movie_polarity")
    line = refused_unchanged(work, capsys, argv)
    assert str(CKPT) in line and "task='local'" in line, line
    assert "data.task='movie_polarity'" in line and "Traceback" not in line, line


@pytest.mark.parametrize("subcommand", COMMANDS)
def test_a_typed_label_count_other_than_the_heads_is_refused(work, monkeypatch, capsys, subcommand):
    monkeypatch.chdir(work)
    line = refused_unchanged(
        work, capsys, command(work, subcommand, "local.yaml", "--data.num_labels", "3")
    )
    assert str(CKPT) in line and "num_labels=2" in line and "data.num_labels=3" in line, line


@pytest.mark.parametrize("subcommand", COMMANDS)
def test_a_config_files_task_is_replaced_by_the_runs(work, monkeypatch, capsys, subcommand):
    """``--config movie_polarity.yaml`` on the local run: the run's task (and its head's
    size), with one ``note:`` line naming the file's; the test stops the command once its
    configuration is settled."""
    monkeypatch.chdir(work)
    built: list = []

    def stop(self):
        built.append(self.config[self.subcommand])
        raise ConfigError("stopped by the test")

    monkeypatch.setattr(finetune_cli.FinetuneCLI, "before_instantiate_classes", stop)
    capsys.readouterr()
    assert main(command(work, subcommand, "movie_polarity.yaml")) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "error: stopped by the test" in err, err[-2000:]
    notes = [line for line in err.splitlines() if line.startswith("note: the run's own")]
    assert len(notes) == 1 and "data.task='movie_polarity' -> 'local'" in notes[0], err[-2000:]
    (config,) = built
    assert (config.data.task, config.model.task, config.data.num_labels) == ("local", "local", 2)


def test_validate_refuses_a_typed_setting_the_table_refuses(work, monkeypatch, capsys):
    """The head was trained on the first token: evaluating it on the mean is refused."""
    monkeypatch.chdir(work)
    argv = command(work, "validate", "local.yaml", "--model.pooling", "mean")
    line = refused_unchanged(work, capsys, argv)
    assert "pooling='cls'" in line and "model.pooling='mean'" in line, line


def test_validate_takes_the_recorded_pretrained_checkpoint(work, monkeypatch, capsys):
    """``validate`` needs no ``--model.pretrained`` and evaluates the run as it trained."""
    monkeypatch.chdir(work)
    evaluations = CKPT.parent.parent / "evaluations.jsonl"
    before = evaluations.read_text().splitlines() if evaluations.exists() else []
    capsys.readouterr()
    assert main(command(work, "validate")) == 0, capsys.readouterr().err[-2000:]
    assert len(evaluations.read_text().splitlines()) == len(before) + 1


def without(argv: list[str], *options: str) -> list[str]:
    """``argv`` less each of ``options`` and its value."""
    kept: list[str] = []
    words = iter(argv)
    for word in words:
        if word in options:
            next(words, None)
            continue
        kept.append(word)
    return kept


@pytest.mark.parametrize("subcommand", COMMANDS)
def test_another_tasks_config_without_the_runs_files_names_both_tasks(
    work, monkeypatch, capsys, subcommand
):
    """``--config movie_polarity.yaml`` on the local run with no files: the run's task
    replaced the file's, and the line named only ``data.val_files``, which the user never
    needed for the task they asked for."""
    monkeypatch.chdir(work)
    argv = without(
        command(work, subcommand, "movie_polarity.yaml"), "--data.val_files", "--data.train_files"
    )
    line = refused_unchanged(work, capsys, argv)
    assert f"checkpoint {CKPT} was fine-tuned on task 'local'" in line, line
    assert "not on the --config file's task 'movie_polarity'" in line, line
    assert "needs data.val_files" in line and "fine-tuned on 'movie_polarity'" in line, line


def _resumed(work: Path, copy: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Resume the stopped run in ``copy`` (a copy of ``work``) with ``argv``; returns its
    stderr. The copy's run records the pretrained checkpoint of ``work``."""
    shutil.copytree(work, copy, symlinks=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(copy)
        capsys.readouterr()
        assert main(argv) == 0, capsys.readouterr().err[-2000:]
    return capsys.readouterr().err


def test_a_resume_without_model_pretrained_takes_the_recorded_one(work, tmp_path, capsys):
    """``finetune --ckpt_path <the stopped run>`` without ``--model.pretrained`` stopped at
    'model.pretrained is required', though the checkpoint records it: it resumes from the
    recorded one now, with one ``note:`` line, to the weights a resume naming it trains
    (the oracle: the same resume with ``--model.pretrained`` typed)."""
    named = tmp_path / "named"
    _resumed(work, named, command(named, "fit"), capsys)
    recorded = tmp_path / "recorded"
    err = _resumed(work, recorded, without(command(recorded, "fit"), "--model.pretrained"), capsys)
    notes = [line for line in err.splitlines() if line.startswith("note: model.pretrained=")]
    assert len(notes) == 1 and str(work / "pretrained.ckpt") in notes[0], err[-2000:]
    assert str(CKPT) in notes[0], notes[0]
    ours, theirs = (torch.load(d / CKPT, weights_only=True) for d in (recorded, named))
    assert ours["global_step"] == theirs["global_step"] > 2
    assert ours["state_dict"].keys() == theirs["state_dict"].keys()
    for key, value in theirs["state_dict"].items():
        assert torch.equal(ours["state_dict"][key], value), key


def test_a_resume_whose_recorded_pretrained_is_gone_says_so(work, monkeypatch, capsys):
    """Without ``--model.pretrained``, a recorded pretrained checkpoint not found from here
    (moved) is one line naming it and asking for its new place; nothing changes."""
    monkeypatch.chdir(work)
    link = work / "pretrained.ckpt"
    moved = work / "moved.ckpt"
    link.rename(moved)
    try:
        line = refused_unchanged(work, capsys, without(command(work, "fit"), "--model.pretrained"))
    finally:
        moved.rename(link)
    assert f"--ckpt_path {CKPT} was fine-tuned from {link}" in line, line
    assert "not found from here" in line and "--model.pretrained" in line, line
