"""``prepare`` (and a sweep's preparation) cut the blocks ``fit`` would cut: a split too small
for one block of ``data.max_length`` is ``fit``'s one error line, never ``0 blocks`` and exit 0."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import CONFIGS

from roformer_lit.commands import EXIT_USER_ERROR, main
from roformer_lit.commands.prepare import prepare_runs
from roformer_lit.errors import ConfigError

WORDS = "the quick brown fox jumps over a lazy dog while rotary positions encode tokens".split()


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A two-line corpus (12 training tokens) and one of 400 lines (about 9,000 tokens)."""
    root = tmp_path_factory.mktemp("corpora")
    tiny = root / "tiny.txt"
    tiny.write_text("one two three\nfour five six\n", encoding="utf-8")
    lines = [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(5 + i % 30)) for i in range(400)]
    small = root / "small.txt"
    small.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"tiny": tiny, "small": small}


#: (corpus, extra data settings, the split the error names)
TOO_SMALL = [
    ("tiny", [], "train"),  # 12 training tokens, blocks of 128
    ("small", ["--data.max_length", "100000"], "train"),
    ("small", ["--data.val_fraction", "0.001"], "validation"),  # one held-out document
]


def _args(corpora: dict[str, Path], corpus: str, extra: list[str], cache: Path) -> list[str]:
    data = ["--data.train_files", str(corpora[corpus]), "--data.vocab_size", "200"]
    return ["--config", str(CONFIGS / "rope.yaml"), *data, "--data.cache_dir", str(cache), *extra]


@pytest.mark.parametrize(("corpus", "extra", "split"), TOO_SMALL)
def test_a_split_without_a_block_is_fits_error(
    corpora: dict[str, Path],
    corpus: str,
    extra: list[str],
    split: str,
    tmp_path: Path,
    capfd: pytest.CaptureFixture,
) -> None:
    args = _args(corpora, corpus, extra, tmp_path / "cache")
    capfd.readouterr()
    assert main(["prepare", *args]) == EXIT_USER_ERROR
    out, err = capfd.readouterr()
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert errors and errors[0].startswith(f"error: the {split} corpus is too small"), err
    assert "blocks of" not in out and "Traceback" not in err
    with pytest.raises(ConfigError, match=f"the {split} corpus is too small"):
        prepare_runs([args], say=lambda _: None)  # what a sweep does before it launches


def test_a_corpus_with_blocks_prints_the_blocks_fit_uses(
    corpora: dict[str, Path], tmp_path: Path, capfd: pytest.CaptureFixture
) -> None:
    limits = ["--data.max_train_blocks", "5", "--data.max_val_blocks", "2"]
    assert main(["prepare", *_args(corpora, "small", limits, tmp_path / "cache")]) == 0
    assert "(5 and 2 blocks of 128)" in capfd.readouterr().out
