"""A YAML mapping that gives one key twice is refused, naming the key and both lines: YAML
loaders keep the last value without a word (a config file with ``position: rope`` and,
lines later, ``position: alibi`` trained alibi; a sweep file's ``grid`` with
``model.position`` twice swept the last list only), as argparse did with an option given
twice (:func:`roformer_lit.safe_input.check_unique_keys`).

Builds no Trainer (fast tier): the refusals come before any parser builds a model."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from roformer_lit.commands import main
from roformer_lit.safe_input import DuplicateKeyError, check_unique_keys, safe_yaml_load

CONFIGS = Path(__file__).resolve().parents[1] / "configs"

#: text -> (the repeated key, its first line, its second line).
REPEATED = {
    "top level": ("a: 1\nb: 2\na: 3\n", ("a", 1, 3)),
    "nested": (
        "model:\n  position: rope\n  hidden_size: 8\n  position: alibi\n",
        ("position", 2, 4),
    ),
    "flow mapping": ("model: {position: rope, position: alibi}\n", ("position", 1, 1)),
    "inside a list": ("runs:\n  - {seed: 0}\n  - {seed: 1, seed: 2}\n", ("seed", 3, 3)),
    "quoted and plain": ("'a': 1\na: 2\n", ("a", 1, 2)),
    "dotted grid key": (
        "grid:\n  model.position: [rope]\n  model.position: [alibi]\n",
        ("model.position", 2, 3),
    ),
}

#: texts that give no key twice in one mapping.
UNIQUE = {
    "one key in two mappings": "model: {position: rope}\ndata: {position: 1}\n",
    "an int and a string": "1: a\n'1': b\n",
    "merge keys": "base: &b {x: 1}\nother: &o {y: 2}\nc:\n  <<: *b\n  <<: *o\n",
    "an alias used twice": "b: &b {x: 1}\nc: [*b, *b]\n",
    "no mapping": "- 1\n- 2\n",
    "empty": "",
}


@pytest.mark.parametrize("case", list(REPEATED))
def test_a_key_given_twice_is_refused_naming_it_and_its_lines(case):
    text, (key, first, second) = REPEATED[case]
    with pytest.raises(DuplicateKeyError) as refused:
        check_unique_keys(text)
    error = refused.value
    assert (error.key, error.first_line, error.line) == (key, first, second)
    assert isinstance(error, yaml.YAMLError)  # every YAML reader reports it as bad YAML
    with pytest.raises(DuplicateKeyError):
        safe_yaml_load(text)


@pytest.mark.parametrize("case", list(UNIQUE))
def test_keys_given_once_per_mapping_load(case):
    text = UNIQUE[case]
    check_unique_keys(text)
    assert safe_yaml_load(text) == yaml.safe_load(text)


def test_every_shipped_yaml_file_gives_each_key_once():
    files = sorted(CONFIGS.rglob("*.yaml"))
    assert files
    for path in files:
        check_unique_keys(path.read_text(encoding="utf-8"))


def _one_error_line(capsys, args: list[str]) -> str:
    capsys.readouterr()
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    return errors[0]


def test_a_config_file_with_a_key_twice_is_one_error_line(tmp_path, capsys):
    config = tmp_path / "mine.yaml"
    config.write_text("model:\n  position: rope\n  position: alibi\n", encoding="utf-8")
    line = _one_error_line(
        capsys, ["fit", "--config", str(CONFIGS / "probes" / "copy.yaml"), "--config", str(config)]
    )
    assert str(config) in line and "'position' twice" in line and "lines 2 and 3" in line


def test_a_sweep_file_with_a_grid_key_twice_is_one_error_line(tmp_path, capsys):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        f"name: twice\nbase: {CONFIGS / 'probes' / 'copy.yaml'}\ngrid:\n"
        "  model.position: [rope]\n  model.position: [alibi]\n",
        encoding="utf-8",
    )
    line = _one_error_line(
        capsys, ["sweep", "--config", str(sweep), "--dry-run", "--root", str(tmp_path / "runs")]
    )
    assert str(sweep) in line and "'model.position' twice" in line
    assert not (tmp_path / "runs").exists()
