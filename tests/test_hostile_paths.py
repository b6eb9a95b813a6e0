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
