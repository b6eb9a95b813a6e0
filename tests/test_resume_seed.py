"""A resumed ``fit`` keeps its run's ``seed_everything``.

A resume restores the random states its checkpoint saved, so the command's seed draws
nothing; yet ``fit --ckpt_path`` took any seed with exit 0: ``--seed_everything 3`` on a
seed-1 run printed ``Seed set to 3`` and wrote ``seed_everything: 3`` into the run's
``config-resumed-1.yaml``, and a resume given the run's ``--config`` files without the seed
recorded their 0. The seed is the run's now
(:func:`roformer_lit.commands.checkpoint_settings.resumed_seed`): a typed other seed is
refused in one line, the run untouched; any other is replaced by the run's with a ``note:``
line.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from cli_helpers import fit_args, fit_preempted, overridden, refused_unchanged

from roformer_lit.commands import EXIT_PREEMPTED, main

pytestmark = pytest.mark.trainer

#: the run's command without a seed: rope.yaml's (base.yaml's) 0
WITHOUT_SEED = fit_args("rope.yaml", 6)
ARGS = overridden(WITHOUT_SEED, ["--seed_everything", "1"])
RUN = Path("runs") / "mlm" / "rope-softmax-seed1"
LAST = RUN / "checkpoints" / "last.ckpt"


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A seed-1 run preempted at step 3 of 6: one a resume continues."""
    work = tmp_path_factory.mktemp("stopped-seed")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert fit_preempted(ARGS, 3) == EXIT_PREEMPTED
    return work


@pytest.fixture
def work(stopped: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "work"
    shutil.copytree(stopped, copy)
    monkeypatch.chdir(copy)
    return copy


def test_a_typed_other_seed_is_refused_on_resume(work, capsys):
    argv = overridden(ARGS, ["--seed_everything", "3", "--ckpt_path", str(LAST)])
    line = refused_unchanged(work, capsys, argv)
    assert "seed_everything=1" in line and "seed_everything=3" in line, line


def test_a_seed_the_command_did_not_type_is_the_runs(work, capsys):
    capsys.readouterr()
    assert main([*WITHOUT_SEED, "--ckpt_path", str(LAST)]) == 0
    err = capsys.readouterr().err
    assert "note: resuming with the run's seed_everything=1" in err, err[-2000:]
    resumed = yaml.safe_load((RUN / "config-resumed-1.yaml").read_text())
    assert resumed["seed_everything"] == 1
