"""A checkpoint whose recorded architecture was edited, keeping every tensor's shape, is
refused by every reader in one line, and the file is left as it was.

``torch.load``, change ``hyper_parameters`` (a scheme option, the layer plan deleted, a
block field, a kernel option), ``torch.save``: the weights still fit, so the checkpoint
loaded without a word as another model in validate, extrapolate, export, finetune and
resume. ``MaskedLM`` now writes the digest of its architecture record with every
checkpoint (:mod:`roformer_lit.training.architecture_digest`), and the reader refuses a
record that does not match it. A checkpoint written before the digest still loads.

The checkpoints here are written by ``MaskedLM``'s own save hook
(:meth:`~roformer_lit.module.MaskedLM.save_run_state`) without a Trainer (fast tier); the
one test marked ``trainer`` writes one with ``fit`` and reads it with ``validate``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning
import pytest
import torch
from cli_helpers import CONFIGS, probe_fit_args

from roformer_lit.commands import main
from roformer_lit.encoder_config import ENCODER_FIELDS, EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.pretrained import read_pretrained
from roformer_lit.module import MaskedLM
from roformer_lit.training.architecture_digest import DIGEST_KEY
from roformer_lit.training.checkpoint_io import PRETRAINING, read_checkpoint

#: A model with an option in every field an edit below changes.
CONFIG = EncoderConfig(
    vocab_size=19,
    hidden_size=8,
    num_layers=2,
    num_heads=2,
    intermediate_size=16,
    max_positions=64,
    pre_norm=True,
    position_kwargs={"base": 500.0},
    attention_kwargs={"backend": "sdpa"},
    block={"mlp": "geglu"},
    layer_plan={
        "pattern": ["local", "global"],
        "types": {"local": {"window": 8}, "global": {"position_kwargs": {"base": 5000.0}}},
    },
)


def _settings(edit: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    return lambda checkpoint: edit(checkpoint["hyper_parameters"])


def _replace_digest(checkpoint: dict[str, Any]) -> None:
    checkpoint[DIGEST_KEY] = "sha256:" + "0" * 64


#: case -> an edit that keeps every tensor's shape.
EDITS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "a scheme option": _settings(lambda s: s["position_kwargs"].update(base=10000.0)),
    "a scheme option's type": _settings(lambda s: s["position_kwargs"].update(base=500)),
    "the plan deleted": _settings(lambda s: s.pop("layer_plan")),
    "a layer type's option": _settings(
        lambda s: s["layer_plan"]["types"]["global"]["position_kwargs"].update(base=50.0)
    ),
    "a layer type's window": _settings(
        lambda s: s["layer_plan"]["types"]["local"].update(window=16)
    ),
    "a block field": _settings(lambda s: s["block"].update(mlp="swiglu")),
    "a kernel option": _settings(lambda s: s["attention_kwargs"].update(backend="auto")),
    "a field at its default deleted": _settings(lambda s: s.update(attention_dropout=0.0)),
    "the digest replaced": _replace_digest,
}


def _save(model: MaskedLM, path: Path) -> Path:
    """``path``, written as Lightning writes a checkpoint of ``model``: its weights, its
    ``hyper_parameters``, then its own save hook's records."""
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


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _save(MaskedLM(model=CONFIG), tmp_path_factory.mktemp("digest") / "saved.ckpt")


def _edited(saved: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], Any]) -> Path:
    checkpoint = torch.load(saved, weights_only=True)
    edit(checkpoint)
    path = tmp_path / "edited.ckpt"
    torch.save(checkpoint, path)
    return path


def test_a_checkpoint_loads_as_saved_and_as_saved_before_the_digest(saved, tmp_path):
    checkpoint = torch.load(saved, weights_only=True)
    assert checkpoint[DIGEST_KEY].startswith("sha256:")
    assert MaskedLM.from_checkpoint(saved).config == CONFIG
    del checkpoint[DIGEST_KEY]  # as every version before the digest wrote it
    earlier = tmp_path / "earlier.ckpt"
    torch.save(checkpoint, earlier)
    assert MaskedLM.from_checkpoint(earlier).config == CONFIG
    assert read_pretrained(earlier)["global_step"] == 1


#: reader -> how it is called on a checkpoint's path; each one a command reads with.
READERS: dict[str, Callable[[Path], Any]] = {
    "validate, resume, export": lambda path: read_checkpoint(path, kind=PRETRAINING),
    "extrapolate, export": MaskedLM.from_checkpoint,
    "finetune": read_pretrained,
    "load_from_checkpoint": lambda path: MaskedLM.load_from_checkpoint(path, weights_only=True),
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("case", list(EDITS))
def test_an_edited_architecture_is_refused_by_every_reader(saved, tmp_path, case, reader):
    path = _edited(saved, tmp_path, EDITS[case])
    before = path.read_bytes()
    with pytest.raises(ConfigError) as refused:
        READERS[reader](path)
    message = str(refused.value)
    assert "\n" not in message, message
    assert "recorded architecture (hyper_parameters) does not match what was saved" in message
    assert str(path) in message, message
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "command",
    [
        ["extrapolate", "{ckpt}", "--lengths", "16"],
        ["export", "--ckpt_path", "{ckpt}", "--out", "{out}"],
    ],
    ids=["extrapolate", "export"],
)
@pytest.mark.parametrize("case", ["a scheme option", "the plan deleted", "a block field"])
def test_a_command_refuses_an_edited_architecture_in_one_line(
    saved, tmp_path, capsys, command, case
):
    path = _edited(saved, tmp_path, EDITS[case])
    before = path.read_bytes()
    args = [word.format(ckpt=path, out=tmp_path / "hf") for word in command]
    capsys.readouterr()
    code = main(args)
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and "Traceback" not in err, err
    assert len(errors) == 1 and str(path) in errors[0], err
    assert "does not match what was saved with it" in errors[0], err
    assert path.read_bytes() == before
    assert not (tmp_path / "hf").exists()


@pytest.mark.trainer
def test_a_checkpoint_fit_wrote_reads_back_and_its_edit_is_refused(tmp_path, monkeypatch, capsys):
    """The digest ``fit`` writes (Lightning's save, ``MaskedLM``'s hook) is the one its own
    record gives: the checkpoint validates; edited, validate and extrapolate refuse it."""
    monkeypatch.chdir(tmp_path)
    assert main(probe_fit_args("copy", 2, 2)) == 0
    (last,) = tmp_path.glob("runs/**/last.ckpt")
    config = str(CONFIGS / "probes" / "copy.yaml")
    validate = ["validate", "--config", config, "--data.max_length", "17", "--ckpt_path"]
    assert torch.load(last, weights_only=True)[DIGEST_KEY].startswith("sha256:")
    assert main([*validate, str(last)]) == 0
    for case in ("a scheme option", "a kernel option"):
        edited = _edited(last, tmp_path, lambda c, case=case: _fit_edit(c, case))
        before = edited.read_bytes()
        for args in ([*validate, str(edited)], ["extrapolate", str(edited), "--lengths", "16"]):
            capsys.readouterr()
            assert main(args) == 2, args
            err = capsys.readouterr().err
            errors = [line for line in err.splitlines() if line.startswith("error:")]
            assert len(errors) == 1 and str(edited) in errors[0], err
            assert "does not match what was saved with it" in errors[0], err
            assert edited.read_bytes() == before


def _fit_edit(checkpoint: dict[str, Any], case: str) -> None:
    """An edit of a ``fit`` checkpoint of the probe's model (rope, softmax)."""
    settings = checkpoint["hyper_parameters"]
    if case == "a scheme option":
        settings["position_kwargs"] = {**(settings.get("position_kwargs") or {}), "base": 77.0}
    else:
        settings["attention_kwargs"] = {
            **(settings.get("attention_kwargs") or {}),
            "backend": "sdpa",
        }


#: case -> an edit of the record that breaks a rule of the architecture's table (not a
#: field's type or range), in a checkpoint written before the digest
RULE_EDITS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "a window with a kernel without windows": lambda s: s.update(
        attention="linear", attention_kwargs=None
    ),
    "first_norm false with post-norm blocks": lambda s: s.update(
        pre_norm=False, block={"mlp": "geglu", "first_norm": False}
    ),
    "a plan type naming an unknown scheme": lambda s: s["layer_plan"]["types"]["local"].update(
        position="no_such_scheme"
    ),
    "a score bias with a kernel that cannot take it": lambda s: s.update(
        position="t5", position_kwargs=None, attention="linear", attention_kwargs=None
    ),
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("case", list(RULE_EDITS))
def test_a_record_that_breaks_a_rule_is_refused_by_every_reader_with_the_rules_line(
    saved, tmp_path, case, reader
):
    """Before, ``read_checkpoint`` and ``model.pretrained`` checked the record's fields
    alone and let these through (validate, resume and finetune then failed later, in
    another line); every reader now refuses them with the rule table's own line."""
    checkpoint = torch.load(saved, weights_only=True)
    del checkpoint[DIGEST_KEY]  # as every version before the digest wrote it
    RULE_EDITS[case](checkpoint["hyper_parameters"])
    path = tmp_path / "edited.ckpt"
    torch.save(checkpoint, path)
    before = path.read_bytes()
    with pytest.raises(ConfigError) as rule:  # the table's own line for this record
        settings = checkpoint["hyper_parameters"]
        EncoderConfig.from_settings({k: settings[k] for k in ENCODER_FIELDS if k in settings})
    with pytest.raises(ConfigError) as refused:
        READERS[reader](path)
    message = str(refused.value)
    assert "\n" not in message, message
    assert str(rule.value) in message, message
    assert str(path) in message, message
    assert path.read_bytes() == before
