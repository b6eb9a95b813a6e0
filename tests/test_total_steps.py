"""One count of a run's optimiser steps (``training/steps.total_steps``), the same in every
use: the learning-rate schedule, the progress display and the validation after the last
step -- and equal to the steps Lightning actually takes."""

from __future__ import annotations

import math
from types import SimpleNamespace

import lightning as L
import pytest
import torch
from torch.utils.data import DataLoader

from roformer_lit.module import MaskedLM
from roformer_lit.training.final_validation import ValidateAtEnd
from roformer_lit.training.lifecycle import ENDLESS_STEPS
from roformer_lit.training.progress import StepProgress
from roformer_lit.training.steps import total_steps


def fake_trainer(
    max_steps=-1, max_epochs=-1, train_batches=None, estimate=math.inf, limit=1.0, accumulate=1
):
    datamodule = None if train_batches is None else SimpleNamespace(train_batches=train_batches)
    return SimpleNamespace(
        max_steps=max_steps,
        max_epochs=max_epochs,
        datamodule=datamodule,
        estimated_stepping_batches=estimate,
        limit_train_batches=limit,
        accumulate_grad_batches=accumulate,
    )


@pytest.mark.parametrize(
    ("trainer", "expected"),
    [
        (fake_trainer(max_steps=600), 600),
        (fake_trainer(max_epochs=3, train_batches=10, accumulate=4), 3 * 3),  # ceil(10 / 4)
        (fake_trainer(max_epochs=2, train_batches=10, limit=4), 2 * 4),
        (fake_trainer(max_epochs=2, train_batches=10, limit=0.5), 2 * 5),
        (fake_trainer(max_steps=7, max_epochs=2, train_batches=10), 7),  # steps end it first
        (fake_trainer(max_steps=70, max_epochs=2, train_batches=10), 20),  # epochs end it
        (fake_trainer(max_epochs=2, estimate=14.0), 14),  # no train_batches: Lightning's
        (fake_trainer(), None),  # endless
        (fake_trainer(max_epochs=2, estimate=math.inf), None),  # an iterable without a length
    ],
)
def test_the_count(trainer, expected):
    assert total_steps(trainer) == expected


def test_the_schedule_of_an_endless_run_and_of_no_trainer():
    model = MaskedLM(vocab_size=16, hidden_size=8, num_layers=1, num_heads=1, intermediate_size=8)
    assert model.total_steps() == 1  # no trainer
    model._trainer = fake_trainer()
    assert model.total_steps() == ENDLESS_STEPS
    model._trainer = fake_trainer(max_steps=70, max_epochs=2, train_batches=10)
    assert model.total_steps() == 20


# -- with Lightning ---------------------------------------------------------------------------


class Batches(L.LightningDataModule):
    """``batches`` random MLM batches an epoch; ``train_batches`` says so (or is absent)."""

    def __init__(self, batches: int, counted: bool) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        ids = torch.randint(1, 16, (batches, 2, 6), generator=generator)
        self.data = [{"input_ids": row, "labels": row} for row in ids]
        self.counted = counted

    def __getattr__(self, name: str):
        if name == "train_batches" and self.__dict__.get("counted"):
            return len(self.__dict__["data"])
        return super().__getattr__(name)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.data, batch_size=None)


class Record(L.Callback):
    """What each use of the count saw, and the steps taken."""

    def on_train_end(self, trainer, pl_module):
        progress = next(c for c in trainer.callbacks if isinstance(c, StepProgress))
        final = next(c for c in trainer.callbacks if isinstance(c, ValidateAtEnd))
        self.seen = {
            "schedule": pl_module.total_steps(),
            "progress": progress._total,
            "final validation": final._total,
            "taken": trainer.global_step,
            "last lr factor": trainer.lr_scheduler_configs[0].scheduler.lr_lambdas[0](
                trainer.global_step - 1
            ),
        }


@pytest.mark.trainer
@pytest.mark.parametrize("counted", [True, False], ids=["train_batches", "lightning"])
@pytest.mark.parametrize(
    ("max_steps", "max_epochs", "limit", "accumulate"),
    [(9, -1, 1.0, 1), (-1, 2, 1.0, 2), (-1, 2, 4, 1), (5, 3, 1.0, 1), (50, 2, 0.5, 1)],
)
def test_every_use_agrees_with_the_steps_lightning_takes(
    max_steps, max_epochs, limit, accumulate, counted, tmp_path
):
    model = MaskedLM(
        vocab_size=16,
        hidden_size=8,
        num_layers=1,
        num_heads=1,
        intermediate_size=8,
        warmup_steps=0,
        min_lr_ratio=0.0,
    )
    record = Record()
    trainer = L.Trainer(
        max_steps=max_steps,
        max_epochs=max_epochs,
        limit_train_batches=limit,
        accumulate_grad_batches=accumulate,
        limit_val_batches=0,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        callbacks=[StepProgress(mode="lines"), ValidateAtEnd(), record],
        default_root_dir=tmp_path,
    )
    trainer.fit(model, datamodule=Batches(batches=7, counted=counted))
    seen = record.seen
    taken = seen.pop("taken")
    assert seen.pop("last lr factor") == pytest.approx(1 / taken)  # the schedule ends at the end
    assert seen == {"schedule": taken, "progress": taken, "final validation": taken}
