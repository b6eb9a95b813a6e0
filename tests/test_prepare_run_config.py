"""``prepare`` takes a run's ``config.yaml`` (which holds ``fit``'s ``ckpt_path: null`` and
``weights_only: null``) as ``fit`` does; it used to refuse it with ``Option 'ckpt_path' is
not accepted``. A set ``ckpt_path`` or ``weights_only`` is refused in one line: nothing here
reads a checkpoint, so it would be ignored."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import CONFIGS

from roformer_lit.commands import EXIT_USER_ERROR, main

WORDS = "the quick brown fox jumps over a lazy dog while rotary positions encode tokens".split()

#: (the fit-only keys' lines in the config file, options typed, exit status, error text)
CASES = [
    ("ckpt_path: null\nweights_only: null\n", [], 0, None),
    ("ckpt_path: last.ckpt\nweights_only: null\n", [], EXIT_USER_ERROR, "ckpt_path='last.ckpt'"),
    ("ckpt_path: null\nweights_only: true\n", [], EXIT_USER_ERROR, "weights_only=True"),
    ("", ["--ckpt_path", "last.ckpt"], EXIT_USER_ERROR, "ckpt_path='last.ckpt'"),
]


@pytest.mark.parametrize(("keys", "typed", "status", "error"), CASES)
def test_a_runs_config_is_taken_and_a_checkpoint_refused(
    keys: str,
    typed: list[str],
    status: int,
    error: str | None,
    tmp_path: Path,
    capfd: pytest.CaptureFixture,
) -> None:
    corpus = tmp_path / "c.txt"
    lines = [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(5 + i % 30)) for i in range(300)]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = tmp_path / "config.yaml"
    data = f"data:\n  train_files: {corpus}\n  vocab_size: 200\n  cache_dir: {tmp_path}\n"
    config.write_text(data + keys, encoding="utf-8")
    capfd.readouterr()
    args = ["prepare", "--config", str(CONFIGS / "rope.yaml"), "--config", str(config), *typed]
    assert main(args) == status
    err = capfd.readouterr().err
    if error is None:
        assert "error:" not in err, err
    else:
        lines = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(lines) == 1 and error in lines[0] and "Traceback" not in err, err
