"""``compare`` given a file where it reads run directories (a run's checkpoint, a corpus
file) says what it reads instead: for a checkpoint, its run's directory."""

from __future__ import annotations

import pytest

from roformer_lit.commands import EXIT_USER_ERROR, main

#: case -> (the file given, relative to the tmp dir; what the error line names).
FILES = {
    "a checkpoint": (
        "runs/mlm/rope-seed0/checkpoints/last.ckpt",
        "give its run, {tmp}/runs/mlm/rope-seed0",
    ),
    "another file": ("corpus.txt", "compare reads run directories"),
}


@pytest.mark.parametrize("case", list(FILES))
def test_a_file_given_as_logdir_says_what_compare_reads(tmp_path, capsys, case):
    name, said = FILES[case]
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")
    capsys.readouterr()
    assert main(["compare", str(path)]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(path) in errors[0], err
    assert said.format(tmp=tmp_path) in errors[0], err
    assert "Traceback" not in err
