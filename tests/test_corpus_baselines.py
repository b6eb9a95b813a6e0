"""A corpus run's two unigram references in ``extrapolate``: the in-sample entropy of the
masked tokens and their loss under the training split's unigram distribution.

Oracles: the formula recomputed in plain Python floats (``collections.Counter``,
``math.log``) from the split's tokens; Gibbs' inequality (the masked tokens' own
frequencies minimise the cross-entropy on them, so the training split's unigram can never
score below the in-sample entropy); and the rows ``--csv`` writes.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

from roformer_lit.data.corpus import load_default_corpus
from roformer_lit.data.corpus_module import CorpusDataModule
from roformer_lit.results.extrapolate import (
    train_unigram_log_probs,
    train_unigram_loss,
    unigram_loss,
)
from roformer_lit.results.extrapolate_rows import CellScores, CheckpointRows, baseline_rows


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> CorpusDataModule:
    root = tmp_path_factory.mktemp("corpus")
    corpus = root / "small.txt"
    corpus.write_text("\n\n".join(load_default_corpus()[:200]) + "\n", encoding="utf-8")
    module = CorpusDataModule(
        train_files=[str(corpus)],
        vocab_size=400,
        max_length=32,
        batch_size=8,
        cache_dir=str(root / "cache"),
        val_fraction=0.2,
    )
    module.setup("fit")
    return module


def _masked_tokens(data: CorpusDataModule) -> list[int]:
    tokens: list[int] = []
    for batch in data.val_dataloader():
        labels = batch["labels"]
        tokens += labels[labels != -100].tolist()
    return tokens


def test_the_training_unigram_is_the_smoothed_formula(data: CorpusDataModule):
    (stream, start, stop), _ = data.split_ranges()
    counts = Counter(int(t) for t in stream.read(start, stop))
    total, vocab = sum(counts.values()), data.tokenizer_vocab_size
    masked = _masked_tokens(data)
    assert masked, "the validation split has masked tokens"
    expected = -sum(math.log((counts[t] + 1) / (total + vocab)) for t in masked) / len(masked)
    got = train_unigram_loss(data, train_unigram_log_probs(data))
    assert got == pytest.approx(expected, rel=1e-12)


def test_the_training_unigram_never_beats_the_in_sample_entropy(data: CorpusDataModule):
    """Gibbs: H(q) <= H(q, p) for the masked tokens' own distribution q and any p."""
    in_sample = unigram_loss(data)
    trained = train_unigram_loss(data, train_unigram_log_probs(data))
    assert in_sample is not None and trained is not None
    assert in_sample < trained


def test_every_token_id_has_a_finite_log_probability(data: CorpusDataModule):
    log_probs = train_unigram_log_probs(data)
    assert log_probs.shape == (data.tokenizer_vocab_size,)
    assert all(math.isfinite(v) for v in log_probs.tolist())
    assert math.fsum(math.exp(v) for v in log_probs.tolist()) == pytest.approx(1.0, rel=1e-9)


def test_the_csv_holds_both_references_by_their_names(tmp_path: Path):
    cell = CellScores(
        128, loss=5.0, unigram_loss=6.1, train_unigram_loss=6.7, sequences={"seed": 0}
    )
    rows = baseline_rows([CheckpointRows(name="run", step=None, cells=[cell])])
    assert ("baseline:unigram", 128, "loss", 6.1) in rows
    assert ("baseline:train_unigram", 128, "loss", 6.7) in rows
