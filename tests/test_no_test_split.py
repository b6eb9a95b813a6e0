"""``test`` on a pretraining run: no pretraining data has a held-out test split, so the
data module's test loader was its validation loader, and ``test`` reported the validation
split as ``test/*`` metrics, appended to the run's ``evaluations.jsonl`` as a test result
with exit 0. It is refused in one ``error:`` line naming ``validate``, for every data
module (:meth:`~roformer_lit.data.datamodule.PretrainDataModule.check_test_split`), before
anything is built, and the run is left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import fit_args, fit_in, probe_fit_args, refused_unchanged

from roformer_lit.data.modules import DATA_MODULES, data_module
from roformer_lit.errors import ConfigError

#: Each data module: the ``fit`` that makes a run of it, and that run's directory.
RUNS = {
    "CorpusDataModule": (fit_args("rope.yaml", 2), Path("runs/mlm/rope-softmax-seed0")),
    "ProbeDataModule": (probe_fit_args("copy", 2, 2), Path("runs/probes/rope-softmax-seed0-copy")),
}
#: The smallest settings each data module is built with (nothing is read or built).
SETTINGS = {"CorpusDataModule": {}, "ProbeDataModule": {"probe": "copy"}}


def test_every_data_module_is_in_the_tables():
    assert sorted(cls.__name__ for cls in DATA_MODULES) == sorted(RUNS) == sorted(SETTINGS)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_no_data_module_gives_its_validation_split_as_a_test_split(name):
    """The Python API (``trainer.test(model, datamodule=dm)``): the same rule."""
    module = data_module(SETTINGS[name])
    with pytest.raises(ConfigError, match=f"{name} gives none.*validate") as refused:
        module.test_dataloader()
    assert "\n" not in str(refused.value)


@pytest.mark.trainer
@pytest.mark.parametrize("name", sorted(RUNS))
def test_test_on_a_pretraining_run_is_refused_and_the_run_is_untouched(
    name, tmp_path_factory, monkeypatch, capsys
):
    argv, run = RUNS[name]
    work = fit_in(tmp_path_factory, name, argv)
    monkeypatch.chdir(work)
    line = refused_unchanged(
        work, capsys, ["test", "--ckpt_path", str(run / "checkpoints/last.ckpt")]
    )
    assert line.startswith("error: test needs a held-out test split"), line
    assert name in line and "validate --ckpt_path" in line, line
    assert not (work / run / "evaluations.jsonl").exists()
