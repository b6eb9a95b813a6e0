"""A checkpoint whose records were edited by hand (``torch.load``, change, ``torch.save``)
is refused in one line by the one reader of checkpoints
(:func:`roformer_lit.training.checkpoint_io.read_checkpoint`), before any command uses
them: a ``global_step`` or ``skipped_batches`` that is a string failed mid-run with a
traceback, ``hyper_parameters`` that are a list crashed ``validate``, and
``hyper_parameters`` that are None, or lack ``num_heads``, were silently replaced by the
command's config (same tensor shapes, other numbers).

Builds no Trainer (fast tier): every refusal comes before anything is built."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from roformer_lit.commands import main
from roformer_lit.errors import ConfigError
from roformer_lit.training.checkpoint_io import PRETRAINING, read_checkpoint

#: A pretraining checkpoint's records as fit writes them (the weights do not matter here).
GOOD = {
    "epoch": 1,
    "global_step": 2,
    "state_dict": {"encoder.word_embeddings.weight": torch.zeros(19, 8)},
    "hyper_parameters": {
        "position": "rope",
        "attention": "softmax",
        "vocab_size": 19,
        "hidden_size": 8,
        "num_layers": 1,
        "num_heads": 2,
        "intermediate_size": 16,
    },
    "datamodule_hyper_parameters": {"probe": "copy", "max_length": 33},
    "best_val_loss": 2.5,
    "skipped_batches": 0,
    "trainer_settings": {"max_steps": 2},
    "schedule_steps": 2,
}


def _set(key, value):
    return lambda checkpoint: checkpoint.__setitem__(key, value)


def _drop_setting(key):
    return lambda checkpoint: checkpoint["hyper_parameters"].pop(key)


#: case -> (the edit, what the one line names).
DAMAGED = {
    "global_step a string": (_set("global_step", "abc"), "global_step record is 'abc'"),
    "global_step negative": (_set("global_step", -1), "global_step record is -1"),
    "global_step a bool": (_set("global_step", True), "global_step record is True"),
    "epoch a float": (_set("epoch", 1.5), "epoch record is 1.5"),
    "skipped_batches a string": (_set("skipped_batches", "abc"), "skipped_batches"),
    "best_val_loss a string": (_set("best_val_loss", "abc"), "best_val_loss record is 'abc'"),
    "hyper_parameters a list": (_set("hyper_parameters", [1, 2]), "hyper_parameters record"),
    "hyper_parameters None": (_set("hyper_parameters", None), "hyper_parameters record is None"),
    "datamodule settings a list": (
        _set("datamodule_hyper_parameters", [1]),
        "datamodule_hyper_parameters record is [1]",
    ),
    "max_steps a string": (
        _set("trainer_settings", {"max_steps": "many"}),
        "trainer_settings record is {'max_steps': 'many'}",
    ),
    "trainer settings a list": (_set("trainer_settings", [2]), "trainer_settings record is [2]"),
    "schedule_steps zero": (_set("schedule_steps", 0), "schedule_steps record is 0"),
    "architecture digest a number": (
        _set("architecture_digest", 12),
        "architecture_digest record is 12, not 'sha256:' and 64 hexadecimal digits",
    ),
    # a fine-tune's digest of the weights it started from, read by the sweep's check of a
    # retrained pretrained checkpoint: a hand-edited non-text value read as no record
    "pretrained weights digest a number": (
        _set("pretrained_encoder_weights_digest", 12),
        "pretrained_encoder_weights_digest record is 12, not 'sha256:'",
    ),
    "pretrained weights digest truncated": (
        _set("pretrained_encoder_weights_digest", "sha256:abc"),
        "pretrained_encoder_weights_digest record is 'sha256:abc'",
    ),
    "num_heads missing": (_drop_setting("num_heads"), "lack num_heads"),
    "position missing": (_drop_setting("position"), "lack position"),
    "no hyper_parameters": (lambda c: c.pop("hyper_parameters"), "no hyper_parameters record"),
    # a setting this version does not know (a newer version's, or edited in): loading
    # without it would build another model than the one the weights trained, in silence
    "an unknown setting": (
        lambda c: c["hyper_parameters"].update(rotary_dim=4),
        "records model setting(s) 'rotary_dim', which this version",
    ),
    # values of another type: validate and resume read them through the command line's
    # parser, which turned '8' and 2.0 into 8 and 2 (exit 0) where extrapolate refused
    "hidden_size a string": (
        lambda c: c["hyper_parameters"].update(hidden_size="8"),
        "model.hidden_size must be an integer in 1..2147483647, got '8'",
    ),
    "num_heads a float": (
        lambda c: c["hyper_parameters"].update(num_heads=2.0),
        "model.num_heads must be an integer in 1..2147483647, got 2.0",
    ),
    "pre_norm an int": (
        lambda c: c["hyper_parameters"].update(pre_norm=1),
        "model.pre_norm must be true or false, got 1",
    ),
    "learning_rate a string": (
        lambda c: c["hyper_parameters"].update(learning_rate="1e-3"),
        "model.learning_rate must be > 0 and finite, got '1e-3'",
    ),
    "an unknown block-like setting": (
        lambda c: c["hyper_parameters"].update(model={"hidden_size": 8}),
        "records model setting(s) 'model'",
    ),
}


def _write(tmp_path: Path, edit=None) -> Path:
    checkpoint = {k: (dict(v) if isinstance(v, dict) else v) for k, v in GOOD.items()}
    if edit is not None:
        edit(checkpoint)
    path = tmp_path / "edited.ckpt"
    torch.save(checkpoint, path)
    return path


def test_the_records_as_fit_writes_them_are_read(tmp_path):
    checkpoint = read_checkpoint(_write(tmp_path), kind=PRETRAINING)
    assert checkpoint["global_step"] == 2


@pytest.mark.parametrize("case", list(DAMAGED))
def test_an_edited_record_is_refused_in_one_line(tmp_path, case):
    edit, named = DAMAGED[case]
    path = _write(tmp_path, edit)
    with pytest.raises(ConfigError) as refused:
        read_checkpoint(path, kind=PRETRAINING)
    message = str(refused.value)
    assert "\n" not in message and str(path) in message and named in message, message


def test_lightnings_own_records_in_hyper_parameters_are_not_settings(tmp_path):
    """Earlier checkpoints hold LightningCLI's ``_instantiator`` beside the settings."""
    edit = lambda c: c["hyper_parameters"].update(_instantiator="lightning.pytorch.cli.x")  # noqa: E731
    assert read_checkpoint(_write(tmp_path, edit), kind=PRETRAINING)["global_step"] == 2


def test_a_fine_tuning_checkpoint_needs_no_architecture_record(tmp_path):
    """Fine-tuning's hyper_parameters are its own (the pretrained checkpoint names the
    encoder): only the types of the records are checked."""
    path = _write(tmp_path, _set("hyper_parameters", {"pretrained": "x.ckpt"}))
    assert read_checkpoint(path)["hyper_parameters"] == {"pretrained": "x.ckpt"}


@pytest.mark.parametrize(
    "command",
    [
        ["extrapolate", "{ckpt}", "--lengths", "16"],
        ["export", "--ckpt_path", "{ckpt}", "--out", "{out}"],
        pytest.param(  # LightningCLI reads the Trainer's signature: not in the fast tier
            ["validate", "--config", "configs/probes/copy.yaml", "--ckpt_path", "{ckpt}"],
            marks=pytest.mark.trainer,
        ),
    ],
    ids=["extrapolate", "export", "validate"],
)
@pytest.mark.parametrize(
    "case",
    [
        "global_step a string",
        "hyper_parameters a list",
        "num_heads missing",
        "an unknown setting",
        "num_heads a float",
    ],
)
def test_every_command_refuses_an_edited_record_in_one_line(tmp_path, capsys, command, case):
    path = _write(tmp_path, DAMAGED[case][0])
    root = Path(__file__).resolve().parents[1]
    args = [
        a.format(ckpt=path, out=tmp_path / "hf")
        if "{" in a
        else (str(root / a) if a.endswith(".yaml") else a)
        for a in command
    ]
    capsys.readouterr()
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(path) in errors[0] and DAMAGED[case][1] in errors[0], err
    assert not (tmp_path / "hf").exists()


@pytest.mark.parametrize(
    "case", ["an unknown setting", "num_heads a float", "hidden_size a string", "num_heads missing"]
)
def test_finetuning_refuses_a_pretrained_checkpoint_with_an_edited_architecture(tmp_path, case):
    """``finetune --model.pretrained`` reads a pretraining checkpoint too: its recorded
    architecture is checked as every other reader checks it (an unknown setting was
    dropped without a word), the line led by ``model.pretrained``."""
    from roformer_lit.finetune.pretrained import read_pretrained

    edit, named = DAMAGED[case]
    path = _write(tmp_path, edit)
    with pytest.raises(ConfigError) as refused:
        read_pretrained(path)
    message = str(refused.value)
    assert message.startswith("model.pretrained: ") and "\n" not in message, message
    assert str(path) in message and named in message, message


def test_the_settings_a_checkpoint_may_record_are_the_flat_keys():
    """The reader's list of known settings (the two rule tables) is the alias table."""
    from roformer_lit.encoder_config import model_settings
    from roformer_lit.module_arguments import FLAT_KEYS

    assert model_settings() == list(FLAT_KEYS)
