"""Paths a careless user gives the commands beside ``fit``'s training: a directory where a
checkpoint belongs, a mistyped tool option, a ``bench-data`` corpus that cannot be read.
Each is one ``error:`` line naming what is wrong (and what is valid), exit 2, and nothing
created."""

from __future__ import annotations

import pytest
from cli_helpers import CONFIGS, one_error_line

CHECKPOINT_COMMANDS = {
    "export": lambda d: ["export", "--ckpt_path", d, "--out", "exported"],
    "validate": lambda d: ["validate", "--config", str(CONFIGS / "rope.yaml"), "--ckpt_path", d],
    "finetune validate": lambda d: [
        "finetune",
        "validate",
        "--config",
        str(CONFIGS / "finetune" / "local.yaml"),
        "--data.val_files",
        "val.csv",
        "--ckpt_path",
        d,
    ],
    "finetune --model.pretrained": lambda d: [
        "finetune",
        "--config",
        str(CONFIGS / "finetune" / "local.yaml"),
        "--data.train_files",
        "val.csv",
        "--data.val_files",
        "val.csv",
        "--model.pretrained",
        d,
    ],
}


@pytest.mark.parametrize("command", list(CHECKPOINT_COMMANDS))
def test_a_directory_given_as_checkpoint_is_called_a_directory(
    command, tmp_path, monkeypatch, capsys
):
    """A run directory given where its checkpoint belongs exists: the line says it is a
    directory (before: 'checkpoint not found: <dir>', which sends the user looking for a
    typo), and nothing is created."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "myrun").mkdir()
    (tmp_path / "val.csv").write_text("text,label\nhello,0\nbad,1\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    line = one_error_line(CHECKPOINT_COMMANDS[command]("myrun"), capsys)
    assert "myrun is a directory" in line and "not found" not in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == before


#: case -> (the path given for a checkpoint, made from the name of a file that is there;
#: what the one line says).
PATHS_AS_TYPED = {
    # before: 'checkpoint  is a directory' (Path('') is the working directory)
    "an empty path": (lambda file: "", "checkpoint path is empty; give a file"),
    # before: export read the file (Path drops the '/'), the others called it truncated
    "a file with a trailing /": (lambda file: f"{file}/", "Not a directory"),
}


@pytest.mark.parametrize(
    ("command", "case"),
    [  # an empty model.pretrained is one not given: 'model.pretrained is required', as before
        (command, case)
        for command in CHECKPOINT_COMMANDS
        for case in PATHS_AS_TYPED
        if (command, case) != ("finetune --model.pretrained", "an empty path")
    ],
)
def test_a_checkpoint_path_is_read_as_typed(command, case, tmp_path, monkeypatch, capsys):
    """The path is checked as typed (:func:`~roformer_lit.safe_input.check_readable_file`),
    by every command alike, and nothing is created."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.ckpt").write_bytes(b"")
    (tmp_path / "val.csv").write_text("text,label\nhello,0\nbad,1\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    typed, says = PATHS_AS_TYPED[case]
    line = one_error_line(CHECKPOINT_COMMANDS[command](typed("run.ckpt")), capsys)
    assert says in line and "truncated" not in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == before


#: Every command that reads a pretraining checkpoint, with the path it is given.
EVERY_CHECKPOINT_COMMAND = {
    **CHECKPOINT_COMMANDS,
    "extrapolate": lambda d: ["extrapolate", d, "--lengths", "64"],
    "locality": lambda d: ["locality", d],
    "fit --ckpt_path": lambda d: ["fit", "--config", str(CONFIGS / "rope.yaml"), "--ckpt_path", d],
}


@pytest.mark.parametrize("given", ["myrun", "runs"])
@pytest.mark.parametrize("command", list(EVERY_CHECKPOINT_COMMAND))
def test_a_directory_given_as_checkpoint_names_the_checkpoints_in_it(
    command, given, tmp_path, monkeypatch, capsys
):
    """A run directory, or a folder of runs, given where a checkpoint belongs: the line
    names the checkpoints that are in it, the same for every command (before: 'is a
    directory, expected a file' from some, and from extrapolate a made-up
    'runs/checkpoints/last.ckpt' that did not exist). Nothing is created or changed."""
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "runs" / "rope-seed0" if given == "runs" else tmp_path / "myrun"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "last.ckpt").write_bytes(b"weights")
    (tmp_path / "val.csv").write_text("text,label\nhello,0\nbad,1\n")
    before = sorted((str(p), p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    line = one_error_line(EVERY_CHECKPOINT_COMMAND[command](given), capsys)
    expected = str((run / "checkpoints" / "last.ckpt").relative_to(tmp_path))
    assert f"{given} is a directory" in line and expected in line, line
    assert sorted((str(p), p.stat().st_mtime_ns) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["locality", "x.ckpt", "--lenght", "64"], "--length"),
        (["extrapolate", "x.ckpt", "--lenghts", "64"], "--lengths"),
        (["export", "--ckpt_path", "x.ckpt", "--out", "o", "--tokeniser", "t.json"], "--tokenizer"),
        (["bench-data", "--batchsize", "4"], "--batch-size"),
    ],
)
def test_a_mistyped_tool_option_is_answered_with_the_valid_ones(
    argv, meant, tmp_path, monkeypatch, capsys
):
    """A tool's unknown option is refused naming the closest option and every valid one
    (before: 'unrecognized arguments: --lenght 64' and nothing to correct it with)."""
    monkeypatch.chdir(tmp_path)
    line = one_error_line(argv, capsys)
    assert f"did you mean {meant}?" in line and "valid options: " in line, line
    valid = line.split("valid options: ")[1].split(", ")
    assert meant in valid and "--help" not in valid, line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("corpus", ["missing.txt", "blank.txt", "empty_dir"])
def test_bench_data_with_an_unreadable_corpus_creates_no_workdir(
    corpus, tmp_path, monkeypatch, capsys
):
    """``bench-data --corpus`` reads its corpus before it makes ``--workdir`` (before: the
    directory was created, then the corpus refused, leaving an empty one behind)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "blank.txt").write_text("\n\n  \n")
    (tmp_path / "empty_dir").mkdir()
    line = one_error_line(["bench-data", "--corpus", corpus, "--workdir", "bench"], capsys)
    assert corpus in line, line
    assert not (tmp_path / "bench").exists()


@pytest.mark.parametrize("option", ["--sizes-mb", "--sizes_mb", "--workdir"])
def test_a_corpus_scale_option_without_corpus_says_it_needs_corpus(
    option, tmp_path, monkeypatch, capsys
):
    """``bench-data --sizes-mb 25`` was 'unrecognized arguments', though ``bench-data`` takes
    it: the line now says it belongs to ``bench-data --corpus PATH``."""
    monkeypatch.chdir(tmp_path)
    line = one_error_line(["bench-data", option, "25"], capsys)
    assert f"{option} is an option of bench-data --corpus PATH" in line, line
    assert list(tmp_path.iterdir()) == []


def test_bench_data_measures_the_corpus_it_is_given_not_one_left_in_workdir(tmp_path, monkeypatch):
    """A second ``bench-data --corpus`` into the same ``--workdir`` measured the corpus the
    first one synthesised there (reused because it was large enough); it now repeats the
    ``--corpus`` it is given."""
    from roformer_lit.benchmarks import corpus_scale
    from roformer_lit.commands import main

    class Stop(Exception):
        pass

    def stop(argv, cwd, env):  # the first timed fit: the corpus is synthesised by then
        raise Stop

    monkeypatch.setattr(corpus_scale, "timed", stop)
    monkeypatch.chdir(tmp_path)
    for name in ("first", "second"):
        (tmp_path / f"{name}.txt").write_text(f"the {name} corpus\n")
        with pytest.raises(Stop):
            main(["bench-data", "--corpus", f"{name}.txt", "--sizes-mb", "1", "--workdir", "w"])
        lines = set((tmp_path / "w" / "corpus-1mb.txt").read_text().splitlines())
        assert lines == {f"the {name} corpus"}


@pytest.mark.parametrize("command", ["export", "extrapolate", "locality"])
def test_another_projects_lightning_checkpoint_is_not_called_damaged(
    command, tmp_path, monkeypatch, capsys
):
    """A Lightning checkpoint of another model (a state_dict and hyper_parameters of its
    own) was 'checkpoint ... is damaged: its hyper_parameters lack position, ...'; it is
    not ours, and the line says so."""
    import torch

    monkeypatch.chdir(tmp_path)
    torch.save(
        {"state_dict": {"net.weight": torch.zeros(2)}, "hyper_parameters": {"lr": 0.1}},
        tmp_path / "other.ckpt",
    )
    argv = {
        "export": ["export", "--ckpt_path", "other.ckpt", "--out", "out"],
        "extrapolate": ["extrapolate", "other.ckpt", "--lengths", "16"],
        "locality": ["locality", "other.ckpt"],
    }[command]
    line = one_error_line(argv, capsys)
    assert "other.ckpt is not a roformer_lit checkpoint" in line and "damaged" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.ckpt"]


#: case -> (command line with a mistyped path, the path meant): each next to what exists
MISSPELT_PATHS = {
    "fit --config": (["fit", "--config", "cfg/rope.yml"], "cfg/rope.yaml"),
    "fit --data.train_files": (
        ["fit", "--config", str(CONFIGS / "rope.yaml"), "--data.train_files", "cfg/corpsu.txt"],
        "cfg/corpus.txt",
    ),
    "sweep --config": (["sweep", "--config", "cfg/rope.yml", "--dry-run"], "cfg/rope.yaml"),
    "extrapolate": (["extrapolate", "run/checkpoints/lats.ckpt"], "run/checkpoints/last.ckpt"),
    "locality": (["locality", "run/checkpoints/lats.ckpt"], "run/checkpoints/last.ckpt"),
    "export": (
        ["export", "--ckpt_path", "run/checkpoints/lats.ckpt", "--out", "exported"],
        "run/checkpoints/last.ckpt",
    ),
    "compare": (["compare", "rnus"], "runs"),
}


@pytest.mark.parametrize("case", list(MISSPELT_PATHS))
def test_a_misspelt_path_is_answered_with_the_one_beside_it(case, tmp_path, monkeypatch, capsys):
    """A path that is not there, next to one that is (``rope.yml`` for ``rope.yaml``): the
    line names the one that exists (before: '... not found: cfg/rope.yml' alone). Nothing
    is created."""
    monkeypatch.chdir(tmp_path)
    for made in ("cfg/rope.yaml", "cfg/corpus.txt", "run/checkpoints/last.ckpt", "runs/x"):
        (tmp_path / made).parent.mkdir(parents=True, exist_ok=True)
        if "." in made:  # a file
            (tmp_path / made).write_text("x")
        else:
            (tmp_path / made).mkdir()
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    argv, meant = MISSPELT_PATHS[case]
    line = one_error_line(argv, capsys)
    assert "not found" in line and f"did you mean {meant}?" in line, line
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize(
    "argv", [["fit", "--config", "configs/rope.yaml"], ["compare", "runs/mlm"]]
)
def test_a_relative_path_from_another_directory_names_the_directory(
    argv, tmp_path, monkeypatch, capsys
):
    """The README's commands run from outside the checkout: the line says which directory
    the relative path was read from, and that it has no ``configs/`` (or ``runs/``)."""
    monkeypatch.chdir(tmp_path)
    line = one_error_line(argv, capsys)
    assert "not found" in line and f"in {tmp_path}, the directory it is read from" in line, line
    assert list(tmp_path.iterdir()) == []
