"""What the Python API accepts for ``EncoderConfig``'s option and mapping fields.

- A scheme's or kernel's option written in another type than the option's (``base: "100"``
  for rope's float) is held as the value the scheme is built with, as the command line's
  parser reads ``--model.position_kwargs '{base: "100"}'``: two configs that build the same
  model are equal, hash alike and record the same settings. Every registered scheme's and
  kernel's numeric options are covered, read from the registries.
- The config's typed views given back (``block=config.block_options``) are read as the
  mapping they stand for; resolved layers given as ``layer_plan`` are one line naming the
  mapping to give.
"""

from __future__ import annotations

import typing
from typing import Any

import pytest
import yaml

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.blocks import BlockOptions
from roformer_lit.commands import main
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.module_arguments import flat_hyperparameters
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.registry import option_hints, with_defaults
from roformer_lit.training_config import TrainingConfig

#: A scheme's model for its options: a kernel and scheme that take every other's.
HOSTS = {"position": ("attention", "softmax"), "attention": ("position", "nope")}
REGISTRIES = {"position": POSITION_SCHEMES, "attention": ATTENTION_KERNELS}


def _numeric(hint: Any) -> type | None:
    """``int`` or ``float`` where ``hint`` is one of them, alone or or null; else None."""
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    kinds = [a for a in args if a in (int, float)]
    return kinds[0] if len(kinds) == 1 and len(args) == 1 else None


def numeric_options() -> list[tuple[str, str, str, int | float]]:
    """(``position``/``attention``, name, option, a valid value) for every numeric option
    of every registered scheme and kernel: its default, or 512 where that is null."""
    found = []
    for what, registry in REGISTRIES.items():
        for name, cls in sorted(registry.loadable().components.items()):
            defaults = with_defaults(cls, {})
            for option, hint in option_hints(cls).items():
                kind = _numeric(hint)
                if kind is not None:
                    value = defaults.get(option)
                    found.append((what, name, option, kind(512 if value is None else value)))
    return found


NUMERIC = numeric_options()


def _config(what: str, name: str, options: dict[str, Any]) -> EncoderConfig:
    other, host = HOSTS[what]
    return EncoderConfig(**{what: name, other: host, f"{what}_kwargs": options})


@pytest.mark.parametrize(("what", "name", "option", "value"), NUMERIC)
def test_an_option_written_as_a_string_is_held_as_its_number(what, name, option, value):
    written = _config(what, name, {option: str(value)})
    number = _config(what, name, {option: value})
    assert written == number
    assert hash(written) == hash(number)
    options = written.as_dict()[f"{what}_kwargs"] or {}
    if option in options:  # not its class's default (512 where that is null): held
        assert not isinstance(options[option], str) and options[option] == value
    else:  # its default, written or not, is one config (encoder_config.canonical_fields)
        assert written == _config(what, name, {})
    training = TrainingConfig()
    assert flat_hyperparameters(written, training) == flat_hyperparameters(number, training)
    with pytest.raises(ConfigError, match=rf"model\.{what}_kwargs\.{option}='x' for {what}"):
        _config(what, name, {option: "x"})  # no number: still the one line naming it


@pytest.mark.parametrize(("what", "name", "option", "value"), NUMERIC)
def test_a_layer_types_option_written_as_a_string_is_held_as_its_number(what, name, option, value):
    other, host = HOSTS[what]

    def plan(option_value: Any) -> EncoderConfig:
        types = {"a": {what: name, f"{what}_kwargs": {option: option_value}}}
        return EncoderConfig(
            **{
                what: name,
                other: host,
                "num_layers": 2,
                "layer_plan": {"pattern": ["a", "b"], "types": types},
            }
        )

    assert plan(str(value)) == plan(value)
    held = plan(str(value)).layer_plan["types"]["a"][f"{what}_kwargs"][option]
    assert not isinstance(held, str) and held == value


#: (the typed view given back, the mapping it stands for), with the fields it needs.
BLOCKS = [
    (BlockOptions(), None, {}),
    (BlockOptions(mlp="swiglu"), {"mlp": "swiglu"}, {}),
    (
        BlockOptions(norm="rmsnorm", linear_bias=False),
        {"norm": "rmsnorm", "linear_bias": False},
        {},
    ),
    (BlockOptions(norm_bias=False), {"norm_bias": False}, {}),
    (
        BlockOptions(first_norm=False, mlp="geglu"),
        {"mlp": "geglu", "first_norm": False},
        {"pre_norm": True},
    ),
]


@pytest.mark.parametrize(("options", "mapping", "fields"), BLOCKS)
def test_block_options_are_read_as_their_mapping(options, mapping, fields):
    given = EncoderConfig(block=options, **fields)
    assert given == EncoderConfig(block=mapping, **fields)
    assert given.block == mapping
    assert given.block_options == options
    assert given.replace(block=given.block_options) == given  # read, given back
    assert EncoderConfig(**{**given.as_dict(), "block": options}) == given


def test_block_options_that_break_a_rule_are_one_line():
    with pytest.raises(ConfigError, match="first_norm false needs model.pre_norm true"):
        EncoderConfig(block=BlockOptions(first_norm=False))


@pytest.mark.parametrize("view", ["layer_specs", "model_layer"])
def test_resolved_layers_as_a_plan_name_the_mapping_to_give(view):
    config = EncoderConfig(
        num_layers=2, layer_plan={"pattern": ["local", "global"], "types": {"local": {"window": 8}}}
    )
    with pytest.raises(ConfigError) as refused:
        config.replace(layer_plan=getattr(config, view))
    message = str(refused.value)
    assert "\n" not in message
    assert "model.layer_plan takes the plan's mapping" in message
    assert "config.layer_plan" in message


@pytest.mark.trainer  # parses the command line
def test_the_python_api_reads_options_as_the_command_line_does(tmp_path, monkeypatch, capsys):
    """``--model.position_kwargs '{base: "100"}'``: the command line's parser reads the
    number; ``EncoderConfig(position_kwargs={"base": "100"})`` is now the same config."""
    monkeypatch.chdir(tmp_path)
    written = {"position_kwargs": {"base": "100"}, "attention_kwargs": {"window_block": "64"}}
    args = ["fit", "--print_config"]
    for key, options in written.items():
        args += [f"--model.{key}", "{" + ", ".join(f'{k}: "{v}"' for k, v in options.items()) + "}"]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code in (0, None)
    printed = yaml.safe_load(capsys.readouterr().out)["model"]
    assert EncoderConfig.from_settings(printed) == EncoderConfig.from_settings(
        {**printed, **written}
    )
