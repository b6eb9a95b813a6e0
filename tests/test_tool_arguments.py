"""The measuring tools' arguments (``bench``, ``bench-data``, ``bench-data --corpus``,
``bench-flex``, ``extrapolate``, ``sweep``, ``locality``, ``compare``, and the scripts in
``scripts/``): every numeric argument declares its range, and a
value outside it -- zero, negative, absurdly large, not an integer -- is one ``error:`` line
naming the argument (exit 2) before anything is measured; a default config is found from
the package, not from the working directory."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import CONFIGS

from roformer_lit import sweep
from roformer_lit.benchmarks import corpus_scale, data_pipeline, flex_vs_sdpa, models
from roformer_lit.commands import EXIT_USER_ERROR, export, main
from roformer_lit.errors import ConfigError
from roformer_lit.results import extrapolate, locality
from roformer_lit.results.compare import cli as compare_cli
from roformer_lit.tool_arguments import (
    bounded_arguments,
    output_arguments,
    unbounded_numeric_arguments,
)

#: tool -> (the arguments before the one under test, its parser): every tool with a ToolParser
TOOLS: dict[str, tuple[list[str], Callable[[], argparse.ArgumentParser]]] = {
    "bench": (["bench"], models.build_parser),
    "bench-data": (["bench-data"], data_pipeline.build_parser),
    "bench-data --corpus": (["bench-data", "--corpus", "corpus.txt"], corpus_scale.build_parser),
    "bench-flex": (["bench-flex"], flex_vs_sdpa.build_parser),
    "extrapolate": (["extrapolate", "x.ckpt"], extrapolate.build_parser),
    "sweep": (["sweep", "--config", "sweep.yaml"], sweep._parser),
    "locality": (["locality", "x.ckpt"], locality.build_parser),
    "compare": (["compare", "runs"], compare_cli.build_parser),
    "export": (["export"], export.build_parser),
}

HUGE = str(10**30)
#: (tool, numeric argument, its kind: "count" (>= 1), "zero" (0 allowed), "real" (> 0))
ARGUMENTS: list[tuple[str, str, str]] = [
    ("bench", "--lengths", "count"),
    ("bench", "--batch", "count"),
    ("bench", "--bias-block-from", "count"),
    ("bench", "--hidden", "count"),
    ("bench", "--layers", "count"),
    ("bench", "--heads", "count"),
    ("bench", "--intermediate", "count"),
    ("bench", "--vocab", "count"),
    ("bench", "--rounds", "count"),
    ("bench", "--warmup", "zero"),
    ("bench", "--peak-tflops", "real"),
    ("bench", "--document-mask", "count"),
    ("bench", "--plans", "count"),
    ("bench-data", "--batch-size", "count"),
    ("bench-data", "--max-length", "count"),
    ("bench-data", "--num-workers", "zero"),
    ("bench-data", "--steps", "count"),
    ("bench-data", "--rounds", "count"),
    ("bench-data --corpus", "--sizes-mb", "count"),
    ("bench-data --corpus", "--num-proc", "count"),
    ("bench-data --corpus", "--ceiling-mb", "count"),
    ("bench-flex", "--lengths", "count"),
    ("bench-flex", "--tokens", "count"),
    ("bench-flex", "--rounds", "count"),
    ("bench-flex", "--warmup", "zero"),
    ("extrapolate", "--lengths", "count"),
    ("extrapolate", "--tokens", "count"),
    ("extrapolate", "--batch-size", "count"),
    ("extrapolate", "--solved", "unit"),
    ("sweep", "--jobs", "count"),
    ("sweep", "--threads", "count"),
    ("locality", "--length", "count"),
    ("locality", "--window", "zero"),
]
#: kind -> the values each argument of that kind must refuse
BAD: dict[str, list[str]] = {
    "count": ["0", "-1", HUGE, "1.5", "x"],
    "zero": ["-1", HUGE, "1.5", "x"],
    "real": ["0", "-1", "1e400", "nan", "x"],
    "unit": ["-0.1", "1.5", "nan", "x"],
}
CASES = [
    pytest.param(tool, flag, value, id=f"{tool}{flag}={value[:6]}")
    for tool, flag, kind in ARGUMENTS
    for value in BAD[kind]
]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory (with the sweep file ``sweep``'s ``--config`` names)."""
    (tmp_path / "sweep.yaml").write_text("name: x\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def refused(argv: list[str], here: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The one stderr line of ``argv``, checked: exit 2, nothing on stdout, nothing written."""
    before = sorted(p.name for p in here.iterdir())
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == EXIT_USER_ERROR, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert out == "", out
    assert sorted(p.name for p in here.iterdir()) == before
    return lines[0]


@pytest.mark.parametrize(("tool", "flag", "value"), CASES)
def test_an_out_of_range_number_is_one_line_naming_the_argument(tool, flag, value, here, capsys):
    line = refused([*TOOLS[tool][0], flag, value], here, capsys)
    assert f"argument {flag}: must be" in line and repr(value) in line, line


@pytest.mark.parametrize("tool", list(TOOLS))
def test_every_numeric_argument_declares_its_range_and_has_cases(tool):
    parser = TOOLS[tool][1]()
    assert unbounded_numeric_arguments(parser) == []
    assert sorted(bounded_arguments(parser)) == sorted(f for t, f, _ in ARGUMENTS if t == tool)


SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.py")))
def test_every_script_argument_declares_its_range(script):
    """The measuring scripts parse numbers through ``tool_arguments`` too (``--length 0``
    was a traceback in ``profile_step.py``): no bare ``type=int`` or ``type=float``."""
    text = (SCRIPTS / script).read_text(encoding="utf-8")
    assert re.search(r"type\s*=\s*(int|float)\b", text) is None


#: arguments valid alone, wrong together (or a value no range can express) -> the line's text
CROSS_CASES: list[tuple[list[str], str]] = [
    (
        ["bench", "--hidden", "256", "--heads", "3"],
        "model.hidden_size 256 is not divisible by num_heads 3",
    ),
    (
        ["bench", "--lengths", "16", "--document-mask", "17"],
        "--document-mask 17: must be in [1, 16]",
    ),
    (["bench", "--schemes", "alibi", "--kernels", "linear"], "no scheme of --schemes alibi"),
    (["bench", "--device", "nowhere"], "--device 'nowhere' is not a device"),
    (["bench-data", "--position", "absolute"], "argument --position: invalid choice: 'absolute'"),
    (["bench-data", "--corpus", "c.txt", "--config", "gone.yaml"], "gone.yaml"),
    (["bench", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
]


@pytest.mark.parametrize(("argv", "expected"), CROSS_CASES, ids=lambda v: str(v)[:40])
def test_wrong_combinations_are_one_line_before_anything_runs(argv, expected, here, capsys):
    assert expected in refused(argv, here, capsys)


def test_the_default_config_is_found_from_any_working_directory(here):
    ns = corpus_scale.parse_args(["--corpus", "corpus.txt"])
    assert Path(ns.config).is_absolute()
    assert Path(ns.config).read_text() == (CONFIGS / "rope.yaml").read_text()
    assert ns.workdir == here / "bench-data"  # the commands run inside it: absolute too


class _Stop(Exception):
    """Raised by the stand-in for the first timed command."""


def test_bench_data_corpus_runs_fit_with_the_bundled_config_from_elsewhere(here, monkeypatch):
    """Through the CLI from a directory without ``configs/``: the first ``fit`` it would
    run names the bundled ``configs/rope.yaml`` (and absolute data paths)."""
    commands: list[list[str]] = []

    def fake_synthesise(corpus: str, size_mb: int, out: Path) -> Path:
        out.write_text("text\n", encoding="utf-8")
        return out

    def fake_timed(argv, cwd, env):
        commands.append(list(argv))
        raise _Stop

    monkeypatch.setattr(corpus_scale, "synthesise", fake_synthesise)
    monkeypatch.setattr(corpus_scale, "timed", fake_timed)
    (here / "corpus.txt").write_text("a document\n", encoding="utf-8")  # read before it runs
    with pytest.raises(_Stop):
        main(["bench-data", "--corpus", "corpus.txt", "--sizes-mb", "1"])
    (argv,) = commands
    config = Path(argv[argv.index("--config") + 1])
    assert config.is_file() and config.read_text() == (CONFIGS / "rope.yaml").read_text()
    assert Path(argv[argv.index("--data.train_files") + 1]).is_absolute()


REPEATABLE = (argparse._AppendAction, argparse._AppendConstAction, argparse._CountAction)
REPEATED = [
    pytest.param(
        tool, action.option_strings[-1], action.nargs, id=f"{tool}{action.option_strings[-1]}"
    )
    for tool, (_, build) in TOOLS.items()
    for action in build()._actions
    if action.option_strings and not isinstance(action, (argparse._HelpAction, *REPEATABLE))
]


@pytest.mark.parametrize(("tool", "flag", "nargs"), REPEATED)
def test_an_option_given_twice_is_one_line_naming_it(tool, flag, nargs, here, capsys):
    """``--lengths 16 --lengths 32`` evaluated only 32: every option of every tool that
    takes one value (or one list) is refused when given twice."""
    value = [] if nargs == 0 else ["sweep.yaml" if flag == "--config" else "1"]  # a file
    line = refused([*TOOLS[tool][0], flag, *value, flag, *value], here, capsys)
    assert "given twice" in line and flag in line, line


def test_a_repeated_list_option_names_every_value_in_one():
    parser = extrapolate.build_parser()
    with pytest.raises(ConfigError) as info:
        parser.parse_args(["x.ckpt", "--lengths", "16", "--lengths", "32", "64"])
    assert "--lengths 16 32 64" in str(info.value)


@pytest.mark.parametrize(
    "argv",
    [
        ["--config", "s.yaml", "--only", "a=1", "--only", "b=2"],  # collects: may repeat
        ["--config", "s.yaml", "--slurm.setup", "a", "--slurm.setup", "b"],
    ],
)
def test_options_that_collect_may_repeat(argv):
    ns = sweep._parser().parse_args(argv)
    assert ns.only or ns.slurm_setup


#: (tool, option naming a path it writes, "file" or "directory"): every output of every tool
OUTPUTS: list[tuple[str, str, str]] = [
    ("extrapolate", "--csv", "file"),
    ("extrapolate", "--budget", "file"),
    ("compare", "--out", "directory"),
    ("export", "--out", "directory"),
    ("sweep", "--root", "directory"),
    ("bench-data --corpus", "--workdir", "directory"),
]
#: kind -> (case, where the option points, words of the refusal)
UNREACHABLE: dict[str, list[tuple[str, str, str]]] = {
    "file": [
        ("under-a-file", "a_file/new/out.csv", "a_file is a file, not a directory"),
        ("a-directory", "a_dir", "a_dir is a directory, not a file"),
        ("empty", "", "is an empty path"),
        ("dangling-link", "a_link", "a_link is a link to missing_target, which does not exist"),
        # the shell's word for standard output: a file named '-' was written, exit 0
        ("dash", "-", "'-' would be a file named '-', not standard output"),
    ],
    "directory": [
        ("under-a-file", "a_file/new", "a_file is a file, not a directory"),
        ("a-file", "a_file", "a_file is an existing file, not a directory"),
        ("empty", "", "is an empty path"),
        ("dangling-link", "a_link", "a_link is a link to missing_target, which does not exist"),
        # the shell's word for standard output: a file named '-' was written, exit 0
        ("dash", "-", "'-' would be a file named '-', not standard output"),
    ],
}
OUTPUT_CASES = [
    pytest.param(tool, flag, where, words, id=f"{tool}{flag}-{case}")
    for tool, flag, kind in OUTPUTS
    for case, where, words in UNREACHABLE[kind]
]


@pytest.fixture
def in_the_way(here: Path) -> Path:
    """``here`` with a file ``a_file``, an empty directory ``a_dir`` and a link ``a_link`` to
    nothing (a write through it would create ``missing_target``) in it."""
    (here / "a_file").write_text("keep me\n", encoding="utf-8")
    (here / "a_dir").mkdir()
    (here / "a_link").symlink_to("missing_target")
    return here


@pytest.mark.parametrize(("tool", "flag", "where", "words"), OUTPUT_CASES)
def test_an_output_no_write_could_reach_is_one_line_before_any_work(
    tool, flag, where, words, in_the_way, capsys
):
    """``extrapolate --csv a_file/x.csv`` evaluated for minutes, then failed to write: every
    tool's output path is checked while its arguments are parsed, so the line names the
    option, not the missing checkpoint, run directory or corpus the tool would read first."""
    line = refused([*TOOLS[tool][0], flag, where], in_the_way, capsys)
    assert f"argument {flag}: " in line and words in line and "valid: " in line, line
    assert (in_the_way / "a_file").read_text(encoding="utf-8") == "keep me\n"
    assert list((in_the_way / "a_dir").iterdir()) == []
    assert not (in_the_way / "missing_target").exists() and not (in_the_way / "-").exists()


@pytest.mark.parametrize(("tool", "flag", "kind"), OUTPUTS, ids=lambda v: str(v))
def test_an_output_in_a_directory_that_cannot_be_written_is_refused(
    tool, flag, kind, in_the_way, monkeypatch, capsys
):
    """A read-only directory (stood in for: the tests may run as root, who writes anywhere)."""
    real_access = os.access
    locked = str(in_the_way / "a_dir")
    monkeypatch.setattr(
        os, "access", lambda p, m: os.path.abspath(p) != locked and real_access(p, m)
    )
    line = refused([*TOOLS[tool][0], flag, "a_dir/new/out"], in_the_way, capsys)
    assert f"argument {flag}: " in line and "the directory a_dir is not writable" in line, line


@pytest.mark.parametrize(("tool", "flag", "kind"), OUTPUTS, ids=lambda v: str(v))
def test_an_output_under_missing_directories_is_accepted_and_not_yet_created(
    tool, flag, kind, here
):
    """Missing directories are created when the output is written (as every tool does),
    not while the arguments are parsed: a command refused later leaves nothing behind."""
    declared = output_arguments(TOOLS[tool][1]())
    assert declared[flag].directory == (kind == "directory")
    assert declared[flag]("new/deeper/out") == "new/deeper/out"
    assert not (here / "new").exists()


@pytest.mark.parametrize("tool", list(TOOLS))
def test_every_output_of_every_tool_is_declared_and_has_cases(tool):
    """A tool's every option that names a path it writes is declared one (``type=``
    :data:`~roformer_lit.tool_arguments.OUTPUT_FILE` or ``OUTPUT_DIRECTORY``); the tables
    above list them all, and an option named like an output is one."""
    parser = TOOLS[tool][1]()
    declared = output_arguments(parser)
    assert sorted(declared) == sorted(f for t, f, _ in OUTPUTS if t == tool)
    for action in parser._actions:
        named = {o.lstrip("-").replace("-", "_") for o in action.option_strings}
        if named & {"out", "output", "csv", "budget", "plot", "root", "workdir"}:
            assert action.option_strings[0] in declared, action.option_strings


@pytest.mark.parametrize(
    "option", sorted(corpus_scale.build_parser().option_names() - {"-h", "--help"})
)
def test_bench_data_help_lists_the_options_it_hands_to_corpus_scale(option, capsys):
    """``bench-data --help`` names every option ``bench-data --corpus`` takes (they are
    handed on to ``corpus_scale``): a user reading the help finds ``--sizes-mb`` there."""
    with pytest.raises(SystemExit) as exit_info:
        main(["bench-data", "--help"])
    assert exit_info.value.code == 0
    assert re.search(rf"^\s+{re.escape(option)}\b", capsys.readouterr().out, re.MULTILINE)
