"""Randomized positions (Ruoss et al. 2023): ``position_ids`` through the seam and the data.

The model oracle is independent of every scheme's code path for positions: running tokens
at sorted positions ``p`` must give, at every token, the hidden states of a longer row
``0 .. max(p)`` holding the tokens at indices ``p`` and padding (masked out) elsewhere,
computed on the ordinary fast path. Parametrised over the registries, so a new scheme or
kernel is covered the moment it is registered.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from cli_helpers import fit_args, fit_preempted, probe_fit_args
from model_factory import VALID_PAIRS, random_ids, small_model, visible_model

from roformer_lit import POSITION_SCHEMES
from roformer_lit.commands import EXIT_PREEMPTED, EXIT_USER_ERROR, main
from roformer_lit.data import CorpusDataModule, ProbeDataModule
from roformer_lit.data.modules import data_module as section_module
from roformer_lit.errors import ConfigError
from roformer_lit.model import Encoder
from roformer_lit.module import MaskedLM
from roformer_lit.positions.base import PositionScheme, QKVWeights
from roformer_lit.score_bias import dense_from_lookup

READING = [name for name, cls in POSITION_SCHEMES.items() if cls.reads_positions]
READING_PAIRS = [(p, a) for p, a in VALID_PAIRS if p in READING]
#: Positions are drawn from [0, SPAN), past the cached tables of MAX_POSITIONS rows.
SPAN, MAX_POSITIONS, LENGTH, BATCH = 40, 16, 7, 3
#: Float64 throughout, but the sinusoid tables are float32 by design (XL's identity path
#: rounds other angles than its shifted path: ~1e-9 apart).
TOL = {"rtol": 1e-7, "atol": 1e-8}
#: Schemes whose positions path is another computation of the same numbers (not bitwise).
NOT_BITWISE = {"xl": "angle-difference identity instead of the relative sinusoid"}


@pytest.fixture
def double_precision():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def model_for(position: str, attention: str = "softmax", **kwargs) -> torch.nn.Module:
    """A small model whose scheme shows its position dependence on short rows (each
    scheme's ``test_kwargs`` and ``amplify_for_tests``)."""
    bounded = POSITION_SCHEMES[position].max_length is not PositionScheme.max_length
    # a bounded table must hold the range; the others get a short cache, to go past it
    max_positions = SPAN if bounded else MAX_POSITIONS
    return visible_model(position, attention, max_positions=max_positions, **kwargs)


def random_positions(batch: int, length: int, span: int, seed: int = 5) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    rows = [torch.randperm(span, generator=generator)[:length].sort().values for _ in range(batch)]
    return torch.stack(rows)


@pytest.mark.parametrize("position,attention", READING_PAIRS)
def test_ordinary_positions_given_change_nothing(position, attention):
    model = model_for(position, attention)
    ids = random_ids(BATCH, LENGTH)
    arange = torch.arange(LENGTH).expand(BATCH, LENGTH)
    with torch.no_grad():
        plain, given = model(ids), model(ids, position_ids=arange)
    if position in NOT_BITWISE:
        torch.testing.assert_close(given, plain, rtol=1e-5, atol=1e-6)
    else:
        assert torch.equal(given, plain)


@pytest.mark.usefixtures("double_precision")
@pytest.mark.parametrize("position", [p for p in READING if POSITION_SCHEMES[p].needs_score_bias])
def test_a_bias_lookup_at_positions_is_its_dense_bias(position):
    """The FlexAttention form of every bias at per-example positions (score_bias.py)."""
    model = model_for(position).double()
    scheme, attention = model.encoder.position, model.encoder.layers[0].attention
    positions = random_positions(BATCH, LENGTH, SPAN)
    heads, size = attention.num_heads, attention.head_size
    q, k = torch.randn(2, BATCH, heads, LENGTH, size).unbind(0)
    weights = QKVWeights(attention.qkv.weight, attention.qkv.bias, heads)
    with torch.no_grad():
        ctx = scheme.prepare(LENGTH, torch.device("cpu"), torch.float64, positions)
        score = scheme.layer(0).score(q, k, ctx, weights)
        assert score.bias.shape == (BATCH, heads, LENGTH, LENGTH)  # per example
        if score.lookup is not None:
            looked_up = dense_from_lookup(score.lookup, BATCH, heads, LENGTH)
            torch.testing.assert_close(looked_up, score.bias, **TOL)


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
@pytest.mark.parametrize("position", ["alibi", "t5", "kerple", "deberta"])
def test_the_flex_path_takes_positions(position):
    flex = model_for(position, attention_kwargs={"backend": "flex"}, attention_dropout=0.0)
    sdpa = model_for(position, attention_kwargs={"backend": "sdpa"}, attention_dropout=0.0)
    ids, positions = random_ids(BATCH, LENGTH), random_positions(BATCH, LENGTH, SPAN)
    with torch.no_grad():
        torch.testing.assert_close(
            flex(ids, position_ids=positions),
            sdpa(ids, position_ids=positions),
            rtol=1e-4,
            atol=1e-5,
        )


def test_positions_and_segments_together_are_an_input_error_of_the_network():
    """The settings are refused before anything is built (the corpus module's check,
    tests/test_data_modules.py); the network refuses the inputs with a ValueError (not an
    assertion, which ``python -O`` would skip)."""
    model = small_model("rope")
    ids = random_ids(1, LENGTH)
    with pytest.raises(ValueError, match="cannot be combined"):
        model(ids, segment_ids=torch.zeros_like(ids), position_ids=torch.arange(LENGTH)[None])


@pytest.mark.filterwarnings("ignore:You are trying to `self.log()`")
@pytest.mark.trainer
def test_training_and_evaluation_steps_place_tokens_at_the_batch_positions():
    """Both steps use a batch's ``position_ids``; whether validation batches carry them is
    the data module's decision (``validation_positions``)."""
    model = small_model("rope")
    ids = random_ids(BATCH, LENGTH)
    batch = {"input_ids": ids, "labels": ids, "position_ids": random_positions(BATCH, LENGTH, SPAN)}
    plain = {"input_ids": ids, "labels": ids}
    with torch.no_grad():
        trained = model.training_step(batch, 0)
        assert trained != model.training_step(plain, 0)
        placed = model.mlm_loss(ids, ids, position_ids=batch["position_ids"])
        assert trained == placed
        for evaluated, expected in ((batch, placed), (plain, model.mlm_loss(ids, ids))):
            model.val_metrics.reset()
            model._evaluate(evaluated, model.val_metrics)
            assert torch.allclose(model.val_metrics["loss"].compute(), expected)


# -- the data switch ------------------------------------------------------------------------

RANGE = 100
DATA = dict(max_length=32, batch_size=4, max_train_blocks=32, max_val_blocks=8)


def data_module(cache: Path, **kwargs) -> CorpusDataModule:
    dm = CorpusDataModule(cache_dir=str(cache), **{**DATA, **kwargs})
    dm.setup("fit")
    return dm


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cache")
    data_module(path)  # prepared once for the module
    return path


def batches(dm: CorpusDataModule, count: int) -> list[dict[str, torch.Tensor]]:
    loader = dm.train_dataloader()
    iterator = iter(loader)
    return [next(iterator) for _ in range(count)]


def test_training_batches_carry_sorted_distinct_positions_in_range(cache):
    dm = data_module(cache, random_positions=RANGE)
    for batch in batches(dm, 3):
        positions = batch["position_ids"]
        assert positions.shape == batch["input_ids"].shape and positions.dtype == torch.long
        assert (positions[:, 1:] > positions[:, :-1]).all()  # sorted and distinct
        assert positions.min() >= 0 and positions.max() < RANGE
        assert positions.max() >= DATA["max_length"]  # not the ordinary positions
        assert len({tuple(row.tolist()) for row in positions}) == len(positions)
    assert "position_ids" not in next(iter(dm.val_dataloader()))
    plain = data_module(cache)
    assert "position_ids" not in batches(plain, 1)[0]
    # the masking does not change with the switch: the positions have their own generator
    for key in ("input_ids", "labels"):
        assert torch.equal(batches(plain, 1)[0][key], batches(dm, 1)[0][key])


def test_positions_are_a_function_of_seed_epoch_and_block(cache):
    first = batches(data_module(cache, random_positions=RANGE), 4)
    again = batches(data_module(cache, random_positions=RANGE), 4)
    other_seed = batches(data_module(cache, random_positions=RANGE, seed=1), 1)
    assert all(
        torch.equal(a["position_ids"], b["position_ids"]) for a, b in zip(first, again, strict=True)
    )
    assert not torch.equal(first[0]["position_ids"], other_seed[0]["position_ids"])
    dataset = data_module(cache, random_positions=RANGE).train_dataset
    assert not torch.equal(dataset[(0, 3)]["position_ids"], dataset[(1, 3)]["position_ids"])


def test_a_resumed_loader_gives_the_same_positions(cache):
    skip = 3
    straight = batches(data_module(cache, random_positions=RANGE), skip + 1)
    resumed = data_module(cache, random_positions=RANGE).train_dataloader()
    resumed.load_state_dict({"epoch": 0, "batches": skip})
    batch = next(iter(resumed))
    for key in ("input_ids", "labels", "position_ids"):
        assert torch.equal(batch[key], straight[skip][key])


def test_validation_positions_random_gives_validation_fixed_draws_of_their_own(cache):
    dm = data_module(cache, random_positions=RANGE, validation_positions="random")
    val = dm.val_dataset
    for index in range(len(val)):
        positions = val[index]["position_ids"]
        assert bool((positions[1:] > positions[:-1]).all())  # sorted and distinct
        assert int(positions.min()) >= 0 and int(positions.max()) < RANGE
        assert torch.equal(val[(3, index)]["position_ids"], positions)  # fixed in every epoch
    again = data_module(cache, random_positions=RANGE, validation_positions="random").val_dataset
    assert all(torch.equal(again[i]["position_ids"], val[i]["position_ids"]) for i in range(4))
    rows = {tuple(val[i]["position_ids"].tolist()) for i in range(len(val))}
    assert len(rows) == len(val)  # per block
    train = dm.train_dataset
    assert not torch.equal(train[(0, 0)]["position_ids"], val[0]["position_ids"])  # own stream
    ordinary = data_module(cache, random_positions=RANGE).val_dataset
    for key in ("input_ids", "labels"):  # the masking is the one validation always has
        assert torch.equal(ordinary[0][key], val[0][key])


@pytest.mark.parametrize(
    "settings,words",
    [
        (
            {"validation_positions": "random"},
            ["validation_positions='random'", "needs data.random_positions"],
        ),
        (
            {"validation_positions": "shuffled", "random_positions": 64},
            ["data.validation_positions", "'shuffled'", "ordinary", "random"],
        ),
        ({"random_positions": 16}, ["random_positions", "max_length=32", "got 16"]),
        ({"random_positions": True}, ["random_positions", "got True"]),
        ({"random_positions": 64, "document_mask": True}, ["random_positions", "document_mask"]),
    ],
)
def test_the_data_module_refuses_in_one_line(cache, settings, words):
    with pytest.raises(ConfigError) as error:
        CorpusDataModule(cache_dir=str(cache), **{**DATA, **settings})
    message = str(error.value)
    assert "\n" not in message and all(word in message for word in words)


# -- the command line ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "config,extra,words",
    [
        (
            "rope.yaml",
            ["--data.random_positions", "16"],
            ["random_positions", "max_length", "got 16"],
        ),
        (
            "rope.yaml",
            ["--data.random_positions", "64", "--data.document_mask", "true"],
            ["random_positions", "document_mask"],
        ),
        ("nope.yaml", ["--data.random_positions", "64"], ["'nope'", "reads none", "rope"]),
        (
            "learned.yaml",
            ["--data.random_positions", "128", "--model.max_positions", "64"],
            ["random_positions=128", "max_positions=64", "'learned'"],
        ),
    ],
    ids=["below max_length", "with document_mask", "nope", "past the learned table"],
)
@pytest.mark.trainer
def test_the_command_line_refuses_in_one_line(tmp_path, monkeypatch, capsys, config, extra, words):
    monkeypatch.chdir(tmp_path)
    assert main(fit_args(config, 2, *extra)) == EXIT_USER_ERROR
    stderr = capsys.readouterr().err
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in stderr
    assert all(word in errors[0] for word in words), errors[0]
    assert not list(tmp_path.rglob("*.ckpt"))


def record_positions(monkeypatch) -> list[tuple[bool, int | None]]:
    """Every encoder call from now on, as (training?, largest position id or None)."""
    seen: list[tuple[bool, int | None]] = []
    forward = Encoder.forward

    def spy(self, *args, **kwargs):
        given = kwargs.get("position_ids")
        seen.append((self.training, None if given is None else int(given.max())))
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(Encoder, "forward", spy)
    return seen


@pytest.mark.parametrize(
    "config,validation",
    [("rope.yaml", "ordinary"), ("alibi.yaml", "ordinary"), ("rope.yaml", "random")],
)
@pytest.mark.trainer
def test_fit_with_random_positions(tmp_path, monkeypatch, config, validation):
    monkeypatch.chdir(tmp_path)
    seen = record_positions(monkeypatch)
    switch = ["--data.random_positions", "1024", "--data.validation_positions", validation]
    assert main(fit_args(config, 3, *switch)) == 0
    trained = [largest for training, largest in seen if training]
    evaluated = [largest for training, largest in seen if not training]
    assert len(trained) == 3 and all(p is not None and p >= 32 for p in trained)
    if validation == "ordinary":
        assert evaluated and all(p is None for p in evaluated)
    else:
        assert evaluated and all(p is not None and p >= 32 for p in evaluated)
    checkpoint = torch.load(
        next(tmp_path.rglob("last.ckpt")), map_location="cpu", weights_only=True
    )
    assert checkpoint["datamodule_hyper_parameters"]["random_positions"] == 1024
    assert all(torch.isfinite(v).all() for v in checkpoint["state_dict"].values())


@pytest.mark.trainer
def test_extrapolate_evaluates_past_the_range_with_plain_positions(tmp_path, monkeypatch, capsys):
    """Evaluation never draws positions, so a length past ``R`` is evaluated, not refused."""
    monkeypatch.chdir(tmp_path)
    assert main(fit_args("rope.yaml", 2, "--data.random_positions", "40")) == 0
    ckpt = next(tmp_path.rglob("last.ckpt"))
    capsys.readouterr()
    assert main(["extrapolate", str(ckpt), "--lengths", "32", "64"]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-1]
    cells = [cell.strip() for cell in row.split("|")[4:6]]
    assert all(float(cell) > 0 for cell in cells), row


# -- position probes ----------------------------------------------------------------------


PROBE_SETTINGS: dict = dict(
    probe="copy",
    probe_min_length=4,
    probe_max_length=8,
    probe_symbols=8,
    max_length=17,
    batch_size=6,
    seed=3,
    max_val_blocks=12,
    random_positions=256,
)


def probe_module(random_positions: int | None) -> ProbeDataModule:
    dm = ProbeDataModule(**{**PROBE_SETTINGS, "random_positions": random_positions})
    dm.setup("fit")
    return dm


def test_probe_training_batches_carry_random_positions_and_the_same_symbols():
    on, off = probe_module(256), probe_module(None)
    for index in range(4):
        with_positions = on.train_dataset.batch(index, epoch=1)
        without = off.train_dataset.batch(index, epoch=1)
        assert "position_ids" not in without
        for key in ("input_ids", "labels"):  # the positions have a stream of their own
            assert torch.equal(with_positions[key], without[key])
        positions = with_positions["position_ids"]
        assert positions.shape == with_positions["input_ids"].shape
        assert bool((positions[:, 1:] > positions[:, :-1]).all())  # sorted, distinct
        assert int(positions.min()) >= 0 and int(positions.max()) < 256
        assert len({tuple(row.tolist()) for row in positions}) > 1  # per sequence
        again = probe_module(256).train_dataset.batch(index, epoch=1)["position_ids"]
        assert torch.equal(again, positions)
    assert "position_ids" not in on.val_dataset[0]


def test_probe_validation_at_random_positions_keeps_its_sequences():
    ordinary = probe_module(256).val_dataset
    dm = ProbeDataModule(**{**PROBE_SETTINGS, "validation_positions": "random"})
    dm.setup("validate")
    drawn = dm.val_dataset
    assert len(drawn) == len(ordinary)
    for index in range(len(drawn)):
        for key in ("input_ids", "labels"):
            assert torch.equal(drawn[index][key], ordinary[index][key])
        positions = drawn[index]["position_ids"]
        assert positions.shape == drawn[index]["input_ids"].shape
        assert bool((positions[1:] > positions[:-1]).all()) and int(positions.max()) < 256
    fewer = ProbeDataModule(
        **{**PROBE_SETTINGS, "validation_positions": "random", "max_val_blocks": 5}
    )
    fewer.setup("validate")  # a shorter validation set is a prefix of the longer one
    assert all(
        torch.equal(fewer.val_dataset[i]["position_ids"], drawn[i]["position_ids"])
        for i in range(5)
    )


PROBE_FIT = probe_fit_args("copy", 30, 30, 4, "--data.random_positions", "40")


def evaluation_by_hand(ckpt: Path, validation_positions: str) -> tuple[float, float]:
    """The answer-token accuracy and loss on the run's validation sequences, computed outside
    Lightning: one forward pass of the whole set, the batch's positions given explicitly."""
    model = MaskedLM.from_checkpoint(ckpt).eval()
    saved = torch.load(ckpt, map_location="cpu", weights_only=True)["datamodule_hyper_parameters"]
    data = section_module({**saved, "validation_positions": validation_positions})
    data.setup("validate")
    val = data.val_dataset
    items = [val[i] for i in range(len(val))]
    ids = torch.stack([item["input_ids"] for item in items])
    labels = torch.stack([item["labels"] for item in items])
    positions = None
    if validation_positions == "random":
        positions = torch.stack([item["position_ids"] for item in items])
    with torch.no_grad():
        logits, targets = model.masked_logits(ids, labels, position_ids=positions)
    accuracy = float((logits.argmax(-1) == targets).double().mean())
    return accuracy, float(torch.nn.functional.cross_entropy(logits, targets))


def extrapolate_cells(args: list[str], capsys) -> tuple[list[str], str]:
    capsys.readouterr()
    assert main(["extrapolate", *args]) == 0
    out, err = capsys.readouterr()
    row = [line for line in out.splitlines() if line.startswith("| ") and ".ckpt" in line][0]
    return [c.strip() for c in row.strip("|").split("|")][3:], err


@pytest.mark.trainer
def test_extrapolate_at_random_positions_draws_them_as_training_did(tmp_path, monkeypatch, capsys):
    """``--positions random`` (Ruoss et al.'s evaluation) against an oracle outside Lightning,
    and beside it the ordinary positions; past ``R`` the cell is n/a with the reason."""
    monkeypatch.chdir(tmp_path)
    assert main(PROBE_FIT) == 0
    (ckpt,) = tmp_path.glob("runs/probes/*/checkpoints/last.ckpt")
    for positions in ("random", "ordinary"):
        cells, err = extrapolate_cells(
            [str(ckpt), "--lengths", "8", "32", "--positions", positions], capsys
        )
        accuracy = float(cells[0].split(" / ")[0])
        expected = evaluation_by_hand(ckpt, positions)[0]
        assert accuracy == pytest.approx(expected, abs=6e-4), positions
        if positions == "random":
            assert cells[1].startswith("n/a"), cells
            assert "random_positions" in err and "1024" not in err
            assert "at random positions of [0, 40)" in err and "(= validate's)" not in err
        else:
            assert "at the ordinary positions" in err and "(= validate's)" in err
    assert evaluation_by_hand(ckpt, "random")[1] != evaluation_by_hand(ckpt, "ordinary")[1]


@pytest.mark.trainer
def test_random_positions_at_evaluation_are_refused_for_a_run_trained_without(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert main(probe_fit_args("copy", 2, 2)) == 0
    (ckpt,) = tmp_path.glob("runs/probes/*/checkpoints/last.ckpt")
    capsys.readouterr()
    assert main(["extrapolate", str(ckpt), "--positions", "random"]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err
    assert "--positions random needs a run trained with data.random_positions" in lines[0]


@pytest.mark.trainer
def test_validate_and_resume_keep_the_runs_positions(tmp_path, monkeypatch):
    """A checkpoint's randomized positions and validation protocol are what ``validate``
    evaluates with and what ``fit --ckpt_path`` continues with, unless typed on the command
    line (as its corpus and tokenizer are)."""
    monkeypatch.chdir(tmp_path)
    switch = ["--data.random_positions", "1024", "--data.validation_positions", "random"]
    assert fit_preempted(fit_args("rope.yaml", 4, *switch), 2) == EXIT_PREEMPTED
    ckpt = next(tmp_path.rglob("last.ckpt"))
    seen = record_positions(monkeypatch)
    validate = [a if a != "fit" else "validate" for a in fit_args("rope.yaml", 2)]
    assert main([*validate, "--ckpt_path", str(ckpt)]) == 0
    assert seen and all(not training and p is not None and p >= 32 for training, p in seen)
    seen.clear()
    assert main([*fit_args("rope.yaml", 4), "--ckpt_path", str(ckpt)]) == 0
    trained = [p for training, p in seen if training]
    assert len(trained) == 2 and all(p is not None and p >= 32 for p in trained)
