"""A NaN in evaluation is a NaN in the result, never a batch left out without a word.

torchmetrics' ``MeanMetric`` drops NaN updates by default (with a ``UserWarning``): a
validation batch whose loss was NaN vanished from ``val/loss`` (the mean of the others,
which the divergence check then passed), and ``extrapolate`` at a length where the model's
output was NaN in every batch reported ``n/a (no masked tokens)``, exit 0. The evaluation
means keep NaN (:func:`roformer_lit.training.lifecycle.evaluation_mean`), and ``extrapolate``
tells a length without masked tokens from one whose loss is not finite."""

from __future__ import annotations

import math
import sys

import pytest
import torch
from cli_helpers import probe_fit_args

from roformer_lit.commands import main
from roformer_lit.module import MaskedLM
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.training.lifecycle import evaluation_mean


@pytest.mark.parametrize("metric", ["loss", "exact"])
def test_a_nan_batch_makes_the_pretraining_mean_nan(metric):
    mean = MaskedLM._stage_metrics(8)[metric]
    mean.update(torch.tensor(2.0), weight=3)
    mean.update(torch.tensor(1.0), weight=1)
    assert float(mean.compute()) == pytest.approx(1.75)  # still weighted by the token count
    mean.update(torch.tensor(math.nan), weight=5)
    assert math.isnan(float(mean.compute()))


def test_a_nan_batch_makes_the_fine_tuning_mean_nan():
    mean = evaluation_mean()  # SequenceClassifier's per-split validation losses
    mean.update(torch.tensor(0.5), weight=2)
    mean.update(torch.tensor(math.nan), weight=2)
    assert math.isnan(float(mean.compute()))


MODULE = """
from roformer_lit.positions.base import PositionScheme


class LongNan(PositionScheme):
    '''Finite up to 20 tokens (training's 17), NaN beyond.'''

    def embed(self, x, positions=None):
        return x * float("nan") if x.shape[1] > 20 else x
"""


@pytest.mark.trainer
def test_extrapolate_says_a_nan_length_is_not_finite_not_that_it_has_no_masked_tokens(
    tmp_path, monkeypatch, capsys
):
    (tmp_path / "nan_plugin.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    try:
        assert main(probe_fit_args("copy", 2, 1, 4, "--model.position", "nan_plugin:LongNan")) == 0
        (ckpt,) = sorted(tmp_path.glob("runs/**/last.ckpt"))
        capsys.readouterr()
        assert main(["extrapolate", str(ckpt), "--lengths", "8", "16"]) == 0
        out = capsys.readouterr().out
    finally:
        POSITION_SCHEMES._resolved.clear()
        sys.modules.pop("nan_plugin", None)
    (row,) = [line for line in out.splitlines() if "nan_plugin:LongNan" in line]
    at_8, at_16 = row.strip("| ").split(" | ")[-2:]
    assert "/" in at_8  # 17 tokens: finite, an accuracy / exact match
    assert at_16 == "n/a (the model's loss is nan: its output is not finite)", row
