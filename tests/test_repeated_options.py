"""An option of ``fit``/``validate``/``test``/``predict`` and ``finetune`` typed twice is one
``error:`` line naming it and both values (jsonargparse kept the last without a word), as
the other commands' options are (``ToolParser``); ``--config`` files, a section given whole
and appends (``--key+``) layer as before (:mod:`roformer_lit.commands.repeated_options`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cli_helpers import CONFIGS, fit_args, one_error_line

from roformer_lit.commands.pretrain import validate_config
from roformer_lit.commands.repeated_options import refuse_repeated_options
from roformer_lit.errors import ConfigError

ROPE = str(CONFIGS / "rope.yaml")
#: Settings none of :data:`REPEATS` types: a run they let through is a second's work.
SMALL = [
    *("--model.num_layers", "1", "--model.num_heads", "2", "--model.intermediate_size", "32"),
    *("--data.max_train_blocks", "8", "--data.max_val_blocks", "2", "--data.batch_size", "2"),
    *("--trainer.max_steps", "1", "--trainer.enable_progress_bar", "false"),
]

#: (what is typed after ``fit --config rope.yaml``, the option, its two spellings as typed)
REPEATS = {
    "two words each": (
        ["--model.hidden_size", "64", "--model.hidden_size", "128"],
        "--model.hidden_size",
        ("--model.hidden_size 64", "--model.hidden_size 128"),
    ),
    "equals then words": (
        ["--model.hidden_size=64", "--model.hidden_size", "128"],
        "--model.hidden_size",
        ("--model.hidden_size=64", "--model.hidden_size 128"),
    ),
    "words then equals": (
        ["--data.max_length", "64", "--model.dropout", "0.0", "--data.max_length=128"],
        "--data.max_length",
        ("--data.max_length 64", "--data.max_length=128"),
    ),
    "a mapping given whole twice": (
        ["--model.position_kwargs", "{base: 100}", "--model.position_kwargs", "{base: 200}"],
        "--model.position_kwargs",
        ("{base: 100}", "{base: 200}"),
    ),
    "a key inside a mapping": (
        ["--model.position_kwargs.base", "100", "--model.position_kwargs.base", "200"],
        "--model.position_kwargs.base",
        ("--model.position_kwargs.base 100", "--model.position_kwargs.base 200"),
    ),
    "a top-level option": (
        ["--seed_everything", "1", "--seed_everything", "2"],
        "--seed_everything",
        ("--seed_everything 1", "--seed_everything 2"),
    ),
    # one setting in two spellings: jsonargparse kept the last without a word
    "a field, then the section typed inline": (
        ["--model.hidden_size", "128", "--model", "{hidden_size: 64}"],
        "--model.hidden_size",
        ("--model.hidden_size 128", "--model {hidden_size: 64}"),
    ),
    "the section typed inline, then a field": (
        ["--model={hidden_size: 64}", "--model.hidden_size", "128"],
        "--model.hidden_size",
        ("--model={hidden_size: 64}", "--model.hidden_size 128"),
    ),
    "a mapping given whole, then its key": (
        ["--model.position_kwargs", "{base: 10.0}", "--model.position_kwargs.base", "100.0"],
        "--model.position_kwargs.base",
        ("--model.position_kwargs {base: 10.0}", "--model.position_kwargs.base 100.0"),
    ),
}

#: (typed after ``fit --config rope.yaml``, the key typed first, the mapping typed whole
#: after it, which dropped the key without a word)
DROPPED = {
    "a block key, then the block whole": (
        ["--model.block.mlp", "geglu", "--model.block", "{norm: rmsnorm}"],
        "--model.block.mlp geglu",
        "--model.block {norm: rmsnorm}",
    ),
    "a scheme option, then the options whole": (
        ["--model.position_kwargs.base", "100.0", "--model.position_kwargs", "{base: 10.0}"],
        "--model.position_kwargs.base 100.0",
        "--model.position_kwargs {base: 10.0}",
    ),
}


@pytest.mark.parametrize("case", list(DROPPED))
def test_a_key_dropped_by_its_mapping_typed_whole_later_is_one_line(
    case, tmp_path, monkeypatch, capsys
):
    """``--model.block.mlp geglu --model.block '{norm: rmsnorm}'`` trained the GELU block
    without a word: the mapping typed whole after the key replaced it."""
    monkeypatch.chdir(tmp_path)
    typed, key, whole = DROPPED[case]
    line = one_error_line(["fit", "--config", ROPE, *SMALL, *typed], capsys)
    assert line.startswith(f"error: fit: {key} is dropped by the later {whole}"), line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "typed",
    [
        ["--model.block", "{norm: rmsnorm}", "--model.block.mlp", "geglu"],
        [
            "--model.position_kwargs",
            "{rotary_fraction: 0.5}",
            "--model.position_kwargs.base",
            "9.0",
        ],
        ["--data", "{max_length: 64}", "--data", "{batch_size: 4}"],
    ],
    ids=["a block key after the block", "another scheme option", "two data keys"],
)
def test_a_key_after_its_mapping_typed_whole_refines_it(typed):
    """The documented way to change one key of a mapping typed whole: no repeat."""
    validate_config(["--config", ROPE, *typed], prelaunch=False)


@pytest.mark.parametrize("case", list(REPEATS))
@pytest.mark.parametrize("command", ["fit", "validate", "test"])
def test_an_option_typed_twice_is_one_line_naming_both(
    case, command, tmp_path, monkeypatch, capsys
):
    """``fit --model.x 1 --model.x 2`` trained with 2 without a word: refused before
    anything is parsed, read or created (no run directory, no corpus preparation)."""
    monkeypatch.chdir(tmp_path)
    typed, option, (first, then) = REPEATS[case]
    line = one_error_line([command, "--config", ROPE, *SMALL, *typed], capsys)
    assert line.startswith(f"error: {command}: {option} given twice"), line
    assert first in line and then in line and "give it once" in line, line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["finetune"], ["finetune", "validate"]])
def test_a_fine_tune_option_typed_twice_is_one_line(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = [*command, "--config", str(CONFIGS / "finetune" / "local.yaml")]
    line = one_error_line([*argv, "--model.pooling", "mean", "--model.pooling", "cls"], capsys)
    assert line.startswith(f"error: {' '.join(command)}: --model.pooling given twice"), line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("case", ["two words each", "words then equals", "a key inside a mapping"])
def test_prepare_names_itself_for_an_option_typed_twice(case, tmp_path, monkeypatch, capsys):
    """``prepare`` parses ``fit``'s arguments; its refusal names ``prepare``, not ``fit``."""
    monkeypatch.chdir(tmp_path)
    typed, option, (first, then) = REPEATS[case]
    line = one_error_line(["prepare", "--config", ROPE, *typed], capsys)
    assert line.startswith(f"error: prepare: {option} given twice"), line
    assert first in line and then in line, line
    assert list(tmp_path.iterdir()) == []


def test_config_files_layer_and_each_section_merges(tmp_path):
    """Several ``--config`` files (the README's ``--config configs/rope.yaml --config
    configs/size/base.yaml``) and a section given whole more than once are read in turn, the
    later over the earlier: no repeat."""
    size = CONFIGS / "size" / "base.yaml"
    config = validate_config(["--config", ROPE, "--config", str(size)], prelaunch=False)
    assert config.model.hidden_size == yaml.safe_load(size.read_text())["model"]["hidden_size"]
    sections = ["--data", "{max_length: 64}", "--data", "{batch_size: 4}"]
    config = validate_config(["--config", ROPE, *sections], prelaunch=False)
    assert (config.data.init_args.max_length, config.data.init_args.batch_size) == (64, 4)


def test_appends_and_the_keys_of_each_appended_item_may_repeat():
    """``--key+`` adds to a list, and a key after it sets the item just added: the
    documented way to give several files or callbacks."""
    files = ["--data.train_files+", "a.txt", "--data.train_files+=b.txt"]
    config = validate_config(["--config", ROPE, *files], prelaunch=False)
    assert config.data.init_args.train_files == ["a.txt", "b.txt"]
    callbacks = []
    for metric in ("val/loss", "val/acc"):
        callbacks += [
            "--trainer.callbacks+",
            "EarlyStopping",
            "--trainer.callbacks.monitor",
            metric,
        ]
    config = validate_config(["--config", ROPE, *callbacks], prelaunch=False)
    monitors = [c.init_args.monitor for c in config.trainer.callbacks if "Early" in c.class_path]
    assert monitors == ["val/loss", "val/acc"]


def test_a_repeat_without_an_append_between_is_refused():
    """A key of an appended item given twice for that one item is still a repeat."""
    options = {"--trainer.callbacks": object()}
    typed = ["--trainer.callbacks+", "EarlyStopping", "--trainer.callbacks.monitor", "a"]
    with pytest.raises(ConfigError, match="--trainer.callbacks.monitor given twice"):
        refuse_repeated_options("fit", [*typed, "--trainer.callbacks.monitor", "b"], options)


def test_words_after_a_double_dash_are_values():
    options = {"--model.hidden_size": object()}
    typed = ["--model.hidden_size", "64", "--", "--model.hidden_size", "128"]
    refuse_repeated_options("fit", typed, options)  # nothing refused


def test_a_sweep_with_devices_refuses_its_own_gpu_settings(tmp_path, monkeypatch, capsys):
    """``sweep --devices`` appends ``--trainer.accelerator gpu --trainer.devices 1`` to each
    run: a sweep file that sets one of them is refused before anything starts (each run
    would be refused as an option typed twice)."""
    sweep = {
        "name": "gpu",
        "base": ROPE,
        "grid": {"seed_everything": [0, 1]},
        "overrides": {"trainer.devices": 1},
    }
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    line = one_error_line(["sweep", "--config", "sweep.yaml", "--devices", "0"], capsys)
    assert "--devices sets trainer.accelerator and trainer.devices" in line, line
    assert "sets trainer.devices too" in line, line
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == ["sweep.yaml"]


def test_the_test_helpers_replace_a_default_rather_than_repeat_it():
    """``fit_args(..., "--data.max_length", "64")`` gives the option once."""
    argv = fit_args("rope.yaml", 2, "--data.max_length", "64")
    assert argv.count("--data.max_length") == 1
    assert argv[argv.index("--data.max_length") + 1] == "64"
