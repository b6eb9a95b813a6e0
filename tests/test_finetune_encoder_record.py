"""A fine-tuned checkpoint records the encoder it was fine-tuned from (the pretraining
checkpoint's architecture record and its digest), and every load of it compares that with
the encoder rebuilt from ``model.pretrained``
(:func:`~roformer_lit.finetune.encoder_record.check_encoder_record`).

Before the record, a pretrained checkpoint of another scheme without weights (``rope`` ->
``nope``: the same shapes, so every weight loads) was refused by ``finetune validate`` only
while the recorded pretrained file still existed: once it was gone (or replaced at its
path), validate printed another model's metrics and a resume trained another model, exit 0.
A checkpoint written before the record (none in it) loads as before."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from cli_helpers import CONFIGS, fit_preempted, overridden, refused_unchanged
from finetune_helpers import QUIET, keyword_rows, pretrained_checkpoint, write_csv

from roformer_lit.commands import EXIT_PREEMPTED, main
from roformer_lit.data.stored_tokenizer import TOKENIZER_KEY
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.encoder_record import (
    check_encoder_record,
    encoder_record,
    write_encoder_record,
)
from roformer_lit.finetune.module import SequenceClassifier
from roformer_lit.training.architecture_digest import (
    DIGEST_KEY,
    ENCODER_DIGEST_KEY,
    ENCODER_RECORD_KEY,
    architecture_digest,
)
from roformer_lit.training.checkpoint_io import read_checkpoint

RUN = Path("runs") / "finetune" / "stopped"
CKPT = RUN / "checkpoints" / "last.ckpt"
#: The pretrained checkpoint as the fine-tune was given it (and records it): relative, so
#: a copy of the work directory is a whole world of its own.
RECORDED = Path("pretrained") / "last.ckpt"
ROPE = "position: rope (fine-tuned) vs nope (given)"


# -- the comparison ------------------------------------------------------------------------

#: case -> (the given encoder's changes from the recorded one, training (a resume),
#: the refusal's words or None: accepted)
COMPARED: dict[str, tuple[dict[str, Any], bool, str | None]] = {
    "the_same": ({}, False, None),
    "the_same_resumed": ({}, True, None),
    "another_scheme": ({"position": "nope"}, False, ROPE),
    "another_kernel": ({"attention": "linear"}, False, "attention: softmax (fine-tuned)"),
    "another_scheme_option": (
        {"position_kwargs": {"base": 100.0}},
        False,
        'position_kwargs: null (fine-tuned) vs {"base": 100.0} (given)',
    ),
    "two_fields": ({"position": "nope", "pre_norm": True}, False, f"{ROPE}; pre_norm: false"),
    "another_dropout_evaluated": ({"dropout": 0.3}, False, None),
    "another_dropout_resumed": ({"dropout": 0.3}, True, "dropout: 0.1 (fine-tuned) vs 0.3"),
}


@pytest.mark.parametrize("case", list(COMPARED))
def test_the_recorded_encoder_must_be_the_one_built(case):
    changes, training, expected = COMPARED[case]
    ran = EncoderConfig(hidden_size=32, num_heads=2, intermediate_size=64, num_layers=1)
    checkpoint: dict[str, Any] = {"hyper_parameters": {"pretrained": "pre.ckpt"}}
    write_encoder_record(checkpoint, ran)
    given = ran.replace(**changes)
    if expected is None:
        check_encoder_record(checkpoint, given, "ft.ckpt", "other.ckpt", training)
        return
    with pytest.raises(ConfigError) as info:
        check_encoder_record(checkpoint, given, "ft.ckpt", "other.ckpt", training)
    message = str(info.value)
    assert "\n" not in message and expected in message, message
    assert "other.ckpt" in message and "ft.ckpt" in message and "pre.ckpt" in message, message


#: case -> (edit of a checkpoint holding a record, the refusal's words)
DAMAGED: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "record_edited": (
        lambda c: c[ENCODER_RECORD_KEY].update(position="nope"),
        "is damaged: its record of the encoder",
    ),
    "digest_gone": (lambda c: c.pop(ENCODER_DIGEST_KEY), "is damaged: its record"),
    "record_gone": (lambda c: c.pop(ENCODER_RECORD_KEY), "is damaged: its record"),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_an_edited_record_is_refused_by_the_reader(case, tmp_path):
    edit, expected = DAMAGED[case]
    checkpoint: dict[str, Any] = {"hyper_parameters": {"pretrained": "p"}, "state_dict": {}}
    write_encoder_record(checkpoint, EncoderConfig())
    edit(checkpoint)
    path = tmp_path / "ft.ckpt"
    torch.save(checkpoint, path)
    with pytest.raises(ConfigError) as info:
        read_checkpoint(path)
    assert expected in str(info.value) and "\n" not in str(info.value), info.value


# -- the command line ----------------------------------------------------------------------


def _edited(source: Path, target: Path, **changes: Any) -> None:
    """``target``: a copy of the pretrained ``source`` whose architecture has ``changes``,
    resealed (a checkpoint as fit would write it for that model, the same weights)."""
    checkpoint = dict(read_checkpoint(source))
    checkpoint["hyper_parameters"] = dict(checkpoint["hyper_parameters"], **changes)
    config = EncoderConfig.from_settings(checkpoint["hyper_parameters"])
    checkpoint[DIGEST_KEY] = architecture_digest(config.as_dict())
    torch.save(checkpoint, target)


def _other_tokenizer(source: Path, target: Path) -> None:
    """``target``: a copy of the pretrained ``source`` whose tokenizer has two tokens' ids
    swapped (the same architecture and weights, other token ids)."""
    checkpoint = dict(read_checkpoint(source))
    holder = next(k for k, v in checkpoint.items() if isinstance(v, dict) and TOKENIZER_KEY in v)
    tokenizer = json.loads(checkpoint[holder][TOKENIZER_KEY])
    vocab = tokenizer["model"]["vocab"]
    vocab["error"], vocab["the"] = vocab["the"], vocab["error"]
    checkpoint[holder] = dict(checkpoint[holder], **{TOKENIZER_KEY: json.dumps(tokenizer)})
    torch.save(checkpoint, target)


def _command(subcommand: str, *extra: str, resume: bool = True) -> list[str]:
    """``finetune`` (a resume of the stopped run, unless not ``resume``) or ``finetune
    validate`` of its checkpoint, on the work directory's task files; ``extra`` replaces
    the defaults."""
    words = ["finetune"] if subcommand == "fit" else ["finetune", "validate"]
    defaults = [
        *words,
        "--config",
        str(CONFIGS / "finetune" / "local.yaml"),
        *(["--model.pretrained", str(RECORDED)] if subcommand == "fit" else []),
        *(["--data.train_files", "train.csv"] if subcommand == "fit" else []),
        "--data.val_files",
        "val.csv",
        "--data.batch_size",
        "16",
        "--trainer.max_epochs",
        "2",
        *QUIET,
    ]
    return overridden(defaults, [*(["--ckpt_path", str(CKPT)] if resume else []), *extra])


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local-task fine-tune of ``RECORDED`` (a rope run), preempted at step 2 of 4;
    ``nope.ckpt`` is the pretrained checkpoint as a nope run (the same shapes)."""
    work = tmp_path_factory.mktemp("finetune-encoder-record")
    pretrained = pretrained_checkpoint(tmp_path_factory)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        RECORDED.parent.mkdir()
        shutil.copy(pretrained, RECORDED)
        _edited(RECORDED, Path("nope.ckpt"), position="nope")
        _other_tokenizer(RECORDED, Path("other-tokenizer.ckpt"))
        write_csv(Path("train.csv"), keyword_rows(32, seed=1))
        write_csv(Path("val.csv"), keyword_rows(16, seed=2))
        fit = _command("fit", "--trainer.logger.init_args.version", "stopped", resume=False)
        assert fit_preempted(fit, 2) == EXIT_PREEMPTED
    assert (work / CKPT).is_file()
    return work


@pytest.fixture
def copy(work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the work directory, the current one."""
    target = tmp_path / "work"
    shutil.copytree(work, target, symlinks=True)
    monkeypatch.chdir(target)
    return target


def _recorded_gone() -> None:
    RECORDED.unlink()


def _recorded_replaced_by_nope() -> None:
    shutil.copy("nope.ckpt", RECORDED)


def _rewritten(edit: Callable[[dict[str, Any]], None]) -> None:
    """``CKPT`` rewritten with ``edit`` as a new file (the one read is memory-mapped)."""
    checkpoint = dict(read_checkpoint(CKPT))
    edit(checkpoint)
    torch.save(checkpoint, CKPT.with_suffix(".tmp"))
    os.replace(CKPT.with_suffix(".tmp"), CKPT)


def _record_edited() -> None:
    _rewritten(lambda c: c[ENCODER_RECORD_KEY].update(position="nope"))


#: case -> (what happened since the fine-tune, the command, the refusal's words)
REFUSED: dict[str, tuple[Callable[[], None], list[str], str]] = {
    "validate_typed_another_scheme_recorded_gone": (
        _recorded_gone,
        _command("validate", "--model.pretrained", "nope.ckpt"),
        ROPE,
    ),
    "validate_recorded_path_now_another_scheme": (
        _recorded_replaced_by_nope,
        _command("validate"),
        ROPE,
    ),
    "resume_recorded_path_now_another_scheme": (
        _recorded_replaced_by_nope,
        _command("fit"),
        ROPE,
    ),
    "validate_record_edited": (_record_edited, _command("validate"), "is damaged: its record"),
    "validate_recorded_path_now_another_tokenizer": (
        lambda: shutil.copy("other-tokenizer.ckpt", RECORDED),
        _command("validate"),
        "has changed since the fine-tune: its tokenizer",
    ),
}


@pytest.mark.trainer
@pytest.mark.parametrize("case", list(REFUSED))
def test_another_encoder_than_the_recorded_is_refused(case, copy, capsys):
    """One ``error:`` line naming each differing field (or the damaged record), exit 2,
    nothing under runs/ changed (no evaluation appended, no checkpoint rewritten)."""
    happened, argv, expected = REFUSED[case]
    happened()
    line = refused_unchanged(copy, capsys, argv)
    assert expected in line, line


def _stripped() -> None:
    """The checkpoint as a fine-tune before the record wrote it."""
    _rewritten(lambda c: [c.pop(ENCODER_RECORD_KEY), c.pop(ENCODER_DIGEST_KEY)])


def _recorded_moved() -> None:
    RECORDED.rename("copy.ckpt")


#: case -> (what happened since the fine-tune, the command)
ACCEPTED: dict[str, tuple[Callable[[], None], list[str]]] = {
    "validate_the_recorded": (lambda: None, _command("validate")),
    "validate_a_copy_recorded_gone": (
        _recorded_moved,
        _command("validate", "--model.pretrained", "copy.ckpt"),
    ),
    "validate_a_checkpoint_without_the_record": (_stripped, _command("validate")),
    "resume_with_the_recorded": (lambda: None, _command("fit")),
}


@pytest.mark.trainer
@pytest.mark.parametrize("case", list(ACCEPTED))
def test_the_record_is_the_pretrained_ones_and_its_encoder_loads(case, copy, capsys):
    """The fine-tuned checkpoint holds the pretraining checkpoint's architecture record and
    its digest; the encoder it records (or, in a checkpoint written before the record, the
    recorded one) loads, and a resume records it again."""
    checkpoint = read_checkpoint(CKPT)
    pretrained = read_checkpoint(RECORDED)
    config = EncoderConfig.from_settings(pretrained["hyper_parameters"])
    assert checkpoint[ENCODER_RECORD_KEY] == encoder_record(config)
    assert checkpoint[ENCODER_DIGEST_KEY] == pretrained[DIGEST_KEY]
    happened, argv = ACCEPTED[case]
    happened()
    assert main(argv) == 0, capsys.readouterr().err[-2000:]
    if argv[1] != "validate":
        assert read_checkpoint(CKPT)[ENCODER_DIGEST_KEY] == pretrained[DIGEST_KEY]


@pytest.mark.trainer
def test_loading_in_python_refuses_another_encoder_at_the_recorded_path(copy):
    """``SequenceClassifier.load_from_checkpoint`` (no CLI) rebuilds the encoder from the
    recorded path: the record is compared there too (``load_run_state``)."""
    assert isinstance(SequenceClassifier.load_from_checkpoint(CKPT), SequenceClassifier)
    _recorded_replaced_by_nope()
    with pytest.raises(ConfigError) as info:
        SequenceClassifier.load_from_checkpoint(CKPT)
    assert ROPE in str(info.value), info.value


@pytest.mark.trainer
def test_loading_in_python_refuses_a_setting_the_classifier_has_not(copy):
    """``SequenceClassifier.load_from_checkpoint(CKPT, learning_rat=...)`` loaded without a
    word with the checkpoint's own rate (Lightning drops a key a signature without
    ``**kwargs`` has not); the key the classifier has is replaced as before."""
    with pytest.raises(ConfigError) as info:
        SequenceClassifier.load_from_checkpoint(CKPT, learning_rat=1e-5)
    message = str(info.value)
    assert "\n" not in message and "has no setting(s) 'learning_rat'" in message, message
    assert "the settings it may replace: pretrained, num_labels" in message, message
    loaded = SequenceClassifier.load_from_checkpoint(CKPT, learning_rate=1e-5)
    assert loaded.optimizer_settings.learning_rate == 1e-5
