"""Numbers are read as YAML 1.2 reads them, everywhere the package reads YAML.

PyYAML follows YAML 1.1, whose base-60 integers and floats (``1:00:00:00`` is 216000,
``1:30.5`` is 90.5) and leading-zero octals (``010`` is 8) turned a duration
``--trainer.val_check_interval 1:00:00:00`` (one day, as Lightning reads the text) into a
count of 216,000 batches, without a word. Such a scalar is now read as its text, which the
option's type then reads (:func:`roformer_lit.safe_input.read_numbers_plainly`); every
other scalar resolves as ``yaml.safe_load`` resolves it (the oracle below).

Builds no Trainer (fast tier)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from roformer_lit.commands.pretrain import validate_config
from roformer_lit.safe_input import install_yaml_guard, safe_yaml_load, yaml_value

CONFIGS = Path(__file__).resolve().parents[1] / "configs"

#: Scalars YAML 1.1 reads as a number YAML 1.2 does not: each is read as its own text.
NOT_NUMBERS = ["1:00:00:00", "12:30:00", "-1:00", "1:30.5", "010", "-010", "+07", "00", "0_1"]
#: Scalars whose reading is unchanged: yaml.safe_load's is the oracle.
UNCHANGED = [
    "0",
    "-0",
    "7",
    "+7",
    "1_000",
    "0x1f",
    "0b101",
    "3.5",
    "-0.25",
    ".5",
    "1.0e+3",
    "1e-3",
    ".inf",
    "-.inf",
    "true",
    "null",
    "2026-11-30",
    "'1:00:00:00'",
    "a:b",
]


@pytest.mark.parametrize("text", NOT_NUMBERS)
def test_a_base_60_number_or_a_leading_zero_octal_is_read_as_its_text(text):
    assert safe_yaml_load(text) == text
    assert safe_yaml_load(f"key: {text}\n") == {"key": text}
    assert yaml_value(text) == text
    assert yaml.safe_load(text) != text  # what YAML 1.1 made of it


@pytest.mark.parametrize("text", UNCHANGED)
def test_every_other_scalar_is_read_as_yaml_safe_load_reads_it(text):
    assert safe_yaml_load(text) == yaml.safe_load(text)
    assert safe_yaml_load(f"key: [{text}]\n") == yaml.safe_load(f"key: [{text}]\n")


@pytest.mark.parametrize("text", NOT_NUMBERS)
def test_the_command_line_parser_reads_them_as_text_too(text):
    from jsonargparse import ArgumentParser

    install_yaml_guard()
    parser = ArgumentParser()
    parser.add_argument("--value", type=str | int | float | dict | None)
    assert parser.parse_args([f"--value={text}"]).value == text


@pytest.mark.trainer  # the CLI parser reads the Trainer class
@pytest.mark.parametrize("duration", ["1:00:00:00", "0:01:00:00", "00:00:05:00"])
def test_a_duration_interval_reaches_the_trainer_as_the_duration_given(duration):
    settings = ["--config", str(CONFIGS / "rope.yaml"), "--trainer.val_check_interval", duration]
    resolved = validate_config(settings, prelaunch=False)
    assert resolved["trainer.val_check_interval"] == duration
