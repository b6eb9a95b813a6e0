"""``test`` on a pretraining run: no pretraining data has a held-out test split, so the
data module's test loader was its validation loader, and ``test`` reported the validation
split as ``test/*`` metrics, appended to the run's ``evaluations.jsonl`` as a test result
with exit 0; ``predict`` computed the validation split's logits and wrote them nowhere,
exit 0. Each is refused in one ``error:`` line naming ``validate``, for every data
module (:meth:`~roformer_lit.data.datamodule.PretrainDataModule.check_subcommand`), before
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


#: subcommand -> (the loader the Python API calls, the start of its refusal)
REFUSED = {
    "test": ("test_dataloader", "error: test needs a held-out test split"),
    "predict": ("predict_dataloader", "error: predict writes no output for"),
}


@pytest.mark.parametrize("subcommand", sorted(REFUSED))
@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_no_data_module_serves_test_or_predict_from_its_validation_split(name, subcommand):
    """The Python API (``trainer.test(model, datamodule=dm)``): the same rule."""
    module = data_module(SETTINGS[name])
    loader, words = REFUSED[subcommand]
    with pytest.raises(ConfigError, match=f"{name}.*validate") as refused:
        getattr(module, loader)()
    assert "\n" not in str(refused.value)
    assert f"error: {refused.value}".startswith(words), refused.value


@pytest.mark.trainer
@pytest.mark.parametrize("subcommand", sorted(REFUSED))
@pytest.mark.parametrize("name", sorted(RUNS))
def test_test_or_predict_on_a_pretraining_run_is_refused_and_the_run_is_untouched(
    name, subcommand, tmp_path_factory, monkeypatch, capsys
):
    argv, run = RUNS[name]
    work = fit_in(tmp_path_factory, name, argv)
    monkeypatch.chdir(work)
    line = refused_unchanged(
        work, capsys, [subcommand, "--ckpt_path", str(run / "checkpoints/last.ckpt")]
    )
    assert line.startswith(REFUSED[subcommand][1]), line
    assert name in line and "validate --ckpt_path" in line, line
    assert not (work / run / "evaluations.jsonl").exists()
