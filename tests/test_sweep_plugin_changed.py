"""A sweep does not skip, as finished, a run whose plugin changed under its name since.

A run's ``config.yaml`` names a plugin scheme by import path; a default of one of its
options edited since leaves the path as it was, and the sweep skipped the run as finished,
exit 0, though the same settings now build another model (which ``validate``,
``extrapolate`` and a resume refuse). The sweep now asks the finished run's ``last.ckpt``
the question those commands ask (:mod:`roformer_lit.sweep.components_changed`)."""

from __future__ import annotations

import os
import sys

import pytest
from test_sweep import Launches, write_sweep

from roformer_lit.commands import EXIT_USER_ERROR, main
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.sweep import runner

pytestmark = pytest.mark.trainer

MODULE = """
import torch
from torch import nn
from roformer_lit.positions.base import PositionScheme


class Slope(PositionScheme):
    def __init__(self, shape, *, slope: float = {default}):
        super().__init__(shape)
        self.slope = nn.Parameter(torch.tensor(slope))

    def embed(self, x, positions=None):
        return x * self.slope
"""


def forget_plugin() -> None:
    POSITION_SCHEMES._resolved.clear()
    sys.modules.pop("swept_plugin", None)


def test_a_finished_run_whose_plugin_default_changed_is_not_skipped(tmp_path, monkeypatch, capsys):
    plugin = tmp_path / "swept_plugin.py"
    plugin.write_text(MODULE.format(default=1.0))
    monkeypatch.syspath_prepend(str(tmp_path))
    pythonpath = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", pythonpath)  # the fit the sweep launches imports it
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", Launches(real=True))
    write_sweep(tmp_path / "s.yaml", {"model.position": ["swept_plugin:Slope"]})
    try:
        assert main(["sweep", "--config", "s.yaml"]) == 0
        capsys.readouterr()
        assert main(["sweep", "--config", "s.yaml", "--dry-run"]) == 0  # unchanged: skipped
        assert "1 finished (skipped)" in capsys.readouterr().err
        plugin.write_text(MODULE.format(default=2.0))
        forget_plugin()
        assert main(["sweep", "--config", "s.yaml", "--dry-run"]) == EXIT_USER_ERROR
    finally:
        forget_plugin()
    err = capsys.readouterr().err
    (line,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert line.startswith("error: sweep: run swept_plugin_Slope") and " finished, but " in line
    assert "options have changed since (slope: 1 then, 2 here)" in line, line
    assert "it would be skipped as finished" in line, line
