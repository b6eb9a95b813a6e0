"""Two spellings of one model are one ``EncoderConfig``: equal, one hash, one digest.

``block={mlp: swiglu}`` and the same block with a default written out
(``norm: layernorm``), ``attention_kwargs={}`` and None, a scheme or kernel option written
at its default and left out, ``dropout: 0`` and ``0.0``, a scheme option ``100`` and
``100.0``, an ``attention_dropout`` equal to ``dropout`` and none: each pair builds the very same network, but the configs compared unequal (or equal
with another checkpoint digest), so a Hugging Face export then import gave back an
unequal config with the same logits. The config now holds each field in one spelling
(:func:`~roformer_lit.encoder_config.canonical_fields`).

A checkpoint written before (its ``block`` as it was written, sealed so) still loads, and
every place that compares a recorded architecture with another compares the spellings
the config holds: a resumed run's typed settings, a sweep's finished run, ``compare``'s
variants, a fine-tune's record of its encoder and a sweep's check that the pretrained
checkpoint is unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning
import pytest
import torch

from roformer_lit.commands.checkpoint_settings import SAME_BY
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.finetune.encoder_record import check_encoder_record
from roformer_lit.module import MaskedLM
from roformer_lit.results.compare.variants import variant_labels
from roformer_lit.sweep.finished import first_difference
from roformer_lit.training.architecture_digest import (
    DIGEST_KEY,
    ENCODER_DIGEST_KEY,
    ENCODER_RECORD_KEY,
    architecture_digest,
    architecture_record,
    record_digest,
)
from roformer_lit.training.checkpoint_io import PRETRAINING, read_checkpoint

SMALL = dict(vocab_size=19, hidden_size=8, num_layers=2, num_heads=2, intermediate_size=16)

#: case -> (fields, the same fields spelled otherwise): each pair builds one network.
SPELLINGS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # every option of model.block written at BERT's value, beside one that is not
    "block.mlp": ({"block": {"norm": "rmsnorm"}}, {"block": {"norm": "rmsnorm", "mlp": "gelu"}}),
    "block.norm": (
        {"block": {"mlp": "swiglu"}},
        {"block": {"mlp": "swiglu", "norm": "layernorm"}},
    ),
    "block.norm_bias layernorm": (
        {"block": {"mlp": "geglu"}},
        {"block": {"mlp": "geglu", "norm_bias": True}},
    ),
    "block.norm_bias rmsnorm": (
        {"block": {"norm": "rmsnorm"}},
        {"block": {"norm": "rmsnorm", "norm_bias": False}},
    ),
    "block.linear_bias": (
        {"block": {"mlp": "geglu"}},
        {"block": {"mlp": "geglu", "linear_bias": True}},
    ),
    "block.first_norm": (
        {"pre_norm": True, "block": {"mlp": "geglu"}},
        {"pre_norm": True, "block": {"mlp": "geglu", "first_norm": True}},
    ),
    "block at BERT's": ({"block": None}, {"block": {"mlp": "gelu", "norm": "layernorm"}}),
    "block empty": ({"block": None}, {"block": {}}),
    "position_kwargs empty": ({"position_kwargs": None}, {"position_kwargs": {}}),
    "attention_kwargs empty": ({"attention_kwargs": None}, {"attention_kwargs": {}}),
    "a scheme option's number": (
        {"position_kwargs": {"base": 100.0}},
        {"position_kwargs": {"base": 100}},
    ),
    "a scheme option at its default": (
        {"position_kwargs": {"base": 100.0}},
        {"position_kwargs": {"base": 100.0, "rotary_fraction": 1.0}},
    ),
    "a kernel option at its default": (
        {"attention_kwargs": None},
        {"attention_kwargs": {"backend": "auto"}},
    ),
    "dropout's number": ({"dropout": 0.0}, {"dropout": 0}),
    "layer_norm_eps's number": ({"layer_norm_eps": 1.0}, {"layer_norm_eps": 1}),
    "attention_dropout as dropout": (
        {"dropout": 0.2, "attention_dropout": None},
        {"dropout": 0.2, "attention_dropout": 0.2},
    ),
}


def _pair(case: str) -> tuple[EncoderConfig, EncoderConfig]:
    one, other = SPELLINGS[case]
    return EncoderConfig(**SMALL, **one), EncoderConfig(**SMALL, **other)


@pytest.mark.parametrize("case", list(SPELLINGS))
def test_two_spellings_of_one_model_are_one_config(case):
    one, other = _pair(case)
    models = []
    for config in (one, other):
        torch.manual_seed(0)
        models.append(MaskedLM(model=config).state_dict())
    # the same network, weight for weight: the premise of the case
    assert models[0].keys() == models[1].keys()
    assert all(torch.equal(models[0][k], models[1][k]) for k in models[0])
    assert one == other
    assert hash(one) == hash(other)
    assert architecture_digest(one.as_dict()) == architecture_digest(other.as_dict())


@pytest.mark.parametrize("case", ["block.mlp", "block.norm_bias rmsnorm"])
def test_the_config_of_a_block_given_as_its_options_is_the_one_of_its_mapping(case):
    one, other = _pair(case)
    assert EncoderConfig(**SMALL, block=other.block_options) == one


# -- records written before: a checkpoint's block as it was written -------------------------

WRITTEN = {"mlp": "swiglu", "norm": "layernorm", "norm_bias": True, "first_norm": True}
HELD = {"mlp": "swiglu"}


def _earlier_checkpoint(path: Path) -> Path:
    """A pretraining checkpoint as the version before wrote it: ``block`` recorded as
    written (:data:`WRITTEN`), sealed by the digest of that record."""
    torch.manual_seed(0)
    model = MaskedLM(**SMALL, block=WRITTEN)
    settings = {**dict(model.hparams), "block": dict(WRITTEN)}
    checkpoint: dict[str, Any] = {
        "pytorch-lightning_version": lightning.__version__,
        "epoch": 0,
        "global_step": 1,
        "state_dict": model.state_dict(),
        "hyper_parameters": settings,
    }
    model.save_run_state(checkpoint)
    checkpoint[DIGEST_KEY] = architecture_digest(settings)  # what it was sealed with
    torch.save(checkpoint, path)
    return path


def test_an_earlier_checkpoint_loads_as_the_model_a_new_run_of_its_settings_builds(tmp_path):
    path = _earlier_checkpoint(tmp_path / "earlier.ckpt")
    checkpoint = read_checkpoint(path, kind=PRETRAINING)
    assert checkpoint["hyper_parameters"]["block"] == WRITTEN  # read as it was written
    loaded = MaskedLM.from_checkpoint(path)
    new = EncoderConfig(**SMALL, block=HELD)
    assert loaded.config == new
    assert architecture_digest(loaded.config.as_dict()) == architecture_digest(new.as_dict())
    lightning_loaded = MaskedLM.load_from_checkpoint(path, weights_only=True)
    assert lightning_loaded.config == new


def test_a_resumed_run_typing_its_block_otherwise_is_the_same_run():
    recorded = {**SMALL, "block": WRITTEN}
    assert SAME_BY["model.block"]({**SMALL, "block": HELD}, recorded)
    assert not SAME_BY["model.block"]({**SMALL, "block": {"mlp": "geglu"}}, recorded)


def test_a_sweep_skips_a_finished_run_whose_block_it_writes_otherwise():
    ran = {"model": {**SMALL, "block": WRITTEN}, "seed_everything": 0}
    assert first_difference(ran, {"model": {**SMALL, "block": HELD}, "seed_everything": 0}) is None
    changed = first_difference(
        ran, {"model": {**SMALL, "block": {"mlp": "geglu"}}, "seed_everything": 0}
    )
    assert changed is not None and changed.startswith("model.block:")


def test_compare_makes_one_variant_of_two_spellings_of_one_block():
    runs = [
        {"position": "rope", "attention": "softmax", "block": WRITTEN},
        {"position": "rope", "attention": "softmax", "block": HELD},
        {"position": "rope", "attention": "softmax", "block": {"mlp": "geglu"}},
    ]
    labels = variant_labels(runs)
    assert labels[0] == labels[1] != labels[2]


def _earlier_finetune(config: EncoderConfig) -> dict[str, Any]:
    """A fine-tuned checkpoint's record of its encoder as the version before wrote it: the
    pretrained checkpoint's block as written."""
    record = {**architecture_record(config.as_dict()), "block": dict(WRITTEN)}
    return {
        "hyper_parameters": {"pretrained": "pre.ckpt"},
        ENCODER_RECORD_KEY: record,
        ENCODER_DIGEST_KEY: record_digest(record),
    }


@pytest.mark.parametrize("training", [False, True])
def test_an_earlier_finetune_loads_into_the_encoder_it_was_tuned_from(training):
    config = EncoderConfig(**SMALL, block=WRITTEN)
    check_encoder_record(_earlier_finetune(config), config, "ft.ckpt", "pre.ckpt", training)


def test_a_sweep_takes_an_earlier_finetune_of_the_pretrained_checkpoint_as_unchanged(tmp_path):
    from roformer_lit.finetune.pretrained_weights import (
        PRETRAINED_WEIGHTS_KEY,
        checkpoint_weights_digest,
    )
    from roformer_lit.sweep.pretrained_changed import check_pretrained_unchanged

    pretrained = _earlier_checkpoint(tmp_path / "pre.ckpt")
    run = tmp_path / "tuned"
    (run / "checkpoints").mkdir(parents=True)
    tuned = _earlier_finetune(EncoderConfig(**SMALL, block=HELD))
    tuned[PRETRAINED_WEIGHTS_KEY] = checkpoint_weights_digest(
        torch.load(pretrained, weights_only=True)
    )
    torch.save(tuned, run / "checkpoints" / "last.ckpt")
    check_pretrained_unchanged([("tuned", run, "skip", str(pretrained))])


@pytest.mark.trainer
def test_a_run_stopped_under_the_earlier_record_resumes_with_its_block_typed_either_way(
    tmp_path, monkeypatch, capsys
):
    """A run stopped before its end whose ``last.ckpt`` records ``block`` as written (the
    earlier version's record, sealed so) resumes with the block typed as a new run writes
    it, trains on and writes the record a new run of those settings writes."""
    from cli_helpers import fit_args, fit_preempted

    from roformer_lit.commands import EXIT_PREEMPTED, main

    monkeypatch.chdir(tmp_path)
    written = "{mlp: swiglu, norm: layernorm, norm_bias: true}"
    argv = fit_args("rope.yaml", 8, "--trainer.logger.init_args.version", "v")
    assert fit_preempted([*argv, "--model.block", written], 4) == EXIT_PREEMPTED
    (last,) = tmp_path.glob("runs/**/v/checkpoints/last.ckpt")
    checkpoint = torch.load(last, weights_only=True)
    settings = checkpoint["hyper_parameters"]
    assert settings["block"] == HELD  # what a run records now
    settings["block"] = {"mlp": "swiglu", "norm": "layernorm", "norm_bias": True}
    checkpoint[DIGEST_KEY] = architecture_digest(settings)  # as the earlier version sealed it
    torch.save(checkpoint, last)
    capsys.readouterr()
    assert main([*argv, "--model.block", "{mlp: swiglu}", "--ckpt_path", str(last)]) == 0
    assert "error" not in capsys.readouterr().err
    resumed = torch.load(last, weights_only=True)
    assert resumed["global_step"] == 8
    assert resumed["hyper_parameters"]["block"] == HELD
    new = EncoderConfig.from_settings(resumed["hyper_parameters"])
    assert resumed[DIGEST_KEY] == architecture_digest(new.as_dict())
