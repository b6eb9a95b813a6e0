"""``finetune`` end to end on a tiny pretrained checkpoint: learning a toy task, pairs,
regression, run layout and logged scalars, and exact resume after a preemption."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import torch
from cli_helpers import overridden
from finetune_helpers import (
    QUIET,
    keyword_rows,
    pair_rows,
    pretrained_checkpoint,
    regression_rows,
    write_csv,
)
from lightning.pytorch import Callback

from roformer_lit.commands import EXIT_PREEMPTED, main
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.results.events import read_run
from roformer_lit.training.architecture_digest import DIGEST_KEY, architecture_digest

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "finetune"


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pretrained_checkpoint(tmp_path_factory)


def finetune_args(pretrained: Path, train: Path, val: Path, *extra: str) -> list[str]:
    defaults = [
        "finetune",
        "--config",
        str(CONFIGS / "local.yaml"),
        "--model.pretrained",
        str(pretrained),
        "--data.train_files",
        str(train),
        "--data.val_files",
        str(val),
        "--data.batch_size",
        "16",
        "--model.learning_rate",
        "2e-3",
        "--model.classifier_dropout",
        "0.0",
        "--trainer.log_every_n_steps",
        "1",
        *QUIET,
    ]
    return overridden(defaults, extra)


def scalars(run: Path, tag: str) -> dict[int, float]:
    return {s.step: s.value for s in read_run(run).scalars.get(tag, [])}


def last_value(run: Path, tag: str) -> float:
    values = scalars(run, tag)
    assert values, f"{tag} was not logged in {run}"
    return values[max(values)]


def test_a_toy_keyword_task_is_learned(pretrained, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train = write_csv(tmp_path / "train.csv", keyword_rows(320, seed=1))
    val = write_csv(tmp_path / "val.csv", keyword_rows(96, seed=2))
    assert main(finetune_args(pretrained, train, val, "--trainer.max_epochs", "4")) == 0
    run = tmp_path / "runs" / "finetune" / "local-rope-softmax-seed0-ftseed0"
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["best.ckpt", "last.ckpt"]
    accuracy = last_value(run, "val/accuracy")
    print(f"toy keyword task: val/accuracy {accuracy:.3f}")
    assert accuracy > 0.9, accuracy
    assert scalars(run, "train/loss") and scalars(run, "val/loss")
    best = torch.load(run / "checkpoints" / "best.ckpt", weights_only=True)
    (state,) = [v for k, v in best["callbacks"].items() if k.startswith("RunCheckpoint")]
    assert state["monitor"] == "val/accuracy"
    assert float(state["best_model_score"]) == pytest.approx(
        max(scalars(run, "val/accuracy").values())
    )
    # the tokenizer travels with the fine-tuned weights too: the pretrained run's own
    from roformer_lit import checkpoint_tokenizer

    assert checkpoint_tokenizer(best).to_str() == checkpoint_tokenizer(pretrained).to_str()


def test_text_pairs_are_joined_and_learned(pretrained, tmp_path, monkeypatch):
    """Label 1 iff the second text holds the keyword, which the first text holds at random:
    learnable only if the second text reaches the encoder, apart from the first ([SEP])."""
    monkeypatch.chdir(tmp_path)
    train = write_csv(tmp_path / "train.csv", pair_rows(320, seed=3))
    val = write_csv(tmp_path / "val.csv", pair_rows(96, seed=4))
    args = finetune_args(
        pretrained, train, val, "--data.text_pair_field", "text_pair", "--trainer.max_epochs", "4"
    )
    assert main(args) == 0
    run = tmp_path / "runs" / "finetune" / "local-rope-softmax-seed0-ftseed0"
    accuracy = last_value(run, "val/accuracy")
    print(f"pair task: val/accuracy {accuracy:.3f}")
    assert accuracy > 0.7, accuracy


def test_regression_with_one_label_learns_a_correlation(pretrained, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train = write_csv(tmp_path / "train.csv", regression_rows(320, seed=5))
    val = write_csv(tmp_path / "val.csv", regression_rows(96, seed=6))
    args = finetune_args(
        pretrained,
        train,
        val,
        "--data.num_labels",
        "1",
        "--model.pooling",
        "mean",
        "--trainer.max_epochs",
        "4",
    )
    assert main(args) == 0
    run = tmp_path / "runs" / "finetune" / "local-rope-softmax-seed0-ftseed0"
    pearson = last_value(run, "val/pearson")
    print(
        f"regression: val/pearson {pearson:.3f}, val/spearman {last_value(run, 'val/spearman'):.3f}"
    )
    assert pearson > 0.8, pearson
    best = torch.load(run / "checkpoints" / "best.ckpt", weights_only=True)
    (state,) = [v for k, v in best["callbacks"].items() if k.startswith("RunCheckpoint")]
    assert state["monitor"] == "val/pearson"


class SigtermAt(Callback):
    """Sends SIGTERM to this process at the start of training step ``step``."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.sent = False

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if not self.sent and trainer.global_step + 1 == self.step:
            self.sent = True
            os.kill(os.getpid(), signal.SIGTERM)


def test_a_preempted_finetune_resumes_exactly(pretrained, tmp_path, monkeypatch):
    """Stopped by SIGTERM mid-epoch, then resumed with --ckpt_path: the same final weights
    and validation metrics as an uninterrupted run (dropout on, so generators matter)."""
    train = write_csv(tmp_path / "train.csv", keyword_rows(160, seed=7))
    val = write_csv(tmp_path / "val.csv", keyword_rows(48, seed=8))
    args = finetune_args(
        pretrained, train, val, "--model.classifier_dropout", "0.2", "--trainer.max_epochs", "2"
    )
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    straight.mkdir()
    stopped.mkdir()
    monkeypatch.chdir(straight)
    assert main(args) == 0
    monkeypatch.chdir(stopped)
    import roformer_lit.commands.pretrain as cli

    original = cli.RoformerCLI.instantiate_trainer

    def with_signal(self, **kwargs):
        trainer = original(self, **kwargs)
        trainer.callbacks.append(SigtermAt(7))  # inside the first epoch (10 batches)
        return trainer

    monkeypatch.setattr(cli.RoformerCLI, "instantiate_trainer", with_signal)
    assert main(args) == EXIT_PREEMPTED
    monkeypatch.setattr(cli.RoformerCLI, "instantiate_trainer", original)
    run = Path("runs") / "finetune" / "local-rope-softmax-seed0-ftseed0"
    last = run / "checkpoints" / "last.ckpt"
    assert torch.load(last, weights_only=True)["global_step"] == 7
    assert main([*args, "--ckpt_path", str(last)]) == 0
    ours = torch.load(stopped / last, weights_only=True)
    reference = torch.load(straight / last, weights_only=True)
    assert ours["global_step"] == reference["global_step"] == 20
    for name, tensor in reference["state_dict"].items():
        torch.testing.assert_close(ours["state_dict"][name], tensor, rtol=0, atol=1e-6)
    for tag in ("val/accuracy", "val/loss"):
        assert scalars(stopped / run, tag) == pytest.approx(scalars(straight / run, tag), abs=1e-6)


def test_a_glue_task_logs_its_metrics_on_both_mnli_validation_sets(
    pretrained, tmp_path, monkeypatch
):
    """MNLI through the GLUE path (``datasets.load_dataset`` replaced by small tables, no
    network): three labels, pairs, ``val/accuracy`` (matched) and
    ``val/accuracy_mismatched``, the best checkpoint chosen by the matched accuracy."""
    import datasets

    asked = []

    def fake_load(path, name, split):
        asked.append((path, name, split))
        rows = pair_rows(24, seed=len(split))
        return datasets.Dataset.from_dict(
            {
                "premise": [r["text"] for r in rows],
                "hypothesis": [r["text_pair"] for r in rows],
                "label": [i % 3 for i in range(len(rows))],
                "idx": list(range(len(rows))),
            }
        )

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    monkeypatch.chdir(tmp_path)
    args = [
        "finetune",
        "--config",
        str(CONFIGS / "glue.yaml"),
        "--data.task",
        "mnli",
        "--model.pretrained",
        str(pretrained),
        "--data.batch_size",
        "8",
        "--trainer.max_epochs",
        "1",
        *QUIET,
    ]
    assert main(args) == 0
    assert sorted(split for _, _, split in asked) == [
        "train",
        "validation_matched",
        "validation_mismatched",
    ]
    assert {path for path, _, _ in asked} == {"nyu-mll/glue"}
    run = tmp_path / "runs" / "finetune" / "mnli-rope-softmax-seed0-ftseed0"
    for tag in ("val/accuracy", "val/accuracy_mismatched", "val/loss", "val/loss_mismatched"):
        assert scalars(run, tag), tag
    best = torch.load(run / "checkpoints" / "best.ckpt", weights_only=True)
    assert best["state_dict"]["classifier.weight"].shape[0] == 3
    (state,) = [v for k, v in best["callbacks"].items() if k.startswith("RunCheckpoint")]
    assert state["monitor"] == "val/accuracy"


@pytest.mark.parametrize(
    ("labels", "expected"),
    [(["0", "2", "1", "0"], 3), (["1.0", "0.0", "1.0", "0.0"], 2), (["0.5", "1", "2", "0"], 1)],
    ids=["classes", "integer-floats", "fractional"],
)
def test_num_labels_is_inferred_from_local_labels(pretrained, tmp_path, labels, expected):
    from roformer_lit.finetune import TaskDataModule

    rows = [{"text": f"the value {i}", "label": y} for i, y in enumerate(labels)]
    path = write_csv(tmp_path / "t.csv", rows)
    data = TaskDataModule(train_files=str(path), val_files=str(path), pretrained=str(pretrained))
    assert data.label_count == expected
    data.setup()
    batch = next(iter(data.train_dataloader()))
    assert batch["labels"].dtype == (torch.float32 if expected == 1 else torch.long)
    assert batch["input_ids"].shape == batch["attention_mask"].shape


def test_validate_a_fine_tuned_checkpoint_reproduces_its_best_score(
    pretrained, tmp_path, monkeypatch
):
    """``finetune validate --ckpt_path best.ckpt`` re-evaluates the checkpoint with the
    model settings it was fine-tuned with (here pooling ``mean``, not the config's ``cls``):
    its accuracy is the best one the run logged. A longer ``--data.max_length`` evaluates
    through the scheme's own extrapolation (RoPE), on the same examples."""
    import json

    monkeypatch.chdir(tmp_path)
    train = write_csv(tmp_path / "train.csv", keyword_rows(160, seed=1))
    val = write_csv(tmp_path / "val.csv", keyword_rows(48, seed=2))
    fit = finetune_args(pretrained, train, val, "--trainer.max_epochs", "2")
    assert main([*fit, "--model.pooling", "mean"]) == 0
    run = tmp_path / "runs" / "finetune" / "local-rope-softmax-seed0-ftseed0"
    best = max(scalars(run, "val/accuracy").values())
    evaluate = [
        "finetune",
        "validate",
        "--config",
        str(CONFIGS / "local.yaml"),
        "--data.train_files",
        str(train),
        "--data.val_files",
        str(val),
        "--ckpt_path",
        str(run / "checkpoints" / "best.ckpt"),
        *QUIET,
    ]
    assert main(evaluate) == 0
    assert main([*evaluate, "--data.max_length", "256"]) == 0  # > the pretrained 32 tokens
    records = [json.loads(line) for line in (run / "evaluations.jsonl").read_text().splitlines()]
    assert [r["command"] for r in records] == ["validate", "validate"]
    assert records[0]["model"]["pooling"] == "mean"
    assert records[0]["metrics"]["val/accuracy"] == pytest.approx(best, abs=1e-6)
    assert records[1]["data"]["max_length"] == 256
    assert 0.0 <= records[1]["metrics"]["val/accuracy"] <= 1.0
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["best.ckpt", "last.ckpt"]


def test_a_finetune_is_named_for_its_pretrained_model(pretrained, tmp_path, monkeypatch):
    """Two pretrained models of one scheme but other architectures (here RoPE base 500, as
    a recipe's run ``modernbert-seed0``) give fine-tunes of other name stems: the pretrained
    run's name, or outside a run directory its architecture in a ``fit`` run's words."""
    monkeypatch.chdir(tmp_path)
    train = write_csv(tmp_path / "train.csv", keyword_rows(32, seed=1))
    val = write_csv(tmp_path / "val.csv", keyword_rows(16, seed=2))
    other = torch.load(pretrained, weights_only=True)
    other["hyper_parameters"]["position_kwargs"] = {"base": 500}  # same weights, other model
    settings = EncoderConfig.from_settings(other["hyper_parameters"]).as_dict()
    other["hyper_parameters"].update(settings)  # recorded as the config holds it (500.0)
    other[DIGEST_KEY] = architecture_digest(settings)  # as fit would record it
    recipe_run = tmp_path / "runs" / "mlm" / "modernbert-seed0"
    (recipe_run / "checkpoints").mkdir(parents=True)
    (recipe_run / "config.yaml").write_text("model: {}\n", encoding="utf-8")
    torch.save(other, recipe_run / "checkpoints" / "last.ckpt")
    torch.save(other, tmp_path / "loose.ckpt")
    for checkpoint in (pretrained, recipe_run / "checkpoints" / "last.ckpt", "loose.ckpt"):
        args = finetune_args(Path(checkpoint), train, val, "--trainer.max_steps", "1")
        assert main(args) == 0
    runs = sorted(p.name for p in (tmp_path / "runs" / "finetune").iterdir() if p.is_dir())
    assert runs == [
        "local-modernbert-seed0-ftseed0",
        "local-rope-softmax-base500-ftseed0",
        "local-rope-softmax-seed0-ftseed0",
    ]


@pytest.mark.parametrize("ratio, noted", [("1.0", True), ("0.5", False)])
def test_a_warmup_over_every_step_is_noted(pretrained, tmp_path, monkeypatch, capsys, ratio, noted):
    """``warmup_ratio: 1.0`` warms up over every step; the schedule cuts it to all but the
    last, which trained at the peak rate with nothing decayed, without a word."""
    monkeypatch.chdir(tmp_path)
    train = write_csv(tmp_path / "train.csv", keyword_rows(32, seed=1))
    val = write_csv(tmp_path / "val.csv", keyword_rows(16, seed=2))
    argv = finetune_args(pretrained, train, val, "--trainer.max_steps", "2")
    capsys.readouterr()
    assert main([*argv, "--model.warmup_ratio", ratio]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "warmup_ratio" in line]
    assert len(notes) == int(noted) and all(n.startswith("note: ") for n in notes), notes
