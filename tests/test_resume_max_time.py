"""A run stopped by ``trainer.max_time`` and resumed with the same ``max_time`` has nothing
left to train: Lightning's ``Timer`` counts from the run's start (its time so far is in the
checkpoint). Before, the resume trained no step, printed ``stopped at step N/M | no
validation`` with exit 0, and wrote a new events file and a ``config-resumed-1.yaml`` into
the run. It is now refused in one line (``check_time_left``), the run unchanged; a larger
``max_time`` resumes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from cli_helpers import fit_args, fit_in, overridden, refused_unchanged

from roformer_lit.commands.checkpoint_settings import check_time_left
from roformer_lit.errors import ConfigError

RUN = Path("runs") / "mlm" / "rope-softmax-seed0"
LAST = RUN / "checkpoints" / "last.ckpt"
TIMED = overridden(fit_args("rope.yaml", 10_000), ["--trainer.max_time", "00:00:00:01"])


@pytest.fixture(scope="module")
def timed_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = fit_in(tmp_path_factory, "timed", TIMED)
    assert 0 < torch.load(work / LAST, weights_only=True)["global_step"] < 10_000
    return work


def test_a_run_stopped_by_max_time_is_refused_with_the_same_max_time(
    timed_out, tmp_path, monkeypatch, capsys
):
    work = tmp_path / "work"
    shutil.copytree(timed_out, work)
    monkeypatch.chdir(work)
    line = refused_unchanged(work, capsys, [*TIMED, "--ckpt_path", str(LAST)])
    assert "trainer.max_time is 00:00:00:01" in line and "nothing is left to train" in line


def _checkpoint(trained: float) -> dict:
    elapsed = {"train": trained, "sanity_check": 0, "validate": 0, "test": 0, "predict": 0}
    return {"global_step": 5, "callbacks": {"Timer": {"time_elapsed": elapsed}}}


#: (seconds trained, the command's max_time) -> refused.
CASES = {
    "spent": (6.3, "00:00:00:06", True),
    "spent exactly": (6.0, "00:00:00:06", True),
    "a dict duration spent": (120.0, {"minutes": 1}, True),
    "time left": (6.3, "00:00:01:00", False),
    "no max_time": (6.3, None, False),
}


@pytest.mark.parametrize(("trained", "max_time", "refused"), CASES.values(), ids=CASES)
def test_the_time_left_check(trained, max_time, refused) -> None:
    config = {"trainer": {"max_time": max_time}}
    if refused:
        with pytest.raises(ConfigError, match="nothing is left to train"):
            check_time_left(_checkpoint(trained), config, "x.ckpt")
    else:
        check_time_left(_checkpoint(trained), config, "x.ckpt")
