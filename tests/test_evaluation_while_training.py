"""``validate`` of a run's checkpoint while a ``fit`` on that run is still training: the
fit replaces the checkpoint (atomically) at each validation. The evaluation reads the
file when it parses (its settings, tokenizer and data checked against it), and Lightning
read it again to evaluate, and the record read it a third time for its step, so a
replacement in between gave a record of one step with another step's metrics (seen: a
validate of ``last.ckpt`` at step 220, recorded as step 225, with step 220's
``val/loss``), exit 0. The evaluation now evaluates and records the one reading it
checked (``RoformerCLI.pin_evaluated``), whenever the file is replaced."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from cli_helpers import fit_args, fit_in

import roformer_lit.commands.pretrain as pretrain
from roformer_lit.commands import main

pytestmark = pytest.mark.trainer

RUN = Path("runs") / "mlm" / "rope-softmax-seed0"
#: Keep the checkpoint of every validation (steps 2 and 4), each as ``at-<step>.ckpt``.
ARGS = fit_args(
    "rope.yaml", 4, "--checkpoint.save_top_k", "-1", "--checkpoint.filename", "at-{step}"
)


def step_of(path: Path) -> int:
    return torch.load(path, map_location="cpu", weights_only=True, mmap=True)["global_step"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fit_in(tmp_path_factory, "trained", ARGS)


def records(work: Path) -> list[dict]:
    path = work / RUN / "evaluations.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def replace_with_later(evaluated: Path, later: Path) -> None:
    """What the running fit does to a checkpoint it saves again: an atomic replace."""
    staged = evaluated.with_name(".staged")
    shutil.copyfile(later, staged)
    os.replace(staged, evaluated)


#: When the running fit replaces the evaluated file: the hook it happens after.
WHEN = {
    "before the trainer loads it": "instantiate_classes",  # after the checks read it
    "during the evaluation": "after_validate",  # after the trainer loaded it
}


@pytest.mark.parametrize("hook", WHEN.values(), ids=WHEN)
def test_the_record_names_the_checkpoint_evaluated_and_its_metrics(
    hook, trained, tmp_path, monkeypatch
):
    shutil.copytree(trained / "runs", tmp_path / "runs")
    monkeypatch.chdir(tmp_path)
    checkpoints = sorted((RUN / "checkpoints").glob("at-*.ckpt"), key=step_of)
    early, late = checkpoints[0], checkpoints[-1]
    assert (step_of(early), step_of(late)) == (2, 4)
    evaluated = RUN / "checkpoints" / "evaluated.ckpt"
    shutil.copyfile(early, evaluated)
    validate = ["validate", "--ckpt_path", str(evaluated)]
    assert main(validate) == 0  # untouched: the reference
    (reference,) = records(tmp_path)
    assert reference["step"] == 2

    original = getattr(pretrain.RoformerCLI, hook)

    def replaced_meanwhile(self, *args, **kwargs):
        if hook == "after_validate":  # the fit saves while the evaluation runs
            replace_with_later(evaluated, late)
            return original(self, *args, **kwargs)
        result = original(self, *args, **kwargs)
        replace_with_later(evaluated, late)
        return result

    monkeypatch.setattr(pretrain.RoformerCLI, hook, replaced_meanwhile)
    assert main(validate) == 0
    assert step_of(evaluated) == 4  # the file was replaced ...
    _, record = records(tmp_path)
    assert record["step"] == 2  # ... and the record is of the checkpoint evaluated
    assert record["metrics"] == reference["metrics"]
