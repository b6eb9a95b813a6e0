"""``finetune validate --model.pretrained``: a typed pretrained checkpoint other than the
run's recorded one builds the classifier and tokenizes the task, so it must be the run's
(:func:`~roformer_lit.finetune.pretrained.check_validated_pretrained`). Another scheme
with weights of other shapes was a traceback, another tokenizer or a scheme without weights
(rope -> nope) a wrong accuracy with exit 0."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from finetune_helpers import pretrained_checkpoint

from roformer_lit.data.stored_tokenizer import TOKENIZER_KEY
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.pretrained import check_validated_pretrained
from roformer_lit.training.architecture_digest import DIGEST_KEY, architecture_digest
from roformer_lit.training.checkpoint_io import read_checkpoint


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pretrained_checkpoint(tmp_path_factory)


def _load(path: Path) -> dict[str, Any]:
    return dict(read_checkpoint(path))


def _tokenizer_holder(checkpoint: dict[str, Any]) -> str:
    return next(k for k, v in checkpoint.items() if isinstance(v, dict) and TOKENIZER_KEY in v)


def _other_tokenizer(c: dict[str, Any]) -> None:
    """Two tokens' ids swapped: the same size, other ids."""
    holder = _tokenizer_holder(c)
    tokenizer = json.loads(c[holder][TOKENIZER_KEY])
    vocab = tokenizer["model"]["vocab"]
    a, b = list(vocab)[10:12]
    vocab[a], vocab[b] = vocab[b], vocab[a]
    c[holder] = dict(c[holder], **{TOKENIZER_KEY: json.dumps(tokenizer)})


def _other_scheme(c: dict[str, Any]) -> None:
    """``nope`` instead of ``rope``: no position weights either, so the same shapes."""
    c["hyper_parameters"] = dict(c["hyper_parameters"], position="nope")
    config = EncoderConfig.from_settings(c["hyper_parameters"])
    c[DIGEST_KEY] = architecture_digest(config.as_dict())


def _same(c: dict[str, Any]) -> None:
    """A byte-for-byte copy elsewhere (the run's checkpoint moved)."""


#: case -> (edit of the typed copy, whether the recorded checkpoint is still there,
#: whether the fine-tuned weights are reshaped, the refusal's words or None: accepted)
CASES: dict[str, tuple[Callable[[dict[str, Any]], None], bool, bool, str | None]] = {
    "a_copy": (_same, True, False, None),
    "a_copy_recorded_gone": (_same, False, False, None),
    "another_tokenizer": (_other_tokenizer, True, False, "tokenizer is not the one"),
    "another_tokenizer_recorded_gone": (_other_tokenizer, False, False, "tokenizer"),
    "another_scheme_same_shapes": (_other_scheme, True, False, "model.position='nope'"),
    "other_weight_shapes_recorded_gone": (_same, False, True, "encoder weights differ"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_typed_pretrained_must_be_the_runs(case, pretrained, tmp_path):
    edit, recorded_there, reshaped, expected = CASES[case]
    source = _load(pretrained)
    typed = _load(pretrained)
    edit(typed)
    typed_path = tmp_path / "typed.ckpt"
    torch.save(typed, typed_path)
    recorded = pretrained if recorded_there else tmp_path / "gone" / "last.ckpt"
    weights = {k: v for k, v in source["state_dict"].items() if k.startswith("encoder.")}
    if reshaped:
        key = next(iter(weights))
        weights[key] = torch.zeros(*weights[key].shape, 2)
    finetuned = {
        "hyper_parameters": {"pretrained": str(recorded)},
        "state_dict": weights,
        "TaskDataModule": {TOKENIZER_KEY: source[_tokenizer_holder(source)][TOKENIZER_KEY]},
    }
    if expected is None:
        check_validated_pretrained("ft.ckpt", finetuned, str(typed_path))
        return
    with pytest.raises(ConfigError) as info:
        check_validated_pretrained("ft.ckpt", finetuned, str(typed_path))
    message = str(info.value)
    assert "\n" not in message and expected in message and str(typed_path) in message, message


#: case -> (edit of the file at the recorded path since the fine-tune, whether the
#: fine-tuned weights are reshaped, the refusal's words)
REPLACED: dict[str, tuple[Callable[[dict[str, Any]], None], bool, str]] = {
    "another_tokenizer": (_other_tokenizer, False, "has changed since the fine-tune: its token"),
    "other_weight_shapes": (_same, True, "has changed since the fine-tune: its encoder weights"),
}


@pytest.mark.parametrize("case", list(REPLACED))
def test_the_recorded_pretrained_replaced_since_is_refused(case, pretrained, tmp_path):
    """The file at the recorded path (not typed) replaced since the fine-tune by another
    tokenizer's run was evaluated through other token ids, exit 0 (with a note blaming the
    task files); it is held to the same rules as a typed one."""
    edit, reshaped, expected = REPLACED[case]
    source = _load(pretrained)
    replaced = _load(pretrained)
    edit(replaced)
    path = tmp_path / "last.ckpt"
    torch.save(replaced, path)
    weights = {k: v for k, v in source["state_dict"].items() if k.startswith("encoder.")}
    if reshaped:
        key = next(iter(weights))
        weights[key] = torch.zeros(*weights[key].shape, 2)
    finetuned = {
        "hyper_parameters": {"pretrained": str(path)},
        "state_dict": weights,
        "TaskDataModule": {TOKENIZER_KEY: source[_tokenizer_holder(source)][TOKENIZER_KEY]},
    }
    with pytest.raises(ConfigError) as info:
        check_validated_pretrained("ft.ckpt", finetuned, str(path))
    message = str(info.value)
    assert "\n" not in message and expected in message and str(path) in message, message
