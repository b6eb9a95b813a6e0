"""Checking ``finetune`` arguments without building anything (what a sweep does first)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from roformer_lit.cli import _is_argument_error, _one_line
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
    try:
        cli = _ParseOnly(
            SequenceClassifier,
            TaskDataModule,
            args=list(args),
            run=False,
            seed_everything_default=0,
            parser_kwargs={"exit_on_error": False},
            auto_configure_optimizers=False,
        )
    except Exception as exc:
        if _is_argument_error(exc):
            raise ConfigError(_one_line(exc)) from exc
        raise
    get_task(cli.config.data.task)
    if cli.config.model.pretrained is None:
        raise ConfigError("model.pretrained is not set: give the checkpoint to fine-tune")
    return cli.config
