"""The line a stopped run ends with names the command that continues it; its path is
quoted for a shell, so that pasting it continues the run whatever the path holds (a space,
a quote, ``$``, non-ASCII). Before, a run directory with a space gave ``--ckpt_path ru ns
ü/...``, which a shell splits into three arguments."""

from __future__ import annotations

import shlex

import pytest
from lightning.pytorch.utilities.exceptions import SIGTERMException

import roformer_lit.commands as commands
from roformer_lit.commands import EXIT_INTERRUPTED, EXIT_PREEMPTED, main

PATHS = [
    "runs/probes/rope-softmax-seed0-copy/checkpoints/last.ckpt",
    "ru ns ü/probes/rope-softmax-seed0-copy/checkpoints/last.ckpt",
    "it's/last.ckpt",
    "$HOME/a b/last.ckpt",
    "semi;colon/last.ckpt",
]


@pytest.mark.parametrize("signal", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("path", PATHS)
def test_the_continue_hint_pastes_back_to_the_same_path(path, signal, monkeypatch, capsys):
    def stopped(argv):
        exc = SIGTERMException()
        exc.preemption = {"signal": signal, "step": 7, "checkpoint": path}
        raise exc

    monkeypatch.setattr(commands, "lightning_main", stopped)
    code = main(["fit"])
    assert code == (EXIT_INTERRUPTED if signal == "SIGINT" else EXIT_PREEMPTED)
    line = capsys.readouterr().err.strip().splitlines()[-1]
    hint = line.split("; continue with ", 1)[1]
    assert shlex.split(hint) == ["--ckpt_path", path]
