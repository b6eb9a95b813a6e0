"""No output a user names (``extrapolate --csv/--budget``, ``compare --out``) can change what a
run left: a checkpoint, a file the command reads (hard links included), or anything inside a
run directory is refused in one line, before any evaluation, and every byte of the run stays
as it was (``run_files.output_target``, the one check)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from cli_helpers import probe_fit_args

from roformer_lit.commands import EXIT_USER_ERROR, main
from roformer_lit.results import extrapolate


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished two-step position-task run: its directory."""
    workdir = tmp_path_factory.mktemp("outputs")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        assert main(probe_fit_args("copy", 2, 2)) == 0
    (ckpt,) = workdir.glob("runs/probes/*/checkpoints/last.ckpt")
    return ckpt.parent.parent


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (the run and the experiment around it) -> its bytes' hash."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


#: (option, where it points: relative to the run directory, "LINK" (a hard link to the
#: checkpoint outside any run) or "ELSEWHERE.ckpt" (a checkpoint name outside any run)), and
#: the words of the refusal.
TARGETS = [
    ("--csv", "checkpoints/last.ckpt", "is one of the files this command reads"),
    ("--budget", "checkpoints/last.ckpt", "is one of the files this command reads"),
    ("--csv", "ELSEWHERE.ckpt", "names a checkpoint"),
    ("--csv", "config.yaml", "lies inside the run directory"),
    ("--csv", "hparams.yaml", "lies inside the run directory"),
    ("--budget", "new.csv", "lies inside the run directory"),
    ("--csv", "checkpoints/cells.csv", "lies inside the run directory"),
    ("--csv", "LINK", "is one of the files this command reads"),
]


@pytest.mark.parametrize(("option", "where", "words"), TARGETS)
def test_extrapolate_never_writes_into_a_run(run, tmp_path, capsys, option, where, words):
    ckpt = run / "checkpoints" / "last.ckpt"
    reads = ckpt
    target = run / where
    if where == "ELSEWHERE.ckpt":
        target = tmp_path / where
    if where == "LINK":
        reads = tmp_path / "copy.bin"
        os.link(ckpt, reads)
        target = tmp_path / "link.csv"
        os.link(ckpt, target)
    before = _snapshot(run.parent)
    capsys.readouterr()
    code = main(["extrapolate", str(reads), "--lengths", "8", option, str(target)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USER_ERROR
    assert len(err) == 1 and err[0].startswith("error:") and words in err[0], err
    assert _snapshot(run.parent) == before


@pytest.mark.parametrize("where", [".", "checkpoints", "checkpoints/compare"])
def test_compare_out_is_never_a_run_s_folder(run, capsys, where):
    before = _snapshot(run.parent)
    capsys.readouterr()
    code = main(["compare", str(run.parent), "--out", str(run / where)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USER_ERROR
    assert len(err) == 1 and "lies inside the run directory" in err[0], err
    assert _snapshot(run.parent) == before


def test_compare_out_never_overwrites_its_report(run, tmp_path, capsys):
    report = tmp_path / "runs.csv"
    report.write_text("name,length,metric,value\n", encoding="utf-8")
    argv = ["compare", str(run.parent), "--out", str(tmp_path), "--select", "learning_rate"]
    code = main([*argv, "--by", "val_acc", "--report", str(report)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USER_ERROR and "is one of the files this command reads" in err[-1]
    assert report.read_text(encoding="utf-8") == "name,length,metric,value\n"


def test_an_output_beside_the_runs_is_written(run, tmp_path):
    """The check refuses only what would touch a run: a file beside them is written."""
    out = run.parent / "cells.csv"
    assert (
        main(
            [
                "extrapolate",
                str(run / "checkpoints" / "last.ckpt"),
                "--lengths",
                "8",
                "--csv",
                str(out),
            ]
        )
        == 0
    )
    assert out.read_text(encoding="utf-8").startswith("name,length,metric,value")
    out.unlink()


@pytest.mark.parametrize(
    ("where", "words"),
    [
        ("a_file/cells.csv", "a_file is a file, not a directory"),
        (".", "is a directory, not a file"),
    ],
)
def test_extrapolate_refuses_an_unwritable_csv_before_evaluating(
    run, tmp_path, monkeypatch, capsys, where, words
):
    """``--csv`` where no file can be written was an ``error:`` after every cell was
    evaluated (minutes of work lost): now the line comes first and nothing is evaluated."""
    (tmp_path / "a_file").write_text("keep me\n", encoding="utf-8")

    def never(*args, **kwargs):
        raise AssertionError("evaluated before the --csv path was checked")

    monkeypatch.setattr(extrapolate, "evaluate_checkpoint", never)
    monkeypatch.chdir(tmp_path)
    before = _snapshot(tmp_path)
    capsys.readouterr()
    ckpt = str(run / "checkpoints" / "last.ckpt")
    code = main(["extrapolate", ckpt, "--lengths", "8", "--csv", where])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == EXIT_USER_ERROR and "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith("error:") and words in lines[0], lines
    assert "--csv" in lines[0] and _snapshot(tmp_path) == before


def test_compare_refuses_out_whose_file_is_a_directory_before_reading(run, tmp_path, capsys):
    """Each file ``--out`` receives is checked as the directory is: ``compare.csv`` that is
    a directory was an error after the table was printed."""
    (tmp_path / "compare.csv").mkdir()
    before = _snapshot(run.parent)
    capsys.readouterr()
    code = main(["compare", str(run.parent), "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == EXIT_USER_ERROR and out == "", out
    assert len(lines) == 1 and "compare.csv is a directory, not a file" in lines[0], lines
    assert _snapshot(run.parent) == before and list((tmp_path / "compare.csv").iterdir()) == []


@pytest.mark.parametrize(
    ("options", "existing"),
    [
        (("--csv",), ("--csv",)),
        (("--budget",), ("--budget",)),
        (("--csv", "--budget"), ("--budget",)),
        (("--csv", "--budget"), ()),
    ],
)
def test_extrapolate_says_which_existing_file_it_replaces(
    run, tmp_path, monkeypatch, capsys, options, existing
):
    """``--csv``/``--budget`` naming a user's existing file replaced it without a word: now
    one ``note:`` line per option names it before anything is evaluated (and none for a new
    file)."""
    paths = {option: tmp_path / f"{option.strip('-')}.csv" for option in options}
    for option in existing:
        paths[option].write_text("keep me?\n", encoding="utf-8")

    def stop(*args, **kwargs):
        raise KeyboardInterrupt  # the note came before this, or not at all

    monkeypatch.setattr(extrapolate, "evaluate_checkpoint", stop)
    capsys.readouterr()
    argv = ["extrapolate", str(run / "checkpoints" / "last.ckpt"), "--lengths", "8"]
    code = main([*argv, *(word for o in options for word in (o, str(paths[o])))])
    assert code != 0  # stopped where evaluation would start
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert len(notes) == len(existing), notes
    for option, line in zip(existing, notes, strict=True):
        assert option in line and str(paths[option]) in line and "replaced" in line, line


#: (extra compare options, the files already in ``--out`` before it runs, those of them an
#: earlier comparison wrote that this one does not); the first ``note:`` must name exactly
#: those of them the comparison writes, the second those it leaves.
COMPARE_OUT_CASES = [
    ((), (), ()),
    ((), ("compare.csv",), ()),
    ((), ("compare.md", "val_loss_vs_time.png", "mine.txt"), ()),
    ((), ("downstream.csv", "mine.txt"), ("downstream.csv",)),
    (
        ("--select", "learning_rate", "--by", "val_acc"),
        ("runs.csv", "val_loss_vs_step.png"),
        ("val_loss_vs_step.png",),
    ),
]


@pytest.mark.parametrize(("options", "existing", "left"), COMPARE_OUT_CASES)
def test_compare_says_which_existing_files_it_replaces(
    run, tmp_path, capsys, options, existing, left
):
    """``compare --out DIR`` replaced an earlier comparison's tables and plots without a
    word, and left those it does not write (a ``--select``'s plots, the fine-tunes' tables)
    beside its own as if of the same runs: now, before the first file is written, one
    ``note:`` line names those it replaces and one those it leaves (none where there are
    none)."""
    for name in existing:
        (tmp_path / name).write_text("earlier\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["compare", str(run.parent), "--out", str(tmp_path), *options]) == 0
    err = capsys.readouterr().err.splitlines()
    wrote = [line.removeprefix("wrote ") for line in err if line.startswith("wrote ")]
    first_write = err.index(f"wrote {wrote[0]}")
    replaced = [str(tmp_path / name) for name in existing if str(tmp_path / name) in wrote]
    notes = [i for i, line in enumerate(err) if line.startswith("note: --out")]
    replacing = [i for i in notes if err[i].endswith("will be replaced")]
    leaving = [i for i in notes if err[i].endswith("left as they were")]
    assert len(notes) == len(replacing) + len(leaving) == bool(replaced) + bool(left), err
    assert all(i < first_write for i in notes), err
    if replaced:
        named = err[replacing[0]].removeprefix("note: --out ").split(" exist")[0].split(", ")
        assert named == replaced, err
    if left:
        named = err[leaving[0]].split(" also holds ")[1].split(" from ")[0].split(", ")
        assert named == list(left), err
    for name in left:
        assert (tmp_path / name).read_text(encoding="utf-8") == "earlier\n"
