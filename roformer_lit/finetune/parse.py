"""Checking ``finetune`` arguments without building anything (what a sweep does first), and
the data module they give (what a sweep identifies before it skips or resumes a run)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from roformer_lit.commands.pretrain import validate_config
from roformer_lit.finetune.cli import FinetuneCLI
from roformer_lit.finetune.datamodule import TaskDataModule
from roformer_lit.finetune.module import SequenceClassifier


class _ParseOnly(FinetuneCLI):
    """Parses and validates a fine-tuning configuration without building anything."""

    def before_instantiate_classes(self) -> None:
        pass

    def instantiate_classes(self) -> None:
        pass


def validate_finetune_config(args: Sequence[str], prelaunch: bool = True) -> Any:
    """Parse ``finetune`` arguments (``--config`` files and ``--key value`` overrides) without
    reading the checkpoint or the data; the task name is checked too. Returns the namespace
    or raises ConfigError with one line (the check ``finetune`` runs before it starts:
    :func:`~roformer_lit.finetune.prelaunch.check_finetune_config`)."""
    return validate_config(
        args, SequenceClassifier, TaskDataModule, _ParseOnly, prelaunch, command="finetune"
    )


def data_section(args: Sequence[str]) -> tuple[TaskDataModule, str]:
    """The data module ``finetune`` with these arguments (``finetune --config ...``) would
    build, nothing else built, and a key naming its data section (its settings, with the
    pretrained checkpoint whose tokenizer it uses): the same key, the same data."""
    words = list(args)
    config = validate_finetune_config(words[1:] if words[:1] == ["finetune"] else words)
    settings = config.data.as_dict()
    return TaskDataModule(**settings), json.dumps(settings, sort_keys=True, default=str)
