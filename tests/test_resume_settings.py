"""A resumed run is the run it was, through the command line as a user runs it: the trainer's
settings that shape a run and the optimiser's are the checkpoint's unless typed (a
``--config`` file's value is replaced, with a ``note:`` line), a typed value that differs is
refused as :data:`~roformer_lit.commands.checkpoint_settings.CHECKPOINT_SETTINGS` says,
a run limited by ``max_epochs`` that has ended is refused, and ``finetune fit --ckpt_path``
goes through the same table and check.

The cases are the table's rows: a row added for a resumed run's setting fails
:func:`test_every_row_has_a_case` until it has a value here. Every refusal is checked for
its exit code, one ``error:`` line, no traceback, and a ``runs/`` directory whose listing and
every file's bytes are unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from cli_helpers import (
    CONFIGS,
    epochs_args,
    fit_args,
    fit_preempted,
    overridden,
    refused_unchanged,
)
from finetune_helpers import QUIET, local_task_files, pretrained_checkpoint

import roformer_lit.commands.pretrain as pretrain
from roformer_lit.commands import EXIT_PREEMPTED, EXIT_USER_ERROR, main
from roformer_lit.commands.checkpoint_settings import (
    CHECKPOINT_SETTINGS,
    EXACT,
    REFUSE,
    held,
    same_setting,
    saved_settings,
)
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.module import SequenceClassifier
from roformer_lit.training.trainer_settings import RECORDED_TRAINER_SETTINGS
from roformer_lit.training_config import TRAINING_FIELDS

STOPPED, EPOCHS, TUNED = "stopped", "epochs", "tuned"
MLM = Path("runs") / "mlm"
TUNED_LAST = Path("runs") / "finetune" / TUNED / "checkpoints" / "last.ckpt"

#: A resumed pretraining run's settings of training (the optimiser, its schedule, the
#: trainer's recorded ones) -> a value other than the run's (fit_args: rope.yaml, TINY).
PRETRAINING_OTHER = {
    "model.learning_rate": 0.002,
    "model.weight_decay": 0.1,
    "model.betas": [0.9, 0.99],
    "model.warmup_steps": 3,
    "model.min_lr_ratio": 0.2,
    "model.lr_schedule": "wsd",
    "model.decay_fraction": 0.5,
    "model.position_lr_scale": 2.0,
    "model.init_std": 0.05,
    "model.compile": True,
    "model.skip_nonfinite": True,
    "trainer.max_steps": 12,
    "trainer.max_epochs": 3,
    "trainer.accumulate_grad_batches": 2,
    "trainer.gradient_clip_val": 0.5,
    "trainer.gradient_clip_algorithm": "value",
    "trainer.precision": "bf16-mixed",
    "trainer.limit_train_batches": 4,
    "trainer.overfit_batches": 2,
    "trainer.limit_val_batches": 2,
    "trainer.val_check_interval": 2,
    "trainer.check_val_every_n_epoch": 2,
}
#: The classifier's settings of training (SequenceClassifier) -> a value other than the run's.
FINETUNE_OTHER = {
    "model.learning_rate": 0.01,
    "model.weight_decay": 0.1,
    "model.betas": [0.9, 0.99],
    "model.warmup_ratio": 0.3,
    "model.pooling": "mean",
    "model.classifier_dropout": 0.2,
    "model.dropout": 0.2,
    "model.init_std": 0.05,
    **{f"trainer.{key}": PRETRAINING_OTHER[f"trainer.{key}"] for key in RECORDED_TRAINER_SETTINGS},
}


def _classifier_rows() -> list[str]:
    import inspect

    names = inspect.signature(SequenceClassifier.__init__).parameters
    return [f"model.{n}" for n in names if f"model.{n}" in CHECKPOINT_SETTINGS]


#: The table's rows of a resumed run's training: the optimiser's and the trainer's.
PRETRAINING_ROWS = sorted(
    name
    for name in CHECKPOINT_SETTINGS
    if name.startswith("trainer.") or name.removeprefix("model.") in TRAINING_FIELDS
)
FINETUNE_ROWS = sorted(
    {n for n in CHECKPOINT_SETTINGS if n.startswith("trainer.")} | set(_classifier_rows())
)


def refused_rows(rows: list[str]) -> list[str]:
    return [name for name in rows if CHECKPOINT_SETTINGS[name][1] in (REFUSE, EXACT)]


def test_every_row_has_a_case():
    assert set(PRETRAINING_ROWS) == set(PRETRAINING_OTHER)
    assert set(FINETUNE_ROWS) == set(FINETUNE_OTHER)
    assert {f"trainer.{key}" for key in RECORDED_TRAINER_SETTINGS} <= set(PRETRAINING_ROWS)


def typed(name: str, value: object) -> list[str]:
    """``--section.key value`` as a user types it."""
    text = value if isinstance(value, str) else yaml.safe_dump(value, default_flow_style=True)
    return [f"--{name}", text.strip().removesuffix("...").strip()]


def with_file(config: str, argv: list[str]) -> list[str]:
    """``argv`` (``fit --config <scheme> ...``) with the ``--config`` file ``config`` read
    after the scheme's, before the typed flags (a later file would override them)."""
    return [*argv[:3], "--config", config, *argv[3:]]


def without(argv: list[str], option: str) -> list[str]:
    """``argv`` without ``option`` and its value."""
    i = argv.index(option)
    return [*argv[:i], *argv[i + 2 :]]


def version(name: str) -> list[str]:
    return ["--trainer.logger.init_args.version", name]


def finetune_args(work: Path, *extra: str) -> list[str]:
    """A tiny fine-tune of one epoch of two steps on a keyword task."""
    defaults = [
        "finetune",
        "--config",
        str(CONFIGS / "finetune" / "local.yaml"),
        "--model.pretrained",
        str(work / "pretrained.ckpt"),
        "--data.train_files",
        str(work / "train.csv"),
        "--data.val_files",
        str(work / "val.csv"),
        "--data.batch_size",
        "16",
        "--model.learning_rate",
        "2e-3",
        "--trainer.max_epochs",
        "1",
        *QUIET,
    ]
    return overridden(defaults, extra)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A linear run of 8 steps preempted at step 4, a finished run of one epoch without a
    step limit, and a finished fine-tune of one epoch."""
    work = tmp_path_factory.mktemp("resume-settings")
    pretrained = pretrained_checkpoint(tmp_path_factory)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        local_task_files(work, pretrained)
        assert fit_preempted(fit_args("rope.yaml", 8, *version(STOPPED)), 4) == EXIT_PREEMPTED
        assert main(epochs_args(*version(EPOCHS))) == 0
        assert main(finetune_args(work, *version(TUNED))) == 0
    return work


def last(name: str) -> Path:
    return MLM / name / "checkpoints" / "last.ckpt"


def load(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True, mmap=True)


def test_checkpoints_record_the_trainers_settings(work):
    for ckpt in (last(STOPPED), last(EPOCHS), TUNED_LAST):
        recorded = load(work / ckpt)["trainer_settings"]
        assert list(recorded) == list(RECORDED_TRAINER_SETTINGS), ckpt
    assert load(work / last(STOPPED))["trainer_settings"]["gradient_clip_val"] == 1.0
    assert load(work / last(EPOCHS))["trainer_settings"]["max_epochs"] == 1


@pytest.mark.parametrize("name", refused_rows(PRETRAINING_ROWS))
def test_a_typed_setting_that_would_change_a_resumed_run_is_refused(
    work, monkeypatch, capsys, name
):
    monkeypatch.chdir(work)
    argv = fit_args("rope.yaml", 8, *typed(name, PRETRAINING_OTHER[name]))
    line = refused_unchanged(work, capsys, [*argv, "--ckpt_path", str(last(STOPPED))])
    key = name.split(".", 1)[1]
    assert str(last(STOPPED)) in line and f"{name}=" in line and f"{key}=" in line, line
    assert "train a new run" in line, line


@pytest.mark.parametrize("name", PRETRAINING_ROWS)
def test_a_config_files_setting_is_replaced_by_the_runs(work, monkeypatch, capsys, name):
    """The value a --config file gives is noted and replaced: the configuration the run is
    built from holds the run's (the test stops the command there)."""
    monkeypatch.chdir(work)
    section, key = name.split(".", 1)
    (work / "other.yaml").write_text(
        yaml.safe_dump({section: {key: PRETRAINING_OTHER[name]}}), encoding="utf-8"
    )
    built: list = []

    def stop(self):
        built.append(self.config["fit"])
        raise ConfigError("stopped by the test")

    monkeypatch.setattr(pretrain.RoformerCLI, "before_instantiate_classes", stop)
    ckpt = last(STOPPED)
    capsys.readouterr()
    argv = fit_args("rope.yaml", 8)
    argv = without(argv, f"--{name}") if f"--{name}" in argv else argv  # the file's, not typed
    argv = [*with_file("other.yaml", argv), "--ckpt_path", str(ckpt)]
    assert main(argv) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "error: stopped by the test" in err, err[-2000:]
    theirs = saved_settings(load(work / ckpt))[name]
    notes = [line for line in err.splitlines() if line.startswith("note: the run's own")]
    assert len(notes) == 1 and f"{name}=" in notes[0], err[-2000:]
    (config,) = built
    if section == "trainer":
        assert held(key, config.trainer) == held(key, {key: theirs, "max_steps": 8})
    else:
        assert same_setting(config.model[key], theirs), (config.model[key], theirs)


#: How a finished run of one epoch (no step limit) was asked to go on -> words of its line.
EPOCHS_ASKED = {
    "its own settings": ([], ["is at epoch 1 (step 2)", "trainer.max_epochs is 1", "finished"]),
    "a config file with more epochs": (
        ["more-epochs.yaml"],
        ["is at epoch 1", "trainer.max_epochs is 1"],
    ),
    "a typed larger max_epochs": (
        ["--trainer.max_epochs", "3"],
        ["max_epochs=1", "trainer.max_epochs=3", "has finished", "train a new run"],
    ),
}


@pytest.mark.parametrize("case", sorted(EPOCHS_ASKED))
def test_a_finished_epoch_limited_run_is_refused_before_anything_is_written(
    work, monkeypatch, capsys, case
):
    monkeypatch.chdir(work)
    (work / "more-epochs.yaml").write_text("trainer:\n  max_epochs: 3\n", encoding="utf-8")
    extra, words = EPOCHS_ASKED[case]
    if extra[:1] == ["more-epochs.yaml"]:  # the file's epochs, none typed
        argv = with_file(extra[0], without(epochs_args(), "--trainer.max_epochs"))
    else:
        argv = epochs_args(*extra)
    line = refused_unchanged(work, capsys, [*argv, "--ckpt_path", str(last(EPOCHS))])
    assert str(last(EPOCHS)) in line and all(w in line for w in words), line


def test_a_finished_fine_tune_is_refused_before_anything_is_written(work, monkeypatch, capsys):
    monkeypatch.chdir(work)
    line = refused_unchanged(work, capsys, [*finetune_args(work), "--ckpt_path", str(TUNED_LAST)])
    assert str(TUNED_LAST) in line and "is at epoch 1" in line and "max_epochs is 1" in line


@pytest.mark.parametrize("name", refused_rows(FINETUNE_ROWS))
def test_a_typed_setting_that_would_change_a_resumed_fine_tune_is_refused(
    work, monkeypatch, capsys, name
):
    monkeypatch.chdir(work)
    argv = finetune_args(work, *typed(name, FINETUNE_OTHER[name]))
    line = refused_unchanged(work, capsys, [*argv, "--ckpt_path", str(TUNED_LAST)])
    assert str(TUNED_LAST) in line and f"{name}=" in line, line


#: What a --config file gives a resumed run of the validation schedule and limits (the run:
#: every 4 steps, on its whole validation set) -> the value the run keeps, as held.
OTHER_VALIDATION = {
    "val_check_interval": (2, "4 batches"),
    "limit_val_batches": (1, 1.0),
    "check_val_every_n_epoch": (2, None),
}


def test_a_resumed_run_validates_as_it_did_whatever_a_config_file_says(
    tmp_path, monkeypatch, capsys
):
    """A --config file's other validation schedule and limit are replaced by the run's (one
    ``note:`` line): the run validates at its own steps on its own set, and every config the
    run directory holds says so for the whole run (what ``compare`` and a sweep read)."""
    from roformer_lit.results.compare.runs import summarize_run
    from roformer_lit.results.events import read_run

    monkeypatch.chdir(tmp_path)
    argv = fit_args("rope.yaml", 8, *version("v"))
    assert fit_preempted(argv, 4) == EXIT_PREEMPTED
    other = {"trainer": {key: ours for key, (ours, _) in OTHER_VALIDATION.items()}}
    (tmp_path / "other.yaml").write_text(yaml.safe_dump(other), encoding="utf-8")
    resumed = with_file("other.yaml", without(argv, "--trainer.val_check_interval"))
    capsys.readouterr()
    assert main([*resumed, "--ckpt_path", str(last("v"))]) == 0
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if line.startswith("note: the run's own")]
    assert len(notes) == 1, err[-2000:]
    assert all(f"trainer.{key}=" in notes[0] for key in OTHER_VALIDATION), notes[0]
    run = MLM / "v"
    configs = sorted(run.glob("config*.yaml"))
    assert len(configs) == 2, configs  # config.yaml and the resume's config-resumed-1.yaml
    for config in configs:
        trainer = yaml.safe_load(config.read_text(encoding="utf-8"))["trainer"]
        for key, (_, theirs) in OTHER_VALIDATION.items():
            assert held(key, trainer) == theirs, (config, key)
    # every 4 steps, as the run validated (logged at the 0-based steps 3 and 7)
    assert [s.step for s in read_run(run).scalars["val/loss"]] == [3, 7]
    assert summarize_run(run).hparams["trainer.val_check_interval"] == "4 batches"


def test_a_run_validating_on_a_clock_resumes_on_its_clock_and_refuses_another(
    tmp_path, monkeypatch, capsys
):
    """A ``val_check_interval`` given as a duration is held by the trainer as seconds; the
    checkpoint records it as a duration, so a resume with another duration is refused like
    any other validation schedule, and the same duration spelled otherwise resumes."""
    monkeypatch.chdir(tmp_path)
    clock = ["--trainer.val_check_interval", '{"minutes": 5}']
    argv = fit_args("rope.yaml", 8, *version("clock"), *clock)
    assert fit_preempted(argv, 4) == EXIT_PREEMPTED
    assert load(last("clock"))["trainer_settings"]["val_check_interval"] == {"seconds": 300}
    resume = ["--ckpt_path", str(last("clock"))]
    other = fit_args("rope.yaml", 8, "--trainer.val_check_interval", '{"minutes": 10}')
    line = refused_unchanged(tmp_path, capsys, [*other, *resume])
    assert "trainer.val_check_interval=" in line, line
    same = fit_args("rope.yaml", 8, "--trainer.val_check_interval", '{"seconds": 300}')
    assert main([*same, *resume]) == 0
