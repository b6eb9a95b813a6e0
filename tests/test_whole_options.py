"""An abbreviated option is refused by every command, never taken for the option it begins.

argparse took an unambiguous prefix for the option: ``fit --trainer.max_step 2`` trained with
``max_steps=2`` and ``sweep --dry`` was ``--dry-run``, so a typo silently set another
setting. Every parser ``fit``/``validate``/``test``/``predict``/``finetune``/``prepare`` builds
(:class:`~roformer_lit.commands.whole_options.WholeOptionParser`) and every tool's
(:class:`~roformer_lit.tool_arguments.ToolParser`) refuses one in one ``error:`` line naming
the word and the option(s) it abbreviates, before anything is read or created; options
given in full, ``--config`` and ``--print_config`` work as before."""

from __future__ import annotations

import argparse

import pytest
from cli_helpers import CONFIGS, one_error_line

from roformer_lit.commands import main
from roformer_lit.commands.pretrain import RoformerCLI, validate_config
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.cli import FinetuneCLI
from roformer_lit.tool_arguments import names_no_option

ROPE = str(CONFIGS / "rope.yaml")
FINETUNE = str(CONFIGS / "finetune" / "local.yaml")
SWEEP = str(CONFIGS / "sweeps" / "positions_quick.yaml")


@pytest.fixture(autouse=True)
def nothing_runs(monkeypatch):
    """A command line that gets past parsing stops at the pre-launch check, in one line
    the tests do not expect: an abbreviation taken for its option never trains."""

    def parsed(self, config):
        raise ConfigError("parsed: the command would run")

    for cli in (RoformerCLI, FinetuneCLI):
        monkeypatch.setattr(cli, "check_before_launch", parsed)


#: case -> (command line, the word refused, the command the line names first)
ABBREVIATED = {
    "fit": (["fit", "--config", ROPE, "--trainer.max_step", "2"], "--trainer.max_step", "fit"),
    "fit, --opt=value": (
        ["fit", "--config", ROPE, "--trainer.max_step=2"],
        "--trainer.max_step",
        "fit",
    ),
    "fit, a model option": (
        ["fit", "--config", ROPE, "--model.position_kw", "{base: 5}"],
        "--model.position_kw",
        "fit",
    ),
    "fit, --config": (["fit", "--conf", ROPE], "--conf", "fit"),
    "fit, --print_config": (["fit", "--config", ROPE, "--print_conf"], "--print_conf", "fit"),
    "the main parser": (["--conf", ROPE, "validate"], "--conf", "validate"),
    "validate": (["validate", "--config", ROPE, "--ckpt_pat", "x.ckpt"], "--ckpt_pat", "validate"),
    "test": (["test", "--config", ROPE, "--seed_every", "1"], "--seed_every", "test"),
    "predict": (
        ["predict", "--config", ROPE, "--trainer.max_step", "2"],
        "--trainer.max_step",
        "predict",
    ),
    "prepare": (
        ["prepare", "--config", ROPE, "--trainer.max_step", "2"],
        "--trainer.max_step",
        "prepare",
    ),
    "finetune": (
        ["finetune", "--config", FINETUNE, "--model.pool", "cls"],
        "--model.pool",
        "finetune",
    ),
    "finetune validate": (
        ["finetune", "validate", "--config", FINETUNE, "--ckpt_pat", "x.ckpt"],
        "--ckpt_pat",
        "finetune validate",
    ),
    "sweep": (["sweep", "--conf", SWEEP, "--dry-run"], "--conf", "sweep"),
    "sweep, a flag": (["sweep", "--config", SWEEP, "--dry"], "--dry", "sweep"),
    "compare": (["compare", "runs", "--ou", "out"], "--ou", "compare"),
}
#: the option each case's word abbreviates
FULL = {
    "--trainer.max_step": "--trainer.max_steps",
    "--model.position_kw": "--model.position_kwargs",
    "--conf": "--config",
    "--print_conf": "--print_config",
    "--ckpt_pat": "--ckpt_path",
    "--seed_every": "--seed_everything",
    "--model.pool": "--model.pooling",
    "--dry": "--dry-run",
    "--ou": "--out",
}


@pytest.mark.parametrize("case", list(ABBREVIATED))
def test_an_abbreviated_option_is_one_line_naming_the_option(case, tmp_path, monkeypatch, capsys):
    """The word and the full option are named, the command is named first, and nothing is
    created (no run directory, no corpus preparation, no sweep directory)."""
    monkeypatch.chdir(tmp_path)
    argv, word, command = ABBREVIATED[case]
    line = one_error_line(argv, capsys)
    assert line.startswith(f"error: {command}: {word} is not an option"), line
    assert f"abbreviates {FULL[word]}" in line and "write the option in full" in line, line
    assert list(tmp_path.iterdir()) == []


def test_an_ambiguous_abbreviation_names_every_option_it_begins(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    line = one_error_line(["fit", "--config", ROPE, "--trainer.max_", "2"], capsys)
    assert "--trainer.max_ is not an option" in line, line
    for option in ("--trainer.max_epochs", "--trainer.max_steps", "--trainer.max_time"):
        assert option in line, line


def test_an_abbreviation_is_refused_before_the_repeat_check_reads_it(tmp_path, monkeypatch, capsys):
    """``--model.hidden_si 64 --model.hidden_size 128`` is an abbreviation, not a repeat:
    the repeat check no longer resolves prefixes, so the line says what is wrong."""
    monkeypatch.chdir(tmp_path)
    typed = ["--model.hidden_si", "64", "--model.hidden_size", "128"]
    line = one_error_line(["fit", "--config", ROPE, *typed], capsys)
    assert "--model.hidden_si is not an option; it abbreviates --model.hidden_size" in line


def test_options_given_in_full_work_as_before(capsys):
    """``--config``, ``-c``, ``--print_config`` (and ``=skip_null``), ``--key=value``, a key
    inside a mapping option, an append and a data module's setting are unaffected."""
    argv = [
        *("fit", "-c", ROPE, "--trainer.max_steps", "2", "--trainer.val_check_interval=1"),
        *("--model.position_kwargs.base", "500", "--data.train_files+", "extra.txt"),
        *("--data.max_length", "64", "--print_config=skip_null"),
    ]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    printed = capsys.readouterr().out
    for line in ("max_steps: 2", "val_check_interval: 1", "base: 500", "- extra.txt"):
        assert line in printed, line
    assert "max_length: 64" in printed


def test_a_parse_only_config_takes_full_options():
    """``validate_config`` (``prepare``, ``sweep``) builds its parser the same way."""
    config = validate_config(["--config", ROPE, "--trainer.max_steps", "3"], prelaunch=False)
    assert config.trainer.max_steps == 3


@pytest.mark.parametrize("wrap", [lambda t: t, lambda t: [t]], ids=["tuple", "list (3.12.7+)"])
def test_an_unknown_word_is_recognised_in_either_form_argparse_returns(wrap) -> None:
    """argparse's ``_parse_optional`` returns a tuple before Python 3.12.7 and a list of one
    tuple after; both say an unknown word, neither form of a known option does."""
    parser = argparse.ArgumentParser(allow_abbrev=False)
    action = parser.add_argument("--lengths")
    assert names_no_option(wrap((None, "--len", None)))
    assert not names_no_option(wrap((action, "--lengths", None)))
    assert names_no_option(parser._parse_optional("--len"))  # this Python's own form
    assert not names_no_option(parser._parse_optional("--lengths"))
    assert not names_no_option(None)  # a positional word


#: case -> (command line, the option a mistyped one is closest to, the group it names)
MISTYPED = {
    "fit, a model option": (
        ["fit", "--config", ROPE, "--model.postion", "rope"],
        "--model.position",
        "model",
    ),
    "fit, a trainer option": (
        ["fit", "--config", ROPE, "--trainer.max_stesp", "3"],
        "--trainer.max_steps",
        "trainer",
    ),
    "validate": (
        ["validate", "--config", ROPE, "--trainer.limit_val_bathces", "2"],
        "--trainer.limit_val_batches",
        "trainer",
    ),
    "finetune, a model option": (
        ["finetune", "--config", FINETUNE, "--model.num_lables", "3"],
        "--model.num_labels",
        "model",
    ),
    "finetune validate, --opt=value": (
        ["finetune", "validate", "--config", FINETUNE, "--model.pooling_typ=mean"],
        "--model.pooling",
        "model",
    ),
}


@pytest.mark.parametrize("case", list(MISTYPED))
def test_a_mistyped_option_is_answered_with_the_closest_and_the_valid_ones(
    case, tmp_path, monkeypatch, capsys
):
    """An option no parser takes (``--model.postion``) is one line naming it, the closest
    option and every option of its group, said once (before: ``unrecognized arguments:
    --model.postion rope`` and nothing to correct it with); nothing is created."""
    argv, closest, group = MISTYPED[case]
    monkeypatch.chdir(tmp_path)
    line = one_error_line(argv, capsys)
    assert line.count("did you mean") == 1 and f"did you mean {closest}?" in line, line
    valid = line.split(f"valid {group} options: ")[1].split(", ")
    assert closest in valid and all(v.startswith(f"--{group}.") for v in valid), line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["fitt", "--config", "missing.yaml"], "fit"),
        (["bench-dta"], "bench-data"),
        (["finetun", "--help"], "finetune"),
        (["extrapolat", "x.ckpt"], "extrapolate"),
    ],
)
def test_a_mistyped_command_names_the_closest_and_every_command(
    argv, meant, tmp_path, monkeypatch, capsys
):
    """A first word that is no command is one line naming it, the closest command and every
    command, the extra ones included (before: LightningCLI's choice of its four, or for
    ``fitt --config missing.yaml`` an error about the config file); nothing is created."""
    from roformer_lit.commands import EXTRA_COMMANDS

    monkeypatch.chdir(tmp_path)
    line = one_error_line(argv, capsys)
    assert f"unknown command {argv[0]!r}; did you mean {meant}?" in line, line
    valid = line.split("valid commands: ")[1].split(", ")
    assert set(valid) == {"fit", "validate", "test", "predict", *EXTRA_COMMANDS}, line
    assert list(tmp_path.iterdir()) == []
