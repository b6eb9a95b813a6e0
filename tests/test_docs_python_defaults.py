"""The architecture reference says where the Python API's defaults differ from the base
experiment's (``configs/base.yaml``, which ``fit`` reads first): the list on the page is
the one the dataclasses and the YAML give."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from roformer_lit import EncoderConfig, TrainingConfig

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reference" / "architecture.md"


def _defaults() -> dict[str, object]:
    return {**EncoderConfig().as_dict(), **TrainingConfig().as_dict()}


def _base_differences() -> dict[str, tuple[object, object]]:
    """key -> (base.yaml's value, the dataclass default) where they differ; an empty
    options mapping and None (no options) are the same model."""
    base = yaml.safe_load((ROOT / "configs" / "base.yaml").read_text(encoding="utf-8"))
    defaults = _defaults()
    differences = {}
    for key, value in base["model"].items():
        default = defaults[key]
        if value != default and not (value in ({}, None) and default in ({}, None)):
            differences[key] = (value, default)
    return differences


def _paragraph() -> str:
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    start = text.index("The two dataclasses' defaults are not the base experiment's.")
    return text[start : text.index("tests/test_docs_python_defaults.py", start)]


def test_the_page_lists_every_base_setting_that_differs_from_the_python_defaults():
    """Each listed as `key: base's value` (default the dataclass's), and no other."""
    listed = {
        key: (value, default)
        for key, value, default in re.findall(r"`(\w+): ([^`]+)` \(default ([^):]+)", _paragraph())
    }
    expected = {
        key: (str(value), str(default)) for key, (value, default) in _base_differences().items()
    }
    assert listed == expected


def test_the_page_names_the_linked_vocabulary():
    base = yaml.safe_load((ROOT / "configs" / "base.yaml").read_text(encoding="utf-8"))
    vocab = base["data"]["vocab_size"]
    paragraph = _paragraph()
    assert f"`data.vocab_size` ({vocab})" in paragraph
    assert f'["model"], vocab_size={vocab})' in paragraph
