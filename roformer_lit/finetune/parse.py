"""Checking ``finetune`` arguments without building anything (what a sweep does first)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from roformer_lit.commands.pretrain import validate_config
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.cli import FinetuneCLI
from roformer_lit.finetune.datamodule import TaskDataModule
from roformer_lit.finetune.module import SequenceClassifier
from roformer_lit.finetune.tasks import get_task


class _ParseOnly(FinetuneCLI):
    """Parses and validates a fine-tuning configuration without building anything."""

    def before_instantiate_classes(self) -> None:
        pass

    def instantiate_classes(self) -> None:
        pass


def validate_finetune_config(args: Sequence[str]) -> Any:
    """Parse ``finetune`` arguments (``--config`` files and ``--key value`` overrides) without
    reading the checkpoint or the data; the task name is checked too. Returns the namespace
    or raises ConfigError with one line."""
    config = validate_config(args, SequenceClassifier, TaskDataModule, _ParseOnly)
    get_task(config.data.task)
    if config.model.pretrained is None:
        raise ConfigError("model.pretrained is not set: give the checkpoint to fine-tune")
    return config
