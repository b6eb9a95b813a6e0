"""Evaluation is the run's own, and what the user typed wins or is refused as the table
says (:mod:`roformer_lit.commands.checkpoint_settings`), through the command line.

``validate --config configs/rope.yaml --ckpt_path RUN`` on a run trained at other lengths,
another number of validation blocks, a position task or randomized positions reproduces the
run's own last ``val/loss`` (read from its events: the independent record of what the run
measured), whatever the config file says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import CONFIGS, fit_args, probe_fit_args

from roformer_lit.commands import EXIT_USER_ERROR, main
from roformer_lit.model import Encoder
from roformer_lit.results.events import read_run

#: The training run's settings, none of them configs/base.yaml's (128 tokens, 96 blocks).
TRAINED_AT = ["--data.max_length", "64", "--data.max_val_blocks", "8"]
QUIET = ["--trainer.enable_progress_bar", "false"]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with three finished tiny runs: corpus at 64 tokens / 8 blocks, a copy
    probe, and randomized positions validated at random positions."""
    work = tmp_path_factory.mktemp("own-settings")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert main(fit_args("rope.yaml", 4, *TRAINED_AT)) == 0
        assert main(probe_fit_args("copy", 4, 2)) == 0
        shifted = ["--data.random_positions", "256", "--data.validation_positions", "random"]
        assert main(fit_args("alibi.yaml", 2, *shifted)) == 0
    return work


def last(work: Path, pattern: str) -> Path:
    (ckpt,) = work.glob(f"runs/{pattern}/checkpoints/last.ckpt")
    return ckpt


def run_loss(ckpt: Path) -> float:
    value = read_run(ckpt.parent.parent).last("val/loss")
    assert value is not None
    return value


def evaluated(ckpt: Path) -> dict:
    lines = (ckpt.parent.parent / "evaluations.jsonl").read_text().splitlines()
    return json.loads(lines[-1])


def validate(ckpt: Path, *extra: str, config: str = "rope.yaml") -> list[str]:
    return [
        "validate",
        "--config",
        str(CONFIGS / config),
        *QUIET,
        *extra,
        "--ckpt_path",
        str(ckpt),
    ]


#: (run, the --config file given to validate): a scheme config of another data module and
#: length, and the run's own config (the same data module class as the checkpoint's, other
#: values: the form the runs guide shows).
VALIDATED_WITH = {
    "lengths": ("mlm/rope-*", "rope.yaml"),
    "probe": ("probes/*", "rope.yaml"),
    "random-positions": ("mlm/alibi-*", "rope.yaml"),
    "probe-own-config": ("probes/*", "probes/copy.yaml"),
    "random-positions-own-config": ("mlm/alibi-*", "alibi.yaml"),
}


@pytest.mark.parametrize("case", sorted(VALIDATED_WITH))
def test_validate_with_any_config_reproduces_the_runs_last_val_loss(work, monkeypatch, case):
    run, config = VALIDATED_WITH[case]
    monkeypatch.chdir(work)
    ckpt = last(work, run)
    assert main(validate(ckpt, config=config)) == 0
    record = evaluated(ckpt)
    assert record["metrics"]["val/loss"] == pytest.approx(run_loss(ckpt), rel=1e-6, abs=1e-6)
    if run == "mlm/rope-*":
        assert record["data"]["max_length"] == 64 and record["data"]["max_val_blocks"] == 8


def test_a_typed_length_wins_with_a_note(work, monkeypatch, capsys):
    monkeypatch.chdir(work)
    ckpt = last(work, "mlm/rope-*")
    capsys.readouterr()
    assert main(validate(ckpt, "--data.max_length", "32")) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert notes == ["note: evaluating at data.max_length=32, the run trained at 64"]
    record = evaluated(ckpt)
    assert record["data"]["max_length"] == 32 and record["data"]["max_val_blocks"] == 8


def test_typed_ordinary_positions_are_used_though_they_are_the_default(work, monkeypatch, capsys):
    """The issue's case: an explicit ``--data.validation_positions ordinary`` was taken for
    "left at its default" and replaced by the run's ``random``."""
    monkeypatch.chdir(work)
    ckpt = last(work, "mlm/alibi-*")
    seen: list[bool] = []
    forward = Encoder.forward

    def spy(self, *args, **kwargs):
        seen.append(kwargs.get("position_ids") is not None)
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(Encoder, "forward", spy)
    assert main(validate(ckpt, "--model.position", "alibi")) == 0  # typed, the same
    assert seen and all(seen)  # the run's protocol: random positions
    seen.clear()
    capsys.readouterr()
    assert main(validate(ckpt, "--data.validation_positions", "ordinary")) == 0
    assert seen and not any(seen)
    err = capsys.readouterr().err
    assert "note: evaluating at data.validation_positions='ordinary'" in err


@pytest.mark.parametrize(
    "flags",
    [
        ["--data.random_positions", "null", "--data.validation_positions", "ordinary"],
        ["--data.max_length", "128"],
    ],
    ids=["positions-off", "another-length"],
)
def test_resuming_at_other_typed_settings_is_refused_in_one_line(work, monkeypatch, capsys, flags):
    monkeypatch.chdir(work)
    ckpt = last(work, "mlm/alibi-*")
    before = ckpt.read_bytes()
    capsys.readouterr()
    assert main(fit_args("alibi.yaml", 4, *flags, "--ckpt_path", str(ckpt))) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err[-2000:]
    assert flags[0][2:] in errors[0] and "a resumed run continues as it trained" in errors[0]
    assert ckpt.read_bytes() == before


def test_an_evaluation_records_how_much_of_the_split_it_measured(work, monkeypatch):
    """``validate --trainer.limit_val_batches 1`` measures one batch (taken quietly: the run
    is not changed), yet its line in the run's ``evaluations.jsonl`` read as the whole
    split's: the record named the data and model settings only. It keeps the trainer's
    batch limit and precision as the trainer held them."""
    monkeypatch.chdir(work)
    ckpt = last(work, "mlm/rope-*")
    assert main(validate(ckpt, "--trainer.limit_val_batches", "1")) == 0
    assert evaluated(ckpt)["trainer"] == {"limit_val_batches": "1 batches", "precision": "32-true"}
    assert main(validate(ckpt)) == 0  # the whole split
    assert evaluated(ckpt)["trainer"]["limit_val_batches"] == 1.0
