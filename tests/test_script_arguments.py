"""The developer scripts (``python scripts/<name>.py``, the commands the docs name for their
figures) refuse a wrong command line as the tools do: one ``error: <script>: ...`` line
(``error: <script> <subcommand>: ...``) naming the wrong value, exit 2, no usage dump, no traceback, nothing written
(:func:`~roformer_lit.tool_arguments.run_script`). Each script runs in-process through its
``if __name__ == "__main__"`` block, as a user's ``python scripts/<name>.py`` does; only
command lines refused before any work are given (the scripts time or train)."""

from __future__ import annotations

import bz2
import importlib.util
import re
import runpy
import sys
from pathlib import Path
from types import ModuleType

import pytest

from roformer_lit.tool_arguments import ToolParser, unbounded_numeric_arguments

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
HUGE = str(10**30)

#: script -> [(command line, words its line must hold)], in a directory holding the files
#: of :func:`here`: ``text.txt`` (UTF-8 text), ``binary.bin``, ``adir/`` (empty),
#: ``plain.csv.bz2`` (a bz2 CSV without the columns read) and ``latin1.csv.bz2``.
CASES: dict[str, list[tuple[list[str], str]]] = {
    "peak_memory.py": [
        ([], "required: --schemes"),
        (["--schemes", "rope", "--len", "8"], "--len is not an option"),
        (["--schemes", "rope", "--length", "0"], "--length: must be an integer"),
        (["--schemes", "rope", "--length", HUGE], HUGE),
        (["--schemes", "nothing"], "'nothing'"),
        (["--schemes", "rope", "--batch", "1", "--batch", "2"], "--batch: given twice"),
        (["--schemes", "rope", "--bias-block-from", "x"], "--bias-block-from: must be"),
    ],
    "profile_step.py": [
        ([], "required: scheme"),
        (["rope", "--length", "7"], "'7'"),
        (["rope", "--rows", "x"], "--rows: must be"),
        (["rope", "--row", "3"], "--row is not an option"),
        (["rope", "--unknown"], "--unknown"),
    ],
    "profile_vs_hf.py": [
        (["--passes", "0"], "--passes: must be"),
        (["--batch", "1.5"], "--batch: must be an integer"),
        (["--len", "8"], "--len is not an option"),
        (["--rows", "1", "--rows", "2"], "--rows: given twice"),
    ],
    "padded_rows_speed.py": [
        ([], "required: scheme"),
        (["t5", "--real", "0"], "--real: must be a number in (0, 1]"),
        (["t5", "--real", "nan"], "'nan'"),
        (["t5", "--steps", "0"], "--steps: must be"),
        (["t5", "--only", "both"], "'both'"),
        (["t5", "--real", "0.5", "0.5"], "lists 0.5 twice"),
    ],
    "document_split_speed.py": [
        ([], "required: scheme"),
        (["t5", "--length", "8", "--documents", "16"], "--documents 16: must be in [1, 8]"),
        (["t5", "--documents", "0"], "--documents: must be"),
        (["t5", "--doc", "8"], "--doc is not an option"),
    ],
    "quickstart_seeds.py": [
        ([], "required"),
        (["missing", "--out", "x.csv"], "missing does not exist"),
        (["adir"], "required: --out"),
        (["adir", "--out", "adir"], "adir is a directory, not a file"),
        (["text.txt", "--out", "x.csv"], "text.txt is not a directory"),
        (["adir", "--out", "text.txt/x.csv"], "text.txt is a file, not a directory"),
    ],
    "run_notebooks.py": [
        (["nope"], "no notebook 'nope'"),
        (["--out", "text.txt"], "text.txt is an existing file, not a directory"),
        (["--ou", "x"], "--ou is not an option"),
    ],
    "run_throughput.py": [
        ([], "required: RUN_DIR"),
        (["--runs", "adir"], "--runs"),
    ],
    "same_curves.py": [
        ([], "required"),
        (["adir"], "required: RUN_B"),
        (["missing", "adir"], "missing does not exist"),
        (["adir", "adir"], "adir holds no TensorBoard event file"),
        (["text.txt", "adir"], "text.txt is not a directory"),
        (["adir", "adir", "adir"], "unrecognized arguments: adir; usage: "),
        (["adir", "adir", "--x"], "same_curves.py [-h] RUN_A RUN_B (no options)"),
    ],
    "same_models.py": [
        ([], "required"),
        (["nope"], "'nope'"),
        (["dump"], "required: OUT.pt"),
        (["dump", "adir"], "adir is a directory, not a file"),
        (["compare", "missing.pt", "text.txt"], "missing.pt does not exist"),
        (["compare", "adir", "text.txt"], "adir is a directory"),
        (["compare", "text.txt", "text.txt"], "text.txt is not a file `same_models.py dump`"),
    ],
    "study_pages.py": [
        (["--pages", "missing"], "missing does not exist"),
        (["--bench", "text.txt"], "text.txt is not a directory"),
        (["--readme", "adir"], "adir is a directory"),
        (["--check", "--check"], "--check: given twice"),
        (["--che"], "--che is not an option"),
    ],
    "probe_rp_table.py": [
        ([], "required"),
        (["missing.txt", "text.txt"], "missing.txt does not exist"),
        (["adir", "text.txt"], "adir is a directory"),
        (["text.txt", "text.txt"], "text.txt holds no extrapolate table"),
        (["binary.bin", "text.txt"], "binary.bin is not UTF-8 text"),
    ],
    "earlier_checkpoint_record.py": [
        ([], "required"),
        (["missing.ckpt", "adir", "out.json"], "missing.ckpt does not exist"),
        (["text.txt", "missing", "out.json"], "missing does not exist"),
        (["text.txt", "adir", "adir"], "adir is a directory, not a file"),
    ],
    "build_movie_polarity.py": [
        ([], "required: csv"),
        (["missing.csv.bz2"], "missing.csv.bz2 does not exist"),
        (["adir"], "adir is a directory"),
        (["text.txt"], "text.txt is not a bz2-compressed UTF-8 CSV"),
        (["latin1.csv.bz2"], "latin1.csv.bz2 is not a bz2-compressed UTF-8 CSV"),
        (["plain.csv.bz2"], "plain.csv.bz2 has no column category, movie_name"),
    ],
}


def test_every_script_has_cases():
    """A new script is added to :data:`CASES` (and so goes through ``run_script``)."""
    assert sorted(CASES) == sorted(p.name for p in SCRIPTS.glob("*.py"))


class WorkStarted(Exception):
    """Raised where a script's work would start: a command line it should have refused."""


def refuse_work(*args: object, **kwargs: object) -> None:
    raise WorkStarted("the script started its work on a command line it should refuse")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding the files the cases name; the scripts' work (a model to
    time or profile, a notebook to run) raises :class:`WorkStarted` instead of running."""
    from roformer_lit.benchmarks import memory, runners

    for module, name in [(runners, "ours"), (runners, "recipe"), (memory, "peak_step_memory_mb")]:
        monkeypatch.setattr(module, name, refuse_work)
    monkeypatch.setitem(sys.modules, "nbclient", ModuleType("nbclient"))  # no kernel starts
    (tmp_path / "text.txt").write_text("some text, no table\n", encoding="utf-8")
    (tmp_path / "binary.bin").write_bytes(b"\xff\x00\x01")
    (tmp_path / "adir").mkdir()
    (tmp_path / "plain.csv.bz2").write_bytes(bz2.compress(b"text,label\nfine,1\n"))
    (tmp_path / "latin1.csv.bz2").write_bytes(
        bz2.compress("category,text\nfresh,caf\xe9\n".encode("latin-1"))
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def snapshot(root: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize(
    ("script", "argv", "words"),
    [
        pytest.param(script, argv, words, id=f"{script[:-3]}-{' '.join(argv)[:40]}")
        for script, cases in CASES.items()
        for argv, words in cases
    ],
)
def test_a_wrong_command_line_is_one_error_line(script, argv, words, here, monkeypatch, capsys):
    before = snapshot(here)
    task = SCRIPTS.parent / "roformer_lit" / "data" / "tasks" / "movie_polarity"
    shipped = snapshot(task)  # what build_movie_polarity.py writes
    monkeypatch.setattr(sys, "argv", [str(SCRIPTS / script), *argv])
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        runpy.run_path(str(SCRIPTS / script), run_name="__main__")
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert stopped.value.code == 2, err
    assert len(lines) == 1 and re.match(rf"error: {re.escape(script)}( \w+)?: ", lines[0]), err
    assert words in lines[0], lines[0]
    assert out == "", out
    assert snapshot(here) == before and snapshot(task) == shipped


def load(script: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"script_{script[:-3]}", SCRIPTS / script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script", sorted(CASES))
def test_every_script_parses_with_a_tool_parser_and_bounded_numbers(script):
    """Each script's ``build_parser`` is a :class:`ToolParser` (one line per error) whose
    every numeric argument declares its range, as the tools' (``test_tool_arguments``)."""
    parser = load(script).build_parser()
    assert isinstance(parser, ToolParser)
    assert unbounded_numeric_arguments(parser) == []
