"""The position probes: every task's answers against an independent slow oracle, the
layout (only the answer slots masked and labelled), determinism (in another process too),
the data module's probe mode, its refusals, ``val/exact``, and fit + extrapolate."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import torch
from cli_helpers import probe_fit_args
from lightning.pytorch.callbacks import Callback

from roformer_lit.commands import EXIT_PREEMPTED
from roformer_lit.commands import main as cli_main
from roformer_lit.data import CorpusDataModule, ProbeDataModule, data_module
from roformer_lit.data.dataset import ResumableDataLoader
from roformer_lit.data.probes import PROBE_TASKS, generate, probe_rng, probe_tokenizer
from roformer_lit.data.probes.tasks import FIRST_SYMBOL, MASK_ID, PAD_ID, SEP_ID
from roformer_lit.data.stored_tokenizer import checkpoint_tokenizer
from roformer_lit.errors import ConfigError
from roformer_lit.module import _exact_match
from roformer_lit.results.events import read_run

SYMBOLS = 10


# -- slow oracles: from the visible tokens of one sequence, the answer of every masked slot


def _input_and_slots(row: list[int]) -> tuple[list[int], list[int]]:
    sep = row.index(SEP_ID)
    return row[:sep], row[sep + 1 :]


def oracle_copy(row: list[int]) -> list[int]:
    inputs, _ = _input_and_slots(row)
    return list(inputs)


def oracle_reverse(row: list[int]) -> list[int]:
    inputs, _ = _input_and_slots(row)
    return [inputs[len(inputs) - 1 - j] for j in range(len(inputs))]


def oracle_sort(row: list[int]) -> list[int]:
    inputs, _ = _input_and_slots(row)
    out = list(inputs)
    for i in range(len(out)):  # insertion sort: nothing shared with numpy's
        j = i
        while j > 0 and out[j - 1] > out[j]:
            out[j - 1], out[j] = out[j], out[j - 1]
            j -= 1
    return out


def oracle_odds_first(row: list[int]) -> list[int]:
    inputs, _ = _input_and_slots(row)
    one_indexed = dict(enumerate(inputs, start=1))
    odd = [one_indexed[p] for p in sorted(one_indexed) if p % 2 == 1]
    even = [one_indexed[p] for p in sorted(one_indexed) if p % 2 == 0]
    return odd + even


def oracle_recall(row: list[int]) -> list[int]:
    inputs, slots = _input_and_slots(row)
    table = {}
    for i in range(0, len(inputs), 2):
        assert inputs[i] not in table, "keys must be distinct"
        table[inputs[i]] = inputs[i + 1]
    answers = []
    for i in range(0, len(slots), 2):
        assert slots[i + 1] == MASK_ID
        answers.append(table[slots[i]])
    return answers


ORACLES = {
    "copy": oracle_copy,
    "reverse": oracle_reverse,
    "sort": oracle_sort,
    "odds_first": oracle_odds_first,
    "recall": oracle_recall,
}


def _batch(name: str, n: int, seed: int = 0, batch: int = 6) -> tuple[np.ndarray, np.ndarray]:
    return generate(PROBE_TASKS[name], probe_rng(seed, "train", 0, n), batch, n, SYMBOLS)


@pytest.mark.parametrize("name", sorted(PROBE_TASKS))
@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_answers_equal_the_oracle(name, n):
    """Every task has an oracle here (a new task without one fails), and its labels at the
    masked slots are the oracle's answers, in order."""
    oracle = ORACLES[name]
    n = min(n, PROBE_TASKS[name].longest(SYMBOLS) or n)
    input_ids, labels = _batch(name, n)
    for row, row_labels in zip(input_ids.tolist(), labels.tolist(), strict=True):
        answers = [label for label in row_labels if label != -100]
        assert answers == oracle(row)


@pytest.mark.parametrize("name", sorted(PROBE_TASKS))
def test_only_the_answer_slots_are_masked_and_labelled(name):
    task = PROBE_TASKS[name]
    for n in (1, 3, 5):
        input_ids, labels = _batch(name, n)
        assert input_ids.shape == labels.shape == (6, task.sequence_length(n))
        masked = input_ids == MASK_ID
        assert np.array_equal(masked, labels != -100)  # labelled exactly where [MASK]
        assert masked.any(axis=1).all()
        assert (
            (input_ids[:, :n] >= FIRST_SYMBOL) & (input_ids[:, :n] < FIRST_SYMBOL + SYMBOLS)
        ).all()
        assert (input_ids == SEP_ID).sum(axis=1).tolist() == [1] * 6
        sep = task.sequence_length(n) // 2
        assert (input_ids[:, sep] == SEP_ID).all() and (labels[:, : sep + 1] == -100).all()
        answers = labels[masked]
        assert ((answers >= FIRST_SYMBOL) & (answers < FIRST_SYMBOL + SYMBOLS)).all()
        assert not (input_ids == PAD_ID).any()  # nothing padded


def test_recall_refuses_more_pairs_than_keys():
    with pytest.raises(ConfigError, match="input length n=6 is invalid for probe 'recall'"):
        _batch("recall", SYMBOLS // 2 + 1)


def test_recall_keys_and_values_use_the_two_halves():
    input_ids, _ = _batch("recall", SYMBOLS // 2)
    symbols = input_ids[:, :SYMBOLS] - FIRST_SYMBOL
    assert (symbols[:, 0::2] < SYMBOLS // 2).all() and (symbols[:, 1::2] >= SYMBOLS // 2).all()
    for row in symbols[:, 0::2]:
        assert len(set(row.tolist())) == SYMBOLS // 2  # distinct keys


HINTED = [name for name, task in PROBE_TASKS.items() if task.hint is not None]


@pytest.mark.parametrize("name", HINTED)
@pytest.mark.parametrize("hint", [0.3, 0.9])
def test_a_hinted_batch_still_answers_as_the_oracle_and_partners_the_hinted_share(name, hint):
    """A training hint changes which sequences are drawn, never the rule that answers them;
    for ``recall`` about ``hint`` of the values are their keys' partners (key + half),
    against 1 / half by chance."""
    half, n, rows = SYMBOLS // 2, SYMBOLS // 2, 400
    rng = probe_rng(0, "train", 0, 1)
    input_ids, labels = generate(PROBE_TASKS[name], rng, rows, n, SYMBOLS, hint)
    for row, row_labels in zip(input_ids.tolist(), labels.tolist(), strict=True):
        assert [label for label in row_labels if label != -100] == ORACLES[name](row)
    pairs = input_ids[:, : 2 * n] - FIRST_SYMBOL
    partnered = float((pairs[:, 1::2] == pairs[:, 0::2] + half).mean())
    expected = hint + (1 - hint) / half
    assert abs(partnered - expected) < 4 * (expected * (1 - expected) / (rows * n)) ** 0.5


def test_no_hint_draws_the_same_batches_as_ever():
    for name in HINTED:
        plain = _batch(name, 4)
        zero = generate(PROBE_TASKS[name], probe_rng(0, "train", 0, 4), 6, 4, SYMBOLS, 0.0)
        assert all(np.array_equal(a, b) for a, b in zip(plain, zero, strict=True))


def test_the_hint_shapes_training_batches_only():
    settings = dict(
        probe="recall", probe_min_length=2, probe_max_length=4, probe_symbols=8, max_length=17
    )
    hinted = ProbeDataModule(**settings, probe_hint=0.9, max_val_blocks=64)
    plain = ProbeDataModule(**settings, max_val_blocks=64)
    for dm in (hinted, plain):
        dm.setup("fit")
    assert torch.equal(hinted.val_dataset.input_ids, plain.val_dataset.input_ids)
    batch = hinted.train_dataset.batch(0)["input_ids"]
    n = (batch.shape[1] - 1) // 4
    pairs = batch[:, : 2 * n] - FIRST_SYMBOL
    assert float((pairs[:, 1::2] == pairs[:, 0::2] + 4).float().mean()) > 0.8


@pytest.mark.parametrize(
    "overrides,message",
    [
        (
            {"probe": "copy", "probe_hint": 0.5},
            "data.probe_hint=0.5 means nothing for probe 'copy'",
        ),
        ({"probe": None, "probe_hint": 0.5}, "data.probe_hint=0.5 needs data.probe"),
        ({"probe": "recall", "probe_hint": 1.0}, "data.probe_hint must be in [0, 1), got 1.0"),
        ({"probe": "recall", "probe_hint": -0.1}, "data.probe_hint must be in [0, 1), got -0.1"),
    ],
)
def test_a_bad_hint_is_one_line(overrides, message):
    """A flat data section (``probe`` picks the class: ``data.modules``)."""
    task = dict(probe_max_length=4, max_length=17, probe_symbols=8) if overrides["probe"] else {}
    settings = {**task, **overrides}
    with pytest.raises(ConfigError) as error:
        data_module(settings, lenient=False)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)
    if overrides["probe"] == "copy":
        assert "recall" in str(error.value)


def _digest(seed: int) -> str:
    h = hashlib.sha256()
    for name in sorted(PROBE_TASKS):
        for array in _batch(name, 4, seed):
            h.update(array.tobytes())
    return h.hexdigest()


DIGEST_SCRIPT = """
import hashlib
from roformer_lit.data.probes import PROBE_TASKS, generate, probe_rng
h = hashlib.sha256()
for name in sorted(PROBE_TASKS):
    for array in generate(PROBE_TASKS[name], probe_rng(3, "train", 0, 4), 6, 4, {symbols}):
        h.update(array.tobytes())
print(h.hexdigest())
"""


@pytest.mark.trainer  # a real process: outside the fast tier
def test_same_seed_same_data_in_this_and_another_process():
    assert _digest(3) == _digest(3) != _digest(4)
    script = DIGEST_SCRIPT.format(symbols=SYMBOLS)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == _digest(3)


def test_tokenizer_ids_are_the_tasks_ids():
    tok = probe_tokenizer(SYMBOLS)
    assert tok.get_vocab_size(with_added_tokens=True) == FIRST_SYMBOL + SYMBOLS
    words = ["[PAD]", "[MASK]", "[SEP]", "s0", f"s{SYMBOLS - 1}"]
    assert tok.encode(" ".join(words)).ids == [
        PAD_ID,
        MASK_ID,
        SEP_ID,
        FIRST_SYMBOL,
        FIRST_SYMBOL + SYMBOLS - 1,
    ]


# -- the data module's probe mode


def probe_module(**overrides) -> ProbeDataModule:
    """A flat data section (``probe`` picks the class, a corpus key is refused: ``data.modules``)."""
    settings = dict(
        probe="copy", probe_min_length=2, probe_max_length=6, max_length=13, batch_size=4
    )
    module = data_module({**settings, **overrides}, lenient=False)
    assert isinstance(module, ProbeDataModule)
    return module


def test_data_module_batches_have_one_length_in_range_and_are_keyed_by_index():
    dm = probe_module(max_val_blocks=10)
    assert dm.tokenizer_vocab_size == FIRST_SYMBOL + 16
    assert (dm.mask_token_id, dm.pad_token_id) == (MASK_ID, PAD_ID)
    dm.setup("fit")
    batches = list(zip(range(12), dm.train_dataloader(), strict=False))
    lengths = {batch["input_ids"].shape[1] for _, batch in batches}
    assert lengths <= {2 * n + 1 for n in range(2, 7)} and len(lengths) > 1
    again = probe_module(max_val_blocks=10)
    again.setup("fit")
    for (i, batch), (_, other) in zip(
        batches, zip(range(12), again.train_dataloader(), strict=False), strict=True
    ):
        assert batch["input_ids"].shape[0] == 4
        assert torch.equal(batch["input_ids"], other["input_ids"]), i
    val = torch.cat([b["input_ids"] for b in dm.val_dataloader()])
    assert val.shape == (10, 13)  # probe_max_length, max_val_blocks sequences
    other_batch = probe_module(max_val_blocks=10, batch_size=3)
    other_batch.setup("validate")
    assert torch.equal(val, torch.cat([b["input_ids"] for b in other_batch.val_dataloader()]))


def test_resumed_loader_continues_with_the_same_batches():
    dm = probe_module()
    dm.setup("fit")
    loader = dm.train_dataloader()
    assert isinstance(loader, ResumableDataLoader)
    it = iter(loader)
    for _ in range(5):
        next(it)
    state = loader.state_dict()
    resumed = probe_module()
    resumed.setup("fit")
    loader2 = resumed.train_dataloader()
    loader2.load_state_dict(state)
    nxt = next(iter(loader2))
    assert state["batches"] == 5
    assert torch.equal(nxt["input_ids"], next(it)["input_ids"])  # the uninterrupted 6th


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"probe": "copyy"}, "data.probe='copyy' is not a probe task: valid: copy, reverse"),
        ({"train_files": "x.txt"}, "data.train_files='x.txt' cannot go with data.probe"),
        ({"val_files": "x.txt"}, "data.val_files='x.txt' cannot go with data.probe"),
        ({"dataset": "wikitext"}, "data.dataset='wikitext' cannot go with data.probe"),
        ({"tokenizer_file": "t.json"}, "data.tokenizer_file='t.json' cannot go with data.probe"),
        ({"max_train_blocks": 5}, "data.max_train_blocks=5 cannot go with data.probe"),
        ({"document_mask": True}, "data.document_mask=true cannot go with data.probe"),
        ({"probe_symbols": 1}, "data.probe_symbols must be an integer in 2..2147483647, got 1"),
        (
            {"probe_min_length": 0},
            "data.probe_min_length must be an integer in 1..2147483647, got 0",
        ),
        (
            {"probe_max_length": 1.5},
            "data.probe_max_length must be an integer in 1..2147483647, got 1.5",
        ),
        (
            {"probe_min_length": 7},
            "data.probe_min_length must be <= data.probe_max_length=6, got 7",
        ),
        (
            {"max_length": 12},
            "data.max_length=12 is too short for probe 'copy' .* set data.max_length >= 13",
        ),
        (
            {"probe": "recall", "probe_max_length": 9, "max_length": 40},
            "data.probe_max_length=9 is invalid for probe 'recall'.*<= 8 with 16 symbols",
        ),
        ({"seed": -1}, "data.seed must be an integer in 0..4294967295, got -1"),
    ],
)
def test_bad_probe_settings_are_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message) as info:
        probe_module(**overrides)
    assert "\n" not in str(info.value)


def test_probe_has_no_corpus_to_prepare():
    with pytest.raises(ConfigError, match="builds its data in memory"):
        probe_module().prepare()


def test_a_section_without_a_probe_builds_the_corpus_module():
    dm = data_module({"max_length": 32, "probe": None}, lenient=False)
    assert isinstance(dm, CorpusDataModule) and dm.probe_task is None
    assert "probe" not in dm.hparams


# -- val/exact


@pytest.mark.parametrize(
    "labels,predicted,expected",
    [
        ([[5, -100, 6], [7, 8, -100]], [[5, 6], [7, 8]], (1.0, 2)),  # both rows right
        ([[5, -100, 6], [7, 8, -100]], [[5, 6], [7, 9]], (0.5, 2)),  # one token wrong
        ([[5, -100, 6], [7, 8, -100]], [[4, 6], [7, 9]], (0.0, 2)),
        ([[-100, -100, -100], [7, 8, -100]], [[7, 8]], (1.0, 1)),  # a row with nothing labelled
    ],
)
def test_exact_match_counts_rows_with_every_labelled_token_right(labels, predicted, expected):
    labels_t = torch.tensor(labels)
    predicted_t = torch.tensor([p for row in predicted for p in row])
    logits = torch.nn.functional.one_hot(predicted_t, 10).float()
    value, weight = _exact_match(logits, labels_t)
    assert (float(value), int(weight)) == expected


# -- fit, checkpoint, extrapolate


@pytest.mark.trainer
def test_fit_then_extrapolate_a_probe_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = probe_fit_args("copy", 4, 2)
    assert cli_main(args) == 0
    (ckpt,) = tmp_path.glob("runs/probes/*/checkpoints/last.ckpt")
    assert ckpt.parent.parent.name == "rope-softmax-seed0-copy"  # named after the task
    scalars = read_run(ckpt.parent.parent).scalars
    assert [s.step for s in scalars["val/exact"]] == [s.step for s in scalars["val/acc"]]
    stored = checkpoint_tokenizer(ckpt)
    assert stored is not None and stored.to_str() == probe_tokenizer(16).to_str()
    capsys.readouterr()
    assert cli_main(["extrapolate", str(ckpt), "--lengths", "8", "16"]) == 0
    out, err = capsys.readouterr()
    header, *baselines, row = [line for line in out.splitlines() if line.startswith("| ")]
    assert header.startswith("| checkpoint | scheme | kernel | n=8 | n=16 |")
    assert [b.split("|")[1].strip() for b in baselines] == ["baseline:majority", "baseline:uniform"]
    cells = [c.strip() for c in row.strip("|").split("|")][3:]
    for cell in cells:  # "acc / exact", then the cell's verdict if any
        acc, exact = (float(x.split()[0]) for x in cell.split(" / "))
        assert 0.0 <= exact <= acc <= 1.0
    assert "n=8: 16 sequences of 17 tokens (= validate's)" in err
    assert "n=16: 16 sequences of 33 tokens" in err


def probe_fit(steps: int, *extra: str) -> list[str]:
    return probe_fit_args("reverse", steps, 3, 3, "--model.dropout", "0.1", *extra)


class StopAt(Callback):
    """Sends SIGTERM to this process during train step ``step`` (a preemption)."""

    def __init__(self, step: int) -> None:
        self.step, self.sent = step, False

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if not self.sent and trainer.global_step + 1 == self.step:
            self.sent = True
            os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.parametrize(
    "positions", [[], ["--data.random_positions", "64"]], ids=["plain", "random-positions"]
)
@pytest.mark.trainer
def test_a_preempted_probe_run_resumes_bit_identical(tmp_path, monkeypatch, positions):
    """Preempted (SIGTERM) at step 4 of 6 and continued from its ``last.ckpt``, a probe run
    (with dropout, with and without randomized positions) ends with the weights of an
    uninterrupted one, bit for bit."""
    import roformer_lit.commands.pretrain as pretrain

    args = probe_fit(6, *positions)
    finals = []
    for preempt in (False, True):
        run_dir = tmp_path / ("preempted" if preempt else "straight")
        run_dir.mkdir()
        monkeypatch.chdir(run_dir)
        if preempt:
            original = pretrain.RoformerCLI.instantiate_trainer

            def with_stop(self, original=original, **kwargs):
                trainer = original(self, **kwargs)
                trainer.callbacks.append(StopAt(4))
                return trainer

            monkeypatch.setattr(pretrain.RoformerCLI, "instantiate_trainer", with_stop)
            assert cli_main(args) == EXIT_PREEMPTED
            monkeypatch.setattr(pretrain.RoformerCLI, "instantiate_trainer", original)
            (ckpt,) = run_dir.rglob("last.ckpt")
            assert torch.load(ckpt, map_location="cpu", weights_only=True)["global_step"] == 4
            assert cli_main([*args, "--ckpt_path", str(ckpt)]) == 0
        else:
            assert cli_main(args) == 0
        (ckpt,) = run_dir.rglob("last.ckpt")
        finals.append(torch.load(ckpt, map_location="cpu", weights_only=True))
    straight, resumed = finals
    assert straight["global_step"] == resumed["global_step"] == 6
    for key, value in straight["state_dict"].items():
        assert torch.equal(value, resumed["state_dict"][key]), key
