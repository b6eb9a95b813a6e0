"""A damaged entry of the tokenizer cache (``<cache>/tokenizers/wordpiece-*.json``) is one
``error:`` line naming the file and saying to delete it, before any tokenizer is trained:
it was the rename's ``[Errno 21] Is a directory: '<tmp>' -> '<path>'`` after training."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import roformer_lit.data.tokenizer as tokmod
from roformer_lit.errors import ConfigError

DOCUMENTS = [f"document {i} holds words like alpha beta gamma delta" for i in range(50)]

#: case -> how the cache entry is damaged.
DAMAGED: dict[str, Callable[[Path], None]] = {
    "a directory": lambda path: path.mkdir(),
    "a dangling link": lambda path: path.symlink_to(path.parent / "gone.json"),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_a_damaged_cache_entry_is_one_line_naming_it(tmp_path, monkeypatch, case):
    name = tokmod.cache_file_name(DOCUMENTS, 120)
    path = tmp_path / name
    DAMAGED[case](path)
    trained: list[int] = []
    monkeypatch.setattr(tokmod, "train_tokenizer", lambda docs, size: trained.append(size))
    with pytest.raises(ConfigError) as refused:
        tokmod.load_or_train_tokenizer(DOCUMENTS, 120, tmp_path)
    line = str(refused.value)
    assert "\n" not in line and str(path) in line and "delete it" in line, line
    assert trained == []  # refused before training
