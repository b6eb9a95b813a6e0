"""``command: finetune`` sweeps over checkpoint globs, and ``compare``
tabling downstream metrics per pretraining variant (checked against numpy on the raw
values written into synthetic runs)."""

from __future__ import annotations

import csv
import shlex
import shutil
import sys
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
import yaml
from cli_helpers import write_fake_run_config
from torch.utils.tensorboard import SummaryWriter

from roformer_lit.commands import main
from roformer_lit.results.compare import collect_runs
from roformer_lit.results.compare.downstream import aggregate_downstream, is_finetune
from roformer_lit.sweep import runner

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
BASE = CONFIGS / "finetune" / "movie_polarity.yaml"
VERSION = "--trainer.logger.init_args.version"
PRETRAINED_RUNS = ["nope-softmax-seed0", "rope-softmax-seed0", "rope-softmax-seed1"]


def arg(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def fake_checkpoints(root: Path, runs: list[str] = PRETRAINED_RUNS) -> None:
    for run in runs:
        (root / "runs" / "positions" / run / "checkpoints").mkdir(parents=True)
        (root / "runs" / "positions" / run / "checkpoints" / "last.ckpt").write_bytes(b"")


def write_sweep(path: Path, pretrained: list[str], **extra: object) -> Path:
    data = {
        "name": "ft",
        "command": "finetune",
        "base": str(BASE),
        "grid": {
            "data.task": ["movie_polarity"],
            "model.pretrained": pretrained,
            "seed_everything": [0, 1],
        },
        **extra,
    }
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def no_launch(*args, **kwargs):
    raise AssertionError("no process may start")


# --- sweeps ------------------------------------------------------------------------------


def test_a_checkpoint_glob_expands_to_one_finetune_per_checkpoint_and_seed(
    tmp_path, monkeypatch, capsys
):
    fake_checkpoints(tmp_path)
    write_sweep(tmp_path / "sweep.yaml", ["runs/positions/*/checkpoints/last.ckpt"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    assert main(["sweep", "--config", "sweep.yaml", "--dry-run"]) == 0
    commands = [shlex.split(line) for line in capsys.readouterr().out.strip().splitlines()]
    expected = [
        (run, seed) for run in sorted(PRETRAINED_RUNS) for seed in (0, 1)
    ]  # grid order: the last key (the fine-tuning seed) varies fastest
    assert len(commands) == len(expected)
    for command, (run, seed) in zip(commands, expected, strict=True):
        assert command.pop(0).startswith("OMP_NUM_THREADS=")  # printed as it runs
        assert command[:4] == [sys.executable, "-m", "roformer_lit", "finetune"]
        assert arg(command, "--config") == str(BASE)
        assert arg(command, "--model.pretrained") == f"runs/positions/{run}/checkpoints/last.ckpt"
        assert arg(command, "--seed_everything") == str(seed)
        assert arg(command, VERSION) == f"movie_polarity-{run}-ftseed{seed}"
        assert arg(command, "--trainer.logger.init_args.name") == "ft"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs", "sweep.yaml"]


def test_checkpoints_of_one_run_name_runs_by_run_and_file(tmp_path, monkeypatch, capsys):
    fake_checkpoints(tmp_path, ["rope-softmax-seed0"])
    best = tmp_path / "runs/positions/rope-softmax-seed0/checkpoints/best.ckpt"
    best.write_bytes(b"")
    write_sweep(tmp_path / "sweep.yaml", ["runs/positions/*/checkpoints/*.ckpt"])
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--config", "sweep.yaml", "--dry-run"]) == 0
    commands = [shlex.split(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert [arg(c, VERSION) for c in commands] == [
        "movie_polarity-rope-softmax-seed0-best-ftseed0",
        "movie_polarity-rope-softmax-seed0-best-ftseed1",
        "movie_polarity-rope-softmax-seed0-last-ftseed0",
        "movie_polarity-rope-softmax-seed0-last-ftseed1",
    ]


@pytest.mark.parametrize(
    "excluded,gone",
    [
        (
            "runs/positions/rope-*/checkpoints/last.ckpt",
            ["rope-softmax-seed0", "rope-softmax-seed1"],
        ),
        ("runs/positions/nope-softmax-seed0/checkpoints/last.ckpt", ["nope-softmax-seed0"]),
    ],
)
def test_an_exclude_naming_a_glob_drops_the_checkpoints_it_matched(
    excluded, gone, tmp_path, monkeypatch, capsys
):
    """The grid has two globs; an exclusion may name one of them (every file it matched)
    or one expanded file."""
    fake_checkpoints(tmp_path)
    globs = [
        "runs/positions/nope-*/checkpoints/last.ckpt",
        "runs/positions/rope-*/checkpoints/last.ckpt",
    ]
    write_sweep(
        tmp_path / "sweep.yaml",
        globs,
        exclude=[{"model.pretrained": excluded, "seed_everything": 1}],
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    assert main(["sweep", "--config", "sweep.yaml", "--dry-run"]) == 0
    commands = [shlex.split(line) for line in capsys.readouterr().out.strip().splitlines()]
    kept = {
        (Path(arg(c, "--model.pretrained")).parts[2], arg(c, "--seed_everything")) for c in commands
    }
    expected = {
        (run, str(seed))
        for run in PRETRAINED_RUNS
        for seed in (0, 1)
        if not (run in gone and seed == 1)
    }
    assert kept == expected


@pytest.mark.parametrize("dry_run", [True, False])
def test_every_finetune_combination_goes_through_the_finetune_rules_first(
    dry_run, tmp_path, monkeypatch, capsys
):
    fake_checkpoints(tmp_path)
    write_sweep(
        tmp_path / "sweep.yaml",
        ["runs/positions/*/checkpoints/last.ckpt"],
        overrides={"data.batch_size": 2**63},
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    capsys.readouterr()
    assert main(["sweep", "--config", "sweep.yaml", *(["--dry-run"] if dry_run else [])]) == 2
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and captured.out == ""
    assert ": run movie_polarity-nope-softmax-seed0-ftseed0 (" in errors[0]
    assert f"data.batch_size must be an integer in 1..2147483647, got {2**63}" in errors[0]
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_a_glob_matching_nothing_is_one_error_line(tmp_path, monkeypatch, capsys):
    write_sweep(tmp_path / "sweep.yaml", ["runs/nothing/*/checkpoints/last.ckpt"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    assert main(["sweep", "--config", "sweep.yaml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")
    assert "'runs/nothing/*/checkpoints/last.ckpt'" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]


#: case -> (model.pretrained grid values, overrides, text the one error line must hold)
BAD_CHECKPOINTS: dict[str, tuple[list[str], dict[str, str], str]] = {
    "glob matching run directories": (
        ["runs/positions/*"],
        {},
        "'runs/positions/*' matches runs/positions/nope-softmax-seed0, which is a directory",
    ),
    "glob matching a file that is no checkpoint": (
        ["runs/positions/*/checkpoints/*"],
        {},
        "'runs/positions/*/checkpoints/*' matches runs/positions/rope-softmax-seed0/"
        "checkpoints/notes.txt, which is not a checkpoint file",
    ),
    "missing path": (
        ["runs/positions/gone/checkpoints/last.ckpt"],
        {},
        "checkpoint 'runs/positions/gone/checkpoints/last.ckpt' not found",
    ),
    "path of a run directory": (
        ["runs/positions/rope-softmax-seed0"],
        {},
        "checkpoint 'runs/positions/rope-softmax-seed0' is a directory",
    ),
    "glob in overrides": (
        [],
        {"model.pretrained": "runs/positions/*/checkpoints/last.ckpt"},
        "'runs/positions/*/checkpoints/last.ckpt' is a glob; only grid values",
    ),
}


@pytest.mark.parametrize("case", list(BAD_CHECKPOINTS))
def test_checkpoint_values_are_checked_before_anything_launches(
    case, tmp_path, monkeypatch, capsys
):
    """Every ``model.pretrained`` value must name checkpoint files when the sweep starts:
    otherwise one line naming the value, and nothing is prepared, created or launched."""
    import roformer_lit.commands.prepare as prepare_cli

    fake_checkpoints(tmp_path)
    notes = tmp_path / "runs/positions/rope-softmax-seed0/checkpoints/notes.txt"
    notes.write_text("not a checkpoint\n")
    pretrained, overrides, expected = BAD_CHECKPOINTS[case]
    sweep = write_sweep(tmp_path / "sweep.yaml", pretrained or ["unused"], overrides=overrides)
    if not pretrained:  # the checkpoint comes from the overrides alone
        data = yaml.safe_load(sweep.read_text())
        del data["grid"]["model.pretrained"]
        sweep.write_text(yaml.safe_dump(data, sort_keys=False))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "launch", no_launch)
    monkeypatch.setattr(prepare_cli, "prepare_runs", no_launch)
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert main(["sweep", "--config", "sweep.yaml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: sweep.yaml: "), err
    assert expected in err[0], err[0]
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before


def test_an_unknown_command_names_the_valid_ones(tmp_path, monkeypatch, capsys):
    fake_checkpoints(tmp_path)
    write_sweep(tmp_path / "sweep.yaml", ["x.ckpt"], command="validate")
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--config", "sweep.yaml"]) == 2
    err = capsys.readouterr().err.strip()
    assert "command 'validate' is not supported; valid: fit, finetune" in err


def test_a_finetune_sweep_prepares_no_data_and_resumes_like_fit(tmp_path, monkeypatch, capsys):
    import roformer_lit.commands.prepare as prepare_cli

    fake_checkpoints(tmp_path, ["rope-softmax-seed0"])
    write_sweep(tmp_path / "sweep.yaml", ["runs/positions/*/checkpoints/last.ckpt"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(prepare_cli, "prepare_runs", no_launch)
    launched: list[list[str]] = []

    def fake(argv, *, cwd, env, stdout, stderr, started=None):
        launched.append(list(argv))
        run = Path(cwd) / "runs" / "ft" / arg(argv, VERSION)
        (run / "checkpoints").mkdir(parents=True, exist_ok=True)
        (run / "checkpoints" / "last.ckpt").write_bytes(b"fake")
        write_fake_run_config(run, argv)
        resumed = "--ckpt_path" in argv
        return 0 if resumed or arg(argv, "--seed_everything") == "0" else 75  # preempted

    monkeypatch.setattr(runner, "launch", fake)
    assert main(["sweep", "--config", "sweep.yaml"]) == 1
    assert [arg(a, VERSION) for a in launched] == [
        "movie_polarity-rope-softmax-seed0-ftseed0",
        "movie_polarity-rope-softmax-seed0-ftseed1",
    ]
    assert all("--ckpt_path" not in a for a in launched)
    launched.clear()
    assert main(["sweep", "--config", "sweep.yaml"]) == 0  # the finished one is skipped
    (again,) = launched
    assert arg(again, VERSION) == "movie_polarity-rope-softmax-seed0-ftseed1"
    ckpt = "runs/ft/movie_polarity-rope-softmax-seed0-ftseed1/checkpoints/last.ckpt"
    assert arg(again, "--ckpt_path") == ckpt
    assert "skipped movie_polarity-rope-softmax-seed0-ftseed0 (finished)" in capsys.readouterr().out


# --- compare -----------------------------------------------------------------------------

#: pretrained run -> (position, final val/loss series)
PRETRAINED = {
    "rope-softmax-seed0": ("rope", [3.0, 2.5, 2.25]),
    "rope-softmax-seed1": ("rope", [3.1, 2.4, 2.5]),
    "nope-softmax-seed0": ("nope", [3.3, 2.9, 2.8]),
    "nope-softmax-seed1": ("nope", [3.2, 2.95, 2.7]),
}
#: (pretrained run, fine-tuning seed) -> val/accuracy per epoch (val/f1 is accuracy - 0.1)
FINETUNES = {
    ("rope-softmax-seed0", 0): [0.60, 0.81, 0.79],
    ("rope-softmax-seed0", 1): [0.70, 0.75, 0.77],
    ("rope-softmax-seed0", 2): [0.62, 0.66, 0.83],
    ("rope-softmax-seed1", 0): [0.71, 0.74, 0.72],
    ("rope-softmax-seed1", 1): [0.69, 0.80, 0.78],
    ("nope-softmax-seed0", 0): [0.55, 0.61, 0.58],
    ("nope-softmax-seed0", 1): [0.52, 0.57, 0.64],
    ("nope-softmax-seed1", 0): [0.50, 0.66, 0.62],
    ("nope-softmax-seed1", 1): [0.59, 0.54, 0.60],
    ("gone-softmax-seed0", 0): [0.51, 0.53, 0.52],  # its pretrained run does not exist
}


def write_run(
    run: Path, hparams: dict, config: dict, scalars: dict[str, list[float]], every: int = 10
) -> None:
    (run / "checkpoints").mkdir(parents=True)
    (run / "hparams.yaml").write_text(yaml.safe_dump(hparams), encoding="utf-8")
    (run / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    writer = SummaryWriter(str(run))
    for tag, values in scalars.items():
        for i, value in enumerate(values):
            writer.add_scalar(tag, value, (i + 1) * every - 1, walltime=1000.0 + i)
    writer.close()


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("downstream")
    for name, (position, losses) in PRETRAINED.items():
        seed = int(name[-1])
        hparams = {"position": position, "attention": "softmax", "hidden_size": 32, "seed": seed}
        write_run(
            root / "runs" / "positions" / name,
            hparams,
            {"seed_everything": seed, "trainer": {"max_steps": 30}},
            {"val/loss": losses, "train/loss": [4.0, 3.0, 2.0]},
        )
    for (name, seed), accuracy in FINETUNES.items():
        hparams = {
            "pretrained": f"runs/positions/{name}/checkpoints/last.ckpt",
            "task": "movie_polarity",
            "num_labels": 2,
            "learning_rate": 4e-5,
        }
        config = {"seed_everything": seed, "checkpoint": {"monitor": "auto", "mode": "max"}}
        scalars = {
            "val/accuracy": accuracy,
            "val/f1": [a - 0.1 for a in accuracy],
            "val/loss": [1.0 - a for a in accuracy],
        }
        version = f"movie_polarity-{name}-ftseed{seed}"
        write_run(root / "runs" / "finetune" / version, hparams, config, scalars)
    return root


def test_a_fine_tune_made_twice_or_unfinished_does_not_move_the_row(
    tree, tmp_path, monkeypatch, capsys
):
    """Beside the tree's fine-tunes: a copy of one (the same seed on the same checkpoint,
    the ``-2`` of a run made again) and one last validated at step 10 of 29 with an accuracy far off.
    The row's statistics are still numpy's over the tree's own runs; the copy is reported,
    the unfinished one named in the notes."""
    work = tmp_path / "tree"
    shutil.copytree(tree, work)
    monkeypatch.chdir(work)
    finetune = work / "runs" / "finetune"
    for run in finetune.iterdir():  # each validated last at step 29, its max_steps
        config = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
        config["trainer"] = {"max_steps": 29}
        (run / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    original = finetune / "movie_polarity-rope-softmax-seed0-ftseed1"
    shutil.copytree(original, finetune / f"{original.name}-2")
    hparams = yaml.safe_load((original / "hparams.yaml").read_text(encoding="utf-8"))
    config = {**config, "seed_everything": 7}
    scalars = {"val/accuracy": [0.01], "val/f1": [0.0], "val/loss": [0.99]}
    write_run(finetune / "movie_polarity-rope-softmax-seed0-ftseed7", hparams, config, scalars)
    capsys.readouterr()
    rows = {row.variant: row for row in aggregate_downstream(collect_runs(finetune))}
    warnings = capsys.readouterr().err
    row = rows["rope-softmax"]
    expected = oracle("rope")
    finetune_stat, pretrain_stat = row.stats["accuracy"]
    assert finetune_stat.n == 5 and finetune_stat.mean == pytest.approx(expected["mean"])
    assert finetune_stat.std == pytest.approx(expected["std_finetune"])
    assert pretrain_stat.std == pytest.approx(expected["std_pretrain"])
    assert f"{original.name}-2: the same variant with the same seeds" in warnings
    assert any(
        note.startswith(
            "movie_polarity-rope-softmax-seed0-ftseed7: unfinished: last validated at step 10 of 29"
        )
        and note.endswith("left out of the means")
        for note in row.notes
    ), row.notes


def test_a_fine_tune_of_an_unfinished_pretraining_run_does_not_move_the_row(
    tree, tmp_path, monkeypatch
):
    """A pretraining run of the tree's rope settings stopped at step 20 of 30 (preempted, or
    still training), fine-tuned from its ``last.ckpt``: compare averaged the fine-tune as a
    third pretraining seed of ``rope-softmax``, its weights another length's. It is named
    in the row's notes and left out: the row is still numpy's over the tree's own runs."""
    work = tmp_path / "tree"
    shutil.copytree(tree, work)
    monkeypatch.chdir(work)
    stopped = "rope-softmax-seed2"
    write_run(
        work / "runs" / "positions" / stopped,
        {"position": "rope", "attention": "softmax", "hidden_size": 32, "seed": 2},
        {"seed_everything": 2, "trainer": {"max_steps": 30}},
        {"val/loss": [3.0, 2.6], "train/loss": [4.0, 3.0]},
    )
    finetune = work / "runs" / "finetune"
    original = finetune / "movie_polarity-rope-softmax-seed0-ftseed0"
    hparams = yaml.safe_load((original / "hparams.yaml").read_text(encoding="utf-8"))
    hparams["pretrained"] = f"runs/positions/{stopped}/checkpoints/last.ckpt"
    config = yaml.safe_load((original / "config.yaml").read_text(encoding="utf-8"))
    scalars = {"val/accuracy": [0.01, 0.02, 0.01], "val/f1": [0.0] * 3, "val/loss": [0.99] * 3}
    write_run(finetune / f"movie_polarity-{stopped}-ftseed0", hparams, config, scalars)
    rows = {row.variant: row for row in aggregate_downstream(collect_runs(finetune))}
    row = rows["rope-softmax"]
    expected = oracle("rope")
    finetune_stat, pretrain_stat = row.stats["accuracy"]
    assert pretrain_stat.n == 2 and pretrain_stat.mean == pytest.approx(expected["mean"])
    assert pretrain_stat.std == pytest.approx(expected["std_pretrain"])
    assert any(
        f"its pretrained run {stopped} is unfinished: last validated at step 20 of 30" in note
        for note in row.notes
    ), row.notes


def test_fine_tunes_of_two_checkpoints_of_one_run_are_two_rows(tree, tmp_path, monkeypatch):
    """A budget study fine-tunes ``step=20.ckpt`` beside ``last.ckpt``: compare keyed a
    pretraining seed by its run alone, so the early checkpoint's fine-tune was pooled as
    another fine-tuning seed of the last one's (or, at the same seed, left out as a repeat).
    Each checkpoint file is its own row now (``ckpt=<file>``), the last's still numpy's."""
    work = tmp_path / "tree"
    shutil.copytree(tree, work)
    monkeypatch.chdir(work)
    finetune = work / "runs" / "finetune"
    original = finetune / "movie_polarity-rope-softmax-seed0-ftseed0"
    hparams = yaml.safe_load((original / "hparams.yaml").read_text(encoding="utf-8"))
    hparams["pretrained"] = "runs/positions/rope-softmax-seed0/checkpoints/step=20.ckpt"
    config = yaml.safe_load((original / "config.yaml").read_text(encoding="utf-8"))
    config["seed_everything"] = 5
    scalars = {"val/accuracy": [0.01, 0.02, 0.01], "val/f1": [0.0] * 3, "val/loss": [0.99] * 3}
    write_run(finetune / "movie_polarity-rope-step20-ftseed5", hparams, config, scalars)
    rows = {row.variant: row for row in aggregate_downstream(collect_runs(finetune))}
    last, early = rows["rope-softmax ckpt=last.ckpt"], rows["rope-softmax ckpt=step=20.ckpt"]
    expected = oracle("rope")
    finetune_stat, pretrain_stat = last.stats["accuracy"]
    assert finetune_stat.n == 5 and finetune_stat.mean == pytest.approx(expected["mean"])
    assert finetune_stat.std == pytest.approx(expected["std_finetune"])
    early_stat = early.stats["accuracy"][0]
    assert early_stat.n == 1 and early_stat.mean == pytest.approx(0.02)


def oracle(position: str, metric: str = "accuracy") -> dict[str, float]:
    """numpy on the raw values: best accuracy per run (f1 at that epoch), per-checkpoint
    means, their mean and ddof=1 std, the pooled within-checkpoint std, MLM val/loss."""
    by_checkpoint: dict[str, list[float]] = {}
    for (name, _), accuracy in FINETUNES.items():
        if name.startswith(position + "-"):
            best = int(np.argmax(accuracy))
            value = accuracy[best] - (0.1 if metric == "f1" else 0.0)
            by_checkpoint.setdefault(name, []).append(value)
    means = np.array([np.mean(v) for v in by_checkpoint.values()])
    dof = sum(len(v) - 1 for v in by_checkpoint.values())
    pooled = sum((len(v) - 1) * np.var(v, ddof=1) for v in by_checkpoint.values() if len(v) > 1)
    losses = [PRETRAINED[n][1] for n in by_checkpoint]
    return {
        "mean": float(np.mean(means)),
        "std_pretrain": float(np.std(means, ddof=1)),
        "std_finetune": float(np.sqrt(pooled / dof)),
        "mlm_final_mean": float(np.mean([v[-1] for v in losses])),
        "mlm_final_std": float(np.std([v[-1] for v in losses], ddof=1)),
        "mlm_best_mean": float(np.mean([min(v) for v in losses])),
        "mlm_best_std": float(np.std([min(v) for v in losses], ddof=1)),
    }


def test_downstream_means_and_stds_match_numpy(tree, monkeypatch, capsys):
    monkeypatch.chdir(tree)
    runs = collect_runs(tree / "runs" / "finetune")
    assert all(is_finetune(r) for r in runs)
    rows = {row.variant: row for row in aggregate_downstream(runs)}
    assert "warning: " in capsys.readouterr().err
    assert set(rows) == {
        "rope-softmax",
        "nope-softmax",
        "runs/positions/gone-softmax-seed0/checkpoints/last.ckpt",
    }
    for position in ("rope", "nope"):
        row = rows[f"{position}-softmax"]
        assert row.task == "movie_polarity" and row.main_metric == "accuracy"
        assert row.pretrain_seeds == [0, 1]
        for metric in ("accuracy", "f1"):
            expected = oracle(position, metric)
            finetune, pretrain = row.stats[metric]
            assert finetune.mean == pytest.approx(expected["mean"], abs=1e-6)
            assert pretrain.mean == pytest.approx(expected["mean"], abs=1e-6)
            assert pretrain.std == pytest.approx(expected["std_pretrain"], abs=1e-6)
            assert finetune.std == pytest.approx(expected["std_finetune"], abs=1e-6)
        expected = oracle(position)
        assert row.mlm["final_val_loss"].mean == pytest.approx(expected["mlm_final_mean"])
        assert row.mlm["final_val_loss"].std == pytest.approx(expected["mlm_final_std"])
        assert row.mlm["best_val_loss"].mean == pytest.approx(expected["mlm_best_mean"])
        assert row.mlm["best_val_loss"].std == pytest.approx(expected["mlm_best_std"])
    assert rows["rope-softmax"].stats["accuracy"][0].n == 5
    gone = rows["runs/positions/gone-softmax-seed0/checkpoints/last.ckpt"]
    assert gone.stats["accuracy"][0].mean == pytest.approx(0.53)
    assert gone.stats["accuracy"][0].std is None and gone.mlm["final_val_loss"].mean is None


def test_compare_command_tables_and_plots_downstream(tree, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tree)
    out = tmp_path / "report"
    assert main(["compare", "runs/finetune", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "gone-softmax-seed0" in warnings[0]
    lines = [line for line in captured.out.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[:6] == [
        "task",
        "variant",
        "pretrain seeds",
        "fine-tune seeds",
        "MLM final val/loss",
        "MLM best val/loss",
    ]
    assert "val/accuracy ± fine-tune" in header and "val/accuracy ± pretrain" in header
    cells = {
        c[1]: c for c in ([x.strip() for x in line.strip("|").split("|")] for line in lines[2:])
    }
    rope = cells["rope-softmax"]
    expected = oracle("rope")
    column = header.index("val/accuracy ± pretrain")
    assert rope[column] == f"{expected['mean']:.4f} ± {expected['std_pretrain']:.4f}"
    assert rope[column - 1] == f"{expected['mean']:.4f} ± {expected['std_finetune']:.4f}"
    assert rope[2] == "2 (0 1)" and rope[3] == "5 (0 1 2)"
    # the best variant first
    variants = [c[1] for c in (x.strip("|").split("|") for x in lines[2:])]
    assert variants[0].strip() == "rope-softmax"
    with open(out / "downstream.csv", newline="") as f:
        records = {r["variant"]: r for r in csv.DictReader(f)}
    assert float(records["nope-softmax"]["accuracy_std_finetune"]) == pytest.approx(
        oracle("nope")["std_finetune"]
    )
    assert records["nope-softmax"]["position"] == "nope"
    assert (out / "downstream_runs.csv").read_text().count("\n") == 1 + len(FINETUNES)
    image = matplotlib.image.imread(out / "downstream.png")
    assert image.shape[0] > 100 and image.shape[1] > 100
    assert not (out / "compare.csv").exists()  # no MLM run under runs/finetune


def test_mlm_and_finetune_runs_together_get_both_tables(tree, monkeypatch, capsys):
    monkeypatch.chdir(tree)
    assert main(["compare", "runs"]) == 0
    out = capsys.readouterr().out
    mlm_table, downstream_table = out.split("\n\n")[:2]
    assert mlm_table.startswith("| variant | seeds |")
    mlm_variants = {line.split("|")[1].strip() for line in mlm_table.splitlines()[2:]}
    assert mlm_variants == {"rope-softmax", "nope-softmax"}  # fine-tunes split nothing
    assert downstream_table.startswith("| task | variant |")


# --- a pretrained checkpoint retrained at its path -----------------------------------------

#: How the pretrained run is made again at its path -> its ``fit`` options (None: left as
#: it was, the control: the fine-tune is skipped as finished).
RETRAINED: dict[str, list[str] | None] = {
    "another seed": ["--seed_everything", "1"],
    "another scheme": ["--model.position", "nope"],
    "left as it was": None,
}
PRETRAINED_RUN = ["--trainer.logger.init_args.name", "mlm"]
PRETRAINED_RUN += ["--trainer.logger.init_args.version", "P"]


def _fit_pretrained(*extra: str) -> None:
    from cli_helpers import fit_args

    assert main(fit_args("rope.yaml", 2, *PRETRAINED_RUN, *extra)) == 0


@pytest.fixture(scope="module")
def fine_tuned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with a tiny pretraining run ``runs/mlm/P`` and a ``command: finetune``
    sweep ``ft.yaml`` over it, run once to its end (one real fine-tune)."""
    from finetune_helpers import QUIET, keyword_rows, write_csv

    work = tmp_path_factory.mktemp("retrained")
    write_csv(work / "train.csv", keyword_rows(16, seed=1))
    write_csv(work / "val.csv", keyword_rows(8, seed=2))
    sweep = {
        "name": "ft",
        "command": "finetune",
        "base": str(CONFIGS / "finetune" / "local.yaml"),
        "grid": {"model.pretrained": ["runs/mlm/P/checkpoints/last.ckpt"]},
        "overrides": {
            "data.train_files": "train.csv",
            "data.val_files": "val.csv",
            "data.max_length": 32,
            "data.batch_size": 8,
            "trainer.max_steps": 2,
            **{QUIET[i][2:]: False for i in range(0, len(QUIET), 2)},
        },
    }
    (work / "ft.yaml").write_text(yaml.safe_dump(sweep), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        _fit_pretrained()
        assert main(["sweep", "--config", "ft.yaml"]) == 0
    return work


@pytest.mark.trainer
@pytest.mark.parametrize("case", sorted(RETRAINED))
def test_a_fine_tune_of_a_pretrained_checkpoint_retrained_since_is_not_skipped(
    case, fine_tuned, tmp_path, monkeypatch, capsys
):
    """The fine-tune's settings name its pretrained checkpoint by path, so a pretraining
    run retrained at that path (another seed: the same architecture) left them as they
    were, and the sweep skipped the fine-tune of the old checkpoint as the fine-tune of the
    new one, exit 0. Now one line naming the run and the checkpoint, nothing launched."""
    work = tmp_path / "work"
    shutil.copytree(fine_tuned, work)
    monkeypatch.chdir(work)
    if RETRAINED[case] is not None:
        shutil.move("runs/mlm/P", "P.old")
        _fit_pretrained(*RETRAINED[case])
    monkeypatch.setattr(runner, "launch", no_launch)
    marker = work / "runs" / "ft" / "P" / runner.MARKER
    before = marker.read_bytes()
    capsys.readouterr()
    for dry in (["--dry-run"], []):
        code = main(["sweep", "--config", "ft.yaml", *dry])
        captured = capsys.readouterr()
        if RETRAINED[case] is None:
            assert code == 0 and "Traceback" not in captured.err, captured.err
            continue
        errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
        assert code == 2 and len(errors) == 1 and "Traceback" not in captured.err, captured.err
        assert "run P finished from another pretrained checkpoint" in errors[0], errors[0]
        assert "runs/mlm/P/checkpoints/last.ckpt" in errors[0] and "move " in errors[0]
    assert marker.read_bytes() == before
