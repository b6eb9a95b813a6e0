"""``MaskedLM(model=EncoderConfig, training=TrainingConfig)`` and its flat spelling.

Oracles: the two dataclasses' own fields (names, types, defaults), an independently built
model from one seed, and a checkpoint written with flat ``hyper_parameters`` as every earlier
version wrote them.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from pathlib import Path

import pytest
import torch

from roformer_lit import EncoderConfig, MaskedLM, TrainingConfig
from roformer_lit.errors import ConfigError
from roformer_lit.module_arguments import FLAT_KEYS
from roformer_lit.validation import TRAINING_RULES

SMALL = {
    "position": "alibi",
    "vocab_size": 40,
    "hidden_size": 16,
    "num_layers": 2,
    "num_heads": 2,
    "intermediate_size": 32,
    "max_positions": 64,
}
TRAINING = {"learning_rate": 2e-3, "warmup_steps": 7, "init_std": 0.05, "lr_schedule": "wsd"}


def _built(seed: int = 0, **arguments) -> MaskedLM:
    torch.manual_seed(seed)
    return MaskedLM(**arguments)


def _same_weights(a: MaskedLM, b: MaskedLM) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert torch.equal(sa[key], sb[key]), key


@pytest.mark.parametrize("spelling", ["whole", "mapping", "mixed"])
def test_whole_and_flat_spellings_build_the_same_model(spelling):
    flat = _built(**SMALL, **TRAINING)
    if spelling == "whole":
        other = _built(model=EncoderConfig(**SMALL), training=TrainingConfig(**TRAINING))
    elif spelling == "mapping":
        other = _built(model=dict(SMALL), training=dict(TRAINING))
    else:  # the architecture whole, the training settings flat
        other = _built(model=EncoderConfig(**SMALL), **TRAINING)
    _same_weights(flat, other)
    assert dict(flat.hparams) == dict(other.hparams)
    assert other.config == EncoderConfig(**SMALL)
    assert other.training_config == TrainingConfig(**TRAINING)
    assert other.optimizer_settings.learning_rate == TRAINING["learning_rate"]
    assert other.warmup_steps(1000) == TRAINING["warmup_steps"]


def test_the_config_is_passed_whole_not_copied():
    config = EncoderConfig(**SMALL)
    model = MaskedLM(model=config)
    assert model.config is config


def test_hyper_parameters_are_flat_data_of_every_field():
    model = MaskedLM(model=EncoderConfig(**SMALL), training=TrainingConfig(**TRAINING))
    fields = [f.name for c in (EncoderConfig, TrainingConfig) for f in dataclasses.fields(c)]
    assert list(model.hparams) == fields
    for name in fields:
        expected = SMALL.get(name, TRAINING.get(name))
        if expected is not None:
            assert model.hparams[name] == expected, name


def test_the_flat_signature_is_the_two_dataclasses_fields():
    """What jsonargparse reads: each field once, typed and defaulted as in its dataclass."""
    parameters = inspect.signature(MaskedLM.__init__).parameters
    hints = typing.get_type_hints(MaskedLM.__init__)
    expected = []
    for config_class in (EncoderConfig, TrainingConfig):
        field_hints = typing.get_type_hints(config_class)
        for field in dataclasses.fields(config_class):
            expected.append(field.name)
            assert parameters[field.name].default == field.default, field.name
            assert hints[field.name] == field_hints[field.name], field.name
    assert [n for n in parameters if n != "self"] == expected
    assert list(FLAT_KEYS) == expected


def test_every_training_field_has_a_rule_and_every_rule_a_field():
    assert {f.name for f in dataclasses.fields(TrainingConfig)} == set(TRAINING_RULES)


@pytest.mark.parametrize("name", list(FLAT_KEYS))
def test_every_flat_key_has_help(name):
    """The ``--help`` of each ``--model.<key>`` comes from its dataclass's docstring."""
    import docstring_parser

    documented = {
        p.arg_name: p.description for p in docstring_parser.parse(MaskedLM.__doc__).params
    }
    assert documented.get(name), f"model.{name} has no help"


def test_a_section_given_whole_and_field_by_field_is_refused():
    with pytest.raises(TypeError, match=r"model= and its fields hidden_size"):
        MaskedLM(model=EncoderConfig(**SMALL), hidden_size=32)
    with pytest.raises(TypeError, match=r"training= and its fields learning_rate"):
        MaskedLM(training=TrainingConfig(), learning_rate=1e-3)


def test_an_unknown_argument_is_named_with_the_valid_ones():
    with pytest.raises(TypeError, match=r"hiden_size.*hidden_size"):
        MaskedLM(hiden_size=32)


@pytest.mark.parametrize(
    "make",
    [
        lambda: TrainingConfig(lr=1e-3),
        lambda: dataclasses.replace(TrainingConfig(), lr=1e-3),
        lambda: MaskedLM(model=EncoderConfig(**SMALL), training={"lr": 1e-3}),
    ],
    ids=["made", "replaced", "a mapping for MaskedLM"],
)
def test_a_field_training_has_not_is_one_config_error_naming_the_fields(make):
    """As EncoderConfig's (tests/test_encoder_config.py): it was Python's ``TypeError:
    TrainingConfig.__init__() got an unexpected keyword argument 'lr'``, naming no field."""
    with pytest.raises(ConfigError) as error:
        make()
    message = str(error.value)
    fields = ", ".join(f.name for f in dataclasses.fields(TrainingConfig))
    assert "\n" not in message and "'lr'" in message, message
    assert f"valid fields (model.<field>): {fields}" in message, message


def test_a_section_of_the_wrong_type_is_named():
    with pytest.raises(TypeError, match=r"model= must be a EncoderConfig"):
        MaskedLM(model="rope")


@pytest.mark.parametrize(
    ("training", "named"),
    [
        ({"learning_rate": -1.0}, "model.learning_rate"),
        ({"lr_schedule": "cosine"}, "model.lr_schedule"),
    ],
)
def test_a_bad_training_setting_is_one_config_error_line_either_way(training, named):
    for call in (lambda: TrainingConfig(**training), lambda: MaskedLM(**training)):
        with pytest.raises(ConfigError, match=named) as info:
            call()
        assert "\n" not in str(info.value)


@pytest.mark.trainer
def test_a_flat_checkpoint_loads_into_the_typed_module(tmp_path: Path):
    """A checkpoint whose hyper_parameters are flat (every version's) loads, and the loaded
    module's two configs equal the ones it was saved from."""
    import lightning as L

    model = _built(model=EncoderConfig(**SMALL), training=TrainingConfig(**TRAINING))
    trainer = L.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False)
    trainer.strategy.connect(model)
    path = tmp_path / "flat.ckpt"
    trainer.save_checkpoint(path)
    saved = torch.load(path, weights_only=True)["hyper_parameters"]
    assert set(saved) == set(FLAT_KEYS)
    loaded = MaskedLM.from_checkpoint(path)
    assert loaded.config == model.config
    assert loaded.training_config == model.training_config
    _same_weights(model, loaded)


def test_hyper_parameters_are_plain_yaml_data():
    """A safe YAML loader reads them back (hparams.yaml, TensorBoard's hparams tab): the
    betas pair is saved as a list and read back as the config's pair."""
    import yaml

    model = MaskedLM(**SMALL, betas=(0.8, 0.9))
    saved = yaml.safe_load(yaml.dump(dict(model.hparams)))
    assert saved["betas"] == [0.8, 0.9]
    assert MaskedLM(**saved).training_config.betas == (0.8, 0.9)


@pytest.fixture
def saved_checkpoint(tmp_path: Path) -> tuple[MaskedLM, Path]:
    """A module of :data:`SMALL` saved as the trainer saves it (no training)."""
    import lightning as L

    model = _built(model=EncoderConfig(**SMALL), training=TrainingConfig(**TRAINING))
    trainer = L.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False)
    trainer.strategy.connect(model)
    path = tmp_path / "saved.ckpt"
    trainer.save_checkpoint(path)
    return model, path


@pytest.mark.trainer
@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ({"learning_rat": 1e-4}, "has no setting(s) 'learning_rat'"),
        ({"hidden": 32}, "has no setting(s) 'hidden'"),
        ({"dropout": 0.0}, "cannot change the checkpoint's architecture (model.dropout"),
        ({"position": "rope"}, "cannot change the checkpoint's architecture (model.position"),
    ],
)
def test_load_from_checkpoint_refuses_a_key_it_would_drop_or_misread(
    saved_checkpoint, override, expected
):
    """A misspelt key was dropped by Lightning without a word (the checkpoint's own learning
    rate loaded); an architecture field was refused as 'checkpoint ... is damaged: ...
    edited after it was written', blaming an intact file."""
    _, path = saved_checkpoint
    with pytest.raises(ConfigError) as error:
        MaskedLM.load_from_checkpoint(path, **override)
    message = str(error.value)
    training = ", ".join(f.name for f in dataclasses.fields(TrainingConfig))
    assert "\n" not in message and expected in message, message
    assert f"the settings it may replace: {training}" in message, message


@pytest.mark.trainer
def test_load_from_checkpoint_replaces_a_training_setting(saved_checkpoint):
    model, path = saved_checkpoint
    loaded = MaskedLM.load_from_checkpoint(path, learning_rate=TRAINING["learning_rate"] / 4)
    assert loaded.training_config.learning_rate == TRAINING["learning_rate"] / 4
    assert loaded.config == model.config
    _same_weights(model, loaded)
