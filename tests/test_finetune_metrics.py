"""Fine-tuning metrics against scikit-learn / SciPy, the schedule, pooling, encoding and
the task table (no checkpoint, no network)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats
from sklearn import metrics as skm
from tokenizers import Tokenizer, models, pre_tokenizers

from roformer_lit.errors import ConfigError
from roformer_lit.finetune.encoding import collate, encode_examples, truncate_pair
from roformer_lit.finetune.examples import examples_from_rows
from roformer_lit.finetune.metrics import make_metrics
from roformer_lit.finetune.module import pool
from roformer_lit.finetune.tasks import TASKS, get_task, metrics_for, val_suffixes
from roformer_lit.training.lifecycle import warmup_then_linear as linear_schedule


def computed(names: tuple[str, ...], num_labels: int, preds, target) -> dict[str, float]:
    collection = make_metrics(names, num_labels)
    half = len(preds) // 2  # two updates: the metric accumulates over batches
    collection.update(preds[:half], target[:half])
    collection.update(preds[half:], target[half:])
    return {k: float(v) for k, v in collection.compute().items()}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binary_metrics_equal_sklearn(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 200)
    p = np.where(rng.random(200) < 0.7, y, 1 - y)
    got = computed(("f1", "accuracy", "matthews"), 2, torch.tensor(p), torch.tensor(y))
    assert got["f1"] == pytest.approx(skm.f1_score(y, p), abs=1e-6)
    assert got["accuracy"] == pytest.approx(skm.accuracy_score(y, p), abs=1e-6)
    assert got["matthews"] == pytest.approx(skm.matthews_corrcoef(y, p), abs=1e-6)


def test_multiclass_metrics_equal_sklearn():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 300)
    p = np.where(rng.random(300) < 0.5, y, rng.integers(0, 3, 300))
    got = computed(("accuracy", "matthews"), 3, torch.tensor(p), torch.tensor(y))
    assert got["accuracy"] == pytest.approx(skm.accuracy_score(y, p), abs=1e-6)
    assert got["matthews"] == pytest.approx(skm.matthews_corrcoef(y, p), abs=1e-6)


@pytest.mark.parametrize("seed", [0, 1])
def test_correlations_equal_scipy(seed):
    rng = np.random.default_rng(seed)
    y = np.round(rng.random(150) * 5, 1)  # STS-B-like scores with ties
    s = y + rng.normal(0, 1.0, 150)
    got = computed(
        ("pearson", "spearman"),
        1,
        torch.tensor(s, dtype=torch.float32),
        torch.tensor(y, dtype=torch.float32),
    )
    assert got["pearson"] == pytest.approx(stats.pearsonr(s, y)[0], abs=1e-5)
    assert got["spearman"] == pytest.approx(stats.spearmanr(s, y)[0], abs=1e-5)


def test_each_task_names_its_official_metrics():
    assert get_task("cola").metrics == ("matthews",)
    assert get_task("mrpc").metrics == get_task("qqp").metrics == ("f1", "accuracy")
    assert get_task("stsb").metrics == ("pearson", "spearman") and get_task("stsb").num_labels == 1
    for name in ("sst2", "mnli", "qnli", "rte", "movie_polarity"):
        assert get_task(name).metrics == ("accuracy",)
    assert val_suffixes(get_task("mnli")) == ("", "_mismatched")
    assert metrics_for(get_task("local"), 1) == ("pearson", "spearman")
    assert metrics_for(get_task("local"), 4) == ("accuracy",)
    with pytest.raises(ConfigError, match="valid: movie_polarity, local, cola"):
        get_task("glue")


def test_glue_field_mapping_reads_a_dataset_table():
    """Each GLUE task's fields, read from a table shaped like its ``datasets`` split."""
    for name, spec in TASKS.items():
        if spec.source != "glue":
            continue
        columns = {spec.text_field: ["a b", "c"], spec.label_field: [1, 0], "idx": [0, 1]}
        if spec.text_pair_field:
            columns[spec.text_pair_field] = ["d", "e f"]
        if name == "stsb":
            columns["label"] = [3.2, 0.5]
        examples = examples_from_rows(
            columns, spec.text_field, spec.text_pair_field, spec.label_field, name
        )
        assert [e.text for e in examples] == ["a b", "c"]
        assert [e.text_pair for e in examples] == (
            ["d", "e f"] if spec.text_pair_field else [None, None]
        )
        assert [e.label for e in examples] == columns["label"]
    with pytest.raises(ConfigError, match="no column 'sentence2'"):
        examples_from_rows(
            {"sentence1": ["a"], "label": [0]}, "sentence1", "sentence2", "label", "x"
        )


def test_glue_loads_through_datasets_lazily(monkeypatch):
    """``read_glue`` asks ``datasets`` for nyu-mll/glue, the task and the split (mocked)."""
    import datasets

    from roformer_lit.finetune.examples import read_glue

    calls = []

    def fake_load(path, name, split):
        calls.append((path, name, split))
        return datasets.Dataset.from_dict(
            {"premise": ["p"], "hypothesis": ["h"], "label": [2], "idx": [0]}
        )

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    (example,) = read_glue("mnli", "validation_mismatched", "premise", "hypothesis", "label")
    assert calls == [("nyu-mll/glue", "mnli", "validation_mismatched")]
    assert (example.text, example.text_pair, example.label) == ("p", "h", 2)


def test_linear_schedule_warms_up_then_decays_to_zero():
    total, warmup = 50, 5
    factors = [linear_schedule(s, warmup, total) for s in range(total + 1)]
    assert factors[:5] == pytest.approx([(s + 1) / 6 for s in range(5)])
    assert factors[5] == 1.0 and factors[total] == 0.0
    assert all(a >= b for a, b in zip(factors[5:], factors[6:], strict=False))


def test_pooling_reads_the_first_token_or_the_mean_of_real_tokens():
    hidden = torch.randn(2, 4, 3)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    torch.testing.assert_close(pool(hidden, mask, "cls"), hidden[:, 0])
    expected = torch.stack([hidden[0, :2].mean(0), hidden[1].mean(0)])
    torch.testing.assert_close(pool(hidden, mask, "mean"), expected)


def word_tokenizer() -> Tokenizer:
    vocab = {
        t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefgh"])
    }
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return tok


def test_single_texts_and_pairs_are_framed_and_truncated():
    tok = word_tokenizer()
    ids = encode_examples(tok, ["a b", "a b c d e f"], [None, "g h"], max_length=7)
    a, b, g, h = 5, 6, 11, 12
    assert ids[0] == [2, a, b, 3]  # [CLS] a b [SEP]
    # longest-first: 6 + 2 tokens cut to 7 - 3 = 4: the first text loses 4
    assert ids[1] == [2, a, b, 3, g, h, 3]
    assert truncate_pair([1, 2, 3], [4, 5, 6], 4) == ([1, 2], [4, 5])
    batch = collate([(ids[0], 1), (ids[1], 0)], pad_id=0, regression=False)
    assert batch["input_ids"].tolist()[0] == [2, a, b, 3, 0, 0, 0]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1, 0, 0, 0], [1] * 7]
    assert batch["labels"].dtype == torch.long
    assert collate([(ids[0], 0.5)], 0, regression=True)["labels"].dtype == torch.float32
