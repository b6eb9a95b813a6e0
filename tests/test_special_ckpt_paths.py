"""``--ckpt_path last``, ``best`` and ``hpc``: the words Lightning resolves itself, which
skipped every check of ``--ckpt_path``. A command here is a new process starting a new run
(or none), so ``last`` resolved to nothing: ``fit`` and ``finetune`` trained a new run from
untrained weights and ``validate`` evaluated untrained weights, exit 0 with a warning;
``best`` and an ``hpc`` without a requeue's checkpoint stopped with Lightning's traceback,
after the run directory was made. Each is one ``error:`` line naming the word and a
checkpoint's path to give instead, exit 2, nothing created
(:mod:`roformer_lit.commands.special_ckpt_paths`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import CONFIGS, TINY, one_error_line, tree_state

from roformer_lit.commands.special_ckpt_paths import SPECIAL_CKPT_PATHS, left_to_lightning

ROPE = str(CONFIGS / "rope.yaml")
LOCAL = str(CONFIGS / "finetune" / "local.yaml")

#: command -> its words before ``--ckpt_path <word>``: every command that takes it.
COMMANDS = {
    "fit": ["fit", "--config", ROPE, *TINY, "--trainer.max_steps", "2"],
    "validate": ["validate", "--config", ROPE, *TINY],
    "test": ["test", "--config", ROPE, *TINY],
    "predict": ["predict", "--config", ROPE, *TINY],
    "finetune": [
        "finetune",
        "--config",
        LOCAL,
        "--model.pretrained",
        "pretrained.ckpt",
        "--data.train_files",
        "train.csv",
        "--data.val_files",
        "val.csv",
    ],
    "finetune validate": ["finetune", "validate", "--config", LOCAL, "--data.val_files", "val.csv"],
}


@pytest.mark.parametrize("word", SPECIAL_CKPT_PATHS)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_word_lightning_resolves_to_nothing_is_one_line(
    command, word, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    before = tree_state(tmp_path)
    line = one_error_line([*COMMANDS[command], "--ckpt_path", word], capsys)
    assert line.startswith(f"error: --ckpt_path {word}: to Lightning, "), line
    experiment = "finetune" if command.startswith("finetune") else "mlm"
    assert f"give a checkpoint's path, such as runs/{experiment}/<run>/checkpoints/" in line
    assert tree_state(tmp_path) == before


def test_hpc_names_the_root_it_looked_in(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    argv = [*COMMANDS["validate"], "--trainer.default_root_dir", str(root), "--ckpt_path", "hpc"]
    line = one_error_line(argv, capsys)
    assert f"trainer.default_root_dir ({root}), and it holds none" in line, line


#: (--ckpt_path, files in the root) -> whether it is left to Lightning (no file to read).
LEFT = {
    ("hpc", ("hpc_ckpt_3.ckpt",)): True,  # a SLURM requeue's checkpoint: Lightning's to find
    (None, ()): True,
    ("s3://bucket/last.ckpt", ()): True,
    ("runs/mlm/x/checkpoints/last.ckpt", ()): False,  # a file: the one reader's
    ("last.ckpt", ("last.ckpt",)): False,
}


@pytest.mark.parametrize(("ckpt", "files"), list(LEFT))
def test_what_is_left_to_lightning(ckpt, files, tmp_path):
    for name in files:
        (tmp_path / name).write_bytes(b"")
    assert left_to_lightning(ckpt, tmp_path, "x") is LEFT[ckpt, files]


@pytest.mark.parametrize("files", [(), ("hpc_ckpt_x.ckpt", "hpc_ckpt_1.txt")])
def test_hpc_without_a_requeue_checkpoint_is_refused(files, tmp_path):
    for name in files:
        (tmp_path / name).write_bytes(b"")
    with pytest.raises(Exception, match=r"--ckpt_path hpc: .* it holds none"):
        left_to_lightning("hpc", Path(tmp_path), "x")
