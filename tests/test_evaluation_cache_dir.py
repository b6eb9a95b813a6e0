"""A run prepared under one ``data.cache_dir`` and evaluated under another (the cache is a
machine setting, not taken from the checkpoint) trains its tokenizer anew, which comes out
different: the refusal used to say only "leave the --data.* options out", which the user
had done; it now names the run's cache to give."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from roformer_lit.commands.pretrain import _check_same_tokenizer
from roformer_lit.data.tokenizer import train_tokenizer
from roformer_lit.errors import ConfigError

DOCS = ["alpha beta gamma delta", "beta gamma epsilon zeta", "eta theta alpha iota"] * 4

#: (the run's data.cache_dir, this command's, what the refusal adds; None: nothing)
CASES = [
    ("/data/cache", None, "pass --data.cache_dir /data/cache"),
    ("/data/cache", "/scratch/other", "pass --data.cache_dir /data/cache"),
    (None, "/scratch/other", "leave --data.cache_dir out"),
    ("/data/cache", "/data/cache", None),
    (None, None, None),
]


@pytest.mark.parametrize(("ran", "here", "added"), CASES)
def test_another_tokenizer_under_another_cache_names_the_runs(
    ran: str | None, here: str | None, added: str | None
) -> None:
    stored = train_tokenizer(DOCS, 40).to_str()
    other = train_tokenizer(DOCS[:3], 30)
    checkpoint = {"state": {"tokenizer_json": stored}, "datamodule_hyper_parameters": {}}
    checkpoint["datamodule_hyper_parameters"]["cache_dir"] = ran
    datamodule = SimpleNamespace(tokenizer=other, cache_dir=here)
    with pytest.raises(ConfigError) as caught:
        _check_same_tokenizer("last.ckpt", checkpoint, datamodule)
    message = str(caught.value)
    assert "\n" not in message and "another tokenizer" in message
    if added is None:
        assert "cache_dir" not in message, message
    else:
        assert added in message, message
