"""Shared test set-up: a private tokenizer cache for the whole session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Never write to the user's ~/.cache; trained tokenizers are shared within the session."""
    mp = pytest.MonkeyPatch()
    mp.setenv("ROFORMER_LIT_CACHE", str(tmp_path_factory.mktemp("cache")))
    yield
    mp.undo()
