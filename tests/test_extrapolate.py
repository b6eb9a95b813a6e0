"""``extrapolate`` evaluates, at the training length, exactly what ``validate`` evaluates.

The oracle is ``validate --ckpt_path`` itself (its ``val/loss``, read from the run's
``evaluations.jsonl``), run on the same checkpoint with the run's settings.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest
from cli_helpers import CONFIGS, TINY, fit_args, overridden

from roformer_lit.commands import main
from roformer_lit.module import MaskedLM
from roformer_lit.results.extrapolate import (
    evaluate_checkpoint,
    open_checkpoint,
    run_settings,
)

TRAIN_LENGTH = 32  # TINY's data.max_length
VAL_BLOCKS = 16  # TINY's data.max_val_blocks


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(workdir, run directory) of a 4-step tiny RoPE run."""
    workdir = tmp_path_factory.mktemp("extrapolate")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        assert main(fit_args("rope.yaml", 4)) == 0
    return workdir, workdir / "runs" / "mlm" / "rope-softmax-seed0"


def _validate_loss(workdir: Path, run: Path, *overrides: str) -> float:
    """``val/loss`` of ``validate`` on the run's last checkpoint (the oracle)."""
    args = overridden(["validate", "--config", str(CONFIGS / "rope.yaml"), *TINY], overrides)
    args += ["--ckpt_path", str(run / "checkpoints" / "last.ckpt")]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        assert main(args) == 0
    records = (run / "evaluations.jsonl").read_text().splitlines()
    return float(json.loads(records[-1])["metrics"]["val/loss"])


def _cells(ckpt: Path, lengths: list[int], **kwargs) -> list:
    settings = run_settings(ckpt, open_checkpoint(ckpt))
    return evaluate_checkpoint(MaskedLM.from_checkpoint(ckpt), settings, lengths, **kwargs)


def test_at_the_training_length_extrapolate_equals_validate(trained, capsys):
    workdir, run = trained
    ckpt = run / "checkpoints" / "last.ckpt"
    oracle = _validate_loss(workdir, run)
    (cell,) = _cells(ckpt, [TRAIN_LENGTH])
    assert cell.blocks == VAL_BLOCKS  # the run's max_val_blocks, not --tokens' old default
    assert cell.loss == pytest.approx(oracle, abs=1e-5)
    # the command line prints the same number and says which blocks it evaluated
    capsys.readouterr()
    assert main(["extrapolate", str(ckpt), "--lengths", str(TRAIN_LENGTH), "64"]) == 0
    out, err = capsys.readouterr()
    row = out.strip().splitlines()[-1]
    assert [c.strip() for c in row.split("|")[4:6]][0] == f"{oracle:.3f}"
    assert f"L={TRAIN_LENGTH}: blocks 0-{VAL_BLOCKS - 1} of" in err
    assert "(= validate's)" in err
    # the same text at every length: 16 x 32 tokens are 8 blocks of 64
    assert "L=64: blocks 0-7 of" in err


def test_at_another_length_the_same_blocks_give_validates_loss(trained):
    """``--tokens T`` at length L evaluates the first T // L blocks, as validate does with
    ``--data.max_length L --data.max_val_blocks T // L``."""
    workdir, run = trained
    oracle = _validate_loss(workdir, run, "--data.max_length", "64", "--data.max_val_blocks", "8")
    (cell,) = _cells(run / "checkpoints" / "last.ckpt", [64], tokens=512)
    assert cell.blocks == 8
    assert cell.loss == pytest.approx(oracle, abs=1e-5)


def test_a_different_token_budget_is_said_to_differ_from_validate(trained, capsys):
    _, run = trained
    ckpt = run / "checkpoints" / "last.ckpt"
    capsys.readouterr()
    assert main(["extrapolate", str(ckpt), "--lengths", "32", "--tokens", "256"]) == 0
    err = capsys.readouterr().err
    assert "L=32: blocks 0-7 of" in err
    assert f"(validate: blocks 0-{VAL_BLOCKS - 1})" in err


def test_checkpoints_that_differ_only_in_seed_are_summarised_over_seeds(trained, capsys):
    """The second table's cell is the mean and 95 % t-interval of the first table's cells
    for the seeds of one variant (oracle: :mod:`statistics` and scipy's t quantile on the
    per-checkpoint rows)."""
    t = pytest.importorskip("scipy.stats").t
    workdir, run0 = trained
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        assert main([*fit_args("rope.yaml", 4), "--seed_everything", "1"]) == 0
    run1 = workdir / "runs" / "mlm" / "rope-softmax-seed1"
    ckpts = [str(r / "checkpoints" / "last.ckpt") for r in (run0, run1)]
    capsys.readouterr()
    assert main(["extrapolate", *ckpts, "--lengths", "32", "64"]) == 0
    out = capsys.readouterr().out
    per_checkpoint, over_seeds = out.split("Over seeds")
    losses = [
        [float(c) for c in line.split("|")[4:6]]
        for line in per_checkpoint.splitlines()
        if line.startswith("| ") and "last.ckpt" in line
    ]
    assert len(losses) == 2
    (row,) = [line for line in over_seeds.splitlines() if line.startswith("| rope-softmax")]
    cells = [c.strip() for c in row.split("|")[2:-1]]
    assert cells[0] == "2"
    for i, text in enumerate(cells[1:]):
        column = [seed[i] for seed in losses]
        mean, low, high = _interval(text)
        half = t.ppf(0.975, 1) * statistics.stdev(column) / 2**0.5
        assert mean == pytest.approx(statistics.fmean(column), abs=1.5e-3)  # of rounded cells
        assert (high - low) / 2 == pytest.approx(half, abs=2e-2)
    # one checkpoint alone: nothing to summarise
    capsys.readouterr()
    assert main(["extrapolate", ckpts[0], "--lengths", "32"]) == 0
    assert "Over seeds" not in capsys.readouterr().out


def _interval(text: str) -> tuple[float, float, float]:
    """``mean [low, high]`` as three floats."""
    mean, rest = text.split(" [")
    low, high = rest.rstrip("]").split(", ")
    return float(mean), float(low), float(high)


def test_a_cell_only_some_seeds_could_evaluate_is_not_averaged():
    from roformer_lit.results.extrapolate_seeds import cell

    t = pytest.importorskip("scipy.stats").t
    half = t.ppf(0.975, 2) * statistics.stdev([1, 2, 4]) / 3**0.5
    assert cell([1.0, 2.0, 4.0], [None] * 3) == f"2.333 [{7 / 3 - half:.3f}, {7 / 3 + half:.3f}]"
    assert cell([None, None], ["refused (max_positions=64)"] * 2) == "refused (max_positions=64)"
    assert cell([1.0, None], [None, "n/a (out of memory)"]) == "n/a (1 of 2 evaluated)"


# --- lengths nothing can be evaluated at ------------------------------------------------


@pytest.fixture(scope="module")
def learned(tmp_path_factory):
    """The last checkpoint of a 2-step tiny ``learned`` run with a 64-position table."""
    workdir = tmp_path_factory.mktemp("extrapolate-learned")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        assert main(fit_args("learned.yaml", 2, "--model.max_positions", "64")) == 0
    return workdir / "runs" / "mlm" / "learned-softmax-seed0" / "checkpoints" / "last.ckpt"


def _nothing(argv: list[str], capsys) -> str:
    """The one error line of an extrapolate that could evaluate nothing (exit 2, no table)."""
    capsys.readouterr()
    assert main(argv) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1, err
    assert lines[0].startswith("error: extrapolate evaluated nothing at --lengths"), lines[0]
    return lines[0]


def _longest(line: str, ckpt: Path) -> int:
    """The longest valid length the error line gives for ``ckpt``."""
    match = re.search(re.escape(str(ckpt)) + r": [^;]*; valid --lengths: 8 to (\d+)", line)
    assert match, line
    return int(match.group(1))


#: which checkpoints, at which lengths -> what each checkpoint's cells say
NOTHING_CASES = {
    "past the learned table": (["learned"], ["128", "256"], ["refused (max_positions=64)"]),
    "past the data": (["rope"], ["131072"], ["the run's shorter corpus split holds"]),
    "both": (["rope", "learned"], ["131072"], ["the run's shorter corpus split holds", "refused"]),
}


@pytest.mark.parametrize("case", list(NOTHING_CASES))
def test_lengths_nothing_can_be_evaluated_at_are_one_error_line(case, trained, learned, capsys):
    names, lengths, reasons = NOTHING_CASES[case]
    ckpts = {"rope": trained[1] / "checkpoints" / "last.ckpt", "learned": learned}
    given = [ckpts[name] for name in names]
    line = _nothing(["extrapolate", *map(str, given), "--lengths", *lengths], capsys)
    for ckpt, reason in zip(given, reasons, strict=True):
        assert f"{ckpt}: {reason}" in line and _longest(line, ckpt) >= 8, line


def test_the_valid_lengths_named_are_the_ones_that_evaluate(trained, learned, capsys):
    """Oracles for "valid --lengths: 8 to N": the learned table's size (evaluates at N, not
    at N + 1); for rope, the validation split (N is within one 32-token block of what
    extrapolate reports as the blocks available at L=32, and N + 1 evaluates nothing)."""
    line = _nothing(["extrapolate", str(learned), "--lengths", "128"], capsys)
    assert _longest(line, learned) == 64
    assert main(["extrapolate", str(learned), "--lengths", "64"]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-1]
    assert float(row.split("|")[4]) > 0
    _nothing(["extrapolate", str(learned), "--lengths", "65"], capsys)

    ckpt = trained[1] / "checkpoints" / "last.ckpt"
    longest = _longest(_nothing(["extrapolate", str(ckpt), "--lengths", "131072"], capsys), ckpt)
    assert main(["extrapolate", str(ckpt), "--lengths", "32"]) == 0
    available = int(re.search(r"L=32: blocks 0-\d+ of (\d+)", capsys.readouterr().err).group(1))
    assert available * 32 <= longest < (available + 1) * 32
    _nothing(["extrapolate", str(ckpt), "--lengths", str(longest + 1)], capsys)


def test_a_corpus_run_logs_no_exact_match(trained):
    """``val/exact`` means something on a position task only; an MLM run does not log it."""
    from roformer_lit.results.events import read_run

    _, run = trained
    scalars = read_run(run).scalars
    assert "val/loss" in scalars and "val/acc" in scalars
    assert "val/exact" not in scalars


def test_lengths_past_the_corpus_are_one_warning_naming_lengths(trained, capsys):
    """Several lengths longer than the corpus's validation split: one warning line naming
    them and --lengths (the setting to change here), never data.max_length."""
    _, run = trained
    ckpt = run / "checkpoints" / "last.ckpt"
    capsys.readouterr()
    argv = ["extrapolate", str(ckpt), "--lengths", "32", "65536", "100000", "131072"]
    assert main(argv) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning:" in line]
    assert len(warnings) == 1, warnings
    assert "--lengths 65536 100000 131072" in warnings[0] and "use --lengths up to" in warnings[0]
    assert "data.max_length" not in warnings[0]


@pytest.mark.parametrize(("tokens", "longer"), [("256", ["512"]), ("2048", [])])
def test_a_block_longer_than_the_budget_is_said_to_be(trained, capsys, tokens, longer):
    """``its first T tokens at each length`` was said of every length, also of one whose
    single block holds more than T tokens (more text than the other lengths evaluate)."""
    _, run = trained
    ckpt = run / "checkpoints" / "last.ckpt"
    capsys.readouterr()
    assert main(["extrapolate", str(ckpt), "--lengths", "32", "512", "--tokens", tokens]) == 0
    err = capsys.readouterr().err
    said = re.findall(r"L=(\d+): [^;]*a block is longer than", err)
    assert said == longer, err
