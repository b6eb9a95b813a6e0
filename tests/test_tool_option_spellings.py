"""Every tool built on ToolParser takes each long option in both spellings (``--dry-run``
and ``--dry_run``), since ``fit`` (LightningCLI) takes underscores and users type both, and
refuses a value listed twice in a many-valued option."""

from __future__ import annotations

import argparse

import pytest

from roformer_lit.benchmarks.models import build_parser as bench_parser
from roformer_lit.errors import ConfigError
from roformer_lit.results.compare.cli import build_parser as compare_parser
from roformer_lit.results.extrapolate import build_parser as extrapolate_parser
from roformer_lit.results.locality import build_parser as locality_parser
from roformer_lit.sweep import _parser as sweep_parser
from roformer_lit.tool_arguments import ToolParser

pytestmark = pytest.mark.fast

PARSERS = {
    "extrapolate": extrapolate_parser,
    "sweep": sweep_parser,
    "bench": bench_parser,
    "compare": compare_parser,
    "locality": locality_parser,
}
#: each tool's required arguments
REQUIRED = {
    "extrapolate": ["x.ckpt"],
    "sweep": ["--config", "x.yaml"],
    "bench": [],
    "compare": ["runs"],
    "locality": ["x.ckpt"],
}


def _flag_options(parser: argparse.ArgumentParser) -> list[str]:
    """The long options that take no value and whose spelling has a '-' or a '_'."""
    return [
        option
        for action in parser._actions
        if action.nargs == 0 and not isinstance(action, argparse._HelpAction)
        for option in action.option_strings
        if option.startswith("--") and ("-" in option[2:] or "_" in option[2:])
    ]


@pytest.mark.parametrize("tool", list(PARSERS))
def test_each_long_flag_parses_in_the_other_spelling(tool):
    parser = PARSERS[tool]()
    flags = _flag_options(parser)
    assert isinstance(parser, ToolParser)
    for option in flags:
        other = "--" + option[2:].translate(str.maketrans("-_", "_-"))
        known, _ = parser.parse_known_args([*REQUIRED[tool], other])
        canonical, _ = parser.parse_known_args([*REQUIRED[tool], option])
        assert known == canonical, (option, other)


def test_an_option_with_a_value_parses_in_the_other_spelling():
    parser = extrapolate_parser()
    given = ["ckpt", "--lengths", "16", "--batch_size", "3"]
    assert parser.parse_args(given).batch_size == 3
    assert parser.parse_args([*given[:3], "--batch-size=5"]).batch_size == 5


def test_an_unknown_option_is_still_one_error_line():
    with pytest.raises(ConfigError, match="unrecognized arguments: --dry_rn"):
        sweep_parser().parse_args(["--config", "x.yaml", "--dry_rn"])


def test_export_takes_either_spelling_too(tmp_path, capsys):
    """export is jsonargparse (fit's underscores); its dashes reach the same check."""
    from roformer_lit.commands import main

    missing = tmp_path / "missing.ckpt"
    for spelling in ("--ckpt_path", "--ckpt-path"):
        assert main(["export", spelling, str(missing), "--out", str(tmp_path / "out")]) == 2
        assert "error: checkpoint not found" in capsys.readouterr().err


@pytest.mark.parametrize("tool, argv", [("extrapolate", ["x.ckpt"]), ("bench", [])])
def test_a_value_listed_twice_is_one_error_line(tool, argv):
    from roformer_lit.errors import ConfigError

    with pytest.raises(ConfigError, match="argument --lengths: lists 16 twice"):
        PARSERS[tool]().parse_args([*argv, "--lengths", "16", "32", "16"])
    assert PARSERS[tool]().parse_args([*argv, "--lengths", "16", "32"]).lengths == [16, 32]
