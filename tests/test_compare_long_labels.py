"""``compare --out`` of variants whose labels are very long (runs differing in many
settings): the figures are drawn with their labels wrapped or cut, and nothing is printed
(matplotlib's constrained-layout warning was, with its source line)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml
from torch.utils.tensorboard import SummaryWriter

from roformer_lit.commands import main
from roformer_lit.results.compare.plot_labels import plot_labels

SETTINGS = 12  # settings every variant sets to its own value: labels of ~400 characters


def write_run(run: Path, hparams: dict, seed: int, scalars: dict[str, float]) -> None:
    (run / "checkpoints").mkdir(parents=True)
    (run / "hparams.yaml").write_text(yaml.safe_dump(hparams), encoding="utf-8")
    config = {"seed_everything": seed, "trainer": {"max_steps": 30}}
    config["checkpoint"] = {"monitor": "auto", "mode": "max"} if "task" in hparams else {}
    (run / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    writer = SummaryWriter(str(run))
    for step in (9, 19, 29):
        for tag, value in scalars.items():
            writer.add_scalar(tag, value + step / 1000, step, walltime=1000.0 + step)
    writer.close()


def long_variant(variant: int) -> dict:
    settings = {f"a_rather_long_setting_name_{k}": variant * 0.1 + k for k in range(SETTINGS)}
    return {"position": "rope", "attention": "softmax", **settings}


def pretrained_tree(root: Path, variants: int) -> None:
    for variant in range(variants):
        for seed in range(2):
            run = root / "runs" / "mlm" / f"v{variant}-seed{seed}"
            write_run(run, {**long_variant(variant), "seed": seed}, seed, {"val/loss": 2.0})


def finetune_tree(root: Path, variants: int) -> None:
    for variant in range(variants):
        for seed in range(2):
            hparams = {
                "pretrained": f"runs/mlm/v{variant}-seed0/checkpoints/last.ckpt",
                "task": "movie_polarity",
                "num_labels": 2,
            }
            run = root / "runs" / "finetune" / f"movie_polarity-v{variant}-ftseed{seed}"
            write_run(run, hparams, seed, {"val/accuracy": 0.6, "val/loss": 0.5})


@pytest.mark.parametrize(
    ("logdir", "variants", "figures"),
    [
        ("runs/mlm", 3, ["val_loss_vs_step.png", "val_loss_vs_time.png"]),
        ("runs/mlm", 20, ["val_loss_vs_step.png", "val_loss_vs_time.png"]),
        ("runs/finetune", 4, ["downstream.png"]),
    ],
    ids=["three-variants", "twenty-variants", "downstream"],
)
def test_long_variant_labels_draw_without_a_warning(
    tmp_path, monkeypatch, capsys, logdir, variants, figures
):
    pretrained_tree(tmp_path, variants)
    finetune_tree(tmp_path, variants)
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["compare", logdir, "--out", "out"]) == 0
    assert [str(w.message) for w in caught] == []
    err = capsys.readouterr().err
    assert "Warning" not in err and "constrained_layout" not in err
    for name in figures:
        assert (tmp_path / "out" / name).stat().st_size > 0


def test_a_cut_label_names_its_row_and_two_cut_alike_stay_apart():
    long = [f"rope-softmax {' '.join(f'setting_{k}={v}' for k in range(20))}" for v in (1, 2)]
    drawn = plot_labels(["rope-softmax", *long], width=40, lines=3)
    assert drawn[0] == "rope-softmax"
    for index, label in enumerate(drawn[1:], start=2):
        lines = label.split("\n")
        assert len(lines) == 3 and all(len(line) <= 40 for line in lines)
        assert lines[-1].endswith(f"… [#{index}]")
    assert drawn[1] != drawn[2]
