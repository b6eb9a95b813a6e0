"""Every way of loading a checkpoint into the project's modules passes the one reader's
checks: ``MaskedLM.load_from_checkpoint(path)`` and ``SequenceClassifier``'s (Lightning's
classmethod, called from a notebook), an open file given to it, and a ``Trainer`` given
``ckpt_path`` from Python.

The one reader (:func:`~roformer_lit.training.checkpoint_io.read_checkpoint`) refused NaN
weights, damaged records and checkpoints of the other kind; ``load_from_checkpoint``
loaded them without a word (NaN weights, a ``global_step`` that is a string, a
fine-tuning checkpoint into ``MaskedLM`` with its hyperparameters dropped), and refused a
directory or a truncated file with Lightning's or torch's own exception. The oracle of
each refusal is the one reader's own line for the same file: the loaders say the same.

Builds no Trainer (fast tier) but in the tests marked ``trainer``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning
import pytest
import torch
from torch.utils.data import DataLoader

from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.module import SequenceClassifier
from roformer_lit.module import MaskedLM
from roformer_lit.training.architecture_digest import DIGEST_KEY, ENCODER_RECORD_KEY
from roformer_lit.training.checkpoint_io import FINE_TUNING, PRETRAINING, read_checkpoint

CONFIG = EncoderConfig(
    vocab_size=19, hidden_size=8, num_layers=2, num_heads=2, intermediate_size=16
)


def _save(model: Any, path: Path) -> Path:
    """``path``, written as Lightning writes a checkpoint of ``model`` (its save hook's
    records, the training settings sealed; no Trainer)."""
    checkpoint: dict[str, Any] = {
        "pytorch-lightning_version": lightning.__version__,
        "epoch": 0,
        "global_step": 1,
        "state_dict": model.state_dict(),
        "hyper_parameters": dict(model.hparams),
    }
    model.on_save_checkpoint(checkpoint)
    torch.save(checkpoint, path)
    return path


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A pretraining checkpoint and a fine-tuning one made from it, by kind."""
    folder = tmp_path_factory.mktemp("loaders")
    pretraining = _save(MaskedLM(model=CONFIG), folder / "pretraining.ckpt")
    classifier = SequenceClassifier(pretrained=str(pretraining), num_labels=2)
    return {
        PRETRAINING: pretraining,
        FINE_TUNING: _save(classifier, folder / "fine-tuning.ckpt"),
    }


def _edit(change: Callable[[dict[str, Any]], Any]) -> Callable[[Path, Path], None]:
    def edited(source: Path, target: Path) -> None:
        checkpoint = torch.load(source, map_location="cpu", weights_only=True)
        change(checkpoint)
        torch.save(checkpoint, target)

    return edited


def _nan(checkpoint: dict[str, Any]) -> None:
    name = [k for k, v in checkpoint["state_dict"].items() if v.is_floating_point()][1]
    weight = checkpoint["state_dict"][name].clone()
    weight.view(-1)[0] = float("nan")
    checkpoint["state_dict"][name] = weight


def _architecture_edited(checkpoint: dict[str, Any]) -> None:
    """The architecture record edited: a fine-tune's record of its encoder, else the
    pretraining run's hyperparameters."""
    record = checkpoint.get(ENCODER_RECORD_KEY) or checkpoint["hyper_parameters"]
    record["intermediate_size"] = 24


def _truncated(source: Path, target: Path) -> None:
    data = source.read_bytes()
    target.write_bytes(data[: len(data) // 2])


class Crafted:
    """An object a weights-only load refuses to unpickle."""


#: case -> how the damaged file is made from a good one (a directory: made in its place).
DAMAGED: dict[str, Callable[[Path, Path], None]] = {
    "NaN weights": _edit(_nan),
    "global_step a string": _edit(lambda c: c.__setitem__("global_step", "abc")),
    "an edited architecture": _edit(_architecture_edited),
    "an edited training setting": _edit(
        lambda c: c["hyper_parameters"].__setitem__("learning_rate", 0.5)
    ),
    "a digest that is not one": _edit(lambda c: c.__setitem__(DIGEST_KEY, "abc")),
    "no state_dict": _edit(lambda c: c.pop("state_dict")),
    "truncated": _truncated,
    "not a checkpoint": lambda source, target: target.write_text("not a checkpoint\n"),
    "a directory": lambda source, target: target.mkdir(),
    "a crafted pickle": lambda source, target: torch.save({"state_dict": Crafted()}, target),
}

#: module -> the kind of checkpoint it loads.
MODULES = {MaskedLM: PRETRAINING, SequenceClassifier: FINE_TUNING}


def _state(path: Path) -> Any:
    return path.read_bytes() if path.is_file() else sorted(p.name for p in path.iterdir())


def _refused(load: Callable[[], Any]) -> str:
    with pytest.raises(ConfigError) as refused:
        load()
    message = str(refused.value)
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize("module", list(MODULES), ids=lambda m: m.__name__)
@pytest.mark.parametrize("case", list(DAMAGED))
def test_load_from_checkpoint_refuses_what_the_one_reader_refuses(saved, tmp_path, module, case):
    kind = MODULES[module]
    path = tmp_path / f"damaged-{case.replace(' ', '-')}.ckpt"
    DAMAGED[case](saved[kind], path)
    before = _state(path)
    expected = _refused(lambda: read_checkpoint(path, kind=kind))
    assert str(path) in expected, expected
    assert _refused(lambda: module.load_from_checkpoint(path)) == expected
    assert _state(path) == before


@pytest.mark.parametrize("module", list(MODULES), ids=lambda m: m.__name__)
def test_load_from_checkpoint_refuses_a_checkpoint_of_the_other_kind(saved, module):
    other = saved[FINE_TUNING if MODULES[module] == PRETRAINING else PRETRAINING]
    expected = _refused(lambda: read_checkpoint(other, kind=MODULES[module]))
    assert _refused(lambda: module.load_from_checkpoint(other)) == expected


@pytest.mark.parametrize("module", list(MODULES), ids=lambda m: m.__name__)
def test_a_good_checkpoint_loads_its_weights(saved, module):
    path = saved[MODULES[module]]
    loaded = module.load_from_checkpoint(path)
    expected = torch.load(path, map_location="cpu", weights_only=True)["state_dict"]
    state = loaded.state_dict()
    assert state.keys() == expected.keys()
    assert all(torch.equal(state[key], expected[key]) for key in expected)


#: case -> a change of a loaded checkpoint's content (the file-level cases need a path).
CONTENT = {case: DAMAGED[case] for case in ("NaN weights", "global_step a string")}


@pytest.mark.parametrize("case", list(CONTENT))
def test_an_open_file_is_checked_when_it_is_loaded(saved, tmp_path, case):
    """An open file has no path to read first: the module's load hook checks what
    Lightning read, with the one reader's line, naming the file."""
    path = tmp_path / "damaged.ckpt"
    CONTENT[case](saved[PRETRAINING], path)
    expected = _refused(lambda: read_checkpoint(path, kind=PRETRAINING))
    with open(path, "rb") as f:
        assert _refused(lambda: MaskedLM.load_from_checkpoint(f)) == expected


@pytest.mark.trainer
@pytest.mark.parametrize("case", list(CONTENT))
def test_a_trainer_given_ckpt_path_checks_it(saved, tmp_path, case):
    """``Trainer.validate(model, ckpt_path=...)`` from Python (no CLI, so nothing read the
    file before): the module's load hook refuses it with the one reader's line."""
    path = tmp_path / "damaged.ckpt"
    CONTENT[case](saved[PRETRAINING], path)
    expected = _refused(lambda: read_checkpoint(path, kind=PRETRAINING))
    trainer = lightning.Trainer(
        accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False
    )
    model = MaskedLM(model=CONFIG)
    message = _refused(lambda: trainer.validate(model, dataloaders=DataLoader([]), ckpt_path=path))
    assert message == expected


@pytest.mark.parametrize("source", ["path", "open file"])
def test_a_replaced_training_setting_loads(saved, source):
    """Lightning writes a caller's overrides into the loaded ``hyper_parameters`` before the
    load hook sees them: their seal is not held against them, from a path or a file."""
    path = saved[PRETRAINING]
    with open(path, "rb") as f:
        loaded = MaskedLM.load_from_checkpoint(path if source == "path" else f, learning_rate=0.25)
    assert loaded.training_config.learning_rate == 0.25


def test_a_replaced_setting_does_not_hide_an_edited_one(saved, tmp_path):
    """The file is read, and its seal checked, before the caller's overrides are applied."""
    path = tmp_path / "edited.ckpt"
    DAMAGED["an edited training setting"](saved[PRETRAINING], path)
    expected = _refused(lambda: read_checkpoint(path, kind=PRETRAINING))
    assert _refused(lambda: MaskedLM.load_from_checkpoint(path, learning_rate=0.25)) == expected
