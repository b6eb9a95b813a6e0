"""``scripts/quickstart_seeds.py``: the quick start's per-step curves written to a raw
output through the package's run reader, never over an existing file, a run without its
curve refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch.utils.tensorboard import SummaryWriter

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.seed_curves import rows, write


def _run(root: Path, name: str, values: dict[int, tuple[float, float]]) -> Path:
    run = root / name
    writer = SummaryWriter(str(run))
    for step, (loss, acc) in values.items():
        writer.add_scalar("val/loss", loss, step)
        writer.add_scalar("val/acc", acc, step)
    writer.close()
    return run


def test_each_validation_of_each_seed_is_one_row(tmp_path) -> None:
    a = _run(tmp_path, "rope-softmax-seed0", {49: (6.8, 0.03), 599: (4.7, 0.32)})
    b = _run(tmp_path, "rope-softmax-seed1", {49: (6.9, 0.02), 599: (4.6, 0.33)})
    out = tmp_path / "curves.csv"
    write([a, b], out, "fit --seed_everything N")
    lines = out.read_text(encoding="utf-8").splitlines()
    assert (
        lines[0].startswith("# ") and "torch " in lines[0] and "fit --seed_everything N" in lines[0]
    )
    assert lines[1] == "seed,step,val_loss,val_acc"
    assert [x.split(",")[:2] for x in lines[2:]] == [
        ["0", "49"],
        ["0", "599"],
        ["1", "49"],
        ["1", "599"],
    ]
    assert rows([a])[1][2] == pytest.approx(4.7)


def test_an_existing_output_is_never_overwritten(tmp_path) -> None:
    a = _run(tmp_path, "rope-softmax-seed0", {49: (6.8, 0.03)})
    out = tmp_path / "curves.csv"
    out.write_text("kept\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="exists already"):
        write([a], out, "fit")
    assert out.read_text(encoding="utf-8") == "kept\n"


@pytest.mark.parametrize(
    ("name", "values", "message"),
    [
        ("rope-softmax", {49: (6.8, 0.03)}, "no seed in the run's name"),
        ("rope-softmax-seed0", {}, "no val/loss and val/acc"),
    ],
)
def test_a_run_without_its_curve_is_one_error(tmp_path, name, values, message) -> None:
    run = _run(tmp_path, name, values)
    if not values:
        run.mkdir(exist_ok=True)
    with pytest.raises(ConfigError, match=message):
        write([run], tmp_path / "out.csv", "fit")
    assert not (tmp_path / "out.csv").exists()
