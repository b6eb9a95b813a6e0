"""A value of the wrong type on the command line is one line in plain words
(commands.argument_words): the setting, what it takes and what was given."""

from __future__ import annotations

import typing

import pytest
from cli_helpers import CONFIGS, fit_args, one_error_line
from lightning.pytorch import Trainer

from roformer_lit.commands.argument_words import plain_argument_error
from roformer_lit.finetune.module import SequenceClassifier


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--trainer.max_steps", "abc", "trainer.max_steps: expected an integer, got 'abc'"),
        ("--model.hidden_size", "1.5", "model.hidden_size: expected an integer, got 1.5"),
        ("--model.dropout", "x", "model.dropout: expected a number, got 'x'"),
        ("--data.batch_size", "x", "data.batch_size: expected an integer, got 'x'"),
        # options that are not a mapping
        (
            "--model.position_kwargs",
            "{base:100}",  # YAML reads a colon without a space as part of one string
            "model.position_kwargs: expected a mapping {option: value, ...} or null, got "
            "'{base:100}' (YAML needs a space after each key's colon: '{base: 100}')",
        ),
        (
            "--model.attention_kwargs",
            "3",
            "model.attention_kwargs: expected a mapping {option: value, ...} or null, got 3",
        ),
    ],
)
def test_a_value_of_the_wrong_type_names_the_setting_and_its_type(
    tmp_path, monkeypatch, capsys, option, value, expected
) -> None:
    monkeypatch.chdir(tmp_path)
    line = one_error_line(fit_args("rope.yaml", 2, option, value), capsys)
    assert line == f"error: {expected}", line
    assert not (tmp_path / "runs").exists()


def test_a_choice_outside_a_union_of_literals_lists_every_choice(
    tmp_path, monkeypatch, capsys
) -> None:
    """The choices listed are the members of Lightning's own annotation of ``precision``
    (the oracle), in its order, with null for its ``None``."""
    monkeypatch.chdir(tmp_path)
    line = one_error_line(fit_args("rope.yaml", 2, "--trainer.precision", "17"), capsys)
    annotation = typing.get_type_hints(Trainer.__init__)["precision"]
    members = [
        repr(value)
        for literal in typing.get_args(annotation)
        if typing.get_origin(literal) is typing.Literal
        for value in typing.get_args(literal)
    ]
    choices = ", ".join(dict.fromkeys(members))
    null = ", or null" if type(None) in typing.get_args(annotation) else ""
    assert line == f"error: trainer.precision: 17 is not valid; expected one of {choices}{null}"


def test_a_literal_setting_of_finetune_lists_its_values(tmp_path, monkeypatch, capsys) -> None:
    """``finetune --model.pooling max``: the values are those of the classifier's own
    annotation."""
    monkeypatch.chdir(tmp_path)
    argv = ["finetune", "--config", str(CONFIGS / "finetune" / "local.yaml")]
    line = one_error_line([*argv, "--model.pooling", "max"], capsys)
    pooling = typing.get_type_hints(SequenceClassifier.__init__)["pooling"]
    values = ", ".join(repr(value) for value in typing.get_args(pooling))
    assert line == f"error: model.pooling: expected one of {values}, got 'max'", line


class _Refusal(Exception):
    pass


def test_a_union_of_plain_types_names_each_type(tmp_path, monkeypatch, capsys) -> None:
    """``--seed_everything abc`` (LightningCLI's ``bool | int``): the setting, the value and
    each type in words, not the parser's dump of the union."""
    monkeypatch.chdir(tmp_path)
    line = one_error_line(fit_args("rope.yaml", 2, "--seed_everything", "abc"), capsys)
    expected = "seed_everything: 'abc' is not valid; expected true or false, or an integer"
    assert line == f"error: {expected}", line
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("types", "expected"),
    [
        ("<class 'int'>, <class 'NoneType'>", "expected an integer, or null"),
        ("typing.Literal['a', 'b'], <class 'float'>", "expected one of 'a', 'b', or a number"),
    ],
)
def test_a_union_of_types_and_values_in_words(types, expected) -> None:
    message = (
        f'Parser key "x": Does not validate against any of the Union subtypes Subtypes: '
        f"[{types}] Errors: - e Given value type: <class 'str'> Given value: y"
    )
    assert plain_argument_error(_Refusal(message)) == f"x: 'y' is not valid; {expected}"


@pytest.mark.parametrize(
    "message",
    [
        "Parser key \"x\": Expected a <class 'my.Type'>. Got value: 3",  # a type of its own
        'Parser key "x": Does not validate against any of the Union subtypes Subtypes: '
        "[<class 'int'>, <class 'my.Type'>] Errors: - e Given value type: <class 'str'> "
        "Given value: y",  # a union with a type of its own
        "some other wording a later jsonargparse may use",
    ],
)
def test_a_message_of_another_shape_is_kept_as_it_is(message) -> None:
    assert plain_argument_error(_Refusal(message)) == message
