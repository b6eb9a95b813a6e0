"""Configs compose: ``configs/base.yaml`` is read before any ``--config`` of the pretraining
commands, each per-scheme file holds only what its ablation changes, and later files
override earlier ones. The oracle is a plain YAML deep merge of the files, read
independently of jsonargparse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import CONFIGS

from roformer_lit.commands.pretrain import BASE_CONFIG, validate_config

OVERLAYS = sorted(p.name for p in CONFIGS.glob("*.yaml") if p.name != "base.yaml")


def merged(*files: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def merge(into: dict[str, Any], update: dict[str, Any]) -> None:
        for key, value in update.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            else:
                into[key] = value

    for f in files:
        merge(out, yaml.safe_load(f.read_text(encoding="utf-8")) or {})
    return out


def flat(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    items: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and key not in (
            "position_kwargs",
            "attention_kwargs",
            "init_args",
        ):
            items.update(flat(value, name + "."))
        else:
            items[name] = value
    return items


def at(resolved: Any, key: str) -> Any:
    """A resolved setting by its flat name: the data module's are its ``init_args`` (the
    section names its class)."""
    if key.startswith("data."):
        key = "data.init_args." + key.removeprefix("data.")
    return resolved[key]


def test_the_base_config_is_the_one_the_cli_reads():
    assert BASE_CONFIG == CONFIGS / "base.yaml" and BASE_CONFIG.is_file()


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_scheme_config_is_a_few_lines_over_the_base(overlay):
    lines = [
        line
        for line in (CONFIGS / overlay).read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert len(lines) <= 6, f"{overlay} repeats the base: {len(lines)} lines"


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.trainer
def test_a_scheme_config_alone_resolves_to_base_plus_overlay(overlay):
    expected = flat(merged(BASE_CONFIG, CONFIGS / overlay))
    resolved = validate_config(["--config", str(CONFIGS / overlay)])
    for key, value in expected.items():
        if key.startswith("trainer.logger"):
            continue  # a class_path/init_args block, compared below
        if value == {}:  # jsonargparse reads an empty mapping of a `dict | None` as None
            assert at(resolved, key) in (None, {}), key
        else:
            assert at(resolved, key) == value, key
    logger = resolved["trainer.logger"]
    assert logger.init_args.name == expected["trainer.logger.init_args"]["name"]


@pytest.mark.trainer
def test_later_configs_override_earlier_ones():
    size = CONFIGS / "size" / "base.yaml"
    expected = flat(merged(BASE_CONFIG, CONFIGS / "alibi.yaml", size))
    resolved = validate_config(["--config", str(CONFIGS / "alibi.yaml"), "--config", str(size)])
    for key in ("model.position", "model.hidden_size", "data.max_length", "trainer.max_steps"):
        assert at(resolved, key) == expected[key], key


@pytest.mark.parametrize(
    "old", sorted(__import__("roformer_lit.commands").commands.MOVED_CLASS_PATHS)
)
def test_a_config_saved_by_an_earlier_version_gets_the_new_class_path_in_one_line(
    old, tmp_path, capsys
):
    import importlib

    from roformer_lit.commands import MOVED_CLASS_PATHS, main

    new = MOVED_CLASS_PATHS[old]
    module, name = new.rsplit(".", 1)
    assert hasattr(importlib.import_module(module), name)  # the new path is real
    saved = tmp_path / "config.yaml"
    saved.write_text(f"trainer:\n  logger:\n    class_path: {old}\n", encoding="utf-8")
    before = saved.read_bytes()
    assert main(["fit", "--config", str(saved)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and old in errors[0] and new in errors[0]
    assert saved.read_bytes() == before


#: Config files no parser can read as text: (name, bytes).
UNREADABLE_CONFIGS = {
    "binary": b"\xff\xfe\x00\x01\x80\x81binary",
    "latin-1": "model:\n  position: r\u00e9pe\n".encode("latin-1"),
    "nul byte": b"model:\n  position: rope\x00\n",
    "utf-16": "model:\n  position: rope\n".encode("utf-16"),
}


@pytest.mark.parametrize("option", ["--config", "--data"])
@pytest.mark.parametrize("command", ["fit", "validate", "finetune"])
@pytest.mark.parametrize("kind", sorted(UNREADABLE_CONFIGS))
def test_a_config_file_that_is_not_utf8_text_is_one_line(
    kind, command, option, tmp_path, capsys, monkeypatch
):
    from roformer_lit.commands import main

    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(UNREADABLE_CONFIGS[kind])
    assert main([command, option, str(bad)]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(bad) in errors[0] and "UTF-8" in errors[0], err[-2000:]
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]  # nothing created


#: Configs that mention an old class path without naming a class by it: (text, refused).
MENTIONS = {
    "a comment": ("# was roformer_lit.run_logger.RunLogger\nmodel:\n  position: rope\n", False),
    "a string value": (
        "trainer:\n  logger:\n    class_path: roformer_lit.training.run_logger.RunLogger\n"
        "    init_args:\n      name: roformer_lit.run_logger.RunLogger\n",
        False,
    ),
    "a key": ("data:\n  roformer_lit.callbacks.LastCheckpointAtEnd: 1\n", False),
    "a class_path in a list": (
        "trainer:\n  callbacks:\n  - class_path: roformer_lit.callbacks.LastCheckpointAtEnd\n",
        True,
    ),
    "a class_path with spaces": (
        "trainer:\n  logger:\n    class_path: ' roformer_lit.run_logger.RunLogger '\n",
        True,
    ),
}


@pytest.mark.parametrize("case", sorted(MENTIONS))
def test_only_class_path_values_count_as_naming_a_moved_class(case, tmp_path):
    from roformer_lit.commands import check_config_files
    from roformer_lit.errors import ConfigError

    text, refused = MENTIONS[case]
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    if refused:
        with pytest.raises(ConfigError, match="which this version calls"):
            check_config_files(["fit", "--config", str(path)])
    else:
        check_config_files(["fit", "--config", str(path)])


RECIPES = sorted(p.name for p in (CONFIGS / "recipes").glob("*.yaml"))


@pytest.mark.parametrize("size", [None, "base.yaml"])
@pytest.mark.parametrize("recipe", RECIPES)
@pytest.mark.trainer
def test_a_recipe_composes_like_any_config_and_builds_its_model(recipe, size):
    """``configs/recipes/*``: base + recipe (+ a size overlay) resolve to the merged YAML,
    and the model section builds (a plan's pattern divides the size's layers)."""
    from roformer_lit import MaskedLM

    files = [CONFIGS / "recipes" / recipe] + ([CONFIGS / "size" / size] if size else [])
    expected = merged(BASE_CONFIG, *files)
    args = [arg for f in files for arg in ("--config", str(f))]
    resolved = validate_config(args)
    for key in ("block", "layer_plan", "num_layers", "pre_norm"):
        assert resolved[f"model.{key}"] == expected["model"].get(key), key
    model = {**expected["model"], "vocab_size": 64, "hidden_size": 32, "num_heads": 2}
    model["intermediate_size"] = 48
    MaskedLM(**model)
