"""``compare`` never lists a ``fit`` that failed or was killed before its first checkpoint
as an "evaluation run": whatever the fit left (the length record it logs as training
starts), it is an unfinished training run, labelled so.
A directory where no fit started (an evaluation of an earlier version) stays apart."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from torch.utils.tensorboard import SummaryWriter

from roformer_lit.commands import main
from roformer_lit.results.compare import collect_runs
from roformer_lit.run_files import TOTAL_STEPS_TAG


def settings(run: Path, seed: int) -> None:
    """``config.yaml`` and ``hparams.yaml`` as a fit (or an old evaluation) writes them."""
    saved = {"position": "rope", "attention": "softmax", "learning_rate": 0.001}
    (run / "hparams.yaml").write_text(yaml.safe_dump(saved), encoding="utf-8")
    config = {"seed_everything": seed, "trainer": {"max_steps": 30}}
    (run / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def scalars(run: Path, *tags: str) -> None:
    writer = SummaryWriter(str(run))
    for tag in tags:
        writer.add_scalar(tag, 30.0 if tag == TOTAL_STEPS_TAG else 1.5, 0, walltime=1000.0)
    writer.close()


def finished(run: Path) -> None:
    """A finished run: checkpoints and val/loss at its last step."""
    (run / "checkpoints").mkdir()
    writer = SummaryWriter(str(run))
    for step in (14, 29):
        writer.add_scalar("val/loss", 2.0, step, walltime=1000.0 + step)
    writer.close()


#: case -> what the run directory holds besides its settings.
KILLED: dict[str, Callable[[Path], None]] = {
    "killed as training started": lambda run: scalars(run, TOTAL_STEPS_TAG),
    "killed in its first validation": lambda run: scalars(run, TOTAL_STEPS_TAG, "val/loss"),
}


@pytest.mark.parametrize("case", list(KILLED))
def test_a_fit_that_stopped_early_is_an_unfinished_training_run(tmp_path, capsys, case):
    logdir = tmp_path / "runs"
    done = logdir / "rope-softmax-seed0"
    done.mkdir(parents=True)
    settings(done, 0)
    finished(done)
    killed = logdir / "rope-softmax-seed1"
    killed.mkdir()
    settings(killed, 1)
    KILLED[case](killed)
    evaluation = logdir / "rope-softmax-seed0-evaluated"  # an earlier version's validate
    evaluation.mkdir()
    settings(evaluation, 0)
    scalars(evaluation, "val/loss", "val/acc")
    (summary,) = [r for r in collect_runs(logdir, with_evaluation=True) if r.path == killed]
    assert not summary.evaluation_only and not summary.finished, case
    capsys.readouterr()
    assert main(["compare", str(logdir)]) == 0
    out = capsys.readouterr().out
    assert "1 (0) + 1 unfinished" in out, out
    training, evaluated = out.split("evaluation run")
    assert str(killed) not in evaluated and str(evaluation) in evaluated, out
