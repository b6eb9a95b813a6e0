"""Run names show every setting that makes a variant (roformer_lit.training.run_name)."""

from __future__ import annotations

import re

import pytest

from roformer_lit.training.run_name import MAX_STEM, VARIANT_PARTS, run_stem

#: A value of each variant data setting that differs from its default.
NON_DEFAULT = {
    "random_positions": 1024,
    "validation_positions": "random",
    "probe_hint": 0.5,
    "document_mask": True,
}
#: Each setting's default (the plain run).
DEFAULT = {
    "random_positions": None,
    "validation_positions": "ordinary",
    "probe_hint": 0.0,
    "document_mask": False,
}


def config(data: dict | None = None, **model: object) -> dict:
    return {
        "seed_everything": 0,
        "model": {"position": "rope", "attention": "softmax", "position_kwargs": {}, **model},
        "data": {"probe": "copy", **DEFAULT, **(data or {})},
    }


def test_every_variant_setting_has_a_sample() -> None:
    assert {key for key, _ in VARIANT_PARTS} == set(NON_DEFAULT) == set(DEFAULT)


def test_the_plain_run_keeps_its_name() -> None:
    assert run_stem(config()) == "rope-softmax-seed0-copy"
    plain = config()
    plain["data"] = {"probe": None}
    assert run_stem(plain) == "rope-softmax-seed0"


@pytest.mark.parametrize("key", sorted(NON_DEFAULT))
def test_a_variant_setting_changes_the_name(key: str) -> None:
    plain = run_stem(config())
    variant = run_stem(config({key: NON_DEFAULT[key]}))
    assert variant != plain
    assert variant.startswith(plain + "-")


def test_variants_of_different_settings_get_different_names() -> None:
    names = {run_stem(config({key: value})) for key, value in NON_DEFAULT.items()}
    assert len(names) == len(NON_DEFAULT)


@pytest.mark.parametrize(
    ("options", "part"),
    [
        ({"unrotated_fraction": 0.25}, "unrotated_fraction0.25"),
        ({"unrotated_fraction": 0.5}, "unrotated_fraction0.5"),
        ({"base": 500.0}, "base500"),
        ({"c2p": False}, "c2pfalse"),
    ],
)
def test_scheme_options_show_in_the_name(options: dict, part: str) -> None:
    name = run_stem(config(position_kwargs=options))
    assert name.split("-")[-1] == part


def test_scheme_options_are_ordered_by_key() -> None:
    a = run_stem(config(position_kwargs={"scaling": "ntk", "base": 100.0}))
    b = run_stem(config(position_kwargs={"base": 100.0, "scaling": "ntk"}))
    assert a == b


@pytest.mark.parametrize(
    "options",
    [
        {"../../etc": "/x y"},
        {"k" * 500: 1},
        {"nested": {"a": [1, 2], "b": "c d"}},
    ],
)
def test_hostile_options_give_a_safe_name(options: dict) -> None:
    name = run_stem(config(position_kwargs=options))
    assert re.fullmatch(r"[A-Za-z0-9._-]+", name), name
    assert len(name) <= MAX_STEM
    assert name.startswith("rope-softmax-seed0-copy-")
