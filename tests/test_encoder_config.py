"""``EncoderConfig`` is the one source of the architecture's settings.

Every place that needs the architecture -- ``MaskedLM``'s arguments (the CLI's
``--model.*`` keys), the parsed command line, the checkpoint settings table, fine-tuning's
encoder, Hugging Face export and import -- has exactly the config's fields, so a field
added to the config shows up (or fails here) everywhere. Old flat checkpoints still load,
and a bad value is one line naming the valid ones.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from pathlib import Path

import pytest
import torch

from roformer_lit.commands.checkpoint_settings import (
    ARCHITECTURE_SETTINGS,
    CHECKPOINT_SETTINGS,
    MACHINE_SETTINGS,
    REFUSE,
    SET_THROUGH,
    checkpoint_settings,
)
from roformer_lit.commands.prelaunch import check_model
from roformer_lit.commands.pretrain import validate_config
from roformer_lit.encoder_config import ENCODER_FIELDS, EncoderConfig, encoder_defaults
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.pretrained import encoder_config, load_encoder
from roformer_lit.model import Encoder
from roformer_lit.module import MODEL_RULES, MaskedLM

REPO = Path(__file__).resolve().parents[1]

#: A valid value other than the default for every field: the tests below fail, naming the
#: field, until a new field has one here (and so until every consumer is checked with it).
CHANGED = {
    "position": "alibi",
    "attention": "softmax",  # the only kernel that takes every scheme: its default
    "vocab_size": 61,
    "hidden_size": 24,
    "num_layers": 3,
    "num_heads": 2,
    "intermediate_size": 40,
    "max_positions": 48,
    "dropout": 0.15,
    "attention_dropout": 0.05,
    "layer_norm_eps": 1e-6,
    "pre_norm": True,
    "position_kwargs": {"learnable_slopes": True},
    "attention_kwargs": {"backend": "sdpa"},
    "block": {"mlp": "geglu", "norm": "rmsnorm", "linear_bias": False},
    "layer_plan": {"pattern": ["local", "global", "global"], "types": {"local": {"window": 8}}},
}
#: Training settings of ``MaskedLM``: not architecture.
TRAINING = {
    "learning_rate",
    "weight_decay",
    "betas",
    "warmup_steps",
    "min_lr_ratio",
    "position_lr_scale",
    "lr_schedule",
    "decay_fraction",
    "init_std",
    "compile",
    "skip_nonfinite",
}


def test_every_field_has_a_changed_value_and_a_rule():
    assert set(CHANGED) == set(ENCODER_FIELDS)
    assert set(ENCODER_FIELDS) <= set(MODEL_RULES)
    defaults = encoder_defaults()
    for name, value in CHANGED.items():
        if name != "attention":
            assert value != defaults[name], name
    EncoderConfig(**CHANGED)  # valid together


def test_maskedlm_takes_each_field_flat_with_its_type_and_default():
    """The CLI's keys come from MaskedLM's signature: the fields, then training settings."""
    parameters = inspect.signature(MaskedLM.__init__).parameters
    hints = typing.get_type_hints(MaskedLM.__init__)
    field_hints = typing.get_type_hints(EncoderConfig)
    names = [n for n in parameters if n != "self"]
    assert names[: len(ENCODER_FIELDS)] == list(ENCODER_FIELDS)
    assert set(names[len(ENCODER_FIELDS) :]) == TRAINING
    for field in dataclasses.fields(EncoderConfig):
        assert parameters[field.name].default == field.default, field.name
        assert hints[field.name] == field_hints[field.name], field.name


@pytest.mark.trainer  # the parser reads the Trainer's signature
def test_the_parsed_command_line_has_every_field_as_a_model_key():
    config = validate_config(["--config", str(REPO / "configs" / "rope.yaml")], prelaunch=False)
    keys = set(config.model.keys())
    linked = {"vocab_size"}  # from the data module's tokenizer, not a key of its own
    assert keys == (set(ENCODER_FIELDS) - linked) | TRAINING


def test_maskedlm_builds_its_config_from_its_arguments():
    model = MaskedLM(**CHANGED, learning_rate=1e-3)
    assert model.config == EncoderConfig(**CHANGED)
    assert model.encoder.config is model.config
    assert {k: model.hparams[k] for k in ENCODER_FIELDS} == CHANGED  # saved flat
    assert MaskedLM.from_config(model.config).config == model.config


def test_the_checkpoint_table_has_a_row_per_field_and_refuses_a_new_one():
    rows = {k.split(".", 1)[1] for k in CHECKPOINT_SETTINGS if k.startswith("model.")}
    # a field the command sets through the data section has the data setting's row
    rows |= {k.split(".", 1)[1] for k, name in SET_THROUGH.items() if name in CHECKPOINT_SETTINGS}
    machine = {k.split(".", 1)[1] for k in MACHINE_SETTINGS if k.startswith("model.")}
    import inspect

    from roformer_lit.finetune.module import SequenceClassifier

    classifier = set(inspect.signature(SequenceClassifier.__init__).parameters) - {"self"}
    assert rows | machine == set(ENCODER_FIELDS) | TRAINING | classifier  # fine-tuning's too
    assert set(ARCHITECTURE_SETTINGS) <= set(ENCODER_FIELDS)
    shape = set(ENCODER_FIELDS) - set(ARCHITECTURE_SETTINGS) - machine
    assert {"position", "hidden_size", "num_layers", "block"} <= shape
    for name in shape:  # a typed shape setting under another run's weights: one line
        checkpoint = {"hyper_parameters": {name: "theirs"}}
        config = {"model": {name: "ours"}, "data": {}}
        with pytest.raises(ConfigError, match=f"model.{name}='ours'"):
            checkpoint_settings(checkpoint, config, {f"model.{name}"}, False, "run.ckpt")
        assert CHECKPOINT_SETTINGS[f"model.{name}"] == (REFUSE, REFUSE)


def test_finetuning_reads_every_field_of_the_checkpoint():
    checkpoint = {"hyper_parameters": {**CHANGED, "learning_rate": 0.1}}
    assert encoder_config(checkpoint) == EncoderConfig(**CHANGED)
    # a new hidden dropout; the attention dropout stays the run's
    tuned = encoder_config(checkpoint, dropout=0.0)
    assert (tuned.dropout, tuned.attention_dropout) == (0.0, 0.05)
    without = {"hyper_parameters": {**CHANGED, "attention_dropout": None}}
    tuned = encoder_config(without, dropout=0.0)
    assert (tuned.dropout, tuned.attention_dropout_value) == (0.0, 0.15)


# -- checkpoints of earlier versions ---------------------------------------------------------

#: ``hyper_parameters`` as versions before ``model.block`` and ``model.layer_plan`` (and the
#: schedules) saved them: flat, without those keys.
OLD_HPARAMS = {
    "position": "rope",
    "attention": "softmax",
    "vocab_size": 50,
    "hidden_size": 16,
    "num_layers": 2,
    "num_heads": 2,
    "intermediate_size": 32,
    "max_positions": 64,
    "dropout": 0.1,
    "attention_dropout": None,
    "layer_norm_eps": 1e-12,
    "pre_norm": False,
    "position_kwargs": {"base": 500.0},
    "attention_kwargs": None,
    "learning_rate": 5e-4,
    "weight_decay": 0.01,
    "betas": (0.9, 0.98),
    "warmup_steps": 10,
    "min_lr_ratio": 0.0,
    "init_std": 0.02,
    "compile": False,
}


def _old_checkpoint(tmp_path: Path) -> tuple[Path, dict[str, torch.Tensor]]:
    """A pretraining checkpoint as an earlier version wrote it (flat hyper_parameters
    without the newer keys), its weights those of a model of the same settings."""
    torch.manual_seed(0)
    weights = MaskedLM(**OLD_HPARAMS).state_dict()
    path = tmp_path / "old.ckpt"
    torch.save(
        {
            "epoch": 0,
            "global_step": 10,
            "pytorch-lightning_version": "2.4.0",
            "state_dict": weights,
            "hyper_parameters": dict(OLD_HPARAMS),
            "loops": {},
            "optimizer_states": [],
            "lr_schedulers": [],
        },
        path,
    )
    return path, weights


def test_an_old_flat_checkpoint_loads_with_the_new_fields_at_their_defaults(tmp_path):
    path, weights = _old_checkpoint(tmp_path)
    model = MaskedLM.from_checkpoint(path)
    expected = {name: OLD_HPARAMS.get(name, encoder_defaults()[name]) for name in ENCODER_FIELDS}
    assert model.config.as_dict() == expected
    assert model.config.block is None and model.config.layer_plan is None
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, weights[name]), name
    encoder = load_encoder(path)  # fine-tuning reads it too
    assert encoder.config == model.config
    assert torch.equal(encoder.word_embeddings.weight, weights["encoder.word_embeddings.weight"])


# -- bad values: one line naming the valid ones ------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"hidden_size": 0}, "model.hidden_size must be an integer in 1..2147483647, got 0"),
        ({"dropout": 1.0}, "model.dropout must be in [0, 1), got 1.0"),
        ({"pre_norm": "yes"}, "model.pre_norm must be true or false, got 'yes'"),
        ({"hidden_size": 30, "num_heads": 4}, "valid model.num_heads for it: [1, 2, 3, 5, 6,"),
        ({"block": {"mlp": "relu"}}, "model.block.mlp must be one of gelu, geglu, swiglu"),
        ({"block": {"bias": False}}, "model.block has no option 'bias'; valid: mlp, norm,"),
        ({"layer_plan": {"pattern": ["a"], "types": {"a": {"window": 0}}}}, "window"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_valid_ones(changes, expected):
    with pytest.raises(ConfigError) as info:
        EncoderConfig(**changes)
    message = str(info.value)
    assert "\n" not in message and expected in message, message


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"position": "ropee"}, "valid choices: alibi, deberta, fire,"),
        ({"attention": "flash"}, "valid choices: linear, softmax"),
        ({"position_kwargs": {"bse": 2.0}}, "unknown position_kwargs key(s) 'bse'"),
    ],
)
def test_a_bad_name_is_one_line_from_the_config_and_every_path_that_builds_one(changes, expected):
    """The registries' names and options are architecture rules: ``EncoderConfig(...)``
    refuses them, and so do the Python API's ``MaskedLM(...)`` and the pre-launch check,
    with the same line (one table of rules, run by all three)."""
    messages = []
    for make in (
        lambda: EncoderConfig(**changes),
        lambda: MaskedLM(**changes),
        lambda: check_model(changes, 64, None),
    ):
        with pytest.raises(ConfigError) as info:
            make()
        messages.append(str(info.value))
    assert len(set(messages)) == 1, messages
    assert "\n" not in messages[0] and expected in messages[0], messages[0]


def test_a_config_is_checked_again_when_it_is_changed():
    config = EncoderConfig()
    with pytest.raises(ConfigError, match="model.num_layers"):
        config.replace(num_layers=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.num_layers = 0  # type: ignore[misc]


@pytest.mark.parametrize(
    "make",
    [
        lambda: EncoderConfig(hiden_size=64),
        lambda: EncoderConfig(hidden_size=64, hiden_size=64),
        lambda: EncoderConfig().replace(hiden_size=64),
    ],
    ids=["made", "beside a field", "replaced"],
)
def test_a_field_the_config_has_not_is_one_config_error_naming_the_fields(make):
    """Not Python's ``TypeError: unexpected keyword argument``."""
    with pytest.raises(ConfigError) as error:
        make()
    message = str(error.value)
    assert "\n" not in message and "'hiden_size'" in message, message
    assert f"valid fields (model.<field>): {', '.join(ENCODER_FIELDS)}" in message, message


# -- other libraries' numbers ------------------------------------------------------------------


def _as_numpy(value: object) -> object:
    """A NumPy scalar of the same value (what a script that computes its sizes with NumPy
    passes)."""
    import numpy as np

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return np.int64(value) if isinstance(value, int) else np.float64(value)


#: The fields whose values are numbers (the ones a NumPy scalar can stand for).
NUMERIC_FIELDS = [
    name
    for name, value in CHANGED.items()
    if isinstance(value, (int, float)) and not isinstance(value, bool)
]


@pytest.mark.parametrize("name", NUMERIC_FIELDS)
def test_numpy_numbers_are_stored_as_plain_data(name, tmp_path):
    """The rules take NumPy's integers and floats as numbers; what a checkpoint stores is
    plain Python data, so ``torch.load(weights_only=True)`` (every loader of the project)
    and a safe YAML loader read it back, and the model it loads is the same config."""
    import yaml

    model = MaskedLM(**{**CHANGED, name: _as_numpy(CHANGED[name])})
    hparams = dict(model.hparams)
    assert type(hparams[name]) is type(CHANGED[name]), type(hparams[name])
    path = tmp_path / "hparams.pt"
    torch.save({"hyper_parameters": hparams}, path)
    loaded = torch.load(path, weights_only=True)["hyper_parameters"]
    assert EncoderConfig.from_settings(loaded) == EncoderConfig(**CHANGED)
    assert yaml.safe_load(yaml.safe_dump(hparams))[name] == CHANGED[name]


def _spoil(value: object) -> None:
    """Put a key no rule accepts into every mapping of ``value`` and empty every list."""
    if isinstance(value, dict):
        for item in list(value.values()):
            _spoil(item)
        value["spoiled"] = 0
    elif isinstance(value, list):
        value.clear()


@pytest.mark.parametrize("name", [n for n, v in CHANGED.items() if isinstance(v, dict)])
def test_a_callers_mapping_changed_after_the_check_changes_nothing(name):
    """The config holds its own copy of every mapping: a caller who edits the dict it
    passed (after the rules accepted it) changes neither the config, nor the network
    built from it, nor what a checkpoint stores."""
    import copy

    given = copy.deepcopy(CHANGED[name])
    config = EncoderConfig(**{**CHANGED, name: given})
    _spoil(given)
    assert getattr(config, name) == CHANGED[name]
    model = MaskedLM(model=config)
    assert model.hparams[name] == CHANGED[name]
    assert EncoderConfig.from_settings(dict(model.hparams)) == config


#: An in-place edit of each mapping field that the rules would accept, of the same shapes
#: (so a checkpoint storing it would load, as another model, without a word).
EDITS = {
    "position_kwargs": lambda value: value.update(learnable_slopes=False),
    "attention_kwargs": lambda value: value.update(backend="auto"),
    "block": lambda value: value.update(mlp="swiglu"),
    "layer_plan": lambda value: value["types"]["local"].update(window=4),
}


@pytest.mark.parametrize("edit", ["valid", "spoiled"])
@pytest.mark.parametrize("name", [n for n, v in CHANGED.items() if isinstance(v, dict)])
@pytest.mark.parametrize(
    "use",
    [
        lambda config: MaskedLM(model=config),
        lambda config: config.as_dict(),
        lambda config: Encoder(config),
    ],
    ids=["MaskedLM", "as_dict", "Encoder"],
)
def test_a_configs_own_mapping_edited_in_place_is_refused_where_it_is_used(use, name, edit):
    """``config.block["mlp"] = "swiglu"`` after the check: the network would be the checked
    block (geglu) and the checkpoint the edit (swiglu), which loads silently as another
    model. Every user of the config refuses it in one line naming the field."""
    import copy

    config = EncoderConfig(**copy.deepcopy(CHANGED))
    (EDITS[name] if edit == "valid" else _spoil)(getattr(config, name))
    with pytest.raises(ConfigError) as error:
        use(config)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"model.{name} was changed"), message


@pytest.mark.parametrize("name", list(CHANGED))
def test_a_config_is_hashable_and_equal_configs_hash_alike(name):
    """A frozen config is a dict key, whatever its mappings; equal configs hash alike
    (a mapping's key order and ``1`` for ``1.0`` do not change it)."""
    value = CHANGED[name]
    config = EncoderConfig(**CHANGED)
    reordered = dict(reversed(list(value.items()))) if isinstance(value, dict) else value
    again = EncoderConfig(**{**CHANGED, name: reordered})
    assert config == again and hash(config) == hash(again)
    assert {config: 1}[again] == 1


@pytest.mark.parametrize("typo", ["hiden_size", "num_layer", "positon"])
def test_from_settings_refuses_a_key_that_is_no_setting(typo):
    """A typo was left out like a training setting, so the config took the default."""
    with pytest.raises(ConfigError) as info:
        EncoderConfig.from_settings({typo: 3, "learning_rate": 1e-3})
    line = str(info.value)
    assert "\n" not in line and repr(typo) in line and "hidden_size" in line, line


def test_from_settings_leaves_out_training_settings_and_lightnings_records():
    config = EncoderConfig.from_settings(
        {"hidden_size": 64, "num_heads": 4, "learning_rate": 1e-3, "_instantiator": "x"}
    )
    assert (config.hidden_size, config.num_heads) == (64, 4)
