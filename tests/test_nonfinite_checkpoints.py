"""A checkpoint whose weights were set to NaN or inf after ``fit`` saved it (``torch.load``,
one weight's values replaced, ``torch.save``) is refused by every reader, in one line
naming the file, the first such weight and how many of its values are not finite, and
the file is left as it was.

``fit`` never writes such weights (``refuse_nonfinite`` stops a diverged run before the
save), but the readers took them: ``validate`` reported a NaN loss, ``export`` wrote NaN
weights and ``extrapolate`` NaN numbers, exit 0, and a resume could only diverge. The one
reader (:func:`~roformer_lit.training.checkpoint_io.read_checkpoint`) refuses them now.

The checkpoints of the fast tests are written by ``MaskedLM``'s own save hook without a
Trainer; the tests marked ``trainer`` poison a tiny ``fit`` run's ``last.ckpt`` and run the
commands that read it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning
import pytest
import torch
from cli_helpers import CONFIGS, TINY, fit_args, fit_preempted, one_error_line, tree_state
from finetune_helpers import QUIET, keyword_rows, write_csv

from roformer_lit.commands import EXIT_PREEMPTED
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.pretrained import read_pretrained
from roformer_lit.module import MaskedLM
from roformer_lit.training.checkpoint_io import PRETRAINING, read_checkpoint

CONFIG = EncoderConfig(
    vocab_size=19, hidden_size=8, num_layers=2, num_heads=2, intermediate_size=16
)


def _save(model: MaskedLM, path: Path) -> Path:
    """``path``, written as Lightning writes a checkpoint of ``model``."""
    checkpoint: dict[str, Any] = {
        "pytorch-lightning_version": lightning.__version__,
        "epoch": 0,
        "global_step": 1,
        "state_dict": model.state_dict(),
        "hyper_parameters": dict(model.hparams),
    }
    model.save_run_state(checkpoint)
    torch.save(checkpoint, path)
    return path


def poison(source: Path, target: Path, values: list[float]) -> tuple[str, int]:
    """``target``: ``source`` with the first ``len(values)`` entries of one weight (the
    second floating tensor of its ``state_dict``, a layer's) replaced by ``values``.
    Returns (that weight's name, its number of values)."""
    checkpoint = torch.load(source, map_location="cpu", weights_only=True)
    floating = [k for k, v in checkpoint["state_dict"].items() if v.is_floating_point()]
    name = floating[1]
    weight = checkpoint["state_dict"][name].clone()
    weight.view(-1)[: len(values)] = torch.tensor(values)
    checkpoint["state_dict"][name] = weight
    torch.save(checkpoint, target)
    return name, weight.numel()


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _save(MaskedLM(model=CONFIG), tmp_path_factory.mktemp("nonfinite") / "saved.ckpt")


#: reader -> how it is called on a checkpoint's path (the Python API of each command).
READERS: dict[str, Callable[[Path], Any]] = {
    "read_checkpoint (validate, test, resume, export)": lambda path: read_checkpoint(
        path, kind=PRETRAINING
    ),
    "from_checkpoint (extrapolate, export, locality)": MaskedLM.from_checkpoint,
    "read_pretrained (finetune)": read_pretrained,
}

#: case -> the values written into the weight.
POISONS = {"one NaN": [float("nan")], "a NaN and an inf": [float("nan"), 1.0, -float("inf")]}


def test_the_finite_checkpoint_is_read(saved):
    assert read_checkpoint(saved, kind=PRETRAINING)["global_step"] == 1
    assert MaskedLM.from_checkpoint(saved).config == CONFIG


@pytest.mark.parametrize("case", list(POISONS))
@pytest.mark.parametrize("reader", list(READERS))
def test_every_reader_refuses_nonfinite_weights_in_one_line(saved, tmp_path, reader, case):
    path = tmp_path / "poisoned.ckpt"
    name, size = poison(saved, path, POISONS[case])
    bad = sum(1 for value in POISONS[case] if value != 1.0)
    before = path.read_bytes()
    with pytest.raises(ConfigError) as refused:
        READERS[reader](path)
    message = str(refused.value)
    assert "\n" not in message and str(path) in message, message
    assert f"its weight {name} holds {bad} NaN or inf value(s) of {size}" in message, message
    assert path.read_bytes() == before


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding ``runs/mlm/<run>``: a tiny ``fit`` of 8 steps preempted at step
    4, so a resume has steps left."""
    work = tmp_path_factory.mktemp("nonfinite-run")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert fit_preempted(fit_args("rope.yaml", 8), 4) == EXIT_PREEMPTED
    return work


#: command -> its arguments (``{ckpt}``: the checkpoint): every command of the command
#: line that reads a pretraining checkpoint's weights.
COMMANDS = {
    "validate": [
        "validate",
        "--config",
        str(CONFIGS / "rope.yaml"),
        *TINY,
        "--ckpt_path",
        "{ckpt}",
    ],
    # steps left: NaN weights could only diverge (exit 3, after the launch)
    "resume": [*fit_args("rope.yaml", 8), "--ckpt_path", "{ckpt}"],
    "extrapolate": ["extrapolate", "{ckpt}", "--lengths", "16"],
    "export": ["export", "--ckpt_path", "{ckpt}", "--out", "hf"],
    "finetune": [
        "finetune",
        "--config",
        str(CONFIGS / "finetune" / "local.yaml"),
        "--model.pretrained",
        "{ckpt}",
        "--data.train_files",
        "train.csv",
        "--data.val_files",
        "val.csv",
        *QUIET,
    ],
}


@pytest.mark.trainer
@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_commands_refuse_a_fit_runs_poisoned_checkpoint(
    stopped, tmp_path, monkeypatch, capsys, command
):
    """A ``fit`` run's ``last.ckpt`` with one weight set to NaN, in a copy of its run
    directory: each command exits 2 with one line naming it and the weight, and nothing
    in the directory changes (a resume writes no checkpoint, an export no model, a
    fine-tune makes no run)."""
    work = tmp_path / "work"
    shutil.copytree(stopped / "runs", work / "runs")
    (ckpt,) = (work / "runs").glob("mlm/*/checkpoints/last.ckpt")
    name, _ = poison(ckpt, ckpt, [float("nan")])
    write_csv(work / "train.csv", keyword_rows(32, seed=1))
    write_csv(work / "val.csv", keyword_rows(16, seed=2))
    monkeypatch.chdir(work)
    before = tree_state(work)
    line = one_error_line([w.format(ckpt=ckpt) for w in COMMANDS[command]], capsys)
    assert str(ckpt) in line and f"its weight {name} holds 1 NaN or inf value(s)" in line, line
    assert tree_state(work) == before
