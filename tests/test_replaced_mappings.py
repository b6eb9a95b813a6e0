"""A mapping setting typed whole replaces the ``--config`` files' and says which keys it
drops; a dotted key changes one key (:mod:`roformer_lit.commands.replaced_mappings`)."""

from __future__ import annotations

import pytest
import yaml

from roformer_lit.commands.replaced_mappings import MAPPING_SETTINGS, replaced_notes

#: setting -> (the files' mapping, a typed mapping that drops its second key)
FILES = {
    "block": ({"mlp": "geglu", "norm": "rmsnorm"}, "{mlp: gelu}"),
    "position_kwargs": ({"base": 500, "scaling": "ntk"}, "{base: 10}"),
    "attention_kwargs": ({"window_block": 64, "other": 1}, "{window_block: 32}"),
    "layer_plan": ({"pattern": ["g"], "types": {"g": {"window": 4}}}, "{pattern: [g]}"),
}


def test_every_mapping_setting_has_a_case():
    assert set(FILES) == set(MAPPING_SETTINGS)


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_mapping_typed_whole_names_the_keys_it_drops(name, tmp_path):
    given, typed = FILES[name]
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"model": {name: given}}), encoding="utf-8")
    dropped = list(given)[1]
    (note,) = replaced_notes(["--config", str(config), f"--model.{name}", typed])
    assert note.startswith(f"note: --model.{name} {typed} replaces") and dropped in note
    assert f"--model.{name}.{list(given)[0]}" in note  # the spelling that keeps the others
    # the same value typed with every key, a dotted key, or no file setting it: no note
    whole = yaml.safe_dump(given, default_flow_style=True).strip()
    assert replaced_notes(["--config", str(config), f"--model.{name}={whole}"]) == []
    key = list(given)[0]
    assert replaced_notes(["--config", str(config), f"--model.{name}.{key}", "x"]) == []
    assert replaced_notes([f"--model.{name}", typed]) == []
