"""What a command given ``--ckpt_path`` takes from the checkpoint: the rule (the run's own
settings, unless typed on the command line), the one function that reads what was typed,
and the table of what a typed value that differs from the run's does.

Builds no Trainer (fast tier); the end-to-end checks are in
``tests/test_checkpoint_settings_cli.py``."""

from __future__ import annotations

import inspect

import pytest

from roformer_lit.commands.checkpoint_settings import (
    CHECKPOINT_SETTINGS,
    EXACT,
    EXACT_BY,
    FINISHED,
    MACHINE_SETTINGS,
    NOTICE,
    QUIET,
    REFUSE,
    SET_THROUGH,
    TRAINING_SECTIONS,
    changed_steps,
    check_steps_left,
    checkpoint_settings,
    config_file_keys,
    typed_keys,
)
from roformer_lit.commands.pretrain import RoformerCLI, mlm_parser_kwargs
from roformer_lit.data.datamodule import PretrainDataModule
from roformer_lit.data.modules import DATA_MODULES, class_path
from roformer_lit.data.probe_module import ProbeDataModule
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.module import SequenceClassifier
from roformer_lit.module import MaskedLM
from roformer_lit.training.lifecycle import run_length_records
from roformer_lit.training.trainer_settings import RECORDED_TRAINER_SETTINGS


class _Parser(RoformerCLI):
    def before_instantiate_classes(self) -> None:
        pass

    def instantiate_classes(self) -> None:
        pass


@pytest.fixture(scope="module")
def options():
    """The option strings -> actions of the pretraining parser (as ``fit`` has them)."""
    cli = _Parser(
        MaskedLM,
        PretrainDataModule,
        subclass_mode_data=True,
        args=[],
        run=False,
        parser_kwargs=mlm_parser_kwargs(subcommands=False),
        auto_configure_optimizers=False,
    )
    return cli.parser._option_string_actions


#: command line -> the settings typed on it.
TYPED = {
    "a flag": (["--data.max_length", "64"], {"data.max_length"}),
    "a flag with =": (["--data.max_length=64"], {"data.max_length"}),
    "the default value": (
        ["--data.validation_positions", "ordinary"],
        {"data.validation_positions"},
    ),
    "null": (["--data.random_positions", "null"], {"data.random_positions"}),
    "an inline section": (
        ["--data", "{max_length: 64, seed: 1}"],
        {"data.max_length", "data.seed"},
    ),
    "an inline section with =": (["--model={hidden_size: 32}"], {"model.hidden_size"}),
    "a list append": (["--data.train_files+", "a.txt"], {"data.train_files"}),
    "model and data": (
        ["fit", "--model.position_kwargs", "{base: 100}", "--data.seed", "3"],
        {"model.position_kwargs", "data.seed"},
    ),
    "a config file": (["--config", "configs/rope.yaml"], set()),
    "a section file": (["--data", "my_data.yaml"], set()),
    "the run's length": (["--trainer.max_steps", "5"], {"trainer.max_steps"}),
    "other sections": (["--seed_everything", "3", "--checkpoint.monitor", "x"], set()),
    "a value that looks like a key": (
        ["--trainer.logger.init_args.name", "data.seed"],
        {"trainer.logger"},
    ),
}


@pytest.mark.parametrize("case", sorted(TYPED))
def test_typed_keys_reads_the_command_line(case, options):
    args, expected = TYPED[case]
    assert typed_keys(args, options) == expected


def test_config_file_keys_lists_what_the_files_set(options, tmp_path):
    (tmp_path / "a.yaml").write_text("model:\n  hidden_size: 8\ndata:\n  max_length: 9\n")
    (tmp_path / "d.yaml").write_text("seed: 2\nprobe: copy\n")
    args = ["--config", str(tmp_path / "a.yaml"), "--data", str(tmp_path / "d.yaml")]
    assert config_file_keys(args, options) == {
        "model.hidden_size",
        "data.max_length",
        "data.seed",
        "data.probe",
    }


def _arguments(cls: type) -> list[str]:
    return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]


#: The trainer's settings a checkpoint records (RunModule.on_save_checkpoint).
RECORDED_TRAINER = [f"trainer.{key}" for key in RECORDED_TRAINER_SETTINGS]
ARGUMENTS = (
    [f"model.{a}" for a in _arguments(MaskedLM)]
    + [  # the classifier's task and head size are set through the data section
        SET_THROUGH.get(f"model.{a}", f"model.{a}")
        for a in _arguments(SequenceClassifier)
        if a not in _arguments(MaskedLM)
    ]
    + [f"data.{a}" for cls in DATA_MODULES for a in cls.arguments()]
    + RECORDED_TRAINER
)


def test_the_recorded_trainer_settings_are_the_trainers(options):
    """What a checkpoint records of the trainer (``run_length_records``) are ``fit`` options."""

    from types import SimpleNamespace

    from lightning.pytorch.utilities import GradClipAlgorithmType

    trainer = SimpleNamespace(  # as a Trainer holds them after fit starts
        max_steps=7,
        max_epochs=-1,
        accumulate_grad_batches=2,
        gradient_clip_val=1,
        gradient_clip_algorithm=GradClipAlgorithmType("value"),
        precision="bf16-mixed",
        limit_train_batches=4,
        limit_val_batches=0.5,
        overfit_batches=0.0,
        val_check_interval=3,
        check_val_every_n_epoch=None,
    )
    recorded = run_length_records(trainer, 7)["trainer_settings"]
    assert [f"trainer.{key}" for key in recorded] == RECORDED_TRAINER
    assert all(f"--{name}" in options for name in RECORDED_TRAINER)
    assert recorded == {
        "max_steps": 7,
        "max_epochs": -1,
        "accumulate_grad_batches": 2,
        "gradient_clip_val": 1.0,
        "gradient_clip_algorithm": "value",
        "precision": "bf16-mixed",
        "limit_train_batches": 4,
        "limit_val_batches": 0.5,
        "overfit_batches": 0.0,
        "val_check_interval": 3,
        "check_val_every_n_epoch": None,
    }
    assert all(type(v) in (int, float, str, type(None)) for v in recorded.values())


def test_the_limits_the_trainer_replaces_by_the_overfit_count_are_not_recorded():
    """What a record leaves out is not compared on resume (as in an older checkpoint)."""
    from types import SimpleNamespace

    held_values = {"overfit_batches": 2, "limit_train_batches": 2, "limit_val_batches": 2}
    trainer = SimpleNamespace(max_steps=8, **held_values)
    recorded = run_length_records(trainer, 8)["trainer_settings"]
    assert len(RECORDED_TRAINER) - len(recorded) == 2, recorded
    assert recorded["overfit_batches"] == 2 and "limit_train_batches" not in recorded


#: seconds a trainer validating on a clock holds -> its record (timedelta arguments).
CLOCKS = {
    60.0: {"seconds": 60},
    90061.0: {"seconds": 90061},  # a day, an hour, a minute and a second
    1.5: {"seconds": 1, "microseconds": 500000},
}


@pytest.mark.parametrize("seconds", sorted(CLOCKS))
def test_an_interval_on_the_clock_is_recorded_as_its_duration(seconds):
    """The trainer holds a duration's seconds, not the setting: the record is a duration
    Lightning takes back, of those seconds."""
    from datetime import timedelta
    from types import SimpleNamespace

    trainer = SimpleNamespace(max_steps=8, _val_check_time_interval=seconds)
    recorded = run_length_records(trainer, 8)["trainer_settings"]["val_check_interval"]
    assert recorded == CLOCKS[seconds]
    assert timedelta(**recorded).total_seconds() == seconds


@pytest.mark.parametrize("name", ARGUMENTS)
def test_every_setting_is_in_the_table_or_the_machines(name):
    assert (name in CHECKPOINT_SETTINGS) != (name in MACHINE_SETTINGS), name


@pytest.mark.parametrize("name", sorted(CHECKPOINT_SETTINGS))
def test_the_table_names_real_settings_and_actions(name):
    assert name in ARGUMENTS
    evaluate, resume = CHECKPOINT_SETTINGS[name]
    assert evaluate in (REFUSE, NOTICE, QUIET) and resume in (REFUSE, NOTICE, QUIET, EXACT)
    assert (resume == EXACT) == (name in EXACT_BY)


def _task(key: str) -> dict:
    """What a setting of a position task's data module comes with: the task."""
    owner = next(cls for cls in DATA_MODULES if key in cls.arguments())
    return {"probe": "copy"} if owner is ProbeDataModule and key != "probe" else {}


#: A fine-tuning run's data settings its model records (its task, its head's size).
THROUGH_THE_MODEL = {name: recorded for recorded, name in SET_THROUGH.items()}


def _mode(name: str) -> dict:
    """How a command reads its data section for setting ``name``: a fine-tuning setting's
    is the fine-tuning data module's, taken as it is."""
    return {"pretraining_data": False} if name in THROUGH_THE_MODEL else {}


def _checkpoint(name: str, value: object) -> dict:
    section, key = name.split(".")
    if name in THROUGH_THE_MODEL:
        return {"hyper_parameters": {THROUGH_THE_MODEL[name].split(".")[1]: value}}
    if section == "model":
        return {"hyper_parameters": {key: value}}
    if section == "trainer":
        return {"trainer_settings": {key: value}}
    saved_as = "requested_vocab_size" if key == "vocab_size" else key  # how it is saved
    return {"datamodule_hyper_parameters": {saved_as: value, **_task(key)}}


def _config(name: str, value: object) -> dict:
    """A parsed config: the data section names the class that takes the setting."""
    section, key = name.split(".")
    if section in ("model", "trainer") or name in THROUGH_THE_MODEL:
        return {"model": {}, "data": {}, "trainer": {}, section: {key: value}}
    owner = next(cls for cls in DATA_MODULES if key in cls.arguments())
    init_args = {key: value, **_task(key)}
    return {"model": {}, "data": {"class_path": class_path(owner), "init_args": init_args}}


@pytest.mark.parametrize("resume", [False, True], ids=["evaluate", "resume"])
@pytest.mark.parametrize("name", sorted(CHECKPOINT_SETTINGS))
def test_a_typed_value_that_differs_does_what_the_table_says(name, resume):
    action = CHECKPOINT_SETTINGS[name][resume]
    checkpoint, config = _checkpoint(name, "theirs"), _config(name, "ours")
    if action in (REFUSE, EXACT):  # exact: a step count that is no number keeps nothing
        with pytest.raises(ConfigError) as info:
            checkpoint_settings(checkpoint, config, {name}, resume, "run.ckpt", **_mode(name))
        line = str(info.value)
        assert "\n" not in line and name in line and "'theirs'" in line and "'ours'" in line
        return
    fill, notes = checkpoint_settings(checkpoint, config, {name}, resume, "run.ckpt", **_mode(name))
    assert fill == {}  # the typed value stays
    if action == NOTICE:
        assert len(notes) == 1 and f"{name}='ours'" in notes[0] and "'theirs'" in notes[0]
    else:
        assert notes == []


def _filled(name: str, value: object) -> dict:
    """The fill setting ``name`` to the run's ``value``: a data value names the run's class
    (the parser reads a section without one as the default class's)."""
    section, key = name.split(".")
    if section in ("model", "trainer") or name in THROUGH_THE_MODEL:
        return {section: {key: value}}
    owner = next(cls for cls in DATA_MODULES if key in cls.arguments())
    return {"data": {"class_path": class_path(owner), "init_args": {key: value}}}


@pytest.mark.parametrize("resume", [False, True], ids=["evaluate", "resume"])
@pytest.mark.parametrize("name", sorted(CHECKPOINT_SETTINGS))
def test_an_untyped_value_is_the_runs(name, resume):
    checkpoint, config = _checkpoint(name, "theirs"), _config(name, "ours")
    if not resume and name.split(".")[0] in TRAINING_SECTIONS:  # the run's length: fit only
        assert checkpoint_settings(
            checkpoint, config, set(), resume, "run.ckpt", {name}, **_mode(name)
        ) == (
            {},
            [],
        )
        return
    fill, notes = checkpoint_settings(checkpoint, config, set(), resume, "run.ckpt", **_mode(name))
    assert fill == _filled(name, "theirs") and notes == []
    # from a --config file: replaced, and the note says so
    fill, notes = checkpoint_settings(
        checkpoint, config, set(), resume, "run.ckpt", {name}, **_mode(name)
    )
    assert fill == _filled(name, "theirs")
    assert len(notes) == 1 and f"{name}='ours' -> 'theirs'" in notes[0]


@pytest.mark.parametrize("name", MACHINE_SETTINGS)
def test_machine_settings_stay_the_commands(name):
    fill, notes = checkpoint_settings(
        _checkpoint(name, 4), _config(name, 2), set(), False, "run.ckpt"
    )
    assert fill == {} and notes == []


def test_a_typed_default_is_typed():
    """The bug this module fixes: a typed value equal to the default was taken for "left
    alone" and silently replaced by the run's."""
    checkpoint = _checkpoint("data.validation_positions", "random")
    config = _config("data.validation_positions", "ordinary")  # the default
    fill, notes = checkpoint_settings(
        checkpoint, config, {"data.validation_positions"}, False, "run.ckpt"
    )
    assert fill == {} and "evaluating at data.validation_positions='ordinary'" in notes[0]
    with pytest.raises(ConfigError, match="data.validation_positions='ordinary'"):
        checkpoint_settings(checkpoint, config, {"data.validation_positions"}, True, "run.ckpt")


def test_equal_values_need_nothing():
    checkpoint = {"hyper_parameters": {"betas": (0.9, 0.98), "position_kwargs": None}}
    config = {"model": {"betas": [0.9, 0.98], "position_kwargs": {}}, "data": {}}
    typed = {"model.betas", "model.position_kwargs"}
    assert checkpoint_settings(checkpoint, config, typed, True, "run.ckpt") == ({}, [])


def test_the_guide_shows_the_table_as_it_is():
    """docs/guide/runs.md's table of typed settings equals :data:`CHECKPOINT_SETTINGS`."""
    import re
    from pathlib import Path

    guide = Path(__file__).resolve().parents[1] / "docs" / "guide" / "runs.md"
    shown: dict[str, tuple[str, str]] = {}
    for line in guide.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1] in (REFUSE, NOTICE, QUIET):
            for name in re.findall(r"`([a-z_]+\.[a-z_]+)`", cells[0]):
                shown[name] = (cells[1], cells[2])
    assert shown == CHECKPOINT_SETTINGS


@pytest.mark.parametrize(
    "ours,theirs,same",
    [
        ("own.txt", ["own.txt"], True),
        (["a.txt", "b.txt"], "a.txt", False),
        ((0.9, 0.98), [0.9, 0.98], True),
        ({}, None, True),
        ({"base": 100}, None, False),
        (0.001, 1.0e-3, True),
        (None, 0, False),
    ],
)
def test_same_setting(ours, theirs, same):
    from roformer_lit.commands.checkpoint_settings import same_setting

    assert same_setting(ours, theirs) is same
    assert same_setting(theirs, ours) is same


#: (the run's plan, the command's plan, whether they build the same layers), on a RoPE model.
RESUMED_PLANS = {
    "layers for the pattern": (
        {"pattern": ["local", "global"], "types": {"local": {"window": 8}}},
        {"layers": ["local", "global"] * 2, "types": {"local": {"window": 8}}},
        True,
    ),
    "the base as an integer": (
        {"pattern": ["g", "l"], "types": {"g": {"position_kwargs": {"base": 160000.0}}}},
        {"pattern": ["g", "l"], "types": {"g": {"position_kwargs": {"base": 160000}}}},
        True,
    ),
    "another window": (
        {"pattern": ["local", "global"], "types": {"local": {"window": 8}}},
        {"layers": ["local", "global"] * 2, "types": {"local": {"window": 16}}},
        False,
    ),
    "another global scheme": (
        {"pattern": ["l", "g"], "types": {"g": {"position": "nope"}}},
        {"pattern": ["l", "g"], "types": {"g": {"position": "alibi"}}},
        False,
    ),
    # a layer's kernel is part of what a plan builds (it was once read as no plan at all)
    "another layer kernel": (
        {"pattern": ["l", "g"], "types": {"g": {"attention": "linear"}}},
        {"pattern": ["l", "g"]},
        False,
    ),
    "another layer kernel option": (
        {"pattern": ["l", "g"], "types": {"g": {"attention_kwargs": {"window_block": 8}}}},
        {"pattern": ["l", "g"], "types": {"g": {"attention_kwargs": {"window_block": 16}}}},
        False,
    ),
    "the model's kernel named": (
        {"pattern": ["l", "g"], "types": {"l": {"window": 8}}},
        {"pattern": ["l", "g"], "types": {"l": {"window": 8, "attention": "softmax"}}},
        True,
    ),
    # options at their defaults build the run's model bit for bit (layers share a scheme
    # instance by scheme_key): the plain run resumes with them, and another value is refused
    "the scheme's defaults written": (
        None,
        {"pattern": ["l", "g"], "types": {"g": {"position_kwargs": {"base": 10000}}}},
        True,
    ),
    "the kernel's defaults written": (
        None,
        {"pattern": ["l", "g"], "types": {"g": {"attention_kwargs": {"window_block": 128}}}},
        True,
    ),
    "a base off the default": (
        None,
        {"pattern": ["l", "g"], "types": {"g": {"position_kwargs": {"base": 500}}}},
        False,
    ),
}


@pytest.mark.parametrize("case", sorted(RESUMED_PLANS))
def test_a_typed_plan_that_builds_the_runs_layers_resumes(case):
    theirs, ours, same = RESUMED_PLANS[case]
    model = {"position": "rope", "attention": "softmax"}
    checkpoint = {"hyper_parameters": {**model, "layer_plan": theirs}}
    config = {"model": {**model, "layer_plan": ours}, "data": {}}
    if not same:
        with pytest.raises(ConfigError, match="layer_plan"):
            checkpoint_settings(checkpoint, config, {"model.layer_plan"}, True, "run.ckpt")
        return
    assert checkpoint_settings(checkpoint, config, {"model.layer_plan"}, True, "run.ckpt") == (
        {},
        [],
    )


#: (the run's data class, a key only the other class takes): every such pair.
OTHER_CLASS_KEYS = [
    (run_class, key)
    for run_class in DATA_MODULES
    for other in DATA_MODULES
    if other is not run_class
    for key in sorted(set(other.arguments()) - set(run_class.arguments()) - {"probe"})
]


@pytest.mark.parametrize(
    ("run_class", "key"), OTHER_CLASS_KEYS, ids=[f"{c.__name__}-{k}" for c, k in OTHER_CLASS_KEYS]
)
def test_a_typed_key_the_runs_data_module_does_not_take_is_named(run_class, key):
    """A corpus key typed to evaluate a position-task run (or a task's key on a corpus run)
    was dropped without a word (earlier: a vocabulary mismatch): one line naming it."""
    other = next(cls for cls in DATA_MODULES if cls is not run_class)
    theirs = {"probe": "copy"} if run_class is ProbeDataModule else {"max_length": 64}
    ours = {key: "typed", **({"probe": "copy"} if other is ProbeDataModule else {})}
    checkpoint = {"datamodule_hyper_parameters": theirs, "hyper_parameters": {}}
    config = {"model": {}, "data": {"class_path": class_path(other), "init_args": ours}}
    for resume in (False, True):
        with pytest.raises(ConfigError) as info:
            checkpoint_settings(checkpoint, config, {f"data.{key}"}, resume, "run.ckpt")
        line = str(info.value)
        assert "\n" not in line and f"data.{key}='typed'" in line and "run.ckpt" in line
    # left to the command's config file, not typed: the run's own class, no refusal
    fill, _ = checkpoint_settings(checkpoint, config, set(), False, "run.ckpt")
    assert fill["data"]["class_path"] == class_path(run_class)


def test_a_typed_task_names_its_class_in_the_fill():
    """``validate --data.probe reverse`` on a copy run (a notice in the table) filled the
    run's other data settings without naming the class, so they were read against the
    corpus's and the run was refused for a corpus tokenizer's vocabulary: the fill names
    the class the typed task picks."""
    theirs = {"probe": "copy", "max_length": 33, "max_val_blocks": 8}
    ours = {"probe": "reverse", "max_length": 33, "max_val_blocks": 256}
    checkpoint = {"datamodule_hyper_parameters": theirs, "hyper_parameters": {}}
    config = {"model": {}, "data": {"class_path": class_path(ProbeDataModule), "init_args": ours}}
    fill, notes = checkpoint_settings(checkpoint, config, {"data.probe"}, False, "run.ckpt")
    assert fill["data"] == {
        "class_path": class_path(ProbeDataModule),
        "init_args": {"max_val_blocks": 8},
    }
    assert notes == ["note: evaluating at data.probe='reverse', the run trained at 'copy'"]


# -- the run's length --------------------------------------------------------------------------


def _stopped(schedule: str, step: int, planned: int | None) -> dict:
    """A checkpoint at ``step`` of a run planned for ``planned`` steps (warm-up 2, wsd
    decaying over the last half of the steps after it)."""
    settings = {"lr_schedule": schedule, "warmup_steps": 2, "min_lr_ratio": 0.1}
    checkpoint = {"global_step": step, "hyper_parameters": {**settings, "decay_fraction": 0.5}}
    if planned is not None:
        checkpoint["schedule_steps"] = planned
        checkpoint["trainer_settings"] = {"max_steps": planned}
    return checkpoint


#: case -> (schedule, step, steps planned, the command's max_steps and max_epochs, what
#: changed_steps says: None where the resumed run is the one planned so, else words of why).
LENGTHS = {
    "constant, longer": ("constant", 4, 8, (12, None), None),
    "constant, shorter": ("constant", 4, 8, (6, -1), None),
    "linear while warming up": ("linear", 2, 8, (12, None), None),
    "linear after warm-up": ("linear", 4, 8, (12, None), "'linear' learning-rate schedule"),
    "wsd while stable": ("wsd", 6, 20, (40, None), None),
    "wsd while decaying": ("wsd", 15, 20, (40, None), "'wsd' learning-rate schedule"),
    "a finished run": ("constant", 8, 8, (12, None), FINISHED),
    "no record": ("constant", 4, None, (12, None), "does not record"),
    "an epoch limit": ("constant", 4, 8, (12, 3), "not be a trainer.max_steps alone"),
    "no step limit": ("constant", 4, 8, (-1, 3), "not be a trainer.max_steps alone"),
}


@pytest.mark.parametrize("case", sorted(LENGTHS))
def test_changed_steps_says_when_a_resume_is_the_run_planned_so(case):
    schedule, step, planned, (max_steps, epochs), why = LENGTHS[case]
    got = changed_steps(
        _stopped(schedule, step, planned), {"max_steps": max_steps, "max_epochs": epochs}
    )
    if why is None:
        assert got is None
    else:
        assert got is not None and why in got and "\n" not in got


def test_a_typed_max_steps_is_noted_where_exact_and_refused_where_not():
    config = {"model": {}, "data": {}, "trainer": {"max_steps": 12, "max_epochs": None}}
    typed = {"trainer.max_steps"}
    fill, notes = checkpoint_settings(_stopped("constant", 4, 8), config, typed, True, "run.ckpt")
    assert fill == {} and notes == [
        "note: resuming with trainer.max_steps=12, the run trained at 8"
    ]
    with pytest.raises(ConfigError) as info:
        checkpoint_settings(_stopped("linear", 4, 8), config, typed, True, "run.ckpt")
    line = str(info.value)
    assert "run.ckpt" in line and "max_steps=8" in line and "trainer.max_steps=12" in line
    assert "leave the flag out" in line
    with pytest.raises(ConfigError, match="has finished.*: train a new run$"):
        checkpoint_settings(_stopped("constant", 8, 8), config, typed, True, "run.ckpt")
    # an evaluation has no length: nothing compared, nothing filled
    assert checkpoint_settings(_stopped("linear", 4, 8), config, typed, False, "run.ckpt") == (
        {},
        [],
    )


def test_a_config_files_max_steps_is_replaced_by_the_runs():
    config = {"model": {}, "data": {}, "trainer": {"max_steps": 600}}
    checkpoint = _stopped("linear", 4, 8)
    fill, notes = checkpoint_settings(
        checkpoint, config, set(), True, "run.ckpt", {"trainer.max_steps"}
    )
    assert fill == {"trainer": {"max_steps": 8}}
    assert notes == [
        "note: the run's own settings (from run.ckpt) replace the --config files': "
        "trainer.max_steps=600 -> 8"
    ]


#: case -> (the checkpoint, the command's max_steps, words of the one line; None: resumes).
STEPS_LEFT = {
    "finished": (
        _stopped("linear", 8, 8),
        8,
        [
            "run.ckpt is at step 8 and trainer.max_steps is 8",
            FINISHED,
            "a larger --trainer.max_steps",
        ],
    ),
    "finished, no record": (_stopped("linear", 8, None), 8, ["is at step 8", "new run"]),
    "stopped, given fewer steps than it took": (
        _stopped("constant", 4, 8),
        3,
        ["is at step 4 and trainer.max_steps is 3", "leave the flag out or pass a larger"],
    ),
    "stopped": (_stopped("linear", 4, 8), 8, None),
    "no step limit": (_stopped("linear", 8, 8), -1, None),
}


@pytest.mark.parametrize("case", sorted(STEPS_LEFT))
def test_a_run_with_nothing_left_to_train_is_refused_in_one_line(case):
    checkpoint, max_steps, words = STEPS_LEFT[case]
    config = {"trainer": {"max_steps": max_steps, "max_epochs": None}}
    if words is None:
        check_steps_left(checkpoint, config, "run.ckpt")
        return
    with pytest.raises(ConfigError) as info:
        check_steps_left(checkpoint, config, "run.ckpt")
    line = str(info.value)
    assert "\n" not in line and all(w in line for w in words), line


@pytest.mark.parametrize("resume", [False, True], ids=["evaluate", "resume"])
@pytest.mark.parametrize(
    ("key", "name", "path"),
    [
        ("position", "rope", "roformer_lit.positions.rope:RotaryPosition"),
        ("attention", "softmax", "roformer_lit.attention.softmax:SoftmaxAttention"),
    ],
)
def test_a_builtin_typed_by_its_import_path_is_the_runs_own(key, name, path, resume):
    """``--model.position roformer_lit.positions.rope:RotaryPosition`` on a ``rope`` run (or
    ``rope`` on a run that recorded the import path) names the run's own scheme: nothing
    to refuse, nothing to note."""
    for theirs, ours in ((name, path), (path, name)):
        checkpoint = {"hyper_parameters": {key: theirs}}
        config = {"model": {key: ours}, "data": {}}
        typed = {f"model.{key}"}
        assert checkpoint_settings(checkpoint, config, typed, resume, "run.ckpt") == ({}, [])


# -- the trainer's other settings, and epoch-limited runs ---------------------------------------


#: case -> (the command's trainer section, the recorded one): the same as the trainer holds it.
HELD_THE_SAME = {
    "precision alias": ({"precision": 32}, {"precision": "32-true"}),
    "bf16 alias": ({"precision": "bf16"}, {"precision": "bf16-mixed"}),
    "no epoch limit, a step limit": (
        {"max_epochs": None, "max_steps": 8},
        {"max_epochs": -1, "max_steps": 8},
    ),
    "no limit at all": ({"max_epochs": None, "max_steps": -1}, {"max_epochs": 1000}),
    "no clipping": ({"gradient_clip_val": None}, {"gradient_clip_val": 0.0}),
    "the default algorithm": (
        {"gradient_clip_algorithm": None},
        {"gradient_clip_algorithm": "norm"},
    ),
    # a duration is its seconds however spelled (the record: trainer_settings_record's form)
    "a duration as timedelta arguments": (
        {"val_check_interval": {"minutes": 5}},
        {"val_check_interval": {"seconds": 300}},
    ),
    "a duration as DD:HH:MM:SS": (
        {"val_check_interval": "00:00:05:00"},
        {"val_check_interval": {"seconds": 300}},
    ),
}


@pytest.mark.parametrize("case", sorted(HELD_THE_SAME))
def test_trainer_settings_compare_as_the_trainer_holds_them(case):
    ours, theirs = HELD_THE_SAME[case]
    checkpoint = {"trainer_settings": {"max_steps": ours.get("max_steps", 8), **theirs}}
    config = {"model": {}, "data": {}, "trainer": {"max_steps": 8, **ours}}
    typed = {f"trainer.{key}" for key in ours}  # typed, and the same: nothing to refuse
    assert checkpoint_settings(checkpoint, config, typed, True, "run.ckpt") == ({}, [])


#: A batch count equal as a number to the run's fraction: one batch is not the whole set
#: (or epoch), so it is another value, typed (refused) or from a file (replaced).
ONE_BATCH = ("limit_train_batches", "limit_val_batches", "val_check_interval")


#: case -> (the command's val_check_interval, the run's recorded one): never the same.
OTHER_INTERVALS = {
    "another duration": ({"minutes": 10}, {"seconds": 300}),
    "a count of batches, not seconds": (300, {"seconds": 300}),
    "seconds, not a count of batches": ({"seconds": 300}, 300),
    "seconds, not a fraction of an epoch": ({"seconds": 1}, 1.0),
}


@pytest.mark.parametrize("case", sorted(OTHER_INTERVALS))
def test_a_resume_with_another_validation_clock_is_refused(case):
    ours, theirs = OTHER_INTERVALS[case]
    checkpoint = {"trainer_settings": {"max_steps": 8, "val_check_interval": theirs}}
    config = {"model": {}, "data": {}, "trainer": {"max_steps": 8, "val_check_interval": ours}}
    with pytest.raises(ConfigError, match="trainer.val_check_interval="):
        checkpoint_settings(checkpoint, config, {"trainer.val_check_interval"}, True, "run.ckpt")
    fill, _ = checkpoint_settings(checkpoint, config, set(), True, "run.ckpt")
    assert fill == {"trainer": {"val_check_interval": theirs}}


@pytest.mark.parametrize("key", ONE_BATCH)
def test_one_batch_is_not_the_runs_whole_set(key):
    checkpoint = {"trainer_settings": {"max_steps": 8, key: 1.0}}
    config = {"model": {}, "data": {}, "trainer": {"max_steps": 8, key: 1}}
    with pytest.raises(ConfigError, match=f"{key}=1.0, this run has trainer.{key}=1;"):
        checkpoint_settings(checkpoint, config, {f"trainer.{key}"}, True, "run.ckpt")
    fill, _ = checkpoint_settings(checkpoint, config, set(), True, "run.ckpt")
    assert fill == {"trainer": {key: 1.0}}


def test_a_checkpoint_from_before_the_record_compares_only_its_length():
    checkpoint = {"trainer_settings": {"max_steps": 8}, "hyper_parameters": {}}
    config = {"model": {}, "data": {}, "trainer": {"max_steps": 8, "precision": "bf16-mixed"}}
    typed = {"trainer.precision", "trainer.max_steps"}
    assert checkpoint_settings(checkpoint, config, typed, True, "run.ckpt") == ({}, [])


def test_a_checkpoint_from_before_the_validation_record_keeps_the_commands():
    """A record of the length and numerics alone (before the batch limits and the validation
    schedule were recorded) compares those: the command's validation is taken, typed or not."""
    six = dict.fromkeys(("max_epochs", "gradient_clip_val", "gradient_clip_algorithm"))
    record = {"max_steps": 8, "accumulate_grad_batches": 1, "precision": "32-true", **six}
    checkpoint = {"trainer_settings": record, "hyper_parameters": {}}
    ours = {"val_check_interval": 2, "limit_val_batches": 1, "check_val_every_n_epoch": None}
    config = {"model": {}, "data": {}, "trainer": {**record, **ours}}
    for typed in ({f"trainer.{key}" for key in ours}, set()):
        assert checkpoint_settings(checkpoint, config, typed, True, "run.ckpt") == ({}, [])


#: case -> (schedule, step, planned, words of why a typed max_epochs is refused; None: taken).
EPOCHS = {
    "constant, stopped": ("constant", 4, 8, None),
    "linear, stopped": ("linear", 4, 8, "'linear' learning-rate schedule"),
    "constant, finished": ("constant", 8, 8, FINISHED),
    "no record": ("constant", 4, None, "does not record"),
}


@pytest.mark.parametrize("case", sorted(EPOCHS))
def test_changed_epochs_takes_a_constant_run_stopped_before_its_end(case):
    from roformer_lit.commands.checkpoint_settings import changed_epochs

    schedule, step, planned, why = EPOCHS[case]
    got = changed_epochs(_stopped(schedule, step, planned), {"max_epochs": 5})
    assert got is None if why is None else (got is not None and why in got), got


def test_a_fine_tuning_run_length_is_never_exact():
    """Its warm-up is a share of its length (``warmup_ratio``): any other length changes
    the rates of the steps it took."""
    from roformer_lit.commands.checkpoint_settings import changed_epochs

    checkpoint = {"global_step": 1, "schedule_steps": 8, "hyper_parameters": {"warmup_ratio": 0.5}}
    for changed in (changed_steps(checkpoint, {"max_steps": 12}), changed_epochs(checkpoint, {})):
        assert changed is not None and "model.warmup_ratio=0.5" in changed


#: case -> (the checkpoint's epoch, step, schedule, the command's max_epochs, words; None: goes on).
EPOCHS_LEFT = {
    "finished": (2, 8, "linear", 2, ["is at epoch 2 (step 8)", "max_epochs is 2", FINISHED]),
    "stopped, given fewer epochs": (1, 4, "constant", 1, ["leave the flag out or pass a larger"]),
    "stopped": (1, 4, "linear", 2, None),
    "no epoch limit": (2, 8, "linear", -1, None),
}


@pytest.mark.parametrize("case", sorted(EPOCHS_LEFT))
def test_an_epoch_limited_run_with_nothing_left_is_refused_in_one_line(case):
    epoch, step, schedule, epochs, words = EPOCHS_LEFT[case]
    checkpoint = {**_stopped(schedule, step, 8), "epoch": epoch}
    config = {"trainer": {"max_steps": -1, "max_epochs": epochs}}
    if words is None:
        check_steps_left(checkpoint, config, "run.ckpt")
        return
    with pytest.raises(ConfigError) as info:
        check_steps_left(checkpoint, config, "run.ckpt")
    line = str(info.value)
    assert "\n" not in line and "run.ckpt" in line and all(w in line for w in words), line


def test_a_note_shows_an_empty_mapping_the_run_stored_as_it_stored_it():
    """The run stored ``position_kwargs: {}``; an evaluation at ``{base: 100.0}`` noted
    'the run trained at None' (the empty mapping compares as None)."""
    checkpoint = {"datamodule_hyper_parameters": {}, "hyper_parameters": {"position_kwargs": {}}}
    config = {"model": {"position_kwargs": {"base": 100.0}}, "data": {}}
    _, notes = checkpoint_settings(checkpoint, config, {"model.position_kwargs"}, False, "run.ckpt")
    assert notes == [
        "note: evaluating at model.position_kwargs={'base': 100.0}, the run trained at {}"
    ], notes
